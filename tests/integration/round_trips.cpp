// SPDX-License-Identifier: MIT
// One command per operation (one round trip), watched with MONITOR once the scripts are
// in the server's cache; and the readable key layout those commands write.
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace round_trips_test {

namespace {

using Commands = std::vector<std::string>;

std::string describe(const Commands& commands) {
    std::string text;
    for (const auto& c : commands) text += (text.empty() ? "" : ", ") + c;
    return text.empty() ? "no command" : text;
}

seatlock::EventSpec stadium() {
    std::vector<seatlock::SeatSpec> seats;
    for (int n = 1; n <= 12; ++n) seats.push_back({"A-" + std::to_string(n), "A"});
    return {"game1", "Round trips", {seatlock::ZoneSpec::named("lower", seats)}};
}

struct World {
    seatlock::testing::RedisServer server;
    seatlock::testing::RedisAdmin admin{server.port()};
    seatlock::RedisBackend backend{options()};
    seatlock::SeatHoldStore<seatlock::RedisBackend> store{backend, policy()};
    seatlock::LockManager<seatlock::RedisBackend> locks{backend};

    World() {
        store.create_event(stadium()).value();
        // Warm up: every script below runs once, so the server has cached all of them and
        // the pool has its connection.
        auto h = store.hold("game1", "warm", seatlock::named_seats("lower", {"A-12"})).value();
        store.confirm(h.token, "warm-order").value();
        auto r = store.hold("game1", "warm", seatlock::named_seats("lower", {"A-11"})).value();
        store.release(r.token).value();
        auto guard = locks.try_lock_all({"game1:X-1", "game1:X-2"}).value();
        guard.unlock().value();
    }

    seatlock::RedisOptions options() const {
        seatlock::RedisOptions o;
        o.port = server.port();
        o.command_timeout = std::chrono::seconds(10);  // sanitizer builds on busy machines are slow
        return o;
    }
    static seatlock::HoldPolicy policy() {
        seatlock::HoldPolicy p;
        p.max_seats_per_holder = 0;
        return p;
    }

    seatlock::testing::CommandMonitor monitor{server.port()};

    /// The commands the backend sent while `step` ran.
    template <typename F>
    Commands commands_of(F&& step) {
        return monitor.commands_of(std::forward<F>(step));
    }
};

const Commands one_fcall{"fcall"};
const Commands fcall_load_fcall{"fcall", "function", "fcall"};

}  // namespace

TEST_CASE("holding three seats is one command") {
    World w;
    const auto calls = w.commands_of([&] {
        auto h =
            w.store.hold("game1", "alice", seatlock::named_seats("lower", {"A-1", "A-2", "A-3"}));
        REQUIRE(h);
        CHECK(h->seats.size() == 3);
    });
    CHECK_MESSAGE(calls == one_fcall, describe(calls));
}

TEST_CASE("confirming a hold is one command") {
    World w;
    auto h = w.store.hold("game1", "bob", seatlock::named_seats("lower", {"A-4", "A-5"})).value();
    const auto calls = w.commands_of([&] { REQUIRE(w.store.confirm(h.token, "order-b")); });
    CHECK_MESSAGE(calls == one_fcall, describe(calls));
}

TEST_CASE("releasing a hold is one command") {
    World w;
    auto h = w.store.hold("game1", "carol", seatlock::named_seats("lower", {"A-6"})).value();
    const auto calls = w.commands_of([&] { REQUIRE(w.store.release(h.token)); });
    CHECK_MESSAGE(calls == one_fcall, describe(calls));
}

TEST_CASE("locking three keys at once is one command, and so is unlocking them") {
    World w;
    std::optional<seatlock::MultiLock<seatlock::RedisBackend>> guard;
    const auto lock_calls = w.commands_of([&] {
        auto g = w.locks.try_lock_all({"game1:A-1", "game1:A-2", "game1:A-3"});
        REQUIRE(g);
        guard.emplace(std::move(*g));
    });
    CHECK_MESSAGE(lock_calls == one_fcall, describe(lock_calls));
    const auto unlock_calls = w.commands_of([&] {
        auto released = guard->unlock();
        CHECK_MESSAGE(released, (released ? "" : released.error().message()));
    });
    CHECK_MESSAGE(unlock_calls == one_fcall, describe(unlock_calls));
}

TEST_CASE("after FUNCTION FLUSH one call costs FCALL, FUNCTION LOAD, FCALL, then one command again") {
    World w;
    w.admin.expect_ok({"FUNCTION", "FLUSH"});
    const auto reload = w.commands_of(
        [&] { REQUIRE(w.store.hold("game1", "dan", seatlock::named_seats("lower", {"A-7"}))); });
    CHECK_MESSAGE(reload == fcall_load_fcall, describe(reload));
    const auto cached = w.commands_of(
        [&] { REQUIRE(w.store.hold("game1", "dan", seatlock::named_seats("lower", {"A-8"}))); });
    CHECK_MESSAGE(cached == one_fcall, describe(cached));
}

TEST_CASE("the keys are readable with redis-cli: event hash records, free set, paid, lock, fence") {
    World w;
    auto h = w.store.hold("game1", "erin", seatlock::named_seats("lower", {"A-9", "A-10"})).value();
    const auto starts = [](const std::string& text, const std::string& head) {
        return text.rfind(head, 0) == 0;
    };
    const std::string event = "seatlock:event:{game1}";
    const std::string record = w.admin.text({"HGET", event, "h:" + h.token});
    CHECK_MESSAGE(starts(record, "held erin lower "), record);
    // Then the slot-seat pairs in MessagePack, where strings stand as they are.
    CHECK_MESSAGE(record.find("A-9") != std::string::npos, record);
    CHECK_MESSAGE(record.find("A-10") != std::string::npos, record);
    constexpr long long hold_unit = 1LL << 26;  // u:<holder> = held seats + 2^26 x holds
    CHECK(w.admin.text({"HGET", event, "u:erin"}) == std::to_string(2 + hold_unit));
    CHECK(w.admin.command({"ZSCORE", "seatlock:free:{game1}:lower", "A-9"})->type == REDIS_REPLY_NIL);
    CHECK(w.admin.command({"ZSCORE", "seatlock:free:{game1}:lower", "A-8"})->type == REDIS_REPLY_STRING);
    CHECK(w.admin.command({"ZSCORE", "seatlock:deadlines:{game1}", h.token})->type ==
          REDIS_REPLY_STRING);
    w.store.confirm(h.token, "order-e").value();
    CHECK(w.admin.text({"HGET", "seatlock:paid:{game1}", "lower:A-10"}) == "order-e");
    CHECK_MESSAGE(starts(w.admin.text({"HGET", event, "h:" + h.token}), "c:order-e erin lower "),
                  w.admin.text({"HGET", event, "h:" + h.token}));
    CHECK(starts(w.admin.text({"HGET", event, "o:order-e"}), "erin lower " + h.token + " "));
    CHECK(w.admin.integer({"HEXISTS", event, "u:erin"}) == 0);  // nothing held: no field
    CHECK(w.admin.text({"HGET", event, "v:erin"}) == "2");
    CHECK(w.admin.text({"HGET", event, "p:lower"}) == "3");  // with the fixture's warm-up order
    CHECK(w.admin.command({"ZSCORE", "seatlock:deadlines:{game1}", h.token})->type == REDIS_REPLY_NIL);

    auto guard = w.locks.try_lock("game1:A-12").value();
    CHECK(w.admin.integer({"EXISTS", "seatlock:lock:{game1}:A-12"}) == 1);
    CHECK(w.admin.text({"GET", "seatlock:fence:{game1}"}) == std::to_string(guard.fencing_token()));
    const auto ttl = w.admin.integer({"PTTL", "seatlock:lock:{game1}:A-12"});
    CHECK(ttl > 0);
    CHECK(ttl <= 10'000);
    CHECK(w.admin.integer({"HEXISTS", "seatlock:events", "game1"}) == 1);
}

TEST_CASE("a lock spanning two groups moves both fencing counters past both") {
    World w;
    for (int i = 0; i < 5; ++i) w.locks.try_lock("north:A-1").value().unlock().value();
    auto south = w.locks.try_lock("south:B-1").value();
    auto both = w.locks.try_lock_all({"north:A-2", "south:B-2"}).value();
    CHECK(both.fencing_token() > 5);
    CHECK(w.admin.text({"GET", "seatlock:fence:{north}"}) == std::to_string(both.fencing_token()));
    CHECK(w.admin.text({"GET", "seatlock:fence:{south}"}) == std::to_string(both.fencing_token()));
    auto next = w.locks.try_lock("south:B-3").value();
    CHECK(next.fencing_token() > both.fencing_token());
    CHECK(south.fencing_token() < both.fencing_token());
    // Extended and released together, both groups' keys.
    REQUIRE(both.extend(seatlock::Millis(20'000)));
    CHECK(w.admin.integer({"PTTL", "seatlock:lock:{south}:B-2"}) > 10'000);
    REQUIRE(both.unlock());
    CHECK(w.admin.integer({"EXISTS", "seatlock:lock:{north}:A-2", "seatlock:lock:{south}:B-2"}) == 0);
}

}  // namespace round_trips_test
