// LockManager behaviour that needs FakeBackend's faults or its manual clock.
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using Fake = seatlock::FakeBackend;

namespace {
seatlock::LockOptions watched(seatlock::Millis lease, std::atomic<int>& lost_calls) {
    seatlock::LockOptions o;
    o.wait = 0ms;
    o.lease = lease;
    o.watchdog = true;
    o.on_lost = [&lost_calls](const std::vector<std::string>&) { ++lost_calls; };
    return o;
}
bool eventually(const std::function<bool()>& condition, seatlock::Millis within = 3s) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
        if (condition()) return true;
        std::this_thread::sleep_for(5ms);
    }
    return condition();
}
}  // namespace

TEST_CASE("the watchdog marks a guard lost and calls back when renewals keep failing") {
    Fake fake;
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, watched(300ms, lost));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.inject({Fake::Op::extend_locks, Fake::FaultKind::fail_before, 1000});
    // Renewals fail from now on; once the lease must have ended the guard gives up.
    CHECK(eventually([&] { return lost == 1; }));
    CHECK_FALSE(guard->owns());
    CHECK(fake.count(Fake::Op::extend_locks) >= 2);
    std::this_thread::sleep_for(300ms);
    CHECK(lost == 1);  // once only
}

TEST_CASE("the watchdog marks a guard lost when the storage says the lease is gone") {
    Fake fake;
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, watched(300ms, lost));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.advance(1s);  // the storage's clock passes the lease before any renewal
    seatlock::LockManager other(fake);
    auto thief = other.try_lock("game1:A-1");
    REQUIRE(thief);
    CHECK(eventually([&] { return lost == 1; }));
    CHECK_FALSE(guard->owns());
    CHECK(thief->owns());
}

TEST_CASE("an on_lost callback may unlock its own guard") {
    Fake fake;
    std::atomic<int> lost{0};
    std::optional<seatlock::SingleLock<Fake>> guard;
    seatlock::LockOptions o = watched(300ms, lost);
    o.on_lost = [&](const std::vector<std::string>&) {
        auto unlocked = guard->unlock();  // from the watchdog thread, inside the renewal
        if (unlocked && !*unlocked) ++lost;
    };
    seatlock::LockManager locks(fake, o);
    auto taken = locks.try_lock("game1:A-1");
    REQUIRE(taken);
    guard.emplace(std::move(*taken));
    fake.advance(1s);
    CHECK(eventually([&] { return lost == 1; }));
}

TEST_CASE("a lost reply on acquire is settled by asking again with the same owner") {
    Fake fake;
    seatlock::LockManager locks(fake);
    fake.inject({Fake::Op::acquire_locks, Fake::FaultKind::lose_reply});
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    CHECK(fake.count(Fake::Op::acquire_locks) == 2);
    auto released = guard->unlock();
    REQUIRE(released);
    CHECK(*released);
}

TEST_CASE("a storage error on acquire is returned, not retried until wait runs out") {
    Fake fake;
    seatlock::LockManager locks(fake);
    fake.inject({Fake::Op::acquire_locks, Fake::FaultKind::fail_before});
    auto guard = locks.lock("game1:A-1");
    CHECK(guard.is(seatlock::errc::io_error));
    CHECK(fake.count(Fake::Op::acquire_locks) == 1);
}

TEST_CASE("unlock reports storage errors; the destructor hands them to on_release_error") {
    Fake fake;
    std::atomic<int> reported{0};
    seatlock::LockOptions o;
    o.on_release_error = [&](const seatlock::Failure& f) {
        if (f.is(seatlock::errc::io_error)) ++reported;
    };
    seatlock::LockManager locks(fake, o);
    {
        auto guard = locks.try_lock("game1:A-1");
        REQUIRE(guard);
        fake.inject({Fake::Op::release_locks, Fake::FaultKind::fail_before});
        auto unlocked = guard->unlock();
        CHECK(unlocked.is(seatlock::errc::io_error));
    }
    CHECK(reported == 0);  // unlock() already reported it to the caller
    {
        auto guard = locks.try_lock("game1:B-1");
        REQUIRE(guard);
        fake.inject({Fake::Op::release_locks, Fake::FaultKind::fail_before});
    }
    CHECK(reported == 1);
}

TEST_CASE("guards are move-only and release exactly once") {
    Fake fake;
    seatlock::LockManager locks(fake);
    static_assert(!std::is_copy_constructible_v<seatlock::SingleLock<Fake>>);
    static_assert(std::is_nothrow_move_constructible_v<seatlock::MultiLock<Fake>>);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    seatlock::SingleLock<Fake> moved = std::move(*guard);
    CHECK(moved.key() == "game1:A-1");
    CHECK(moved.owns());
    CHECK(locks.try_lock("game1:A-1").is(seatlock::errc::lock_busy));
    auto unlocked = moved.unlock();
    REQUIRE(unlocked);
    CHECK(*unlocked);
    CHECK(fake.count(Fake::Op::release_locks) == 1);
}

TEST_CASE("a guard without a watchdog stops claiming ownership when its lease ends locally") {
    seatlock::MemoryBackend memory;
    seatlock::LockOptions o;
    o.lease = 100ms;
    seatlock::LockManager locks(memory, o);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    CHECK(guard->owns());
    std::this_thread::sleep_for(150ms);
    CHECK_FALSE(guard->owns());
}

TEST_CASE("bad LockOptions are refused at construction") {
    Fake fake;
    seatlock::LockOptions o;
    o.lease = 0ms;
    CHECK_THROWS_AS(seatlock::LockManager(fake, o), seatlock::Error);
    o.lease = 1s;
    o.backoff_max = 1ms;
    o.backoff_min = 5ms;
    CHECK_THROWS_AS(seatlock::LockManager(fake, o), seatlock::Error);
}
