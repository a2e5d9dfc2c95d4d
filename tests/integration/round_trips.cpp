// One command per operation (one round trip), watched with MONITOR once the scripts are
// in the server's cache; and the readable key layout those commands write.
#include "redis_admin.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

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

const Commands one_evalsha{"evalsha"};
const Commands evalsha_then_eval{"evalsha", "eval"};

}  // namespace

TEST_CASE("holding three seats is one command") {
    World w;
    const auto calls = w.commands_of([&] {
        auto h =
            w.store.hold("game1", "alice", seatlock::named_seats("lower", {"A-1", "A-2", "A-3"}));
        REQUIRE(h);
        CHECK(h->seats.size() == 3);
    });
    CHECK_MESSAGE(calls == one_evalsha, describe(calls));
}

TEST_CASE("confirming a hold is one command") {
    World w;
    auto h = w.store.hold("game1", "bob", seatlock::named_seats("lower", {"A-4", "A-5"})).value();
    const auto calls = w.commands_of([&] { REQUIRE(w.store.confirm(h.token, "order-b")); });
    CHECK_MESSAGE(calls == one_evalsha, describe(calls));
}

TEST_CASE("releasing a hold is one command") {
    World w;
    auto h = w.store.hold("game1", "carol", seatlock::named_seats("lower", {"A-6"})).value();
    const auto calls = w.commands_of([&] { REQUIRE(w.store.release(h.token)); });
    CHECK_MESSAGE(calls == one_evalsha, describe(calls));
}

TEST_CASE("locking three keys at once is one command, and so is unlocking them") {
    World w;
    std::optional<seatlock::MultiLock<seatlock::RedisBackend>> guard;
    const auto lock_calls = w.commands_of([&] {
        auto g = w.locks.try_lock_all({"game1:A-1", "game1:A-2", "game1:A-3"});
        REQUIRE(g);
        guard.emplace(std::move(*g));
    });
    CHECK_MESSAGE(lock_calls == one_evalsha, describe(lock_calls));
    const auto unlock_calls = w.commands_of([&] {
        auto released = guard->unlock();
        REQUIRE(released);
        CHECK(*released);
    });
    CHECK_MESSAGE(unlock_calls == one_evalsha, describe(unlock_calls));
}

TEST_CASE("after SCRIPT FLUSH one call costs EVALSHA plus EVAL, then one command again") {
    World w;
    w.admin.expect_ok({"SCRIPT", "FLUSH"});
    const auto reload = w.commands_of(
        [&] { REQUIRE(w.store.hold("game1", "dan", seatlock::named_seats("lower", {"A-7"}))); });
    CHECK_MESSAGE(reload == evalsha_then_eval, describe(reload));
    const auto cached = w.commands_of(
        [&] { REQUIRE(w.store.hold("game1", "dan", seatlock::named_seats("lower", {"A-8"}))); });
    CHECK_MESSAGE(cached == one_evalsha, describe(cached));
}

TEST_CASE("the keys are readable with redis-cli: lock, held, paid, hold, fence") {
    World w;
    auto h = w.store.hold("game1", "erin", seatlock::named_seats("lower", {"A-9", "A-10"})).value();
    CHECK(w.admin.text({"HGET", "seatlock:held:{game1}", "lower:A-9"}) == h.token);
    CHECK(w.admin.text({"HGET", "seatlock:hold:{game1}:" + h.token, "holder"}) == "erin");
    CHECK(w.admin.text({"HGET", "seatlock:hold:{game1}:" + h.token, "seats"}) == "A-9 A-10");
    CHECK(w.admin.command({"ZSCORE", "seatlock:deadlines:{game1}", h.token})->type ==
          REDIS_REPLY_STRING);
    w.store.confirm(h.token, "order-e").value();
    CHECK(w.admin.text({"HGET", "seatlock:paid:{game1}", "lower:A-10"}) == "order-e");
    CHECK(w.admin.text({"HGET", "seatlock:order:{game1}:order-e", "holder"}) == "erin");
    CHECK(w.admin.integer({"HEXISTS", "seatlock:held:{game1}", "lower:A-10"}) == 0);

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
}
