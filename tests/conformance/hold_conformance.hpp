// SPDX-License-Identifier: MIT
// tests/conformance/hold_conformance.hpp: the seat-hold rules every backend must keep.
// Instantiate with SEATLOCK_HOLD_CONFORMANCE(Fixture) in one .cpp per backend.
//
// Durations are short (hundreds of milliseconds) so that the same test runs on manual
// clocks (instant) and real clocks (sleeps).
#pragma once

#include "fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace seatlock::testing {
using namespace std::chrono_literals;

/// Zone "lower": rows A and B of six seats (A-1..A-6, B-1..B-6); "bleachers": 100 places.
inline EventSpec test_event(std::string id = "game1", std::int64_t bleachers = 100) {
    std::vector<SeatSpec> seats;
    for (const char* row : {"A", "B"}) {
        for (int n = 1; n <= 6; ++n) seats.push_back({std::string(row) + "-" + std::to_string(n), row});
    }
    return EventSpec{std::move(id), "Test game",
                     {ZoneSpec::named("lower", std::move(seats)),
                      ZoneSpec::general_admission("bleachers", bleachers)}};
}

inline HoldPolicy test_policy() {
    HoldPolicy p;
    p.hold_ttl = 10min;
    return p;
}

/// The state of one named seat.
template <typename S>
SeatState state_of(S& store, const std::string& event, const std::string& zone,
                   const std::string& seat) {
    auto zones = store.seats(event, zone).value();
    for (const auto& s : zones.at(0).seats) {
        if (s.id == seat) return s.state;
    }
    FAIL("no seat " << seat);
    return SeatState::free;
}

template <typename F>
struct HoldWorld {
    F f;
    seatlock::testing::Store<F> store;
    explicit HoldWorld(HoldPolicy policy = test_policy()) : store(f.backend(), policy) {
        store.create_event(test_event()).value();
    }
    SeatState state(const std::string& seat) { return state_of(store, "game1", "lower", seat); }
};

}  // namespace seatlock::testing

using seatlock::errc;
using seatlock::named_seats;
using namespace std::chrono_literals;

TEST_CASE_TEMPLATE_DEFINE("ten holders racing for one seat: one hold, nine seat_taken naming it", F,
                          hold_race_one_seat) {
    seatlock::testing::HoldWorld<F> w;
    std::atomic<int> ok{0}, taken{0}, other{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 10; ++i) {
        threads.emplace_back([&, i] {
            auto h = w.store.hold("game1", "buyer-" + std::to_string(i), named_seats("lower", {"A-1"}));
            if (h) ++ok;
            else if (h.is(errc::seat_taken) && h.error().items == std::vector<std::string>{"A-1"}) ++taken;
            else ++other;
        });
    }
    for (auto& t : threads) t.join();
    CHECK(ok == 1);
    CHECK(taken == 9);
    CHECK(other == 0);
}

TEST_CASE_TEMPLATE_DEFINE("a three-seat hold with one seat taken fails whole", F, hold_all_or_nothing) {
    seatlock::testing::HoldWorld<F> w;
    REQUIRE(w.store.hold("game1", "bob", named_seats("lower", {"A-2"})));
    auto h = w.store.hold("game1", "alice", named_seats("lower", {"A-1", "A-2", "A-3"}));
    REQUIRE(h.is(errc::seat_taken));
    CHECK(h.error().items == std::vector<std::string>{"A-2"});
    CHECK(w.state("A-1") == seatlock::SeatState::free);
    CHECK(w.state("A-3") == seatlock::SeatState::free);
    auto zone = w.store.seats("game1", "lower").value().at(0);
    CHECK(zone.held == 1);
    CHECK(zone.free == 11);
}

TEST_CASE_TEMPLATE_DEFINE("a holder with two seats asking for two more exceeds the limit of three", F,
                          hold_limit_exceeded) {
    seatlock::testing::HoldWorld<F> w;
    REQUIRE(w.store.hold("game1", "carol", named_seats("lower", {"A-1", "A-2"})));
    auto h = w.store.hold("game1", "carol", named_seats("lower", {"B-1", "B-2"}));
    REQUIRE(h.is(errc::limit_exceeded));
    CHECK(h.error().limit == 3);
    CHECK(h.error().current == 2);
    CHECK(w.state("B-1") == seatlock::SeatState::free);
    // Paid seats count as well.
    auto one = w.store.hold("game1", "carol", named_seats("lower", {"B-3"}));
    REQUIRE(one);
    REQUIRE(w.store.confirm(one->token, "order-c1"));
    CHECK(w.store.hold("game1", "carol", seatlock::quantity("bleachers", 1)).is(errc::limit_exceeded));
}

TEST_CASE_TEMPLATE_DEFINE("sixteen concurrent single-seat holds of one holder end with exactly three", F,
                          hold_limit_concurrent) {
    seatlock::testing::HoldWorld<F> w;
    std::atomic<int> ok{0}, limited{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 16; ++i) {
        threads.emplace_back([&, i] {
            const std::string seat = std::string(i < 6 ? "A-" : "B-") + std::to_string(i % 6 + 1);
            auto h = i < 12 ? w.store.hold("game1", "dave", named_seats("lower", {seat}))
                            : w.store.hold("game1", "dave", seatlock::quantity("bleachers", 1));
            if (h) ++ok;
            else if (h.is(errc::limit_exceeded)) ++limited;
        });
    }
    for (auto& t : threads) t.join();
    CHECK(ok == 3);
    CHECK(limited == 13);
    auto zones = w.store.seats("game1").value();
    CHECK(zones.at(0).held + zones.at(1).held == 3);
}

TEST_CASE_TEMPLATE_DEFINE("one active hold per holder when the policy says so", F, hold_one_active) {
    auto policy = seatlock::testing::test_policy();
    policy.one_active_hold_per_holder = true;
    seatlock::testing::HoldWorld<F> w(policy);
    auto first = w.store.hold("game1", "erin", named_seats("lower", {"A-1"}));
    REQUIRE(first);
    CHECK(w.store.hold("game1", "erin", named_seats("lower", {"A-2"})).is(errc::active_hold_exists));
    REQUIRE(w.store.release(first->token));
    CHECK(w.store.hold("game1", "erin", named_seats("lower", {"A-2"})));
}

TEST_CASE_TEMPLATE_DEFINE("GA capacity 100: 200 concurrent holds, exactly 100 succeed, then sold_out", F,
                          hold_ga_capacity) {
    seatlock::testing::HoldWorld<F> w;
    std::mutex mutex;
    std::vector<seatlock::Hold> holds;
    std::atomic<int> sold_out{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            for (int i = t; i < 200; i += 8) {
                auto h = w.store.hold("game1", "fan-" + std::to_string(i), seatlock::quantity("bleachers", 1));
                if (h) {
                    std::lock_guard lock(mutex);
                    holds.push_back(*h);
                } else if (h.is(errc::sold_out)) {
                    ++sold_out;
                    if (h.error().current != 0) ++other;
                } else {
                    ++other;
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    REQUIRE(holds.size() == 100);
    CHECK(sold_out == 100);
    CHECK(other == 0);
    std::set<std::string> places;
    for (const auto& h : holds) places.insert(h.seats.at(0));
    CHECK(places.size() == 100);  // every place assigned once
    auto more = w.store.hold("game1", "late-fan", seatlock::quantity("bleachers", 2));
    REQUIRE(more.is(errc::sold_out));
    CHECK(more.error().current == 0);
    REQUIRE(w.store.release(holds[0].token));
    REQUIRE(w.store.release(holds[1].token));
    auto again = w.store.hold("game1", "late-fan", seatlock::quantity("bleachers", 2));
    REQUIRE(again);
    CHECK(again->seats.size() == 2);
    auto ga = w.store.seats("game1", "bleachers").value().at(0);
    CHECK(ga.capacity == 100);
    CHECK(ga.held == 100);
    CHECK(ga.free == 0);
}

TEST_CASE_TEMPLATE_DEFINE("GA sold_out counts released and never-taken places exactly", F,
                          hold_ga_free_count) {
    auto policy = seatlock::testing::test_policy();
    policy.max_seats_per_holder = 0;
    seatlock::testing::HoldWorld<F> w(policy);
    REQUIRE(w.store.create_event(seatlock::testing::test_event("small", 5)));
    auto a = w.store.hold("small", "a", seatlock::quantity("bleachers", 2));
    auto b = w.store.hold("small", "b", seatlock::quantity("bleachers", 1));
    REQUIRE(a);
    REQUIRE(b);
    // Place 3 released, 4 and 5 never taken: 3 free, fewer than asked.
    REQUIRE(w.store.release(b->token));
    auto four = w.store.hold("small", "c", seatlock::quantity("bleachers", 4));
    REQUIRE(four.is(errc::sold_out));
    CHECK(four.error().current == 3);
    // 1, 2 and 3 released, 4 and 5 never taken.
    REQUIRE(w.store.release(a->token));
    auto six = w.store.hold("small", "c", seatlock::quantity("bleachers", 6));
    REQUIRE(six.is(errc::sold_out));
    CHECK(six.error().current == 5);
    auto all = w.store.hold("small", "c", seatlock::quantity("bleachers", 5));
    REQUIRE(all);
    CHECK(std::set<std::string>(all->seats.begin(), all->seats.end()) ==
          std::set<std::string>{"1", "2", "3", "4", "5"});
    auto none = w.store.hold("small", "d", seatlock::quantity("bleachers", 1));
    REQUIRE(none.is(errc::sold_out));
    CHECK(none.error().current == 0);
    auto zone = w.store.seats("small", "bleachers").value().at(0);
    CHECK(zone.held == 5);
    CHECK(zone.free == 0);
}

TEST_CASE_TEMPLATE_DEFINE("best_available picks adjacent seats in one row when a run exists", F,
                          hold_best_available_adjacent) {
    seatlock::testing::HoldWorld<F> w;
    REQUIRE(w.store.hold("game1", "gina", named_seats("lower", {"A-2"})));
    auto best = w.store.hold("game1", "hank", seatlock::best_available("lower", 3));
    REQUIRE(best);
    CHECK(best->seats == std::vector<std::string>{"A-3", "A-4", "A-5"});
    // Row A has only left: no run of 2 there, B has one.
    auto pair = w.store.hold("game1", "ivan", seatlock::best_available("lower", 2));
    REQUIRE(pair);
    CHECK(pair->seats == std::vector<std::string>{"B-1", "B-2"});
}

TEST_CASE_TEMPLATE_DEFINE("best_available falls back to the lowest free seats when no run exists", F,
                          hold_best_available_fallback) {
    auto policy = seatlock::testing::test_policy();
    policy.max_seats_per_holder = 0;
    seatlock::testing::HoldWorld<F> w(policy);
    REQUIRE(w.store.hold("game1", "x", named_seats("lower", {"A-2", "A-4", "A-6", "B-2", "B-4", "B-6"})));
    auto best = w.store.hold("game1", "y", seatlock::best_available("lower", 4));
    REQUIRE(best);
    CHECK(best->seats == std::vector<std::string>{"A-1", "A-3", "A-5", "B-1"});
    CHECK(w.store.hold("game1", "z", seatlock::best_available("lower", 3)).is(errc::sold_out));
}

TEST_CASE_TEMPLATE_DEFINE("concurrent best_available requests never get the same seat", F,
                          hold_best_available_concurrent) {
    seatlock::testing::HoldWorld<F> w;
    std::mutex mutex;
    std::multiset<std::string> seats;
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&, t] {
            auto h = w.store.hold("game1", "pair-" + std::to_string(t), seatlock::best_available("lower", 2));
            REQUIRE(h);
            std::lock_guard lock(mutex);
            seats.insert(h->seats.begin(), h->seats.end());
        });
    }
    for (auto& t : threads) t.join();
    CHECK(seats.size() == 12);
    CHECK(std::set<std::string>(seats.begin(), seats.end()).size() == 12);
}

TEST_CASE_TEMPLATE_DEFINE("confirm makes seats paid for good and is idempotent per order id", F,
                          hold_confirm) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "jack", named_seats("lower", {"A-1", "A-2"}), 200ms);
    REQUIRE(h);
    auto order = w.store.confirm(h->token, "pay-1");
    REQUIRE(order);
    CHECK(order->id == "pay-1");
    CHECK(order->holder == "jack");
    CHECK(order->seats == std::vector<std::string>{"A-1", "A-2"});
    w.f.advance(F::manual_clock ? seatlock::Millis(24h * 365) : seatlock::Millis(300ms));
    CHECK(w.state("A-1") == seatlock::SeatState::paid);
    CHECK(w.store.hold("game1", "kate", named_seats("lower", {"A-1"})).is(errc::seat_taken));
    auto again = w.store.confirm(h->token, "pay-1");
    REQUIRE(again);
    CHECK(again->id == "pay-1");
    CHECK(again->seats == order->seats);
    CHECK(w.store.confirm(h->token, "pay-2").is(errc::order_conflict));
    auto other = w.store.hold("game1", "kate", named_seats("lower", {"B-1"}));
    REQUIRE(other);
    CHECK(w.store.confirm(other->token, "pay-1").is(errc::order_conflict));
    CHECK(w.store.release(h->token).is(errc::hold_not_active));
}

TEST_CASE_TEMPLATE_DEFINE("confirm after expiry is hold_expired; confirm_late re-takes free seats", F,
                          hold_confirm_late) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "liam", named_seats("lower", {"A-1", "A-2"}), 200ms);
    auto g = w.store.hold("game1", "mia", named_seats("lower", {"B-1"}), 200ms);
    REQUIRE(h);
    REQUIRE(g);
    w.f.advance(300ms);
    // Releasing an expired hold is harmless: its seats are free already.
    CHECK(w.store.release(g->token));
    auto late = w.store.confirm(h->token, "pay-9");
    REQUIRE(late.is(errc::hold_expired));
    auto order = w.store.confirm_late(h->token, "pay-9");
    REQUIRE(order);
    CHECK(order->seats == std::vector<std::string>{"A-1", "A-2"});
    CHECK(w.state("A-2") == seatlock::SeatState::paid);
    // mia's seat went to someone else meanwhile.
    REQUIRE(w.store.hold("game1", "noah", named_seats("lower", {"B-1"})));
    auto lost = w.store.confirm_late(g->token, "pay-10");
    REQUIRE(lost.is(errc::seat_taken));
    CHECK(lost.error().items == std::vector<std::string>{"B-1"});
}

TEST_CASE_TEMPLATE_DEFINE("an expired hold frees its seats at once and is reported until acknowledged",
                          F, hold_expiry_events) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "olga", named_seats("lower", {"A-5"}), 200ms);
    REQUIRE(h);
    CHECK(w.state("A-5") == seatlock::SeatState::held);
    w.f.advance(300ms);
    // No sweeper ran: the next holder gets the seat anyway.
    auto next = w.store.hold("game1", "pete", named_seats("lower", {"A-5"}));
    REQUIRE(next);
    auto events = w.store.expired(100, 200ms).value();
    REQUIRE(events.size() == 1);
    CHECK(events[0].token == h->token);
    CHECK(events[0].holder == "olga");
    CHECK(events[0].seats == std::vector<std::string>{"A-5"});
    CHECK(w.store.expired(100, 200ms).value().empty());  // delivered, waiting for an ack
    w.f.advance(300ms);
    auto redelivered = w.store.expired(100, 200ms).value();
    REQUIRE(redelivered.size() == 1);  // not acknowledged: delivered again
    CHECK(redelivered[0].token == h->token);
    std::vector<std::string> tokens{h->token};
    REQUIRE(w.store.ack_expired(tokens));
    w.f.advance(300ms);
    CHECK(w.store.expired(100, 0ms).value().empty());
}

TEST_CASE_TEMPLATE_DEFINE("holds that expired while nobody asked are all reported later", F,
                          hold_expiry_unobserved) {
    auto policy = seatlock::testing::test_policy();
    policy.max_seats_per_holder = 0;
    seatlock::testing::HoldWorld<F> w(policy);
    REQUIRE(w.store.create_event(seatlock::testing::test_event("game2")));
    std::set<std::string> tokens;
    for (int i = 0; i < 30; ++i) {
        const std::string holder = std::to_string(i).insert(0, "q");
        auto h = w.store.hold(i % 2 ? "game1" : "game2", holder, seatlock::quantity("bleachers", 1),
                              200ms);
        REQUIRE(h);
        tokens.insert(h->token);
    }
    w.f.advance(300ms);
    std::set<std::string> seen;
    for (int round = 0; round < 10 && seen.size() < tokens.size(); ++round) {
        auto batch = w.store.expired(7, std::chrono::minutes(5)).value();
        std::vector<std::string> acks;
        for (const auto& e : batch) {
            seen.insert(e.token);
            acks.push_back(e.token);
        }
        REQUIRE(w.store.ack_expired(acks));
    }
    CHECK(seen == tokens);
}

TEST_CASE_TEMPLATE_DEFINE("release frees the seats; releasing again succeeds, paying it is refused", F,
                          hold_release) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "rita", named_seats("lower", {"B-5", "B-6"}));
    REQUIRE(h);
    REQUIRE(w.store.release(h->token));
    CHECK(w.state("B-5") == seatlock::SeatState::free);
    CHECK(w.store.release(h->token));  // a retry: the hold is remembered as released
    CHECK(w.store.confirm(h->token, "pay-r").is(errc::hold_not_active));
    CHECK(w.store.extend(h->token, 1min).is(errc::hold_not_active));
    CHECK(w.store.hold("game1", "sam", named_seats("lower", {"B-5", "B-6"})));
    CHECK(w.store.release("game1.0123456789abcdef0123456789abcdef").is(errc::unknown_hold));
    CHECK(w.store.release("nonsense").is(errc::unknown_hold));
}

TEST_CASE_TEMPLATE_DEFINE("cancel frees paid seats; wrong holder and unknown order are refused", F,
                          hold_cancel) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "tom", named_seats("lower", {"A-3"}));
    REQUIRE(h);
    REQUIRE(w.store.confirm(h->token, "pay-t"));
    CHECK(w.store.cancel("game1", "pay-t", std::string("ursula")).is(errc::not_owner));
    CHECK(w.state("A-3") == seatlock::SeatState::paid);
    CHECK(w.store.cancel("game1", "no-such-order").is(errc::unknown_order));
    CHECK(w.store.cancel("game9", "pay-t").is(errc::unknown_event));
    auto cancelled = w.store.cancel("game1", "pay-t", std::string("tom"));
    REQUIRE(cancelled);
    CHECK(cancelled->cancelled);
    CHECK(w.state("A-3") == seatlock::SeatState::free);
    CHECK(w.store.cancel("game1", "pay-t"));  // again: the same answer
    // The cancelled seats no longer count against tom's limit.
    CHECK(w.store.hold("game1", "tom", named_seats("lower", {"B-1", "B-2", "B-3"})));
}

TEST_CASE_TEMPLATE_DEFINE("extend is capped at the hold's maximum lifetime", F, hold_extend_capped) {
    auto policy = seatlock::testing::test_policy();
    policy.hold_ttl = 200ms;
    policy.max_hold_lifetime = 600ms;
    seatlock::testing::HoldWorld<F> w(policy);
    auto h = w.store.hold("game1", "vera", named_seats("lower", {"A-6"}));
    REQUIRE(h);
    const auto created = h->expires_at - std::chrono::milliseconds(200);
    w.f.advance(100ms);
    auto longer = w.store.extend(h->token, std::chrono::hours(1));
    REQUIRE(longer);
    const auto cap = created + std::chrono::milliseconds(600);
    CHECK(std::chrono::abs(longer->expires_at - cap) < std::chrono::milliseconds(60));
    w.f.advance(400ms);  // 500 ms after creation: still held thanks to the extension
    CHECK(w.state("A-6") == seatlock::SeatState::held);
    w.f.advance(200ms);  // 700 ms: past the cap
    CHECK(w.state("A-6") == seatlock::SeatState::free);
    CHECK(w.store.extend(h->token, 1s).is(errc::hold_expired));
}

TEST_CASE_TEMPLATE_DEFINE("unknown events, zones and seats are clear errors that change nothing", F,
                          hold_unknown_inventory) {
    seatlock::testing::HoldWorld<F> w;
    CHECK(w.store.hold("nope", "w", named_seats("lower", {"A-1"})).is(errc::unknown_event));
    CHECK(w.store.hold("game1", "w", named_seats("upper", {"A-1"})).is(errc::unknown_zone));
    auto seat = w.store.hold("game1", "w", named_seats("lower", {"A-1", "Z-9"}));
    REQUIRE(seat.is(errc::unknown_seat));
    CHECK(seat.error().items == std::vector<std::string>{"Z-9"});
    CHECK(w.store.hold("game1", "w", seatlock::quantity("lower", 1)).is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "w", named_seats("bleachers", {"1"})).is(errc::invalid_argument));
    CHECK(w.state("A-1") == seatlock::SeatState::free);
    CHECK(w.store.seats("nope").is(errc::unknown_event));
    CHECK(w.store.seats("game1", std::string("upper")).is(errc::unknown_zone));
}

TEST_CASE_TEMPLATE_DEFINE("bad input is refused before it reaches storage", F, hold_bad_input) {
    seatlock::testing::HoldWorld<F> w;
    CHECK(w.store.hold("game1", "w", named_seats("lower", {"A-1", "A-1"})).is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "w", named_seats("lower", {})).is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "w x", named_seats("lower", {"A-1"})).is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "w", named_seats("lower", {"A:1"})).is(errc::invalid_argument));
    CHECK(w.store.hold("game{1}", "w", named_seats("lower", {"A-1"})).is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "w", seatlock::quantity("bleachers", 0)).is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "w", seatlock::quantity("bleachers", -3)).is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "w", named_seats("lower", {"A-1"}), 0ms).is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "w", named_seats("lower", {"A-1"}), 3h).is(errc::invalid_argument));
    CHECK(w.state("A-1") == seatlock::SeatState::free);
    auto zones = w.store.seats("game1").value();
    CHECK(zones.at(0).held + zones.at(1).held == 0);
}

TEST_CASE_TEMPLATE_DEFINE("create_event accepts the same spec again and refuses a different one", F,
                          hold_create_event) {
    seatlock::testing::HoldWorld<F> w;
    CHECK(w.store.create_event(seatlock::testing::test_event()));
    CHECK(w.store.create_event(seatlock::testing::test_event("game1", 50)).is(errc::event_exists));
    auto bad = seatlock::testing::test_event("game3");
    bad.zones.push_back(bad.zones.front());
    CHECK(w.store.create_event(bad).is(errc::invalid_argument));
    auto events = w.store.events().value();
    REQUIRE(events.size() == 1);
    CHECK(events[0] == seatlock::testing::test_event());
}

#define SEATLOCK_HOLD_CONFORMANCE(...)                                   \
    TEST_CASE_TEMPLATE_INVOKE(hold_race_one_seat, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(hold_all_or_nothing, __VA_ARGS__);         \
    TEST_CASE_TEMPLATE_INVOKE(hold_limit_exceeded, __VA_ARGS__);         \
    TEST_CASE_TEMPLATE_INVOKE(hold_limit_concurrent, __VA_ARGS__);       \
    TEST_CASE_TEMPLATE_INVOKE(hold_one_active, __VA_ARGS__);             \
    TEST_CASE_TEMPLATE_INVOKE(hold_ga_capacity, __VA_ARGS__);            \
    TEST_CASE_TEMPLATE_INVOKE(hold_ga_free_count, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(hold_best_available_adjacent, __VA_ARGS__); \
    TEST_CASE_TEMPLATE_INVOKE(hold_best_available_fallback, __VA_ARGS__); \
    TEST_CASE_TEMPLATE_INVOKE(hold_best_available_concurrent, __VA_ARGS__); \
    TEST_CASE_TEMPLATE_INVOKE(hold_confirm, __VA_ARGS__);                \
    TEST_CASE_TEMPLATE_INVOKE(hold_confirm_late, __VA_ARGS__);           \
    TEST_CASE_TEMPLATE_INVOKE(hold_expiry_events, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(hold_expiry_unobserved, __VA_ARGS__);      \
    TEST_CASE_TEMPLATE_INVOKE(hold_release, __VA_ARGS__);                \
    TEST_CASE_TEMPLATE_INVOKE(hold_cancel, __VA_ARGS__);                 \
    TEST_CASE_TEMPLATE_INVOKE(hold_extend_capped, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(hold_unknown_inventory, __VA_ARGS__);      \
    TEST_CASE_TEMPLATE_INVOKE(hold_bad_input, __VA_ARGS__);              \
    TEST_CASE_TEMPLATE_INVOKE(hold_create_event, __VA_ARGS__)
