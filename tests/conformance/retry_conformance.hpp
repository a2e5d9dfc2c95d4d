// SPDX-License-Identifier: MIT
// tests/conformance/retry_conformance.hpp: the rules that make every call safe to retry
// and a storage loss visible and repairable, on every backend: idempotency keys, and the
// recovery of an event the storage lost. Instantiate with SEATLOCK_RETRY_CONFORMANCE(Fixture).
#pragma once

#include "hold_conformance.hpp"

namespace seatlock::testing {

inline RestoreCommand restored(std::string order, std::string holder, std::string zone,
                               std::vector<std::string> seats, std::string token,
                               std::string event = "game1") {
    return RestoreCommand{event,           std::move(order), std::move(holder),
                          std::move(zone), std::move(seats), std::move(token),
                          WallTime(std::chrono::seconds(1767225600))};
}

inline HoldOptions keyed(std::string key) {
    return HoldOptions{std::nullopt, std::move(key)};
}

}  // namespace seatlock::testing

TEST_CASE_TEMPLATE_DEFINE("the same idempotency key returns the same hold, never a second one", F,
                          retry_idempotency_key) {
    using seatlock::testing::keyed;
    seatlock::testing::HoldWorld<F> w;
    auto first = w.store.hold("game1", "ada", named_seats("lower", {"A-1", "A-2"}), keyed("k-1"));
    REQUIRE(first);
    CHECK_FALSE(first->replayed);
    CHECK(first->status == seatlock::HoldStatus::held);
    // Two seats held; a second hold of them would be seat_taken, a third seat
    // limit_exceeded: the key answers with the first hold instead.
    for (int i = 0; i < 3; ++i) {
        auto again = w.store.hold("game1", "ada", named_seats("lower", {"A-2", "A-1"}), keyed("k-1"));
        REQUIRE(again);
        CHECK(again->replayed);
        CHECK(again->token == first->token);
        CHECK(again->seats == first->seats);
        CHECK(again->status == seatlock::HoldStatus::held);
    }
    auto zone = w.store.seats("game1", "lower").value().at(0);
    CHECK(zone.held == 2);
    // Keys belong to their holder: another holder's same key is another hold.
    auto other = w.store.hold("game1", "bea", named_seats("lower", {"B-1"}), keyed("k-1"));
    REQUIRE(other);
    CHECK_FALSE(other->replayed);
    CHECK(other->token != first->token);
    // Quantities replay too.
    auto places = w.store.hold("game1", "bea", seatlock::quantity("bleachers", 2), keyed("k-2"));
    REQUIRE(places);
    auto replay = w.store.hold("game1", "bea", seatlock::quantity("bleachers", 2), keyed("k-2"));
    REQUIRE(replay);
    CHECK(replay->token == places->token);
    CHECK(replay->seats == places->seats);
}

TEST_CASE_TEMPLATE_DEFINE("an idempotency key used for other seats is refused and changes nothing", F,
                          retry_idempotency_mismatch) {
    using seatlock::testing::keyed;
    seatlock::testing::HoldWorld<F> w;
    REQUIRE(w.store.hold("game1", "cy", named_seats("lower", {"A-3"}), keyed("order-7")));
    CHECK(w.store.hold("game1", "cy", named_seats("lower", {"A-4"}), keyed("order-7"))
              .is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "cy", seatlock::quantity("bleachers", 1), keyed("order-7"))
              .is(errc::invalid_argument));
    CHECK(w.store.hold("game1", "cy", named_seats("lower", {"A-4"}), keyed("bad key"))
              .is(errc::invalid_argument));
    CHECK(w.state("A-4") == seatlock::SeatState::free);
}

TEST_CASE_TEMPLATE_DEFINE("a replayed idempotency key tells what became of its hold", F,
                          retry_idempotency_status) {
    using seatlock::testing::keyed;
    auto policy = seatlock::testing::test_policy();
    policy.hold_ttl = 200ms;
    seatlock::testing::HoldWorld<F> w(policy);
    auto paid = w.store.hold("game1", "dan", named_seats("lower", {"A-5"}), keyed("pay-it"));
    REQUIRE(paid);
    REQUIRE(w.store.confirm(paid->token, "order-dan"));
    auto replay = w.store.hold("game1", "dan", named_seats("lower", {"A-5"}), keyed("pay-it"));
    REQUIRE(replay);
    CHECK(replay->status == seatlock::HoldStatus::confirmed);
    CHECK(replay->order_id == "order-dan");

    auto given_back = w.store.hold("game1", "dan", named_seats("lower", {"A-6"}), keyed("give-back"));
    REQUIRE(given_back);
    REQUIRE(w.store.release(given_back->token));
    replay = w.store.hold("game1", "dan", named_seats("lower", {"A-6"}), keyed("give-back"));
    REQUIRE(replay);
    CHECK(replay->status == seatlock::HoldStatus::released);
    CHECK(w.state("A-6") == seatlock::SeatState::free);

    auto left = w.store.hold("game1", "dan", named_seats("lower", {"B-6"}), keyed("left"));
    REQUIRE(left);
    w.f.advance(300ms);
    replay = w.store.hold("game1", "dan", named_seats("lower", {"B-6"}), keyed("left"));
    REQUIRE(replay);
    CHECK(replay->status == seatlock::HoldStatus::expired);
    CHECK(w.state("B-6") == seatlock::SeatState::free);
}

TEST_CASE_TEMPLATE_DEFINE("an event the storage lost is storage_lost to a store that knew it", F,
                          retry_storage_lost) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "eve", named_seats("lower", {"A-1"}));
    REQUIRE(h);
    w.f.lose_data();
    CHECK(w.store.hold("game1", "eve", named_seats("lower", {"A-2"})).is(errc::storage_lost));
    CHECK(w.store.release(h->token).is(errc::storage_lost));
    CHECK(w.store.confirm(h->token, "pay-e").is(errc::storage_lost));
    CHECK(w.store.seats("game1").is(errc::storage_lost));
    CHECK(w.store.cancel("game1", "pay-e").is(errc::storage_lost));
    // A store that never saw the event cannot tell: it was never created, for all it knows.
    seatlock::testing::Store<F> newcomer(w.f.backend());
    CHECK(newcomer.hold("game1", "eve", named_seats("lower", {"A-2"})).is(errc::unknown_event));
    CHECK(newcomer.release(h->token).is(errc::unknown_hold));
}

TEST_CASE_TEMPLATE_DEFINE("a lost event is recovered hidden, its orders restored, then shown", F,
                          retry_recovery) {
    using seatlock::testing::restored;
    seatlock::testing::HoldWorld<F> w;
    auto named = w.store.hold("game1", "fay", named_seats("lower", {"A-1", "A-2"}));
    auto places = w.store.hold("game1", "gil", seatlock::quantity("bleachers", 3));
    REQUIRE(named);
    REQUIRE(places);
    REQUIRE(w.store.confirm(named->token, "order-fay"));
    REQUIRE(w.store.confirm(places->token, "order-gil"));
    w.f.lose_data();

    REQUIRE(w.store.recover_event(seatlock::testing::test_event()).value() ==
            seatlock::Recovery::created);
    // Hidden until shown: nothing can be sold before the orders are back.
    CHECK(w.store.hold("game1", "hal", named_seats("lower", {"A-1"})).is(errc::storage_lost));
    CHECK(w.store.events().value().empty());
    CHECK(w.store.recover_event(seatlock::testing::test_event()).value() ==
          seatlock::Recovery::existed);

    auto fay = w.store.restore_order(
        restored("order-fay", "fay", "lower", {"A-1", "A-2"}, named->token));
    REQUIRE(fay);
    CHECK(fay->seats == std::vector<std::string>{"A-1", "A-2"});
    // A half-restored event is not read either: its map would show paid seats free.
    CHECK(w.store.seats("game1").is(errc::storage_lost));
    CHECK(w.store.seats("game1", "lower").is(errc::storage_lost));
    CHECK(w.store.restore_order(restored("order-fay", "fay", "lower", {"A-1", "A-2"}, named->token)));
    auto gil = w.store.restore_order(restored("order-gil", "gil", "bleachers", places->seats,
                                              places->token));
    REQUIRE(gil);
    // Another order cannot take restored seats; bad input is refused.
    auto clash = w.store.restore_order(restored("order-x", "ivy", "lower", {"A-2"},
                                                "game1.0123456789abcdef0123456789abcdef"));
    REQUIRE(clash.is(errc::seat_taken));
    CHECK(clash.error().items == std::vector<std::string>{"A-2"});
    CHECK(w.store.restore_order(restored("order-y", "ivy", "lower", {"A-3", "A-3"},
                                         "game1.0123456789abcdef0123456789abcdef"))
              .is(errc::invalid_argument));
    CHECK(w.store.restore_order(restored("order-z", "ivy", "lower", {"Q-9"},
                                         "game1.0123456789abcdef0123456789abcdef"))
              .is(errc::unknown_seat));
    REQUIRE(w.store.finish_recovery("game1"));

    CHECK(w.store.events().value().size() == 1);
    CHECK(w.state("A-1") == seatlock::SeatState::paid);
    CHECK(w.state("A-3") == seatlock::SeatState::free);
    auto zones = w.store.seats("game1").value();
    CHECK(zones.at(1).paid == 3);
    CHECK(zones.at(1).free == 97);
    // A retried confirm finds its order; the order cancels; limits count restored seats.
    auto again = w.store.confirm(named->token, "order-fay");
    REQUIRE(again);
    CHECK(again->id == "order-fay");
    CHECK(w.store.hold("game1", "fay", named_seats("lower", {"B-1", "B-2"})).is(errc::limit_exceeded));
    REQUIRE(w.store.cancel("game1", "order-fay", std::string("fay")));
    CHECK(w.state("A-1") == seatlock::SeatState::free);
    // General-admission places after the restored ones are still handed out, lowest first.
    auto more = w.store.hold("game1", "jo", seatlock::quantity("bleachers", 2));
    REQUIRE(more);
    for (const auto& place : more->seats) {
        CHECK(std::find(places->seats.begin(), places->seats.end(), place) == places->seats.end());
    }
}

TEST_CASE_TEMPLATE_DEFINE("restoring a general-admission place beyond those handed out keeps the rest free",
                          F, retry_recovery_ga_gap) {
    using seatlock::testing::restored;
    seatlock::testing::HoldWorld<F> w;
    w.f.lose_data();
    REQUIRE(w.store.recover_event(seatlock::testing::test_event()));
    REQUIRE(w.store.restore_order(restored("order-k", "kim", "bleachers", {"5", "7"},
                                           "game1.00000000000000000000000000000001")));
    REQUIRE(w.store.finish_recovery("game1"));
    auto zone = w.store.seats("game1", std::string("bleachers")).value().at(0);
    CHECK(zone.paid == 2);
    CHECK(zone.free == 98);
    auto h = w.store.hold("game1", "lee", seatlock::quantity("bleachers", 3));
    REQUIRE(h);
    CHECK(h->seats == std::vector<std::string>{"1", "2", "3"});
    auto next = w.store.hold("game1", "mo", seatlock::quantity("bleachers", 3));
    REQUIRE(next);
    CHECK(next->seats == std::vector<std::string>{"4", "6", "8"});
}

TEST_CASE_TEMPLATE_DEFINE("recovering a live event leaves it open and refuses held seats", F,
                          retry_recovery_live) {
    using seatlock::testing::restored;
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "ned", named_seats("lower", {"B-4"}));
    REQUIRE(h);
    REQUIRE(w.store.recover_event(seatlock::testing::test_event()).value() ==
            seatlock::Recovery::existed);
    CHECK(w.store.hold("game1", "ola", named_seats("lower", {"B-5"})));  // still open
    CHECK(w.store.restore_order(restored("order-n", "pia", "lower", {"B-4"},
                                         "game1.00000000000000000000000000000002"))
              .is(errc::seat_taken));
    CHECK(w.store.recover_event(seatlock::testing::test_event("game1", 7)).is(errc::event_exists));
}

#define SEATLOCK_RETRY_CONFORMANCE(...)                                  \
    TEST_CASE_TEMPLATE_INVOKE(retry_idempotency_key, __VA_ARGS__);       \
    TEST_CASE_TEMPLATE_INVOKE(retry_idempotency_mismatch, __VA_ARGS__);  \
    TEST_CASE_TEMPLATE_INVOKE(retry_idempotency_status, __VA_ARGS__);    \
    TEST_CASE_TEMPLATE_INVOKE(retry_storage_lost, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(retry_recovery, __VA_ARGS__);              \
    TEST_CASE_TEMPLATE_INVOKE(retry_recovery_ga_gap, __VA_ARGS__);       \
    TEST_CASE_TEMPLATE_INVOKE(retry_recovery_live, __VA_ARGS__)
