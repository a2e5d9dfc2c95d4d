// SPDX-License-Identifier: MIT
// The server's rate limiter (examples/ticketing_server/rate_limit.hpp) on a clock the test
// moves: a burst then refusals, the refill rate, lanes and keys apart, both keys required,
// the sweep's bound on memory, several threads at once; and which routes are in which lane.
#include "rate_limit.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace rate_limit_test {

using namespace std::chrono_literals;
using ticketing::RateKey;
using ticketing::RateLane;
using ticketing::RateLimiter;
using ticketing::RateLimits;

// A steady clock the test moves by hand.
struct TestClock {
    std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
    RateLimiter::Clock function() {
        return [this] { return now; };
    }
};

RateLimits only_buyer_writes(double per_second, double burst) {
    RateLimits limits;
    limits.buyer_writes = {per_second, burst};
    limits.buyer_reads = {0, 1};
    limits.address_writes = {0, 1};
    limits.address_reads = {0, 1};
    return limits;
}

// How many of `n` requests of `buyer` from `address` in `lane` are admitted.
int admitted(RateLimiter& limiter, int n, RateLane lane, const std::string& buyer,
             const std::string& address = "192.0.2.1") {
    int ok = 0;
    for (int i = 0; i < n; ++i) ok += limiter.admit(lane, buyer, address).allowed ? 1 : 0;
    return ok;
}

TEST_CASE("a buyer gets its burst, then refusals that say how long to wait") {
    TestClock clock;
    RateLimiter limiter(only_buyer_writes(5, 10), clock.function());
    CHECK(admitted(limiter, 10, RateLane::write, "alice") == 10);
    const auto refused = limiter.admit(RateLane::write, "alice", "192.0.2.1");
    CHECK_FALSE(refused.allowed);
    CHECK(refused.limited_by == RateKey::buyer);
    // One token at 5 a second: 200 ms.
    CHECK(refused.retry_after > 199ms);
    CHECK(refused.retry_after <= 200ms);
    // Refusals take nothing: still 200 ms.
    CHECK(limiter.admit(RateLane::write, "alice", "192.0.2.1").retry_after > 199ms);
}

TEST_CASE("tokens come back at the configured rate, up to the burst") {
    TestClock clock;
    RateLimiter limiter(only_buyer_writes(5, 10), clock.function());
    CHECK(admitted(limiter, 10, RateLane::write, "alice") == 10);
    clock.now += 100ms;  // half a token
    const auto half = limiter.admit(RateLane::write, "alice", "192.0.2.1");
    CHECK_FALSE(half.allowed);
    CHECK(half.retry_after > 99ms);
    CHECK(half.retry_after <= 100ms);
    clock.now += 100ms;  // one
    CHECK(admitted(limiter, 1, RateLane::write, "alice") == 1);
    CHECK(admitted(limiter, 1, RateLane::write, "alice") == 0);
    clock.now += 1s;  // five tokens
    CHECK(admitted(limiter, 10, RateLane::write, "alice") == 5);
    clock.now += 1h;  // full again, never more than the burst
    CHECK(admitted(limiter, 20, RateLane::write, "alice") == 10);
}

TEST_CASE("the lanes and the buyers draw on buckets of their own") {
    TestClock clock;
    RateLimits limits;
    limits.buyer_writes = {1, 3};
    limits.buyer_reads = {1, 5};
    RateLimiter limiter(limits, clock.function());
    CHECK(admitted(limiter, 10, RateLane::write, "alice") == 3);
    // Alice's writes took none of her reads, nor of Bob's writes.
    CHECK(admitted(limiter, 10, RateLane::read, "alice") == 5);
    CHECK(admitted(limiter, 10, RateLane::write, "bob") == 3);
    CHECK(admitted(limiter, 10, RateLane::read, "bob") == 5);
}

TEST_CASE(
    "a request passes both the buyer's and the address's bucket; a refusal takes from neither") {
    TestClock clock;
    RateLimits limits;
    limits.buyer_writes = {1, 3};
    limits.address_writes = {1, 4};
    limits.address_reads = {0, 1};  // no limit
    RateLimiter limiter(limits, clock.function());
    CHECK(admitted(limiter, 3, RateLane::write, "alice", "192.0.2.1") == 3);
    // Alice is refused by her own bucket; the address keeps its last token for Bob.
    const auto alice = limiter.admit(RateLane::write, "alice", "192.0.2.1");
    CHECK_FALSE(alice.allowed);
    CHECK(alice.limited_by == RateKey::buyer);
    CHECK(limiter.admit(RateLane::write, "bob", "192.0.2.1").allowed);
    // The address is out now: Carol, fresh, is refused by it, and keeps her tokens.
    const auto carol = limiter.admit(RateLane::write, "carol", "192.0.2.1");
    CHECK_FALSE(carol.allowed);
    CHECK(carol.limited_by == RateKey::address);
    CHECK(carol.retry_after > 999ms);
    CHECK(admitted(limiter, 3, RateLane::write, "carol", "192.0.2.2") == 3);
    // Without a buyer only the address applies.
    CHECK_FALSE(limiter.admit(RateLane::write, std::nullopt, "192.0.2.1").allowed);
    CHECK(limiter.admit(RateLane::write, std::nullopt, "192.0.2.3").allowed);
    // Reads of the address are not limited.
    CHECK(admitted(limiter, 100, RateLane::read, "dave", "192.0.2.1") == 40);  // dave's burst
}

TEST_CASE("a rate of 0 is no limit and keeps no bucket") {
    TestClock clock;
    RateLimiter limiter(only_buyer_writes(0, 1), clock.function());
    CHECK(admitted(limiter, 1000, RateLane::write, "alice") == 1000);
    CHECK(admitted(limiter, 1000, RateLane::read, "alice") == 1000);
    CHECK(limiter.buckets() == 0);
}

TEST_CASE("the sweep keeps a shard's buckets bounded") {
    TestClock clock;
    constexpr std::size_t per_shard = 64;
    constexpr std::size_t shards = 16;
    RateLimiter limiter(only_buyer_writes(10, 2), clock.function(), per_shard);
    // Buckets that refill to full are dropped: many buyers over time keep few buckets.
    for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < 200; ++i)
            CHECK(
                limiter
                    .admit(RateLane::write, "buyer-" + std::to_string(round * 200 + i), "192.0.2.1")
                    .allowed);
        clock.now += 1s;  // every bucket of this round is full again
    }
    CHECK(limiter.buckets() <= per_shard * shards);
    // Buckets not yet full are bounded too: the ones touched longest ago go.
    for (int i = 0; i < 20000; ++i) {
        limiter.admit(RateLane::write, "busy-" + std::to_string(i), "192.0.2.1");
        limiter.admit(RateLane::write, "busy-" + std::to_string(i), "192.0.2.1");
        clock.now += 1us;
    }
    CHECK(limiter.buckets() <= per_shard * shards);
    // The buyer touched last is still counted: its bucket is empty.
    CHECK_FALSE(limiter.admit(RateLane::write, "busy-19999", "192.0.2.1").allowed);
}

// Four threads, 1000 requests each, of one buyer they share and of buyers of their own,
// all from one address: the counts admitted are exact.
TEST_CASE("several threads at once take exactly the bursts of shared keys") {
    TestClock clock;  // never moves: no token comes back
    RateLimits limits;
    limits.buyer_writes = {1, 1000};
    limits.address_writes = {1, 3000};
    RateLimiter limiter(limits, clock.function(), 32);
    std::atomic<int> shared{0};
    std::atomic<int> own{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&limiter, &shared, &own, t] {
            for (int i = 0; i < 1000; ++i) {
                if (limiter.admit(RateLane::write, "shared", "192.0.2.1").allowed) ++shared;
                const std::string mine = "t" + std::to_string(t) + "-" + std::to_string(i);
                if (limiter.admit(RateLane::write, mine, "192.0.2.1").allowed) ++own;
            }
        });
    }
    for (auto& thread : threads) thread.join();
    // The address let exactly its burst through, the shared buyer at most its own.
    CHECK(shared.load() + own.load() == 3000);
    CHECK(shared.load() <= 1000);
    // Without the address's limit, the shared buyer gets exactly its burst.
    limits.address_writes = {0, 1};
    RateLimiter buyers_only(limits, clock.function(), 32);
    shared = 0;
    threads.clear();
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&buyers_only, &shared] {
            for (int i = 0; i < 1000; ++i)
                if (buyers_only.admit(RateLane::write, "shared", "192.0.2.1").allowed) ++shared;
        });
    }
    for (auto& thread : threads) thread.join();
    CHECK(shared.load() == 1000);
}

ticketing::HttpRequest request(boost::beast::http::verb verb, const std::string& target) {
    return ticketing::HttpRequest(verb, target, 11);
}

TEST_CASE("writes and reads are the routes the docs name; the rest are not limited") {
    using boost::beast::http::verb;
    for (const auto& write :
         std::vector<std::pair<verb, std::string>>{{verb::post, "/events/demo-game/holds"},
                                                   {verb::post, "/holds/t.1/extend"},
                                                   {verb::post, "/holds/t.1/confirm"},
                                                   {verb::delete_, "/holds/t.1"},
                                                   {verb::post, "/orders/o-1/cancel"}}) {
        CHECK(ticketing::rate_lane(request(write.first, write.second)) == RateLane::write);
    }
    for (const std::string target :
         {"/events", "/events/demo-game/seats?zone=lower-1", "/events/demo-game/stream",
          "/me/holds", "/me/orders?event=x"}) {
        CHECK(ticketing::rate_lane(request(verb::get, target)) == RateLane::read);
    }
    for (const std::string target : {"/healthz", "/readyz", "/metrics", "/", "/assets/app.js",
                                     "/openapi.json", "/nowhere", "/events/a/seats/b"}) {
        CHECK_FALSE(ticketing::rate_lane(request(verb::get, target)).has_value());
    }
    CHECK_FALSE(ticketing::rate_lane(request(verb::post, "/events")).has_value());
}

}  // namespace rate_limit_test
