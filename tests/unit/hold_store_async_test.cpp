// SPDX-License-Identifier: MIT
// tests/unit/hold_store_async_test.cpp: SeatHoldStore's asynchronous overloads match the
// blocking ones one for one, with the same defaults, and every one works without a
// completion token (asio::deferred: co_await it, or hand it a token later) and with a
// plain callback.
#include <seatlock/seatlock.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace hold_store_async_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::Result;

namespace {

seatlock::EventSpec event_spec() {
    return {"game1",
            "Game",
            {seatlock::ZoneSpec::named("lower", {{"A-1", "A"}, {"A-2", "A"}, {"A-3", "A"},
                                                 {"A-4", "A"}, {"A-5", "A"}, {"A-6", "A"}}),
             seatlock::ZoneSpec::general_admission("ga", 200)}};
}

seatlock::HoldPolicy policy() {
    seatlock::HoldPolicy p;
    p.hold_ttl = 10min;
    p.max_seats_per_holder = 0;
    return p;
}

// A deferred operation (what a call without a token returns), completed with a future.
template <typename Op>
auto finish(Op&& op) {
    return std::forward<Op>(op)(asio::use_future).get();
}

using Store = seatlock::SeatHoldStore<seatlock::FakeBackend>;

// The status of named seat `seat` of zone lower, as the blocking API reads it.
seatlock::SeatState state_of(Store& store, const std::string& seat) {
    // A named copy: a range-for over a member of the temporary Result would dangle.
    const auto zones = store.seats("game1", std::string("lower")).value();
    for (const auto& s : zones.at(0).seats) {
        if (s.id == seat) return s.state;
    }
    FAIL("no seat " << seat);
    return seatlock::SeatState::free;
}

}  // namespace

TEST_CASE("async_hold has the blocking hold's three overloads, with its default ttl") {
    seatlock::FakeBackend fake;
    Store store(fake, policy());
    REQUIRE(finish(store.async_create_event(event_spec())));
    const auto now = fake.now();

    auto plain = finish(store.async_hold("game1", "ann", seatlock::named_seats("lower", {"A-1"})));
    REQUIRE(plain);
    auto blocking = store.hold("game1", "ann", seatlock::named_seats("lower", {"A-2"}));
    REQUIRE(blocking);
    CHECK(plain->expires_at == now + 10min);
    CHECK(plain->expires_at == blocking->expires_at);

    // The ttl-only overload, as hold(event, holder, request, ttl).
    auto timed = finish(store.async_hold("game1", "bob", seatlock::named_seats("lower", {"A-3"}), 2min));
    REQUIRE(timed);
    CHECK(timed->expires_at == now + 2min);
    CHECK(store.hold("game1", "bob", seatlock::named_seats("lower", {"A-4"}), 2min)->expires_at ==
          timed->expires_at);
    auto defaulted = finish(store.async_hold("game1", "bob", seatlock::named_seats("lower", {"A-5"}),
                                             std::optional<seatlock::Millis>()));
    REQUIRE(defaulted);
    CHECK(defaulted->expires_at == now + 10min);
    CHECK(finish(store.async_hold("game1", "bob", seatlock::quantity("ga", 1), 3h))
              .is(errc::invalid_argument));  // past max_hold_lifetime, as hold() refuses it

    // The options overload.
    const seatlock::HoldOptions keyed{3min, "intent-1"};
    auto first = finish(store.async_hold("game1", "cat", seatlock::quantity("ga", 2), keyed));
    REQUIRE(first);
    CHECK(first->expires_at == now + 3min);
    auto again = finish(store.async_hold("game1", "cat", seatlock::quantity("ga", 2), keyed));
    REQUIRE(again);
    CHECK(again->replayed);
    CHECK(again->token == first->token);
}

TEST_CASE("async_cancel, async_seats and async_check_version take the blocking defaults") {
    seatlock::FakeBackend fake;
    Store store(fake, policy());
    REQUIRE(store.create_event(event_spec()));
    auto pay = [&](const std::string& holder, const std::string& seat, const std::string& order) {
        auto hold = store.hold("game1", holder, seatlock::named_seats("lower", {seat}));
        REQUIRE(hold);
        REQUIRE(store.confirm(hold->token, order));
    };
    pay("ann", "A-1", "order-1");
    pay("ann", "A-2", "order-2");

    // cancel(event, order) checks no holder; cancel(event, order, holder) does.
    CHECK(finish(store.async_cancel("game1", "order-1", std::string("bob"))).is(errc::not_owner));
    CHECK(finish(store.async_cancel("game1", "order-1", std::optional<std::string>("bob")))
              .is(errc::not_owner));
    auto cancelled = finish(store.async_cancel("game1", "order-1"));
    REQUIRE(cancelled);
    CHECK(cancelled->cancelled);
    auto by_owner = finish(store.async_cancel("game1", "order-2", "ann"));
    REQUIRE(by_owner);
    CHECK(by_owner->holder == "ann");

    // seats(event) is every zone; seats(event, zone) one.
    auto every = finish(store.async_seats("game1"));
    REQUIRE(every);
    CHECK(every->size() == store.seats("game1")->size());
    CHECK(every->size() == 2);
    auto one = finish(store.async_seats("game1", "ga"));
    REQUIRE(one);
    REQUIRE(one->size() == 1);
    CHECK(one->at(0).zone == "ga");
    CHECK(finish(store.async_seats("game1", std::optional<std::string>())).value().size() == 2);

    // check_version(event) asks for no minimum; check_version(event, at_least) does.
    auto version = finish(store.async_check_version("game1"));
    REQUIRE(version);
    CHECK(*version == store.check_version("game1").value());
    CHECK(finish(store.async_check_version("game1", *version)).value() == *version);
    CHECK(finish(store.async_check_version("game1", *version + 1)).is(errc::storage_lost));
    CHECK(store.fenced("game1"));

    // finish_recovery(event) and finish_recovery(event, at_least).
    REQUIRE(finish(store.async_recover_event(event_spec())));
    auto shown = finish(store.async_finish_recovery("game1"));
    REQUIRE(shown);
    CHECK(*shown > *version);
    CHECK_FALSE(store.fenced("game1"));
    REQUIRE(store.fence("game1", "the order database refused a payment"));
    CHECK(store.recover_event(event_spec()).value() == seatlock::Recovery::rolled_back);
    CHECK(finish(store.async_finish_recovery("game1", *shown + 100)).value() > *shown + 100);
}

TEST_CASE("async_expired takes expired()'s defaults: 100 holds, handed out again after 30 s") {
    seatlock::FakeBackend fake;
    Store store(fake, policy());
    REQUIRE(store.create_event(event_spec()));
    for (int n = 0; n < 101; ++n) {
        REQUIRE(store.hold("game1", "h" + std::to_string(n), seatlock::quantity("ga", 1), 1min));
    }
    fake.advance(2min);

    auto first = finish(store.async_expired());
    REQUIRE(first);
    CHECK(first->size() == Store::default_expired_limit);
    CHECK(Store::default_expired_limit == 100);
    auto rest = finish(store.async_expired(std::size_t{500}));
    REQUIRE(rest);
    CHECK(rest->size() == 1);
    fake.advance(29s);
    CHECK(finish(store.async_expired(std::size_t{500})).value().empty());  // not yet 30 s
    fake.advance(1s);
    CHECK(finish(store.async_expired(std::size_t{500})).value().size() == 101);
    // The limit and redeliver_after given: all (due again 30 s after the last delivery),
    // and again at once.
    fake.advance(30s);
    CHECK(finish(store.async_expired(std::size_t{500}, 0ms)).value().size() == 101);
    CHECK(finish(store.async_expired(std::size_t{500}, 0ms)).value().size() == 101);
    CHECK(finish(store.async_expired(std::size_t{0})).is(errc::invalid_argument));

    std::vector<std::string> tokens;
    for (const auto& h : *rest) tokens.push_back(h.token);
    REQUIRE(finish(store.async_ack_expired(tokens)));
    CHECK(store.expired(500, 0ms).value().size() == 100);
}

TEST_CASE("without a token a call is deferred: co_await it, or hand it a token later") {
    seatlock::FakeBackend fake;
    Store store(fake, policy());
    asio::io_context io;

    std::optional<Result<seatlock::Hold>> held;
    std::optional<Result<seatlock::SeatMap>> zones;
    std::optional<Result<seatlock::Order>> paid;
    std::optional<Result<std::vector<seatlock::EventSpec>>> events;
    auto done = asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            // The request built before the co_await: g++ 12 cannot keep a braced list's
            // array across a suspension ("array used as initializer"), whatever the token.
            const std::string event = "game1", zone = "lower", order = "order-1";
            const auto request = seatlock::named_seats(zone, {"A-1"});
            Result<void> created = co_await store.async_create_event(event_spec());
            REQUIRE(created);
            events = co_await store.async_events();
            held = co_await store.async_hold(event, std::string("ann"), request);
            if (*held) paid = co_await store.async_confirm((*held)->token, order);
            zones = co_await store.async_seats(event, zone);
        },
        asio::use_future);
    io.run();
    done.get();
    REQUIRE(events);
    REQUIRE(*events);
    CHECK((*events)->size() == 1);
    REQUIRE(held);
    REQUIRE(*held);
    REQUIRE(paid);
    REQUIRE(*paid);
    REQUIRE(zones);
    REQUIRE(*zones);
    CHECK((*zones)->at(0).paid == 1);

    // Nothing is sent until the operation is started with a token.
    auto later = store.async_hold("game1", "bob", seatlock::named_seats("lower", {"A-2"}));
    CHECK(state_of(store, "A-2") == seatlock::SeatState::free);
    auto hold = finish(std::move(later));
    REQUIRE(hold);
    CHECK(state_of(store, "A-2") == seatlock::SeatState::held);
    // Input is checked when the call is made: the arguments may go out of scope after it.
    auto refused = [&] {
        const std::string bad = "no spaces";
        return store.async_release(bad);
    }();
    CHECK(finish(std::move(refused)).is(errc::unknown_hold));
}

TEST_CASE("a plain callback is a token for every overload, with and without defaulted arguments") {
    seatlock::FakeBackend fake;
    Store store(fake, policy());
    REQUIRE(store.create_event(event_spec()));

    // No executor bound: the callback runs on Asio's system executor, never in the call.
    std::promise<Result<seatlock::SeatMap>> every;
    store.async_seats("game1", [&](Result<seatlock::SeatMap> r) {
        every.set_value(std::move(r));
    });
    CHECK(every.get_future().get().value().size() == 2);

    std::promise<Result<seatlock::SeatMap>> one;
    store.async_seats("game1", "ga", [&](Result<seatlock::SeatMap> r) {
        one.set_value(std::move(r));
    });
    CHECK(one.get_future().get().value().at(0).zone == "ga");

    std::promise<Result<seatlock::Hold>> timed;
    store.async_hold("game1", "ann", seatlock::quantity("ga", 1), 1min,
                     [&](Result<seatlock::Hold> r) { timed.set_value(std::move(r)); });
    CHECK(timed.get_future().get().value().expires_at == fake.now() + 1min);

    std::promise<Result<std::vector<seatlock::ExpiredHold>>> expired;
    store.async_expired(std::size_t{5}, [&](Result<std::vector<seatlock::ExpiredHold>> r) {
        expired.set_value(std::move(r));
    });
    CHECK(expired.get_future().get().value().empty());

    std::promise<Result<seatlock::Order>> cancel;
    store.async_cancel("game1", "order-9", [&](Result<seatlock::Order> r) { cancel.set_value(std::move(r)); });
    CHECK(cancel.get_future().get().is(errc::unknown_order));

    std::promise<Result<seatlock::EventVersion>> version;
    store.async_check_version("game1", [&](Result<seatlock::EventVersion> r) {
        version.set_value(std::move(r));
    });
    CHECK(version.get_future().get().value() == store.seen_version("game1"));

    // Bound to an io_context, it runs there.
    asio::io_context io;
    std::optional<Result<seatlock::Hold>> bound;
    store.async_hold("game1", "bob", seatlock::quantity("ga", 1),
                     asio::bind_executor(io, [&](Result<seatlock::Hold> r) { bound = std::move(r); }));
    CHECK_FALSE(bound);
    io.run();
    REQUIRE(bound);
    CHECK(*bound);
}

}  // namespace hold_store_async_test
