// SPDX-License-Identifier: MIT
// RedisOptions::on_event and RedisBackend::stats() on a private redis-server: the events a
// first use, a killed connection and a slow call make, on the pooled and the pipelined
// connections; a callback that blocks never holds up a call, and what its queue drops is
// counted and said; the counters move as calls go; the options' checks. (Sentinel's
// primary_changed and the Cluster's redirected and slots_refreshed: sentinel.cpp and
// cluster.cpp, on their setups.)
#include "conformance/async_api.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_events.hpp"
#include "support/redis_setup.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace observe_test {

namespace {

using namespace std::chrono_literals;
using seatlock::RedisEvent;
using seatlock::RedisStats;
using seatlock::testing::EventLog;
using seatlock::testing::no_limit;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;
using Kind = RedisEvent::Kind;
using Conn = RedisEvent::Connection;

seatlock::EventSpec event(const std::string& id = "game1") {
    std::vector<seatlock::SeatSpec> seats;
    for (int n = 1; n <= 20; ++n) seats.push_back({"A-" + std::to_string(n), "A"});
    return {id, "Observed", {seatlock::ZoneSpec::named("lower", seats),
                             seatlock::ZoneSpec::general_admission("ga", 100000)}};
}

// Options for `server` whose events go to `log`; blocking calls on the pool only, so that
// each API has its own kind of connection; no call slow enough for a slow_call (a busy
// machine's would be).
seatlock::RedisOptions observed(const RedisServer& server, EventLog& log) {
    auto o = seatlock::testing::options_for(server);
    o.on_event = log.callback();
    o.pipeline_blocking_calls = false;
    o.slow_call_threshold = std::chrono::minutes(10);
    return o;
}

// The one entry of `stats` for `connection` (a single server: one pool, one pipeline).
seatlock::RedisConnectionStats entry(const RedisStats& stats, Conn connection) {
    seatlock::RedisConnectionStats found;
    int n = 0;
    for (const auto& c : stats.connections) {
        if (c.connection == connection) {
            found = c;
            ++n;
        }
    }
    REQUIRE_MESSAGE(n == 1, "entries for " << seatlock::to_string(connection) << ": " << n);
    return found;
}

std::string ga_hold(seatlock::SeatHoldStore<seatlock::RedisBackend>& store) {
    auto h = store.hold("game1", "buyer", seatlock::quantity("ga", 1));
    return h ? std::string() : h.error().message();
}

}  // namespace

TEST_CASE("on_event: a fresh server gives connected, then library_loaded, on each kind of connection") {
    RedisServer server;
    EventLog log;
    seatlock::RedisBackend backend(observed(server, log));
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
    const std::string where = "127.0.0.1:" + std::to_string(server.port());

    store.create_event(event()).value();
    REQUIRE(log.wait_for(Kind::library_loaded, Conn::pooled));
    // The pipelined connection finds the library there: it loads it only once it is gone.
    RedisAdmin(server.port()).expect_ok({"FUNCTION", "FLUSH"});
    CHECK(async_store.hold("game1", "buyer", seatlock::quantity("ga", 1)));
    REQUIRE(log.wait_for(Kind::library_loaded, Conn::pipelined));

    const auto events = log.events();
    INFO(log.describe());
    for (const Conn connection : {Conn::pooled, Conn::pipelined}) {
        // connected comes first, library_loaded after it, both naming the server.
        std::vector<Kind> kinds;
        for (const auto& e : events) {
            if (e.connection != connection) continue;
            CHECK(e.node == where);
            kinds.push_back(e.kind);
        }
        REQUIRE(kinds.size() == 2);
        CHECK(kinds[0] == Kind::connected);
        CHECK(kinds[1] == Kind::library_loaded);
    }
    for (const auto& e : events) {
        if (e.kind == Kind::library_loaded) CHECK(e.reason.rfind("seatlock", 0) == 0);
        CHECK(e.dropped == 0);
        CHECK(e.at.time_since_epoch().count() != 0);
    }
    // One thread of the backend's own runs the callback: not the caller's.
    const auto threads = log.threads();
    CHECK(std::set<std::thread::id>(threads.begin(), threads.end()).size() == 1);
    CHECK(threads.front() != std::this_thread::get_id());
}

TEST_CASE("on_event: CLIENT KILL gives disconnected, reconnecting and connected on both APIs; reconnects counted") {
    RedisServer server;
    EventLog log;
    seatlock::RedisBackend backend(observed(server, log));
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
    store.create_event(event()).value();
    REQUIRE(async_store.hold("game1", "buyer", seatlock::quantity("ga", 1)));
    CHECK(entry(backend.stats(), Conn::pooled).reconnects == 0);
    CHECK(entry(backend.stats(), Conn::pipelined).reconnects == 0);
    REQUIRE(log.wait_for(Kind::connected, Conn::pipelined));
    log.clear();

    RedisAdmin admin(server.port());
    REQUIRE(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) == 2);
    CHECK(ga_hold(store).empty());
    CHECK(async_store.hold("game1", "buyer", seatlock::quantity("ga", 1)));
    for (const Conn connection : {Conn::pooled, Conn::pipelined}) {
        CAPTURE(seatlock::to_string(connection));
        REQUIRE(log.wait_for(Kind::connected, connection));
        std::vector<RedisEvent> mine;
        for (const auto& e : log.events()) {
            if (e.connection == connection) mine.push_back(e);
        }
        INFO(log.describe());
        REQUIRE(mine.size() == 3);
        CHECK(mine[0].kind == Kind::disconnected);
        CHECK(mine[0].error == seatlock::errc::io_error);
        CHECK(mine[0].reason.find("closed") != std::string::npos);
        CHECK(mine[1].kind == Kind::reconnecting);
        CHECK(mine[2].kind == Kind::connected);
        CHECK(entry(backend.stats(), connection).reconnects == 1);
    }
}

TEST_CASE("on_event: a call slower than slow_call_threshold is a slow_call, on both APIs") {
    RedisServer server({"--enable-debug-command", "yes"});
    EventLog log;
    auto options = observed(server, log);
    options.slow_call_threshold = 250ms;
    seatlock::RedisBackend backend(options);
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
    store.create_event(event()).value();
    REQUIRE(async_store.hold("game1", "buyer", seatlock::quantity("ga", 1)));
    // Quick calls are not slow.
    REQUIRE(log.wait_for(Kind::connected, Conn::pipelined));
    CHECK(log.count([](const RedisEvent& e) { return e.kind == Kind::slow_call; }) == 0);

    RedisAdmin sleeper(server.port());
    for (const Conn connection : {Conn::pooled, Conn::pipelined}) {
        CAPTURE(seatlock::to_string(connection));
        sleeper.send({"DEBUG", "SLEEP", "0.6"});
        std::this_thread::sleep_for(20ms);  // the server sleeps now
        if (connection == Conn::pooled)
            CHECK(ga_hold(store).empty());
        else
            CHECK(async_store.hold("game1", "buyer", seatlock::quantity("ga", 1)));
        CHECK(sleeper.reply()->type == REDIS_REPLY_STATUS);  // the server did sleep
        INFO(log.describe());
        CHECK(log.wait_for([&](const RedisEvent& e) {
            return e.kind == Kind::slow_call && e.connection == connection &&
                   e.reason == "FCALL hold" && e.took >= 250ms && e.took < 10s &&
                   e.node == "127.0.0.1:" + std::to_string(server.port());
        }));
    }
}

TEST_CASE("on_event: a callback that blocks never holds up calls; what its queue drops is counted and said") {
    RedisServer server;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::mutex mutex;
    std::vector<RedisEvent> delivered;  // guarded by mutex
    auto options = seatlock::testing::options_for(server);
    options.pipeline_blocking_calls = false;
    options.slow_call_threshold = 0ms;  // every call is an event
    options.event_queue_limit = 4;
    options.on_event = [&](const RedisEvent& e) {
        released.wait();  // blocks until the test lets it go
        std::lock_guard lock(mutex);
        delivered.push_back(e);
    };
    {
        seatlock::RedisBackend backend(options);
        seatlock::SeatHoldStore store(backend, no_limit());
        seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
        // Every call ends while the callback is stuck on the first event.
        store.create_event(event()).value();
        for (int i = 0; i < 40; ++i) {
            REQUIRE(ga_hold(store).empty());
            REQUIRE(async_store.hold("game1", "buyer", seatlock::quantity("ga", 1)));
        }
        const auto stuck = backend.stats();
        CHECK(stuck.events_delivered == 0);
        CHECK(stuck.events_dropped > 40);
        release.set_value();
        // The first event and the queue's 4, then room again.
        for (int i = 0; i < 1000 && backend.stats().events_delivered < 5; ++i)
            std::this_thread::sleep_for(5ms);
        CHECK(backend.stats().events_delivered == 5);
        // The next event after the drops says how many there were before it.
        REQUIRE(ga_hold(store).empty());
        std::uint64_t said = 0;
        for (int i = 0; i < 1000; ++i) {
            {
                std::lock_guard lock(mutex);
                said = 0;
                for (const auto& e : delivered) said += e.dropped;
            }
            if (said >= stuck.events_dropped) break;
            std::this_thread::sleep_for(5ms);
        }
        CHECK(said == stuck.events_dropped);
        CHECK(backend.stats().events_dropped == stuck.events_dropped);
    }
}

TEST_CASE("on_event: the destructor waits for the callback running, and none runs after it") {
    RedisServer server;
    std::promise<void> entered;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> calls{0};
    std::atomic<bool> returned{false};
    auto options = seatlock::testing::options_for(server);
    options.on_event = [&, first = std::make_shared<std::once_flag>()](const RedisEvent&) {
        std::call_once(*first, [&] { entered.set_value(); });
        released.wait();
        ++calls;
    };
    auto backend = std::make_unique<seatlock::RedisBackend>(options);
    REQUIRE(backend->ping());
    entered.get_future().wait();
    std::thread destroyer([&] {
        backend.reset();
        returned = true;
    });
    std::this_thread::sleep_for(100ms);
    CHECK_FALSE(returned.load());  // still waiting for the callback
    release.set_value();
    destroyer.join();
    const int after = calls.load();
    CHECK(after >= 1);
    std::this_thread::sleep_for(50ms);
    CHECK(calls.load() == after);
}

TEST_CASE("stats(): calls sent, reads, calls in flight and connects move as calls go, per connection") {
    RedisServer server({"--enable-debug-command", "yes"});
    auto options = seatlock::testing::options_for(server);
    options.pipeline_blocking_calls = false;
    seatlock::RedisBackend backend(options);
    CHECK(backend.stats().connections.empty());  // nothing used yet
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
    store.create_event(event()).value();

    const auto pooled_before = entry(backend.stats(), Conn::pooled);
    for (int i = 0; i < 10; ++i) REQUIRE(ga_hold(store).empty());
    const auto pooled = entry(backend.stats(), Conn::pooled);
    CHECK(pooled.node == "127.0.0.1:" + std::to_string(server.port()));
    CHECK(pooled.sent - pooled_before.sent == 10);
    CHECK(pooled.writes - pooled_before.writes == 10);
    CHECK(pooled.reads - pooled_before.reads == 10);  // one reply each
    CHECK(pooled.in_flight == 0);
    CHECK(pooled.connects == 1);
    CHECK(pooled.reconnects == 0);

    REQUIRE(async_store.hold("game1", "buyer", seatlock::quantity("ga", 1)));
    const auto pipelined_before = entry(backend.stats(), Conn::pipelined);
    for (int i = 0; i < 10; ++i)
        REQUIRE(async_store.hold("game1", "buyer", seatlock::quantity("ga", 1)));
    auto pipelined = entry(backend.stats(), Conn::pipelined);
    CHECK(pipelined.sent - pipelined_before.sent == 10);
    CHECK(pipelined.writes - pipelined_before.writes == 10);  // one call at a time
    CHECK(pipelined.reads - pipelined_before.reads >= 10);
    CHECK(pipelined.connects == 1);
    CHECK(pipelined.in_flight == 0);

    // A call waiting for a sleeping server is in flight until it is answered.
    RedisAdmin sleeper(server.port());
    sleeper.send({"DEBUG", "SLEEP", "0.3"});
    std::this_thread::sleep_for(20ms);
    seatlock::SeatHoldStore async_calls(backend, no_limit());
    std::promise<bool> answered;
    async_calls.async_hold("game1", "buyer", seatlock::quantity("ga", 1),
                           [&](seatlock::Result<seatlock::Hold> h) { answered.set_value(h.has_value()); });
    std::this_thread::sleep_for(50ms);
    CHECK(entry(backend.stats(), Conn::pipelined).in_flight == 1);
    CHECK(answered.get_future().get());
    CHECK(sleeper.reply()->type == REDIS_REPLY_STATUS);
    CHECK(entry(backend.stats(), Conn::pipelined).in_flight == 0);
    CHECK(backend.stats().events_delivered == 0);  // no on_event: no event at all
}

TEST_CASE("observability options that can never work are refused, naming the option") {
    seatlock::RedisOptions o;
    o.slow_call_threshold = -1ms;
    const auto negative = o.validate();
    REQUIRE_FALSE(negative);
    CHECK(negative.is(seatlock::errc::invalid_argument));
    CHECK(negative.error().detail.find("slow_call_threshold must not be negative") != std::string::npos);
    CHECK_THROWS_AS(seatlock::RedisBackend{o}, seatlock::Error);
    o.slow_call_threshold = 0ms;
    CHECK(o.validate());
    o.event_queue_limit = 0;
    const auto no_queue = o.validate();
    REQUIRE_FALSE(no_queue);
    CHECK(no_queue.error().detail.find("event_queue_limit") != std::string::npos);
}

TEST_CASE("to_string names every event kind and connection kind") {
    CHECK(std::string(seatlock::to_string(Kind::connected)) == "connected");
    CHECK(std::string(seatlock::to_string(Kind::disconnected)) == "disconnected");
    CHECK(std::string(seatlock::to_string(Kind::reconnecting)) == "reconnecting");
    CHECK(std::string(seatlock::to_string(Kind::primary_changed)) == "primary_changed");
    CHECK(std::string(seatlock::to_string(Kind::slots_refreshed)) == "slots_refreshed");
    CHECK(std::string(seatlock::to_string(Kind::redirected)) == "redirected");
    CHECK(std::string(seatlock::to_string(Kind::library_loaded)) == "library_loaded");
    CHECK(std::string(seatlock::to_string(Kind::slow_call)) == "slow_call");
    CHECK(std::string(seatlock::to_string(Conn::pooled)) == "pooled");
    CHECK(std::string(seatlock::to_string(Conn::pipelined)) == "pipelined");
    CHECK(std::string(seatlock::to_string(Conn::discovery)) == "discovery");
}

}  // namespace observe_test
