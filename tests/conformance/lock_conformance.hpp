// SPDX-License-Identifier: MIT
// tests/conformance/lock_conformance.hpp: the lock rules every backend must keep.
// Instantiate with SEATLOCK_LOCK_CONFORMANCE(Fixture) in one .cpp per backend.
#pragma once

#include "fixtures.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace seatlock::testing {
using namespace std::chrono_literals;

inline LockOptions quick_options(Millis wait, Millis lease = 10s) {
    LockOptions o;
    o.wait = wait;
    o.lease = lease;
    return o;
}

}  // namespace seatlock::testing

TEST_CASE_TEMPLATE_DEFINE("ten threads locking one seat: one wins, the rest time out after wait", F,
                          lock_ten_threads) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> locks(f.backend(), quick_options(300ms));
    std::atomic<int> winners{0}, timeouts{0}, wrong{0}, started{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 10; ++i) {
        threads.emplace_back([&] {
            ++started;
            while (started < 10) std::this_thread::yield();
            const auto t0 = std::chrono::steady_clock::now();
            auto guard = locks.lock("game1:A-1");
            const auto waited = std::chrono::steady_clock::now() - t0;
            if (guard) {
                ++winners;
                // Keep the seat until every other thread has given up.
                while (timeouts + wrong < 9 && std::chrono::steady_clock::now() - t0 < 20s) {
                    std::this_thread::sleep_for(5ms);
                }
            } else if (guard.is(seatlock::errc::lock_timeout) && waited >= 290ms && waited < 5s) {
                ++timeouts;
            } else {
                ++wrong;
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(winners == 1);
    CHECK(timeouts == 9);
    CHECK(wrong == 0);
}

TEST_CASE_TEMPLATE_DEFINE("try_lock of a held key fails at once with lock_busy naming the key", F,
                          lock_try_busy) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> locks(f.backend());
    auto first = locks.try_lock("game1:A-1");
    REQUIRE(first);
    auto second = locks.try_lock("game1:A-1");
    REQUIRE(second.is(seatlock::errc::lock_busy));
    CHECK(second.error().items == std::vector<std::string>{"game1:A-1"});
    CHECK(second.error().detail.find("game1:A-1") != std::string::npos);
}

TEST_CASE_TEMPLATE_DEFINE("a multi-lock with one seat taken fails whole and touches nothing", F,
                          lock_all_or_nothing) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> locks(f.backend(), quick_options(50ms));
    auto taken = locks.try_lock("game1:A-2");
    REQUIRE(taken);
    auto all = locks.lock_all({"game1:A-1", "game1:A-2", "game1:A-3"});
    REQUIRE(all.is(seatlock::errc::lock_timeout));
    CHECK(all.error().items == std::vector<std::string>{"game1:A-2"});
    auto a1 = locks.try_lock("game1:A-1");
    auto a3 = locks.try_lock("game1:A-3");
    CHECK(a1);
    CHECK(a3);
    CHECK(taken->owns());
}

TEST_CASE_TEMPLATE_DEFINE("duplicate keys of a multi-lock collapse", F, lock_duplicates) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> locks(f.backend());
    auto all = locks.try_lock_all({"game1:B-1", "game1:B-2", "game1:B-1", "game1:B-2"});
    REQUIRE(all);
    CHECK(all->keys() == std::vector<std::string>{"game1:B-1", "game1:B-2"});
    CHECK(all->unlock());
    CHECK(locks.try_lock("game1:B-1"));
}

TEST_CASE_TEMPLATE_DEFINE("random overlapping multi-locks: no deadlock, never two owners", F,
                          lock_stress) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> locks(f.backend(), quick_options(30s));
    constexpr int seats = 20, threads_n = 8, iterations = 2000;
    std::array<std::atomic<int>, seats> inside{};
    std::atomic<int> violations{0}, failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_n; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1u);
            for (int i = 0; i < iterations; ++i) {
                std::vector<int> picked;
                const int n = 1 + static_cast<int>(rng() % 3);
                for (int k = 0; k < n; ++k) picked.push_back(static_cast<int>(rng() % seats));
                std::vector<std::string> keys;
                for (int s : picked) keys.push_back("stress:seat-" + std::to_string(s));
                auto guard = locks.lock_all(keys);
                if (!guard) {
                    ++failures;
                    continue;
                }
                std::set<int> unique(picked.begin(), picked.end());
                for (int s : unique) {
                    if (inside[static_cast<std::size_t>(s)].fetch_add(1) != 0) ++violations;
                }
                for (int s : unique) inside[static_cast<std::size_t>(s)].fetch_sub(1);
                if (!guard->unlock()) ++failures;
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(violations == 0);
    CHECK(failures == 0);
}

TEST_CASE_TEMPLATE_DEFINE(
    "a lease that ran out cannot be released or extended by its old owner: lock_not_owned", F,
    lock_lease_expiry) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> locks(f.backend(), quick_options(0ms, 200ms));
    auto old = locks.try_lock("game1:C-1");
    REQUIRE(old);
    f.advance(300ms);
    auto next = locks.try_lock("game1:C-1");
    REQUIRE(next);
    CHECK(next->fencing_token() > old->fencing_token());
    CHECK(old->extend(10s).is(seatlock::errc::lock_not_owned));
    CHECK_FALSE(old->owns());
    CHECK(old->unlock().is(seatlock::errc::lock_not_owned));
    // The new owner's lock is untouched.
    CHECK(locks.try_lock("game1:C-1").is(seatlock::errc::lock_busy));
    CHECK(next->unlock());
}

TEST_CASE_TEMPLATE_DEFINE("fencing tokens strictly increase across owners and keys of a group", F,
                          lock_fencing) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> a(f.backend());
    seatlock::testing::Locks<F> b(f.backend());  // another client of the same storage
    std::uint64_t last = 0;
    for (int round = 0; round < 20; ++round) {
        auto& manager = round % 2 ? a : b;
        auto guard = round % 3 == 0 ? manager.try_lock_all({"game7:A-1", "game7:A-2"})
                                    : manager.try_lock_all({"game7:A-" + std::to_string(round % 4)});
        REQUIRE(guard);
        CHECK(guard->fencing_token() > last);
        last = guard->fencing_token();
    }
}

// Not on a Redis Cluster, which refuses a lock over two groups before sending anything
// (tests/integration/cluster.cpp): SEATLOCK_LOCK_GROUPS_CONFORMANCE.
TEST_CASE_TEMPLATE_DEFINE("a guard over keys of two groups extends and unlocks them all", F,
                          lock_two_groups) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> locks(f.backend(), quick_options(0ms, 1s));
    auto both = locks.try_lock_all({"north:A-1", "south:B-1"});
    REQUIRE(both);
    REQUIRE(both->extend(20s));
    f.advance(1500ms);  // past the first lease, within the extended one
    CHECK(both->owns());
    CHECK(locks.try_lock("north:A-1").is(seatlock::errc::lock_busy));
    CHECK(locks.try_lock("south:B-1").is(seatlock::errc::lock_busy));
    REQUIRE(both->unlock());
    auto north = locks.try_lock("north:A-1");
    auto south = locks.try_lock("south:B-1");
    REQUIRE(north);
    REQUIRE(south);
    CHECK(north->fencing_token() > both->fencing_token());
    CHECK(south->fencing_token() > both->fencing_token());
}

TEST_CASE_TEMPLATE_DEFINE("the watchdog keeps a guard alive past several leases", F,
                          lock_watchdog_renews) {
    using namespace seatlock::testing;
    F f;
    seatlock::LockOptions options = quick_options(0ms, 300ms);
    options.watchdog = true;
    seatlock::testing::Locks<F> locks(f.backend(), options);
    auto guard = locks.try_lock("game1:D-1");
    REQUIRE(guard);
    for (int i = 0; i < 6; ++i) {  // 6 x 150 ms of the backend's clock: three leases
        std::this_thread::sleep_for(150ms);  // real time, for the watchdog to renew
        if (F::manual_clock) f.advance(150ms);
    }
    CHECK(guard->owns());
    CHECK(locks.try_lock("game1:D-1").is(seatlock::errc::lock_busy));
    CHECK(guard->unlock());
}

TEST_CASE_TEMPLATE_DEFINE("invalid lock keys are refused and nothing is locked", F,
                          lock_invalid_keys) {
    using namespace seatlock::testing;
    F f;
    seatlock::testing::Locks<F> locks(f.backend());
    CHECK(locks.try_lock("").is(seatlock::errc::invalid_argument));
    CHECK(locks.try_lock("has space").is(seatlock::errc::invalid_argument));
    CHECK(locks.try_lock_all({"ok:1", "{bad}"}).is(seatlock::errc::invalid_argument));
    CHECK(locks.try_lock_all({}).is(seatlock::errc::invalid_argument));
    CHECK(locks.try_lock("ok:1"));
}

#define SEATLOCK_LOCK_CONFORMANCE(...)                         \
    TEST_CASE_TEMPLATE_INVOKE(lock_ten_threads, __VA_ARGS__);  \
    TEST_CASE_TEMPLATE_INVOKE(lock_try_busy, __VA_ARGS__);     \
    TEST_CASE_TEMPLATE_INVOKE(lock_all_or_nothing, __VA_ARGS__); \
    TEST_CASE_TEMPLATE_INVOKE(lock_duplicates, __VA_ARGS__);   \
    TEST_CASE_TEMPLATE_INVOKE(lock_stress, __VA_ARGS__);       \
    TEST_CASE_TEMPLATE_INVOKE(lock_lease_expiry, __VA_ARGS__); \
    TEST_CASE_TEMPLATE_INVOKE(lock_fencing, __VA_ARGS__);      \
    TEST_CASE_TEMPLATE_INVOKE(lock_watchdog_renews, __VA_ARGS__); \
    TEST_CASE_TEMPLATE_INVOKE(lock_invalid_keys, __VA_ARGS__)

// The lock rules of locks over several groups, on every backend but a Redis Cluster.
#define SEATLOCK_LOCK_GROUPS_CONFORMANCE(...) TEST_CASE_TEMPLATE_INVOKE(lock_two_groups, __VA_ARGS__)
