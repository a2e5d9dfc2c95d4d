// SPDX-License-Identifier: MIT
// ReleasedTokens: how the in-process backends remember released holds by their token's
// random bits, for a fixed time; and that a store on the fake backend says so.
#include <seatlock/backends/fake.hpp>
#include <seatlock/detail/released_tokens.hpp>
#include <seatlock/hold_store.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace released_tokens_test {

using seatlock::detail::ReleasedTokens;
using seatlock::detail::TokenBits;

TEST_CASE("a token's bits are its 32 hex digits, whatever its event") {
    const auto bits = TokenBits::of("game1.0123456789abcdeffedcba9876543210");
    CHECK(bits.high == 0x0123456789abcdefULL);
    CHECK(bits.low == 0xfedcba9876543210ULL);
    CHECK(TokenBits::of("other.0123456789abcdeffedcba9876543210") == bits);
    CHECK(TokenBits::of("e.ffffffffffffffff0000000000000000") ==
          TokenBits{0xffffffffffffffffULL, 0});
}

TEST_CASE("a released token is remembered for exactly the memory, then forgotten") {
    ReleasedTokens released(120'000);
    const auto a = TokenBits::of("game1.a0000000000000000000000000000001");
    const auto b = TokenBits::of("game1.b0000000000000000000000000000002");
    released.insert(a, 1'000);
    released.insert(b, 50'000);
    CHECK(released.contains(a, 1'000));
    CHECK(released.contains(a, 120'999));
    CHECK_FALSE(released.contains(a, 121'000));
    CHECK(released.contains(b, 121'000));
    CHECK_FALSE(released.contains(TokenBits::of("game1.c0000000000000000000000000000003"), 2'000));
    released.forget(121'000);  // b is still due: nothing is dropped before its time
    CHECK(released.contains(b, 169'999));
    released.forget(170'000);
    CHECK(released.size() == 0);
    CHECK_FALSE(released.contains(b, 170'000));
}

TEST_CASE("ReleasedTokens agrees with a map of release times through growth, collisions and drops") {
    constexpr std::int64_t memory = 10'000;
    ReleasedTokens released(memory);
    // Token -> released at, by the 48 bits the set keeps.
    std::map<std::uint64_t, std::int64_t> model;
    auto key = [](const TokenBits& t) { return t.high >> 16; };
    std::mt19937_64 random(7);
    std::vector<TokenBits> inserted;
    std::int64_t now = 0;
    for (int step = 0; step < 300'000; ++step) {
        // Bursts and lulls: generations fill up, close by time, and shrink again.
        now += step % 50'000 < 40'000 ? static_cast<std::int64_t>(random() % 2)
                                       : static_cast<std::int64_t>(random() % 400);
        // Home bits from a small range: many tokens share a home slot and wrap around.
        const TokenBits t{random(), random() % 512};
        released.insert(t, now);
        model[key(t)] = now;
        inserted.push_back(t);
        if (step % 7 == 0) released.forget(now);
        if (step % 9973 == 0) {
            for (std::size_t i = inserted.size() > 5000 ? inserted.size() - 5000 : 0;
                 i < inserted.size(); ++i) {
                const TokenBits& u = inserted[i];
                REQUIRE(released.contains(u, now) == (model.at(key(u)) + memory > now));
            }
            CHECK_FALSE(released.contains(TokenBits{0x0123456789abcdefULL, 678}, now));
        }
    }
    released.forget(now);
    std::size_t alive = 0;
    for (const auto& [token, at] : model) alive += at + memory > now ? 1 : 0;
    // Whole generations are dropped: what is kept is what is due plus at most the
    // generations that straddle the end of the memory.
    CHECK(released.size() >= alive);
    CHECK(released.generations() <= 2 * 16 + released.size() / (3 * ReleasedTokens::max_slots / 4) + 2);
}

TEST_CASE("under steady traffic the memory keeps what is due and at most one generation more") {
    ReleasedTokens released(16'000);  // generations of 1 s
    std::mt19937_64 random(11);
    for (std::int64_t now = 0; now < 60'000; ++now) {
        for (int i = 0; i < 20; ++i) released.insert(TokenBits{random(), random()}, now);
        released.forget(now);
    }
    // 16 s of memory at 20,000 releases a second, in generations of at most 1 s.
    CHECK(released.size() >= 16 * 20'000);
    CHECK(released.size() <= 18 * 20'000);
    CHECK(released.generations() <= 18);
}

TEST_CASE("a released hold answers as released for 2 minutes after its release, then is unknown") {
    using namespace std::chrono_literals;
    seatlock::FakeBackend fake;
    seatlock::SeatHoldStore store(fake);
    REQUIRE(store.create_event({"game1", "game", {seatlock::ZoneSpec::named("floor", {{"A-1", "A"}})}}));
    auto hold = store.hold("game1", "ann", seatlock::named_seats("floor", {"A-1"}));
    REQUIRE(hold);
    REQUIRE(store.release(hold->token));
    // Enough later releases to file this one into a generation's table, some of them
    // after the first generation closed.
    for (int i = 0; i < 1000; ++i) {
        if (i == 500) fake.advance(30s);
        auto other = store.hold("game1", "bob", seatlock::named_seats("floor", {"A-1"}));
        REQUIRE(other);
        REQUIRE(store.release(other->token));
    }
    fake.advance(2min - 30s - 1ms);
    CHECK(store.release(hold->token));  // a retry, 1 ms before the memory ends
    CHECK(store.confirm(hold->token, "pay-1").is(seatlock::errc::hold_not_active));
    fake.advance(1ms);
    CHECK(store.release(hold->token).is(seatlock::errc::unknown_hold));
    CHECK(store.extend(hold->token, 1min).is(seatlock::errc::unknown_hold));
}

}  // namespace released_tokens_test
