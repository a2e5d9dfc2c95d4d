// SPDX-License-Identifier: MIT
// tests/conformance/version_conformance.hpp: event versions, and a storage that goes back
// to older data, on every backend. Instantiate with SEATLOCK_VERSION_CONFORMANCE(Fixture).
//
// A storage "goes back" here as it does after a failover to a lagging replica or a restart
// from an older snapshot: the fixture loses its data, then the first steps of the event's
// history are applied again to the backend directly, with the same tokens, so the
// storage holds exactly an older state of the event.
#pragma once

#include "hold_conformance.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace seatlock::testing {

/// Makes the event "game1" again at the backend, as it stood after `holds` were made and
/// each paid by its order id (when not empty): an older state of the same history.
template <typename F>
void go_back_to(F& f, const std::vector<std::pair<Hold, std::string>>& holds) {
    f.lose_data();
    auto& backend = f.backend();
    REQUIRE(backend.run(op::create_event{test_event()}));
    for (const auto& [hold, order] : holds) {
        HoldCommand cmd{hold.event, hold.holder, hold.token, named_seats(hold.zone, hold.seats),
                        std::chrono::minutes(10), HoldLimits{}, {}};
        REQUIRE(backend.run(op::hold{cmd}));
        if (!order.empty()) REQUIRE(backend.run(op::confirm{ConfirmCommand{hold.token, order, false, {}}}));
    }
}

}  // namespace seatlock::testing

TEST_CASE_TEMPLATE_DEFINE("every write raises the event's version and its result carries it", F,
                          version_raised_by_writes) {
    seatlock::testing::HoldWorld<F> w;
    const auto start = w.store.check_version("game1").value();
    auto h = w.store.hold("game1", "amy", named_seats("lower", {"A-1"}));
    REQUIRE(h);
    CHECK(h->version == start + 1);
    auto o = w.store.confirm(h->token, "pay-amy");
    REQUIRE(o);
    CHECK(o->version == h->version + 1);
    // A retried confirm is answered from storage, and still counts as one step.
    auto again = w.store.confirm(h->token, "pay-amy");
    REQUIRE(again);
    CHECK(again->version == o->version + 1);
    auto other = w.store.hold("game1", "bo", named_seats("lower", {"A-2"}));
    REQUIRE(other);
    CHECK(other->version == again->version + 1);
    auto longer = w.store.extend(other->token, 20min);
    REQUIRE(longer);
    CHECK(longer->version == other->version + 1);
    auto released = w.store.release(other->token);
    REQUIRE(released);
    CHECK(*released == longer->version + 1);
    auto cancelled = w.store.cancel("game1", "pay-amy");
    REQUIRE(cancelled);
    CHECK(cancelled->version == *released + 1);
    // Refusals and reads change nothing.
    auto taken = w.store.hold("game1", "cy", named_seats("lower", {"A-9"}));
    CHECK(taken.is(errc::unknown_seat));
    REQUIRE(w.store.seats("game1"));
    CHECK(w.store.check_version("game1").value() == cancelled->version);
    CHECK(w.store.seen_version("game1") == cancelled->version);
}

TEST_CASE_TEMPLATE_DEFINE("a hold that runs out raises the version when the storage expires it", F,
                          version_raised_by_expiry) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "dee", named_seats("lower", {"B-1"}), seatlock::Millis(200));
    REQUIRE(h);
    CHECK(w.store.check_version("game1").value() == h->version);
    w.f.advance(400ms);
    CHECK(w.store.check_version("game1").value() == h->version + 1);
    CHECK(w.state("B-1") == seatlock::SeatState::free);
}

TEST_CASE_TEMPLATE_DEFINE("a storage that went back is detected, fenced and repaired: paid seats stay sold",
                          F, version_rollback_repaired) {
    using seatlock::testing::restored;
    seatlock::testing::HoldWorld<F> w;
    auto alice = w.store.hold("game1", "alice", named_seats("lower", {"A-1", "A-2"}));
    REQUIRE(alice);
    REQUIRE(w.store.confirm(alice->token, "pay-alice"));
    // The snapshot is taken here; bob buys after it.
    auto bob = w.store.hold("game1", "bob", named_seats("lower", {"B-1"}));
    REQUIRE(bob);
    REQUIRE(w.store.confirm(bob->token, "pay-bob"));
    seatlock::testing::go_back_to(w.f, {{*alice, "pay-alice"}});

    // Dave's hold is applied by the older storage, whose answer gives it away. He sent an
    // idempotency key: the hold stays, for his retry to find.
    seatlock::HoldOptions keyed;
    keyed.idempotency_key = "dave-1";
    auto dave = w.store.hold("game1", "dave", named_seats("lower", {"B-1"}), keyed);
    REQUIRE(dave.is(errc::storage_lost));
    CHECK(dave.error().detail.find("went back") != std::string::npos);
    CHECK(dave.error().items == std::vector<std::string>{"game1"});
    CHECK(w.store.fenced("game1"));
    // Fenced: nothing is sold, nor the older map shown, until the event is repaired.
    CHECK(w.store.hold("game1", "erin", named_seats("lower", {"B-2"})).is(errc::storage_lost));
    CHECK(w.store.seats("game1").is(errc::storage_lost));
    CHECK(w.store.check_version("game1").is(errc::storage_lost));

    // The repair: hidden as it stands, every paid order of the application's records back.
    REQUIRE(w.store.recover_event(seatlock::testing::test_event()).value() ==
            seatlock::Recovery::rolled_back);
    REQUIRE(w.store.restore_order(
        restored("pay-alice", "alice", "lower", {"A-1", "A-2"}, alice->token)));
    REQUIRE(w.store.restore_order(restored("pay-bob", "bob", "lower", {"B-1"}, bob->token)));
    const auto seen = w.store.seen_version("game1");
    auto shown = w.store.finish_recovery("game1");
    REQUIRE(shown);
    CHECK(*shown > seen);
    CHECK_FALSE(w.store.fenced("game1"));

    CHECK(w.state("B-1") == seatlock::SeatState::paid);
    CHECK(w.state("A-1") == seatlock::SeatState::paid);
    // The hold made after the rollback lost its seat to the paid order: its holder is told.
    // (The store fenced the event on its answer, but the storage made it.)
    auto expired = w.store.expired().value();
    CHECK(std::count_if(expired.begin(), expired.end(), [](const seatlock::ExpiredHold& e) {
              return e.holder == "dave";
          }) == 1);
    auto replay = w.store.hold("game1", "dave", named_seats("lower", {"B-1"}), keyed);
    REQUIRE(replay);
    CHECK(replay->status == seatlock::HoldStatus::expired);
    CHECK(w.store.confirm(bob->token, "pay-bob").value().id == "pay-bob");
    auto next = w.store.hold("game1", "erin", named_seats("lower", {"B-2"}));
    REQUIRE(next);
    CHECK(next->version > *shown);
}

TEST_CASE_TEMPLATE_DEFINE("a hold the older data made without an idempotency key is given back at once",
                          F, version_rollback_hold_given_back) {
    seatlock::testing::HoldWorld<F> w;
    auto amy = w.store.hold("game1", "amy", named_seats("lower", {"A-1"}));
    REQUIRE(amy);
    REQUIRE(w.store.confirm(amy->token, "pay-amy"));
    seatlock::testing::go_back_to(w.f, {});
    // Nobody could ever use this hold: its caller never learns its token.
    REQUIRE(w.store.hold("game1", "cy", named_seats("lower", {"A-2", "A-3"})).is(errc::storage_lost));
    seatlock::testing::Store<F> other(w.f.backend());
    CHECK(seatlock::testing::state_of(other, "game1", "lower", "A-2") == seatlock::SeatState::free);
    CHECK(seatlock::testing::state_of(other, "game1", "lower", "A-3") == seatlock::SeatState::free);
}

TEST_CASE_TEMPLATE_DEFINE("check_version compares the storage with the application's records", F,
                          version_check_against_records) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "fin", named_seats("lower", {"A-3"}));
    REQUIRE(h);
    // A store that saw nothing of it (a server just started) reads its records' version.
    seatlock::testing::Store<F> newcomer(w.f.backend());
    CHECK(newcomer.check_version("game1", h->version).value() == h->version);
    CHECK_FALSE(newcomer.fenced("game1"));
    auto behind = newcomer.check_version("game1", h->version + 5);
    REQUIRE(behind.is(errc::storage_lost));
    CHECK(behind.error().detail.find("records") != std::string::npos);
    CHECK(newcomer.fenced("game1"));
    CHECK(newcomer.hold("game1", "gus", named_seats("lower", {"A-4"})).is(errc::storage_lost));
    // The first store is not fenced: each store fences what it found.
    CHECK(w.store.hold("game1", "gus", named_seats("lower", {"A-4"})));
    // An unknown event is not a rollback.
    CHECK(w.store.check_version("nope").is(errc::unknown_event));
    CHECK(w.store.check_version("bad id!").is(errc::invalid_argument));
}

TEST_CASE_TEMPLATE_DEFINE("an application that fences an event stops its sales until it is repaired", F,
                          version_fenced_by_application) {
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "hal", named_seats("lower", {"A-5"}));
    REQUIRE(h);
    CHECK(w.store.fence("bad id!", "no such event").is(errc::invalid_argument));
    CHECK_FALSE(w.store.knows("bad id!"));
    REQUIRE(w.store.fence("game1", "the order database refused to sell A-5 twice"));
    auto refused = w.store.hold("game1", "ida", named_seats("lower", {"A-6"}));
    REQUIRE(refused.is(errc::storage_lost));
    CHECK(refused.error().detail.find("refused to sell A-5 twice") != std::string::npos);
    CHECK(w.store.release(h->token).is(errc::storage_lost));
    REQUIRE(w.store.recover_event(seatlock::testing::test_event()).value() ==
            seatlock::Recovery::rolled_back);
    // Hidden meanwhile, to every store.
    seatlock::testing::Store<F> other(w.f.backend());
    CHECK(other.hold("game1", "jo", named_seats("lower", {"A-6"})).is(errc::unknown_event));
    REQUIRE(w.store.finish_recovery("game1"));
    CHECK(other.hold("game1", "jo", named_seats("lower", {"A-6"})));
    // The hold that was there before stays: nothing paid claimed its seat.
    CHECK(w.store.release(h->token));
}

TEST_CASE_TEMPLATE_DEFINE("restoring an order the storage has cancelled pays it again", F,
                          version_restore_cancelled) {
    using seatlock::testing::restored;
    seatlock::testing::HoldWorld<F> w;
    auto h = w.store.hold("game1", "kit", named_seats("lower", {"B-3", "B-4"}));
    REQUIRE(h);
    REQUIRE(w.store.confirm(h->token, "pay-kit"));
    // The cancellation reached the storage but not the application's records.
    REQUIRE(w.store.cancel("game1", "pay-kit"));
    REQUIRE(w.store.fence("game1", "the records and the storage disagree"));
    REQUIRE(w.store.recover_event(seatlock::testing::test_event()).value() ==
            seatlock::Recovery::rolled_back);
    auto back = w.store.restore_order(restored("pay-kit", "kit", "lower", {"B-4", "B-3"}, h->token));
    REQUIRE(back);
    CHECK_FALSE(back->cancelled);
    // Restored once: again is the same order; other seats under its id are a conflict.
    CHECK(w.store.restore_order(restored("pay-kit", "kit", "lower", {"B-3", "B-4"}, h->token)));
    REQUIRE(w.store.finish_recovery("game1"));
    CHECK(w.state("B-3") == seatlock::SeatState::paid);
    CHECK(w.state("B-4") == seatlock::SeatState::paid);
    // The holder's paid seats count again: 2 paid + 2 asked is over the limit of 3.
    CHECK(w.store.hold("game1", "kit", named_seats("lower", {"B-5", "B-6"})).is(errc::limit_exceeded));
    auto cancelled = w.store.cancel("game1", "pay-kit");
    REQUIRE(cancelled);
    CHECK(cancelled->cancelled);
    CHECK(w.state("B-3") == seatlock::SeatState::free);
}

#define SEATLOCK_VERSION_CONFORMANCE(...)                                      \
    TEST_CASE_TEMPLATE_INVOKE(version_raised_by_writes, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(version_raised_by_expiry, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(version_rollback_repaired, __VA_ARGS__);         \
    TEST_CASE_TEMPLATE_INVOKE(version_rollback_hold_given_back, __VA_ARGS__);  \
    TEST_CASE_TEMPLATE_INVOKE(version_check_against_records, __VA_ARGS__);     \
    TEST_CASE_TEMPLATE_INVOKE(version_fenced_by_application, __VA_ARGS__);     \
    TEST_CASE_TEMPLATE_INVOKE(version_restore_cancelled, __VA_ARGS__)
