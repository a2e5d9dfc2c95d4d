// SPDX-License-Identifier: MIT
// RedisBackend behind Redis Sentinel, on a setup the test starts (a primary, its replica,
// three sentinels: tests/support/redis_sentinel.hpp): sentinel URLs, what fails and how
// clearly, calls of both APIs on the primary the sentinels name, and failovers (the primary
// killed; SENTINEL FAILOVER) after which calls resume on the new primary and what reached
// the replica before is still there.
#include "conformance/async_api.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_events.hpp"
#include "support/redis_setup.hpp"
#include "support/redis_sentinel.hpp"

#include "sentinel.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
using seatlock::testing::no_limit;
using seatlock::testing::RedisSentinel;

RedisSentinel& setup() { return seatlock::testing::shared<RedisSentinel>(); }

seatlock::RedisOptions sentinel_options(const std::string& prefix) {
    return seatlock::testing::options_for(setup().url(), prefix, 300ms, 1s);
}

seatlock::EventSpec event(const std::string& id) {
    std::vector<seatlock::SeatSpec> list;
    for (int n = 1; n <= 8; ++n) list.push_back({"A-" + std::to_string(n), "A"});
    return {id, "Sentinel", {seatlock::ZoneSpec::named("lower", list)}};
}

bool retryable(const seatlock::Failure& f) {
    using seatlock::errc;
    return f.is(errc::io_error) || f.is(errc::timeout) || f.is(errc::outcome_unknown) ||
           f.is(errc::connection_failed);
}

// Calls `step` until it returns anything but a retryable failure, for at most 20 s; the
// number of retries goes to `retries`.
template <typename Step>
auto until_done(Step step, int& retries) {
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    for (;;) {
        auto r = step();
        if (r || !retryable(r.error()) || std::chrono::steady_clock::now() > give_up) return r;
        ++retries;
        std::this_thread::sleep_for(20ms);
    }
}

// Holds `seat` and buys it as order `order`, retrying retryable failures (the hold by its
// idempotency key, the confirm by its order id); whether both succeeded.
template <typename Store>
bool buy(Store& store, const std::string& id, const std::string& seat, const std::string& order,
         int& retries) {
    auto hold = until_done(
        [&] {
            return store.hold(id, "buyer", seatlock::named_seats("lower", {seat}),
                              seatlock::HoldOptions{std::nullopt, "key-" + order});
        },
        retries);
    if (!hold) {
        MESSAGE("hold of " << seat << ": " << hold.error().message());
        return false;
    }
    auto order_made = until_done([&] { return store.confirm(hold->token, order); }, retries);
    if (!order_made) MESSAGE("confirm of " << seat << ": " << order_made.error().message());
    return static_cast<bool>(order_made);
}

// A-1 of "show" bought on the blocking API and A-2 on the asynchronous one, neither retried.
void buy_on_both_apis(seatlock::SeatHoldStore<seatlock::RedisBackend>& store,
                      seatlock::testing::AsyncStore<seatlock::RedisBackend>& async_store) {
    int retries = 0;
    CHECK(buy(store, "show", "A-1", "blocking", retries));
    CHECK(buy(async_store, "show", "A-2", "async", retries));
    CHECK(retries == 0);
}

// The seats of `id` sold as the node on `port` has them (read directly, not via Sentinel).
long long paid_at(int port, const std::string& prefix, const std::string& id) {
    auto o = seatlock::RedisOptions::from_url("redis://127.0.0.1:" + std::to_string(port)).value();
    o.prefix = prefix;
    seatlock::RedisBackend direct(o);
    seatlock::SeatHoldStore store(direct, no_limit());
    return store.seats(id, "lower").value().front().paid;
}

// Waits until the sentinels name another primary than `old`; its port.
int new_primary(int old) {
    for (int i = 0; i < 400; ++i) {
        if (const int now = setup().primary_port(); now != old) return now;
        std::this_thread::sleep_for(50ms);
    }
    FAIL("the sentinels still name the old primary after 20 s");
    return old;
}

}  // namespace

TEST_CASE("redis+sentinel URLs list sentinels and a service, and never show the password") {
    auto o = seatlock::RedisOptions::from_url(
                 "redis+sentinel://app:s3cret@10.0.0.1:26380,[::1],s3/tickets/2")
                 .value();
    REQUIRE(o.sentinels.size() == 3);
    CHECK(o.sentinels[0].host == "10.0.0.1");
    CHECK(o.sentinels[0].port == 26380);
    CHECK(o.sentinels[1].host == "::1");
    CHECK(o.sentinels[1].port == 26379);
    CHECK(o.sentinels[2].host == "s3");
    CHECK(o.sentinels[2].port == 26379);
    CHECK(o.sentinel_service == "tickets");
    CHECK(o.db == 2);
    CHECK(o.user == "app");  // the Redis servers' credentials, not the sentinels'
    CHECK(o.password == "s3cret");
    CHECK(o.sentinel_password.empty());
    CHECK(o.cluster_nodes.empty());
    CHECK(seatlock::RedisOptions::from_url("redis+sentinel://h/svc").value().db == 0);
    CHECK(seatlock::RedisOptions::from_url("redis://h:1").value().sentinels.empty());
    for (const char* bad :
         {"redis+sentinel://:s3cret@h1:26379", "redis+sentinel://:s3cret@h1:26379/",
          "redis+sentinel://:s3cret@h1:70000/svc", "redis+sentinel://:s3cret@h1,/svc",
          "redis+sentinel://:s3cret@h1/svc/x", "redis+sentinel://:s3cret@h1/svc?x=1",
          "sentinel://:s3cret@h1/svc"}) {
        CAPTURE(bad);
        auto r = seatlock::RedisOptions::from_url(bad);
        REQUIRE(r.is(seatlock::errc::invalid_argument));
        CHECK(r.error().detail.find("s3cret") == std::string::npos);
    }
}

TEST_CASE("sentinel options that can never work are refused at construction") {
    auto o = seatlock::RedisOptions::from_url("redis+sentinel://h1/svc").value();
    auto no_service = o;
    no_service.sentinel_service.clear();
    CHECK_THROWS_AS(seatlock::RedisBackend{no_service}, seatlock::Error);
    auto both = o;
    both.cluster_nodes = {{"h2", 7000}};
    CHECK_THROWS_AS(seatlock::RedisBackend{both}, seatlock::Error);
    auto spaced = o;
    spaced.sentinel_service = "my service";
    CHECK_THROWS_AS(seatlock::RedisBackend{spaced}, seatlock::Error);
    auto never = o;
    never.discovery_timeout = 0ms;
    CHECK_THROWS_AS(seatlock::RedisBackend{never}, seatlock::Error);
}

TEST_CASE("no primary found is connection_failed within discovery_timeout, saying why") {
    auto unknown = sentinel_options("unknown");
    unknown.sentinel_service = "nope";
    unknown.password = "s3cret";
    unknown.discovery_timeout = 300ms;
    seatlock::RedisBackend backend(unknown);
    const auto started = std::chrono::steady_clock::now();
    auto r = backend.ping();
    REQUIRE(r.is(seatlock::errc::connection_failed));
    CHECK(std::chrono::steady_clock::now() - started < 3s);
    CHECK(r.error().detail.find("no service named 'nope'") != std::string::npos);
    CHECK(r.error().detail.find("s3cret") == std::string::npos);
    MESSAGE(r.error().detail);

    auto nowhere = sentinel_options("nowhere");
    const seatlock::testing::ClosedPort closed;  // refuses, and nobody else takes it
    nowhere.sentinels = {{"127.0.0.1", closed.port()}};
    nowhere.discovery_timeout = 300ms;
    seatlock::RedisBackend lost(nowhere);
    CHECK(lost.ping().is(seatlock::errc::connection_failed));
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(lost, no_limit());
    CHECK(async_store.events().is(seatlock::errc::connection_failed));

    auto refused = sentinel_options("refused");  // these sentinels have no password
    refused.sentinel_password = "s3cret-too";
    refused.discovery_timeout = 300ms;
    seatlock::RedisBackend unwelcome(refused);
    auto denied = unwelcome.ping();
    REQUIRE(denied.is(seatlock::errc::auth_failed));
    CHECK(denied.error().detail.find("s3cret") == std::string::npos);
}

TEST_CASE("holds and confirms of both APIs go to the primary the sentinels name") {
    setup().settle();
    seatlock::RedisBackend backend(sentinel_options("named"));
    REQUIRE(backend.ping());
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
    store.create_event(event("show")).value();
    buy_on_both_apis(store, async_store);
    CHECK(paid_at(setup().primary_port(), "named", "show") == 2);
}

// A failover under a backend that was in use: `fail` brings it about, and returns once
// calls made from then on must reach the new primary. Each backend reports the primary it
// found first and the new one (RedisOptions::on_event: primary_changed).
void calls_resume_on_the_new_primary(const std::string& prefix,
                                     const std::function<void(int)>& fail) {
    setup().settle();
    // A backend for each API, so that each finds the new primary by itself.
    seatlock::testing::EventLog log, async_log;
    auto options = sentinel_options(prefix);
    options.on_event = log.callback();
    seatlock::RedisBackend backend(options);
    options.on_event = async_log.callback();
    seatlock::RedisBackend async_backend(options);
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(async_backend, no_limit());
    store.create_event(event("show")).value();
    int retries = 0;
    REQUIRE(buy(store, "show", "A-1", "before-blocking", retries));
    REQUIRE(buy(async_store, "show", "A-2", "before-async", retries));
    const int old = setup().primary_port();
    // What the replica has is what a failover keeps.
    REQUIRE(setup().replicated(2s));

    const auto started = std::chrono::steady_clock::now();
    fail(old);
    CHECK(buy(store, "show", "A-3", "after-blocking", retries));
    CHECK(buy(async_store, "show", "A-4", "after-async", retries));
    const auto took = std::chrono::steady_clock::now() - started;
    MESSAGE(retries << " retryable errors retried; calls resumed after "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                    << " ms");
    CHECK(took < 10s);
    // The other data node, which the sentinels name now.
    const int now = setup().data_ports().front() == old ? setup().data_ports().back()
                                                        : setup().data_ports().front();
    CHECK(new_primary(old) == now);
    CHECK(paid_at(now, prefix, "show") == 4);
    const std::string old_address = "127.0.0.1:" + std::to_string(old);
    const std::string new_address = "127.0.0.1:" + std::to_string(now);
    using seatlock::RedisEvent;
    for (auto* events : {&log, &async_log}) {
        INFO(events->describe());
        auto changed = [&](const std::string& from, const std::string& to) {
            return events->wait_for([&](const RedisEvent& e) {
                return e.kind == RedisEvent::Kind::primary_changed &&
                       e.connection == RedisEvent::Connection::discovery && e.previous == from &&
                       e.node == to;
            });
        };
        CHECK(changed("", old_address));
        CHECK(changed(old_address, new_address));
    }
}

TEST_CASE("a killed primary: calls of both APIs resume on the promoted replica, with what it had") {
    // No waiting here: the calls themselves meet the dead primary and find the new one.
    calls_resume_on_the_new_primary("killed", [](int old) { setup().kill(old); });
    // The killed node comes back as a replica of the new primary, for the next failover.
    const int old_port = [] {
        for (const int port : setup().data_ports()) {
            if (port != setup().primary_port()) return port;
        }
        return 0;
    }();
    setup().restart_as_replica(old_port);
}

TEST_CASE("SENTINEL FAILOVER: calls of both APIs move to the promoted replica, with what it had") {
    calls_resume_on_the_new_primary("handover", [](int old) {
        setup().failover();
        new_primary(old);
        // The old primary still takes writes for seconds, until the sentinels make it a
        // replica (and those writes are lost then: what replicas_to_ack guards against).
        // The backend asks the sentinels again at most this long after its last look.
        std::this_thread::sleep_for(seatlock::redis_detail::SentinelRouter::recheck_period + 100ms);
    });
}

// On a Sentinel setup of its own, last: stopping the replica must not change what the
// failover cases above start from.
TEST_CASE("behind Sentinel, replicas_to_ack waits for the named primary's replica") {
    RedisSentinel own;
    auto options = seatlock::RedisOptions::from_url(own.url()).value();
    options.prefix = "acked";
    options.connect_timeout = 300ms;
    options.command_timeout = 1s;
    options.replicas_to_ack = 1;
    options.replica_ack_timeout = 200ms;
    seatlock::RedisBackend backend(options);
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
    store.create_event(event("show")).value();

    // The replica acknowledges: done, on both APIs.
    buy_on_both_apis(store, async_store);

    // Stopped for less than the sentinels' down-after-milliseconds (1 s): no failover, but
    // no acknowledgement either. The writes are applied on the primary and said so.
    auto first = store.hold("show", "buyer", seatlock::named_seats("lower", {"A-3"}));
    auto second = store.hold("show", "buyer", seatlock::named_seats("lower", {"A-4"}));
    REQUIRE(first);
    REQUIRE(second);
    const int primary = own.primary_port();
    const int replica = own.data_ports().front() == primary ? own.data_ports().back()
                                                            : own.data_ports().front();
    {
        seatlock::testing::StoppedServer stopped(replica);
        const auto paid = store.confirm(first->token, "blocking-unacked");
        REQUIRE_FALSE(paid);
        CHECK(paid.is(seatlock::errc::not_replicated));
        const auto async_paid = async_store.confirm(second->token, "async-unacked");
        REQUIRE_FALSE(async_paid);
        CHECK(async_paid.is(seatlock::errc::not_replicated));
    }
    CHECK(paid_at(primary, "acked", "show") == 4);
}
