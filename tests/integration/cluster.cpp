// SPDX-License-Identifier: MIT
// RedisBackend on a Redis Cluster the test starts (3 primaries, one replica each): hash
// slots as the server computes them, cluster URLs, calls spread over every primary, what
// is refused before anything is sent, the function library loaded per primary, and a
// live event's slot migrated between primaries (MOVED, ASK, TRYAGAIN) under callers.
#include "conformance/async_api.hpp"
#include "support/cluster_slots.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_events.hpp"
#include "support/redis_setup.hpp"
#include "support/redis_cluster.hpp"

#include "cluster.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/lock_manager.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace {

using namespace std::chrono_literals;
using seatlock::testing::no_limit;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisCluster;

RedisCluster& cluster() { return seatlock::testing::shared<RedisCluster>(); }

seatlock::RedisOptions cluster_options(const std::string& prefix) {
    return seatlock::testing::options_for(cluster().url(), prefix, 500ms, 10s);
}

seatlock::EventSpec event(const std::string& id, int seats = 40) {
    std::vector<seatlock::SeatSpec> list;
    for (int n = 1; n <= seats; ++n) list.push_back({"A-" + std::to_string(n), "A"});
    return {id, "Cluster", {seatlock::ZoneSpec::named("lower", list)}};
}

std::string text(const redisReply* r) {
    return {r->str, r->len};
}

// The cluster's primaries as CLUSTER SLOTS says (support/cluster_slots.hpp).
seatlock::testing::SlotMap slot_map() {
    return seatlock::testing::slot_map(cluster().ports().front());
}

bool retryable(const seatlock::Failure& f) {
    using seatlock::errc;
    return f.is(errc::io_error) || f.is(errc::timeout) || f.is(errc::outcome_unknown) ||
           f.is(errc::connection_failed);
}

// Every key of `prefix` on any node.
std::size_t keys_with_prefix(const std::string& prefix) {
    std::size_t n = 0;
    for (const int port : cluster().ports()) {
        RedisAdmin admin(port);
        n += admin.command({"KEYS", prefix + ":*"})->elements;
    }
    return n;
}

}  // namespace

TEST_CASE("hash slots are the ones the server computes, hash tags included") {
    RedisAdmin admin(cluster().ports().front());
    for (const std::string key :
         {"seatlock:event:{game1}", "seatlock:free:{game1}:lower", "seatlock:events", "foo",
          "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "",
          "seatlock:lock:{:}A-1", "a{b", "\xff\xfe{\x01}"}) {
        CAPTURE(key);
        CHECK(seatlock::redis_detail::hash_slot(key) ==
              admin.integer({"CLUSTER", "KEYSLOT", key}));
    }
    const std::vector<std::string> same{"x:{e}:1", "y:{e}"}, different{"x:{e}", "x:{f}"};
    CHECK(seatlock::redis_detail::common_slot(same).value() ==
          seatlock::redis_detail::hash_slot("e"));
    CHECK(seatlock::redis_detail::common_slot(different).is(seatlock::errc::invalid_argument));
}

TEST_CASE("redis+cluster URLs list seed nodes and never show the password") {
    auto o = seatlock::RedisOptions::from_url("redis+cluster://app:s3cret@10.0.0.1:7000,[::1]:7001,h3")
                 .value();
    REQUIRE(o.cluster_nodes.size() == 3);
    CHECK(o.cluster_nodes[0].host == "10.0.0.1");
    CHECK(o.cluster_nodes[0].port == 7000);
    CHECK(o.cluster_nodes[1].host == "::1");
    CHECK(o.cluster_nodes[1].port == 7001);
    CHECK(o.cluster_nodes[2].host == "h3");
    CHECK(o.cluster_nodes[2].port == 6379);
    CHECK(o.user == "app");
    CHECK(o.password == "s3cret");
    CHECK(seatlock::RedisOptions::from_url("redis://h:1").value().cluster_nodes.empty());
    for (const char* bad : {"redis+cluster://:s3cret@h1:7000,h2:70000", "redis+cluster://:s3cret@h1:7000/1",
                            "redis+cluster://:s3cret@h1:7000,", "redis+cluster://:s3cret@", "cluster://:s3cret@h1"}) {
        CAPTURE(bad);
        auto r = seatlock::RedisOptions::from_url(bad);
        REQUIRE(r.is(seatlock::errc::invalid_argument));
        CHECK(r.error().detail.find("s3cret") == std::string::npos);
    }
    auto with_db = seatlock::RedisOptions::from_url("redis+cluster://h1:7000").value();
    with_db.db = 2;
    CHECK_THROWS_AS(seatlock::RedisBackend{with_db}, seatlock::Error);
}

TEST_CASE("ping learns the slot map and reaches every primary; no node reachable is connection_failed") {
    seatlock::RedisBackend backend(cluster_options("ping"));
    CHECK(backend.ping());
    auto nowhere = cluster_options("ping");
    const seatlock::testing::ClosedPort closed;  // refuses, and nobody else takes it
    nowhere.cluster_nodes = {{"127.0.0.1", closed.port()}};
    seatlock::RedisBackend lost(nowhere);
    auto r = lost.ping();
    REQUIRE(!r);
    CHECK(r.is(seatlock::errc::connection_failed));
    CHECK(lost.run(seatlock::op::events{}).is(seatlock::errc::connection_failed));
}

TEST_CASE("events on every primary are listed, held, expired and acknowledged") {
    seatlock::RedisBackend backend(cluster_options("spread"));
    seatlock::SeatHoldStore store(backend, no_limit());
    const auto map = slot_map();
    std::set<int> primaries_used;
    std::vector<std::string> ids;
    for (int i = 0; i < 12; ++i) {
        ids.push_back("ev" + std::to_string(i));
        store.create_event(event(ids.back(), 4)).value();
        primaries_used.insert(map.port_of(seatlock::redis_detail::hash_slot(ids.back())));
    }
    CHECK(primaries_used.size() == 3);
    auto listed = store.events().value();
    REQUIRE(listed.size() == ids.size());
    for (std::size_t i = 0; i < listed.size(); ++i) CHECK(listed[i] == event(listed[i].id, 4));

    std::set<std::string> tokens;
    for (const auto& id : ids) {
        auto hold = store.hold(id, "buyer", seatlock::named_seats("lower", {"A-1"}), 200ms);
        REQUIRE(hold);
        tokens.insert(hold->token);
    }
    std::this_thread::sleep_for(400ms);
    std::set<std::string> delivered;
    for (int round = 0; round < 5 && delivered.size() < tokens.size(); ++round) {
        const auto batch = store.expired(100, 10s).value();
        for (const auto& e : batch) delivered.insert(e.token);
    }
    CHECK(delivered == tokens);
    const std::vector<std::string> acked(delivered.begin(), delivered.end());
    store.ack_expired(acked).value();
    CHECK(store.expired(100, 0ms).value().empty());
    for (const auto& id : ids) CHECK(store.seats(id, std::nullopt).value().front().free == 4);
}

TEST_CASE("a lock over keys of two groups is refused before anything is sent") {
    seatlock::RedisBackend backend(cluster_options("groups"));
    const std::vector<std::string> two_groups{"game1:A-1", "game2:A-1"};
    const std::string owner = "owner-1";
    auto r = backend.run(seatlock::op::acquire_locks{two_groups, owner, 10s});
    REQUIRE(r.is(seatlock::errc::invalid_argument));
    CHECK(r.error().detail.find("game2:A-1") != std::string::npos);
    CHECK(backend.run(seatlock::op::release_locks{two_groups, owner}).is(seatlock::errc::invalid_argument));
    CHECK(backend.run(seatlock::op::extend_locks{two_groups, owner, 10s}).is(seatlock::errc::invalid_argument));
    CHECK(keys_with_prefix("groups") == 0);

    seatlock::LockManager locks(backend);
    CHECK(locks.try_lock_all({"game1:A-1", "game2:A-1"}).is(seatlock::errc::invalid_argument));
    auto guard = locks.try_lock_all({"game1:A-1", "game1:A-2"});
    REQUIRE(guard);
    CHECK(guard->unlock());
}

TEST_CASE("asynchronous calls reach every primary: events listed, held, confirmed, expired") {
    seatlock::RedisBackend backend(cluster_options("async"));
    seatlock::testing::AsyncStore<seatlock::RedisBackend> store(backend, no_limit());
    const auto map = slot_map();
    std::set<int> primaries_used;
    std::vector<std::string> ids;
    for (int i = 0; i < 12; ++i) {
        ids.push_back("as" + std::to_string(i));
        REQUIRE(store.create_event(event(ids.back(), 4)));
        primaries_used.insert(map.port_of(seatlock::redis_detail::hash_slot(ids.back())));
    }
    CHECK(primaries_used.size() == 3);
    const auto listed = store.events();
    REQUIRE(listed);
    CHECK(listed->size() == ids.size());

    std::set<std::string> tokens;
    for (const auto& id : ids) {
        auto bought = store.hold(id, "buyer", seatlock::named_seats("lower", {"A-1"}));
        REQUIRE(bought);
        REQUIRE(store.confirm(bought->token, "order-" + id));
        auto hold = store.hold(id, "buyer", seatlock::named_seats("lower", {"A-2"}), 200ms);
        REQUIRE(hold);
        tokens.insert(hold->token);
    }
    std::this_thread::sleep_for(400ms);
    std::set<std::string> delivered;
    for (int round = 0; round < 5 && delivered.size() < tokens.size(); ++round) {
        const auto batch = store.expired(100, 10s);
        REQUIRE(batch);
        for (const auto& e : *batch) delivered.insert(e.token);
    }
    CHECK(delivered == tokens);
    const std::vector<std::string> acked(delivered.begin(), delivered.end());
    REQUIRE(store.ack_expired(acked));
    for (const auto& id : ids) {
        const auto state = store.seats(id, std::nullopt);
        REQUIRE(state);
        CHECK(state->front().paid == 1);
        CHECK(state->front().free == 3);
    }

    seatlock::testing::AsyncLocks<seatlock::RedisBackend> locks(backend);
    CHECK(locks.try_lock_all({"game1:A-1", "game2:A-1"}).is(seatlock::errc::invalid_argument));
    auto guard = locks.try_lock_all({"game1:A-1", "game1:A-2"});
    REQUIRE(guard);
    CHECK(guard->unlock());
}

TEST_CASE("each primary that lacks the function library gets it loaded by the call that needs it") {
    seatlock::RedisBackend backend(cluster_options("functions"));
    seatlock::SeatHoldStore store(backend, no_limit());
    std::vector<std::string> ids;
    for (int i = 0; i < 12; ++i) {
        ids.push_back("fn" + std::to_string(i));
        store.create_event(event(ids.back(), 4)).value();
    }
    for (const int port : cluster().ports()) {
        RedisAdmin admin(port);
        const auto role = admin.command({"ROLE"});
        if (text(role->element[0]) == "master") admin.expect_ok({"FUNCTION", "FLUSH"});
    }
    for (const auto& id : ids) CHECK(store.hold(id, "buyer", seatlock::named_seats("lower", {"A-2"})));
}

TEST_CASE("a live event's slot migrates between primaries: no seat held twice, only retryable errors") {
    seatlock::RedisBackend backend(cluster_options("migrate"));
    seatlock::SeatHoldStore store(backend, no_limit());
    const std::string id = "live";
    constexpr int seats = 12;
    store.create_event(event(id, seats)).value();

    const int slot = seatlock::redis_detail::hash_slot(id);
    const auto map = slot_map();
    const int source = map.port_of(slot);
    int target = -1;
    for (const auto& [port, node_id] : map.ids) {
        if (port != source) target = port;
    }
    REQUIRE(source > 0);
    REQUIRE(target > 0);

    std::mutex mutex;
    std::map<std::string, std::string> held;  // seat -> token, as the callers know it
    std::atomic<bool> stop{false};
    std::atomic<int> violations{0}, done{0}, retried{0};
    std::vector<std::string> unexpected;
    auto note = [&](const seatlock::Failure& f) {
        if (retryable(f)) {
            ++retried;
            return;
        }
        std::lock_guard lock(mutex);
        unexpected.push_back(f.message());
    };
    // Calls the step until it returns anything but a retryable failure.
    auto until_done = [&](auto step) {
        for (;;) {
            auto r = step();
            if (r || !retryable(r.error())) return r;
            note(r.error());
            std::this_thread::sleep_for(2ms);
        }
    };
    // Half the callers use the blocking API, half the asynchronous one, on one backend.
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
    auto caller = [&](auto& store, int t) {
            std::mt19937 rng(static_cast<unsigned>(t) + 1u);
            for (int i = 0; !stop; ++i) {
                const std::string seat = "A-" + std::to_string(1 + rng() % seats);
                const std::string key = "k" + std::to_string(t) + "-" + std::to_string(i);
                const std::string holder = "buyer" + std::to_string(t);
                const std::optional<std::string> owner(holder);
                auto hold = until_done([&] {
                    return store.hold(id, holder, seatlock::named_seats("lower", {seat}),
                                      seatlock::HoldOptions{std::nullopt, key});
                });
                if (!hold) {
                    if (!hold.is(seatlock::errc::seat_taken)) note(hold.error());
                    continue;
                }
                {
                    std::lock_guard lock(mutex);
                    if (!held.emplace(seat, hold->token).second) ++violations;
                }
                const bool buy = i % 3 == 0;
                const std::string order = "o" + key;
                if (buy && !until_done([&] { return store.confirm(hold->token, order); })) {
                    note(seatlock::Failure(seatlock::errc::script_error, "confirm failed"));
                }
                {
                    std::lock_guard lock(mutex);
                    held.erase(seat);
                }
                // Given back before the seat is taken out of `held` would be a race in
                // the check, not in the store: hence erase first, then release.
                const bool freed = buy ? static_cast<bool>(until_done([&] { return store.cancel(id, order, owner); }))
                                       : static_cast<bool>(until_done([&] { return store.release(hold->token); }));
                if (!freed) note(seatlock::Failure(seatlock::errc::script_error, "release failed"));
                ++done;
            }
    };
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t) {
        callers.emplace_back([&, t] {
            if (t % 2 == 0)
                caller(store, t);
            else
                caller(async_store, t);
        });
    }

    auto wait_for_calls = [&](int n) {
        const int until = done + n;
        for (int i = 0; i < 2000 && done < until; ++i) std::this_thread::sleep_for(5ms);
    };
    wait_for_calls(50);
    RedisAdmin from(source), to(target);
    const std::string slot_text = std::to_string(slot);
    to.expect_ok({"CLUSTER", "SETSLOT", slot_text, "IMPORTING", map.ids.at(source)});
    from.expect_ok({"CLUSTER", "SETSLOT", slot_text, "MIGRATING", map.ids.at(target)});
    // A few keys at a time, with calls in between: they meet ASK (keys gone to the
    // target) and TRYAGAIN (keys split) before the slot is handed over.
    for (int empty_rounds = 0; empty_rounds < 2;) {
        const auto keys = from.command({"CLUSTER", "GETKEYSINSLOT", slot_text, "2"});
        if (keys->elements == 0) {
            ++empty_rounds;
            continue;
        }
        std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(target), "", "0", "5000", "KEYS"};
        for (std::size_t i = 0; i < keys->elements; ++i) migrate.push_back(text(keys->element[i]));
        const auto r = from.command(migrate);
        REQUIRE_MESSAGE(r->type != REDIS_REPLY_ERROR, text(r.get()));
        wait_for_calls(5);
    }
    // The target first, then the source, then the others, as the Cluster spec orders it.
    std::vector<int> handover{target, source};
    for (const auto& [port, node_id] : map.ids) {
        if (port != target && port != source) handover.push_back(port);
    }
    for (const int port : handover) {
        RedisAdmin admin(port);
        admin.expect_ok({"CLUSTER", "SETSLOT", slot_text, "NODE", map.ids.at(target)});
    }
    wait_for_calls(100);  // now MOVED, once per backend, then the new owner
    stop = true;
    for (auto& c : callers) c.join();

    CHECK(violations == 0);
    CHECK(unexpected.empty());
    for (const auto& u : unexpected) MESSAGE(u);
    MESSAGE(done.load() << " hold-release cycles, " << retried.load() << " retryable errors retried");
    CHECK(slot_map().port_of(slot) == target);
    const auto state = store.seats(id, "lower").value();
    CHECK(state.front().free == seats);
    CHECK(state.front().held == 0);
    CHECK(state.front().paid == 0);
    // The redirections really happened: the source answered ASK and then MOVED.
    const std::string errors = text(RedisAdmin(source).command({"INFO", "errorstats"}).get());
    MESSAGE(errors);
    CHECK(errors.find("errorstat_ASK") != std::string::npos);
    CHECK(errors.find("errorstat_MOVED") != std::string::npos);
}

namespace {

// Moves `slot`, with its keys, from the primary on port `source` to the one on `target`,
// with no caller in between: the next call there meets MOVED.
void move_slot(int slot, int source, int target) {
    seatlock::testing::move_slot(slot_map(), slot, source, target);
}

}  // namespace

TEST_CASE("on_event: a MOVED followed is redirected (slot, old and new node), then slots_refreshed, on both APIs") {
    seatlock::testing::EventLog log;
    auto options = cluster_options("observed");
    options.on_event = log.callback();
    options.pipeline_blocking_calls = false;
    options.slow_call_threshold = std::chrono::minutes(10);
    seatlock::RedisBackend backend(options);
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
    using seatlock::RedisEvent;
    using Kind = RedisEvent::Kind;
    using Conn = RedisEvent::Connection;
    // The map is learnt at first use, from a node: a discovery.
    for (const std::string id : {"watched", "watched-async"}) {
        store.create_event(event(id, 4)).value();
        REQUIRE(async_store.hold(id, "buyer", seatlock::named_seats("lower", {"A-1"})));
    }
    CHECK(log.wait_for([](const RedisEvent& e) {
        return e.kind == Kind::slots_refreshed && e.connection == Conn::discovery &&
               e.reason == "3 primaries";
    }));

    for (const Conn connection : {Conn::pooled, Conn::pipelined}) {
        CAPTURE(seatlock::to_string(connection));
        const std::string id = connection == Conn::pooled ? "watched" : "watched-async";
        const int slot = seatlock::redis_detail::hash_slot(id);
        const auto map = slot_map();
        const int source = map.port_of(slot);
        int target = -1;
        for (const auto& entry : map.ids) {
            if (entry.first != source) target = entry.first;
        }
        move_slot(slot, source, target);
        // The map is refreshed after a MOVED unless it was moments ago.
        std::this_thread::sleep_for(200ms);
        log.clear();
        const auto held = connection == Conn::pooled
                              ? store.hold(id, "buyer", seatlock::named_seats("lower", {"A-2"}))
                              : async_store.hold(id, "buyer", seatlock::named_seats("lower", {"A-2"}));
        CHECK(held);
        const std::string from = "127.0.0.1:" + std::to_string(source);
        const std::string to = "127.0.0.1:" + std::to_string(target);
        INFO(log.describe());
        CHECK(log.wait_for([&](const RedisEvent& e) {
            return e.kind == Kind::redirected && e.connection == connection && e.reason == "MOVED" &&
                   e.slot == slot && e.previous == from && e.node == to;
        }));
        // The asynchronous path refreshes the map at the next call's start, on its thread.
        if (connection == Conn::pipelined)
            CHECK(async_store.hold(id, "buyer", seatlock::named_seats("lower", {"A-3"})));
        CHECK(log.wait_for(Kind::slots_refreshed, Conn::discovery));
    }
}
