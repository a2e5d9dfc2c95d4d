// SPDX-License-Identifier: MIT
// tests/integration/tls_topologies.cpp: TLS on a Redis Cluster (rediss+cluster://) and
// behind Redis Sentinel (rediss+sentinel://). Every process the test starts serves TLS
// only (`port 0`, tests/support/tls_admin.hpp), sentinels included: a byte sent in clear,
// by the slot map's CLUSTER SLOTS, Sentinel's discovery, a role check, a blocking or an
// asynchronous call, would find no one listening and fail the case. Holds and locks
// through both APIs on every primary of the cluster, a MOVED followed, a SENTINEL FAILOVER
// followed, and a CA that did not sign the servers' certificates refused with
// connection_failed on both. One cluster and one Sentinel setup for all the cases.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <map>
#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/lock_manager.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster.hpp"
#include "conformance/async_api.hpp"
#include "sentinel.hpp"
#include "support/cluster_slots.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_events.hpp"
#include "support/redis_sentinel.hpp"
#include "support/redis_setup.hpp"
#include "support/tls_admin.hpp"
#include "support/tls_certificates.hpp"

namespace tls_topologies {

using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::RedisEvent;
using seatlock::testing::no_limit;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisCluster;
using seatlock::testing::RedisSentinel;
using seatlock::testing::TlsCertificates;
using seatlock::testing::TlsOnly;

namespace {

// 3 primaries, no replicas: the cases need primaries to route to, not failovers.
struct TlsCluster {
    TlsCertificates certs;
    TlsOnly tls = seatlock::testing::tls_only(certs);
    RedisCluster cluster{std::chrono::milliseconds(2000), &tls, 0};
};

struct TlsSentinel {
    TlsCertificates certs;
    TlsOnly tls = seatlock::testing::tls_only(certs);
    RedisSentinel setup{RedisSentinel::Layout{std::chrono::milliseconds(3000), {}, &tls}};
};

TlsCluster& cluster() {
    return seatlock::testing::shared<TlsCluster>();
}
TlsSentinel& sentinel() {
    return seatlock::testing::shared<TlsSentinel>();
}

// `url` trusting the CA file `ca` of `certs`; generous timeouts (sanitizer builds are slow).
seatlock::RedisOptions options(const std::string& url, const TlsCertificates& certs,
                               const std::string& prefix, const std::string& ca = "ca.crt") {
    return seatlock::testing::options_for(url + "?tls_ca_file=" + certs.path(ca), prefix, 2s, 10s);
}

seatlock::EventSpec event(const std::string& id) {
    std::vector<seatlock::SeatSpec> list;
    for (int n = 1; n <= 8; ++n) list.push_back({"A-" + std::to_string(n), "A"});
    return {id, "TLS", {seatlock::ZoneSpec::named("lower", list)}};
}

std::string text(const redisReply* r) {
    return {r->str, r->len};
}

RedisAdmin admin(int port) {
    return RedisAdmin(port, {}, cluster().cluster.admin_connector());
}

// The cluster's primaries as CLUSTER SLOTS says, over TLS (support/cluster_slots.hpp).
seatlock::testing::SlotMap slot_map() {
    return seatlock::testing::slot_map(cluster().cluster.ports().front(), cluster().cluster.admin_connector());
}

// Moves `slot` with its keys from the primary on `source` to the one on `target` (MIGRATE
// between nodes over TLS too), with no caller in between: the next call meets MOVED.
void move_slot(int slot, int source, int target) {
    seatlock::testing::move_slot(slot_map(), slot, source, target, cluster().cluster.admin_connector());
}

// What a PING sent in clear to 127.0.0.1:`port` gets back within a second: a TLS port
// closes the connection (or sends a TLS alert), never "+PONG".
std::string clear_ping(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval limit{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    std::string answer;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::write(fd, "PING\r\n", 6) == 6) {
        char buffer[64];
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) answer.assign(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return answer;
}

// Every process of a setup, sentinels included, serves TLS only: its port answers over
// TLS (this admin connection) and not in clear, and a data node listens on no port in
// clear (`port 0`; sentinels, started the same way, have no CONFIG to show it).
void check_tls_only(const std::vector<int>& ports, const seatlock::testing::AdminConnector& connect,
                    const std::vector<int>& sentinels = {}) {
    for (const int port : ports) {
        CAPTURE(port);
        RedisAdmin a(port, {}, connect);
        CHECK(a.text({"PING"}) == "PONG");
        CHECK(clear_ping(port).rfind("+PONG", 0) == std::string::npos);
        if (std::find(sentinels.begin(), sentinels.end(), port) != sentinels.end()) continue;
        const auto plain = a.command({"CONFIG", "GET", "port"});
        REQUIRE(plain->elements == 2);
        CHECK(text(plain->element[1]) == "0");
    }
}

bool retryable(const seatlock::Failure& f) {
    return f.is(errc::io_error) || f.is(errc::timeout) || f.is(errc::outcome_unknown) ||
           f.is(errc::connection_failed);
}

// `step` until it returns anything but a retryable failure, for at most 20 s.
template <typename Step>
auto until_done(Step step) {
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    for (;;) {
        auto r = step();
        if (r || !retryable(r.error()) || std::chrono::steady_clock::now() > give_up) return r;
        std::this_thread::sleep_for(20ms);
    }
}

// The words OpenSSL gives for a chain that ends in a CA nobody trusts (Redis sends its CA
// with its certificate).
constexpr const char* not_verified = "did not verify: self-signed certificate in certificate chain";

}  // namespace

// One ctest entry per set-up (a cluster, a Sentinel setup: seconds to start), its rules
// as subcases: each runs the case from its start, on the set-up the first one started.
TEST_CASE("rediss+cluster: every node serving TLS only") {
    SUBCASE("a CA that did not sign the nodes' certificates is connection_failed naming why") {
        auto& c = cluster();
        seatlock::RedisBackend backend(
            options(c.cluster.url(), c.certs, "tls-wrong-ca", "other-ca.crt"));
        seatlock::SeatHoldStore store(backend, no_limit());
        seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
        auto ping = backend.ping();
        REQUIRE(ping.is(errc::connection_failed));
        MESSAGE(ping.error().detail);
        CHECK(ping.error().detail.find(not_verified) != std::string::npos);
        auto blocking = store.hold("show-0", "h", seatlock::named_seats("lower", {"A-1"}));
        REQUIRE(blocking.is(errc::connection_failed));
        CHECK(blocking.error().detail.find(not_verified) != std::string::npos);
        auto async = async_store.hold("show-0", "h", seatlock::named_seats("lower", {"A-1"}));
        REQUIRE(async.is(errc::connection_failed));
        CHECK(async.error().detail.find(not_verified) != std::string::npos);
    }
    SUBCASE(
        "holds and locks on every primary through both APIs, a MOVED followed, nothing in clear") {
        auto& c = cluster();
        check_tls_only(c.cluster.ports(), c.cluster.admin_connector());
        seatlock::testing::EventLog log;
        auto o = options(c.cluster.url(), c.certs, "tls-cluster");
        o.on_event = log.callback();
        o.pipeline_blocking_calls = false;  // blocking calls on the nodes' pools, over TLS
        seatlock::RedisBackend backend(o);
        seatlock::SeatHoldStore store(backend, no_limit());
        seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
        REQUIRE(backend.ping());  // the slot map learnt and every primary PINGed, over TLS

        // Events until every primary serves one.
        const auto map = slot_map();
        std::map<int, std::string> event_on;  // port -> event id
        for (int i = 0; event_on.size() < 3 && i < 100; ++i) {
            const std::string id = "show-" + std::to_string(i);
            event_on.emplace(map.port_of(seatlock::redis_detail::hash_slot(id)), id);
        }
        REQUIRE(event_on.size() == 3);
        seatlock::LockManager locks(backend);
        for (const auto& entry : event_on) {
            const std::string& id = entry.second;
            CAPTURE(entry.first);
            REQUIRE(store.create_event(event(id)));
            auto blocking = store.hold(id, "blocking", seatlock::named_seats("lower", {"A-1"}));
            REQUIRE(blocking);
            auto async = async_store.hold(id, "async", seatlock::named_seats("lower", {"A-2"}));
            REQUIRE(async);
            CHECK(store.confirm(blocking->token, "order-" + id));
            CHECK(async_store.release(async->token));
            const auto seats = store.seats(id, "lower").value().front();
            CHECK(seats.paid == 1);
            CHECK(seats.held == 0);
            // A lock of the event's group, taken on one API and refused on the other.
            auto guard = locks.try_lock(id + ":row-a");
            REQUIRE_MESSAGE(guard, guard.error().message());
            CHECK_FALSE(locks.async_try_lock(id + ":row-a", boost::asio::use_future).get());
            CHECK(guard->unlock());
            auto async_guard = locks.async_try_lock(id + ":row-a", boost::asio::use_future).get();
            REQUIRE(async_guard);
            CHECK(async_guard->async_unlock(boost::asio::use_future).get());
        }

        // A slot moved under the backend: MOVED, followed on both APIs to the new owner.
        const std::string& id = event_on.begin()->second;
        const int slot = seatlock::redis_detail::hash_slot(id);
        const int source = map.port_of(slot);
        const int target = std::next(event_on.begin())->first;
        move_slot(slot, source, target);
        std::this_thread::sleep_for(
            200ms);  // the map is refreshed after a MOVED unless it was moments ago
        log.clear();
        CHECK(store.hold(id, "after-move", seatlock::named_seats("lower", {"A-3"})));
        CHECK(async_store.hold(id, "after-move-async", seatlock::named_seats("lower", {"A-4"})));
        INFO(log.describe());
        CHECK(log.wait_for([&](const RedisEvent& e) {
            return e.kind == RedisEvent::Kind::redirected && e.reason == "MOVED" &&
                   e.slot == slot && e.node == "127.0.0.1:" + std::to_string(target);
        }));
        CHECK(store.seats(id, "lower").value().front().held == 2);
        CHECK(admin(target).integer({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) > 0);
        CHECK(admin(source).integer({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) == 0);
    }
}

TEST_CASE("rediss+sentinel: every process serving TLS only") {
    SUBCASE("a CA that did not sign the sentinels' certificates is connection_failed naming why") {
        auto& s = sentinel();
        auto o = options(s.setup.url(), s.certs, "tls-sentinel-wrong-ca", "other-ca.crt");
        o.discovery_timeout = 500ms;
        seatlock::RedisBackend backend(o);
        seatlock::SeatHoldStore store(backend, no_limit());
        seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
        auto blocking = store.hold("show", "h", seatlock::named_seats("lower", {"A-5"}));
        REQUIRE(blocking.is(errc::connection_failed));
        MESSAGE(blocking.error().detail);
        CHECK(blocking.error().detail.find(not_verified) != std::string::npos);
        auto async = async_store.hold("show", "h", seatlock::named_seats("lower", {"A-5"}));
        REQUIRE(async.is(errc::connection_failed));
        CHECK(async.error().detail.find(not_verified) != std::string::npos);
    }
    SUBCASE(
        "calls of both APIs on the primary, then on the one a SENTINEL FAILOVER promoted, nothing "
        "in clear") {
        auto& s = sentinel();
        std::vector<int> ports = s.setup.sentinel_ports();
        for (const int port : s.setup.data_ports()) ports.push_back(port);
        check_tls_only(ports, s.setup.admin_connector(), s.setup.sentinel_ports());
        seatlock::testing::EventLog log;
        auto o = options(s.setup.url(), s.certs, "tls-sentinel");
        o.on_event = log.callback();
        seatlock::RedisBackend backend(o);
        seatlock::SeatHoldStore store(backend, no_limit());
        seatlock::testing::AsyncStore<seatlock::RedisBackend> async_store(backend, no_limit());
        REQUIRE(backend.ping());
        REQUIRE(store.create_event(event("show")));
        auto first = store.hold("show", "blocking", seatlock::named_seats("lower", {"A-1"}));
        REQUIRE(first);
        auto second = async_store.hold("show", "async", seatlock::named_seats("lower", {"A-2"}));
        REQUIRE(second);
        REQUIRE(s.setup.replicated(5s));

        const int old = s.setup.primary_port();
        s.setup.failover();
        int now = old;
        for (int i = 0; i < 400 && now == old; ++i) {
            std::this_thread::sleep_for(50ms);
            now = s.setup.primary_port();
        }
        REQUIRE(now != old);
        // The old primary takes writes until the sentinels make it a replica; the backend asks
        // the sentinels again at most this long after its last look.
        std::this_thread::sleep_for(seatlock::redis_detail::SentinelRouter::recheck_period + 100ms);
        auto third = until_done([&] {
            return store.hold("show", "blocking-after", seatlock::named_seats("lower", {"A-3"}),
                              seatlock::HoldOptions{std::nullopt, "after-blocking"});
        });
        CHECK(third);
        auto fourth = until_done([&] {
            return async_store.hold("show", "async-after", seatlock::named_seats("lower", {"A-4"}),
                                    seatlock::HoldOptions{std::nullopt, "after-async"});
        });
        CHECK(fourth);
        INFO(log.describe());
        CHECK(log.wait_for([&](const RedisEvent& e) {
            return e.kind == RedisEvent::Kind::primary_changed &&
                   e.node == "127.0.0.1:" + std::to_string(now);
        }));
        // What the old primary had, and what came after, is on the new one.
        RedisAdmin promoted(now, {}, s.setup.admin_connector());
        const auto role = promoted.command({"ROLE"});
        REQUIRE(role->type == REDIS_REPLY_ARRAY);
        CHECK(text(role->element[0]) == "master");
        CHECK(store.seats("show", "lower").value().front().held == 4);
        s.setup.settle();
    }
}

}  // namespace tls_topologies
