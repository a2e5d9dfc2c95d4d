// SPDX-License-Identifier: MIT
// SeatHoldStore behaviour under FakeBackend's scripted faults.
#include <seatlock/seatlock.hpp>

#include "conformance/hold_conformance.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace hold_store_test {

using namespace std::chrono_literals;
using Fake = seatlock::FakeBackend;
using seatlock::errc;

namespace {
struct World {
    Fake fake;
    seatlock::SeatHoldStore<Fake> store;
    explicit World(int retries = 1)
        : store(fake, [retries] {
              seatlock::HoldPolicy p;
              p.retries_on_unknown_outcome = retries;
              return p;
          }()) {
        store.create_event(seatlock::testing::test_event()).value();
    }
    std::int64_t paid() { return store.seats("game1", std::string("lower")).value().at(0).paid; }
    std::int64_t held() { return store.seats("game1", std::string("lower")).value().at(0).held; }
};
}  // namespace

TEST_CASE("a confirm whose reply was lost is retried and takes effect exactly once") {
    World w;
    auto h = w.store.hold("game1", "amy", seatlock::named_seats("lower", {"A-1", "A-2"}));
    REQUIRE(h);
    w.fake.inject({seatlock::op::id<seatlock::op::confirm>, Fake::FaultKind::lose_reply});
    auto order = w.store.confirm(h->token, "pay-1");
    REQUIRE(order);  // the store asked again and got the order the first call made
    CHECK(order->id == "pay-1");
    CHECK(w.fake.count(seatlock::op::id<seatlock::op::confirm>) == 2);
    CHECK(w.paid() == 2);
    CHECK(w.held() == 0);
    // amy has 2 seats, paid once: one more fits under the limit of 3, two do not.
    CHECK(w.store.hold("game1", "amy", seatlock::named_seats("lower", {"B-1", "B-2"})).is(errc::limit_exceeded));
}

TEST_CASE("a caller retrying confirm by hand after outcome_unknown gets the same order") {
    World w(0);
    auto h = w.store.hold("game1", "ben", seatlock::named_seats("lower", {"A-3"}));
    REQUIRE(h);
    w.fake.inject({seatlock::op::id<seatlock::op::confirm>, Fake::FaultKind::lose_reply});
    auto first = w.store.confirm(h->token, "pay-2");
    REQUIRE(first.is(errc::outcome_unknown));
    auto second = w.store.confirm(h->token, "pay-2");
    REQUIRE(second);
    CHECK(second->seats == std::vector<std::string>{"A-3"});
    auto third = w.store.confirm(h->token, "pay-2");
    REQUIRE(third);
    CHECK(third->paid_at == second->paid_at);
    CHECK(w.paid() == 1);
}

TEST_CASE("a hold whose reply was lost is retried with the same token: one hold in effect") {
    World w;
    w.fake.inject({seatlock::op::id<seatlock::op::hold>, Fake::FaultKind::lose_reply});
    auto h = w.store.hold("game1", "cleo", seatlock::named_seats("lower", {"A-4", "A-5"}));
    REQUIRE(h);
    CHECK(w.fake.count(seatlock::op::id<seatlock::op::hold>) == 2);
    CHECK(w.held() == 2);
    REQUIRE(w.store.release(h->token));
    CHECK(w.held() == 0);
}

TEST_CASE("a release whose reply was lost is retried and reported done") {
    World w;
    auto h = w.store.hold("game1", "cat", seatlock::named_seats("lower", {"B-3"}));
    REQUIRE(h);
    w.fake.inject({seatlock::op::id<seatlock::op::release>, Fake::FaultKind::lose_reply});
    CHECK(w.store.release(h->token));
    CHECK(w.fake.count(seatlock::op::id<seatlock::op::release>) == 2);
    CHECK(w.held() == 0);
}

TEST_CASE("a call that fails before it is applied changes nothing and is reported") {
    World w;
    auto h = w.store.hold("game1", "dan", seatlock::named_seats("lower", {"B-4"}));
    REQUIRE(h);
    w.fake.inject({seatlock::op::id<seatlock::op::release>, Fake::FaultKind::fail_before});
    CHECK(w.store.release(h->token).is(errc::io_error));
    CHECK(w.held() == 1);
    REQUIRE(w.store.release(h->token));
    CHECK(w.held() == 0);
}

TEST_CASE("latency faults delay a call without changing its outcome") {
    World w;
    w.fake.inject({seatlock::op::id<seatlock::op::hold>, Fake::FaultKind::latency, 1, 50ms});
    const auto t0 = w.fake.now();
    auto h = w.store.hold("game1", "eve", seatlock::named_seats("lower", {"B-6"}));
    REQUIRE(h);
    // The call took 50 ms of the fake's time: the hold starts when it is applied.
    CHECK(w.fake.now() - t0 == 50ms);
    CHECK(h->expires_at == w.fake.now() + w.store.policy().hold_ttl);
    auto again = w.store.hold("game1", "eve2", seatlock::named_seats("lower", {"B-5"}));
    REQUIRE(again);
    CHECK(w.fake.now() - t0 == 50ms);  // once only
}

TEST_CASE("the fake records every call with its outcome") {
    World w;
    w.fake.clear_calls();
    (void)w.store.hold("game1", "fay", seatlock::named_seats("lower", {"Z-1"}));
    auto calls = w.fake.calls();
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].op == seatlock::op::id<seatlock::op::hold>);
    CHECK(calls[0].result == errc::unknown_seat);
}

TEST_CASE("the fake refuses a clock that goes back and faults that cannot happen") {
    World w;
    const auto before = w.fake.now();
    CHECK_THROWS_AS(w.fake.advance(-1ms), seatlock::Error);
    CHECK(w.fake.now() == before);
    CHECK_THROWS_AS(w.fake.inject({seatlock::op::id<seatlock::op::hold>, Fake::FaultKind::fail_before, 0}), seatlock::Error);
    CHECK_THROWS_AS(w.fake.inject({seatlock::op::id<seatlock::op::hold>, Fake::FaultKind::latency, 1, -5ms}), seatlock::Error);
    CHECK(w.store.hold("game1", "hal", seatlock::named_seats("lower", {"A-6"})));  // no fault stuck
}

TEST_CASE("AnyBackend runs the store on a backend chosen at run time") {
    auto any = seatlock::AnyBackend::make<seatlock::MemoryBackend>();
    seatlock::SeatHoldStore store(any);
    REQUIRE(store.create_event(seatlock::testing::test_event()));
    auto h = store.hold("game1", "gus", seatlock::best_available("lower", 2));
    REQUIRE(h);
    CHECK(h->seats == std::vector<std::string>{"A-1", "A-2"});
    seatlock::LockManager locks(any);
    CHECK(locks.try_lock("game1:A-1"));
}

TEST_CASE("an invalid HoldPolicy is refused at construction") {
    Fake fake;
    seatlock::HoldPolicy p;
    p.hold_ttl = 0ms;
    CHECK_THROWS_AS(seatlock::SeatHoldStore<Fake>(fake, p), seatlock::Error);
    p.hold_ttl = 3h;  // longer than max_hold_lifetime
    CHECK_THROWS_AS(seatlock::SeatHoldStore<Fake>(fake, p), seatlock::Error);
}

namespace {
// A MemoryBackend that holds back the answer of its next hold after applying it, until told
// to go on: answers arriving in another order than their steps, as on a pipelined or
// pooled connection.
struct LateAnswer : seatlock::MemoryBackend {
    std::atomic<bool> hold_back_next{false};
    std::promise<void> applied;
    std::promise<void> go_on;

    using MemoryBackend::run;
    seatlock::Result<seatlock::Hold> run(const seatlock::op::hold& o) {
        auto hold = MemoryBackend::run(o);
        if (hold_back_next.exchange(false)) {
            applied.set_value();
            go_on.get_future().wait();
        }
        return hold;
    }
};
}  // namespace

TEST_CASE("an answer overtaken by a later step's is no rollback: versions are compared with "
          "what was seen before the step was sent") {
    LateAnswer backend;
    seatlock::SeatHoldStore<LateAnswer> store(backend);
    store.create_event(seatlock::testing::test_event()).value();
    backend.hold_back_next = true;
    auto first = std::async(std::launch::async, [&] {
        return store.hold("game1", "amy", seatlock::named_seats("lower", {"A-1"}));
    });
    backend.applied.get_future().wait();
    auto second = store.hold("game1", "bo", seatlock::named_seats("lower", {"A-2"}));
    REQUIRE(second);
    backend.go_on.set_value();
    auto late = first.get();
    REQUIRE(late);  // version 1 arrives after version 2 was seen: both were real
    CHECK(late->version < second->version);
    CHECK_FALSE(store.fenced("game1"));
    CHECK(store.seen_version("game1") == second->version);
}

TEST_CASE("a Result<void> takes any result's success or failure, so code written for release() "
          "returning nothing still compiles") {
    seatlock::Result<std::uint64_t> value = std::uint64_t{7};
    seatlock::Result<void> ok = value;
    CHECK(ok.has_value());
    seatlock::Result<std::uint64_t> failed = seatlock::Failure(errc::seat_taken, "A-1 taken");
    seatlock::Result<void> refused = std::move(failed);
    REQUIRE(refused.is(errc::seat_taken));
    CHECK(refused.error().detail == "A-1 taken");
}

}  // namespace hold_store_test
