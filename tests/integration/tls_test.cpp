// SPDX-License-Identifier: MIT
// tests/integration/tls_test.cpp: TLS to Redis (RedisOptions::tls, rediss:// URLs) against
// Debian's redis-server serving TLS on a port of its own, with a CA and certificates made
// by the openssl command line for each case. Holds and locks through both APIs, every
// backend connection on the TLS port; a certificate that does not verify (another CA, a
// name it does not carry) refused with connection_failed naming OpenSSL's reason; a
// client certificate the server requires, given and not given; calls after CLIENT KILL on
// a new handshake. The server keeps a plain port too: the test's own admin connection
// (CLIENT LIST, CLIENT KILL) and its readiness check use it, and CLIENT LIST shows on which
// port each client came in.
#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <optional>
#include <seatlock/lock_manager.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/every_path.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"
#include "support/tls_certificates.hpp"

namespace tls_test {

using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;
using Certificates = seatlock::testing::TlsCertificates;

namespace {

// A private redis-server with a TLS port beside its plain one; `client_certificates`: it
// refuses clients without a certificate its CA signed (tls-auth-clients yes).
struct TlsServer {
    explicit TlsServer(const Certificates& certs, bool client_certificates = false)
        : server(certs.server_arguments(client_certificates)), admin(server.port()) {
        auto reply = admin.command({"CONFIG", "GET", "tls-port"});
        REQUIRE(reply->elements == 2);
        tls_port = std::stoi(reply->element[1]->str);
        REQUIRE(tls_port > 0);
    }
    // rediss:// to the TLS port, trusting `ca` (a file of `certs`), and `query`'s options.
    [[nodiscard]] seatlock::RedisOptions options(const Certificates& certs,
                                                 const std::string& ca = "ca.crt",
                                                 const std::string& query = "") const {
        auto o = seatlock::RedisOptions::from_url("rediss://127.0.0.1:" + std::to_string(tls_port) +
                                                  "?tls_ca_file=" + certs.path(ca) + query)
                     .value();
        o.connect_timeout = 2s;
        o.command_timeout = 10s;
        return o;
    }
    // The server's clients but the admin's own connection, by the port they came in on.
    struct Clients {
        int tls = 0;
        int plain = 0;
    };
    Clients clients() {
        std::istringstream lines(admin.text({"CLIENT", "LIST"}));
        Clients seen;
        const std::string on_tls = "laddr=127.0.0.1:" + std::to_string(tls_port) + " ";
        for (std::string line; std::getline(lines, line);) {
            if (line.empty() || line.find("cmd=client|list") != std::string::npos) continue;
            ++(line.find(on_tls) != std::string::npos ? seen.tls : seen.plain);
        }
        return seen;
    }
    RedisServer server;
    RedisAdmin admin;
    int tls_port = 0;
};

using Store = seatlock::SeatHoldStore<seatlock::RedisBackend>;

void create_game(Store& store) {
    store.create_event({"game1", "Game", {seatlock::ZoneSpec::general_admission("ga", 100)}})
        .value();
}

}  // namespace

TEST_CASE("rediss URLs set tls and its options, for one server, a cluster or Sentinel") {
    auto plain = seatlock::RedisOptions::from_url("rediss://:pw@cache.example:6380/2").value();
    CHECK(plain.tls.enabled);
    CHECK(plain.tls.verify);
    CHECK(plain.host == "cache.example");
    CHECK(plain.port == 6380);
    CHECK(plain.db == 2);
    CHECK(plain.tls.ca_file.empty());
    CHECK(plain.validate());
    auto full = seatlock::RedisOptions::from_url(
                    "rediss://h:1?tls_ca_file=/etc/ca%20file.pem&tls_ca_dir=/etc/cas"
                    "&tls_cert_file=/c.pem&tls_key_file=/k.pem&tls_server_name=redis.internal"
                    "&tls_verify=no&replicas_to_ack=1")
                    .value();
    CHECK(full.tls.ca_file == "/etc/ca file.pem");
    CHECK(full.tls.ca_dir == "/etc/cas");
    CHECK(full.tls.cert_file == "/c.pem");
    CHECK(full.tls.key_file == "/k.pem");
    CHECK(full.tls.server_name == "redis.internal");
    CHECK_FALSE(full.tls.verify);
    CHECK(full.replicas_to_ack == 1);
    CHECK_FALSE(seatlock::RedisOptions::from_url("redis://h:1").value().tls.enabled);

    auto cluster =
        seatlock::RedisOptions::from_url("rediss+cluster://:pw@h:1,h:2?tls_ca_file=/ca.pem").value();
    CHECK(cluster.tls.enabled);
    CHECK(cluster.tls.ca_file == "/ca.pem");
    CHECK(cluster.password == "pw");
    REQUIRE(cluster.cluster_nodes.size() == 2);
    CHECK(cluster.cluster_nodes[1].port == 2);
    CHECK(cluster.validate());
    auto sentinel = seatlock::RedisOptions::from_url(
                        "rediss+sentinel://h:26379,h:26380/primary/3?tls_server_name=redis.internal")
                        .value();
    CHECK(sentinel.tls.enabled);
    CHECK(sentinel.tls.server_name == "redis.internal");
    CHECK(sentinel.sentinels.size() == 2);
    CHECK(sentinel.sentinel_service == "primary");
    CHECK(sentinel.db == 3);
    CHECK(sentinel.validate());
    CHECK_FALSE(seatlock::RedisOptions::from_url("redis+cluster://h:1").value().tls.enabled);
    CHECK_FALSE(seatlock::RedisOptions::from_url("redis+sentinel://h:1/s").value().tls.enabled);
    for (const char* url : {"redis://h:1?tls_ca_file=/ca.pem", "rediss://h:1?tls_verify=maybe",
                            "rediss://h:1?tls_ca_file=", "rediss://h:1?tls_colour=blue",
                            "redis+cluster://h:1?tls_ca_file=/ca.pem", "rediss+clusters://h:1",
                            "rediss+unix:///run/redis.sock", "redisss://h:1"}) {
        CAPTURE(url);
        CHECK(seatlock::RedisOptions::from_url(url).is(errc::invalid_argument));
    }
    // Options set by hand: TLS fields without TLS, half a client identity, TLS with a Unix
    // socket; TLS with a cluster or sentinels is accepted.
    auto refused = [](auto change) {
        seatlock::RedisOptions o;
        change(o);
        return o.validate().is(errc::invalid_argument);
    };
    CHECK(refused([](seatlock::RedisOptions& o) { o.tls.ca_file = "/ca.pem"; }));
    CHECK(refused([](seatlock::RedisOptions& o) {
        o.tls.enabled = true;
        o.tls.cert_file = "/c.pem";
    }));
    CHECK_FALSE(refused([](seatlock::RedisOptions& o) {
        o.tls.enabled = true;
        o.cluster_nodes = {{"h", 1}};
    }));
    CHECK_FALSE(refused([](seatlock::RedisOptions& o) {
        o.tls.enabled = true;
        o.sentinels = {{"h", 26379}};
        o.sentinel_service = "primary";
    }));
    CHECK(refused([](seatlock::RedisOptions& o) {
        o.tls.enabled = true;
        o.unix_socket = "/run/redis.sock";
    }));
    // A CA file that cannot be loaded: the constructor says so, naming it.
    seatlock::RedisOptions missing;
    missing.tls.enabled = true;
    missing.tls.ca_file = "/nonexistent/seatlock-ca.pem";
    try {
        seatlock::RedisBackend backend(missing);
        FAIL("a CA file that does not exist was accepted");
    } catch (const seatlock::Error& e) {
        CHECK(e.code() == errc::invalid_argument);
        CHECK(std::string(e.what()).find("/nonexistent/seatlock-ca.pem") != std::string::npos);
    }
}

TEST_CASE("holds and locks over TLS through both APIs, every connection on the TLS port") {
    Certificates certs;
    TlsServer tls(certs);
    seatlock::RedisBackend backend(tls.options(certs));
    Store store(backend, seatlock::testing::no_limit());
    REQUIRE(backend.ping());
    create_game(store);

    // Blocking calls alone and of several threads, asynchronous calls: all over TLS.
    seatlock::testing::hold_on_every_path(store);

    // Locks, blocking and asynchronous: the second of a key is refused while it is held.
    seatlock::LockManager locks(backend);
    {
        auto guard = locks.try_lock("game1:row-a");
        REQUIRE(guard);
        CHECK_FALSE(locks.async_try_lock("game1:row-a", boost::asio::use_future).get());
    }
    auto async_guard = locks.async_try_lock("game1:row-b", boost::asio::use_future).get();
    REQUIRE(async_guard);
    CHECK_FALSE(locks.try_lock("game1:row-b"));
    CHECK(async_guard->async_unlock(boost::asio::use_future).get());
    CHECK(locks.try_lock("game1:row-b"));

    const auto seen = tls.clients();
    MESSAGE(seen.tls << " clients on the TLS port, " << seen.plain << " on the plain one");
    CHECK(seen.tls >= 1);
    CHECK(seen.plain == 0);
}

TEST_CASE("with an executor given, blocking calls made on its thread go over TLS too") {
    Certificates certs;
    TlsServer tls(certs);
    boost::asio::io_context io(1);
    seatlock::RedisBackend backend(tls.options(certs), io.get_executor());
    Store store(backend, seatlock::testing::no_limit());
    create_game(store);
    std::optional<seatlock::Result<seatlock::Hold>> blocking;
    std::optional<seatlock::Result<seatlock::Hold>> async;
    // A blocking call from a handler on the executor's own thread: it must not wait for
    // that thread, which runs the asynchronous connections.
    boost::asio::post(io, [&] {
        blocking = store.hold("game1", "on-executor", seatlock::quantity("ga", 1));
        store.async_hold(
            "game1", "async", seatlock::quantity("ga", 1),
            boost::asio::bind_executor(
                io, [&async](seatlock::Result<seatlock::Hold> h) { async = std::move(h); }));
    });
    io.run();
    REQUIRE(blocking.has_value());
    CHECK(*blocking);
    REQUIRE(async.has_value());
    CHECK(*async);
    const auto seen = tls.clients();
    CHECK(seen.tls >= 2);  // the executor's connection and the blocking calls' own
    CHECK(seen.plain == 0);
}

TEST_CASE("rediss:// to a port that speaks plain Redis fails the call, nothing sent in clear") {
    Certificates certs;
    TlsServer tls(certs);
    auto o = tls.options(certs);
    o.port = tls.server.port();  // the plain port
    o.connect_timeout = 500ms;
    seatlock::RedisBackend backend(o);
    seatlock::LockManager locks(backend);
    // Redis waits for the end of a line that never comes: the handshake times out.
    auto blocking = locks.try_lock("row-a");
    REQUIRE(blocking.is(errc::connection_failed));
    CHECK(blocking.error().detail.find("no TLS handshake within 500 ms") != std::string::npos);
    auto async = locks.async_try_lock("row-b", boost::asio::use_future).get();
    REQUIRE(async.is(errc::connection_failed));
    // No FCALL reached the server, no library was loaded, no key written.
    CHECK(tls.admin.integer({"DBSIZE"}) == 0);
    CHECK(tls.admin.text({"INFO", "commandstats"}).find("cmdstat_fcall") == std::string::npos);
}

TEST_CASE("a server certificate of another CA is refused: connection_failed naming why") {
    Certificates certs;
    TlsServer tls(certs);
    seatlock::RedisBackend backend(tls.options(certs, "other-ca.crt"));
    Store store(backend, seatlock::testing::no_limit());
    auto ping = backend.ping();
    REQUIRE(ping.is(errc::connection_failed));
    MESSAGE(ping.error().detail);
    // Redis sends its CA with its certificate: a chain that ends in a CA nobody trusts.
    const std::string reason = "did not verify: self-signed certificate in certificate chain";
    CHECK(ping.error().detail.find(reason) != std::string::npos);
    auto blocking = store.hold("game1", "h", seatlock::quantity("ga", 1));
    REQUIRE(blocking.is(errc::connection_failed));
    CHECK(blocking.error().detail.find(reason) != std::string::npos);
    auto async =
        store.async_hold("game1", "h", seatlock::quantity("ga", 1), boost::asio::use_future).get();
    REQUIRE(async.is(errc::connection_failed));
    CHECK(async.error().detail.find(reason) != std::string::npos);
    // Nothing ran: no function call, no key written.
    CHECK(tls.admin.integer({"DBSIZE"}) == 0);
    CHECK(tls.admin.text({"INFO", "commandstats"}).find("cmdstat_fcall") == std::string::npos);
}

TEST_CASE("a server certificate without the name asked for is refused; tls_verify=no takes it") {
    Certificates certs;
    TlsServer tls(certs);
    seatlock::RedisBackend wrong_name(
        tls.options(certs, "ca.crt", "&tls_server_name=redis.example"));
    auto refused = wrong_name.ping();
    REQUIRE(refused.is(errc::connection_failed));
    MESSAGE(refused.error().detail);
    CHECK(refused.error().detail.find("did not verify: hostname mismatch") != std::string::npos);

    seatlock::RedisBackend by_name(tls.options(certs, "ca.crt", "&tls_server_name=localhost"));
    CHECK(by_name.ping());
    seatlock::RedisBackend unverified(tls.options(certs, "other-ca.crt", "&tls_verify=no"));
    CHECK(unverified.ping());
}

TEST_CASE("a server that requires a client certificate: served with one, refused without") {
    Certificates certs;
    TlsServer tls(certs, true);
    seatlock::RedisBackend with_certificate(
        tls.options(certs, "ca.crt",
                    "&tls_cert_file=" + certs.path("client.crt") +
                        "&tls_key_file=" + certs.path("client.key")));
    Store store(with_certificate, seatlock::testing::no_limit());
    create_game(store);
    CHECK(store.hold("game1", "blocking", seatlock::quantity("ga", 1)));
    CHECK(store.async_hold("game1", "async", seatlock::quantity("ga", 1), boost::asio::use_future)
              .get());

    // TLS 1.3 tells the client only after its handshake: the backend's PING waits for it,
    // so the refusal is connection_failed, and no caller's request was written.
    seatlock::RedisBackend without(tls.options(certs));
    Store refused_store(without, seatlock::testing::no_limit());
    auto blocking = refused_store.hold("game1", "no-cert", seatlock::quantity("ga", 1));
    REQUIRE(blocking.is(errc::connection_failed));
    MESSAGE(blocking.error().detail);
    auto async =
        refused_store
            .async_hold("game1", "no-cert", seatlock::quantity("ga", 1), boost::asio::use_future)
            .get();
    REQUIRE(async.is(errc::connection_failed));
    CHECK(store.seats("game1", std::string("ga")).value().at(0).held == 2);
}

TEST_CASE("calls after CLIENT KILL go out on a new TLS connection, blocking and asynchronous") {
    Certificates certs;
    TlsServer tls(certs);
    seatlock::RedisBackend backend(tls.options(certs));
    Store store(backend, seatlock::testing::no_limit());
    create_game(store);
    REQUIRE(store.hold("game1", "before", seatlock::quantity("ga", 1)));
    REQUIRE(store
                .async_hold("game1", "before-async", seatlock::quantity("ga", 1),
                            boost::asio::use_future)
                .get());
    for (int round = 0; round < 2; ++round) {
        CAPTURE(round);
        const auto connections = tls.admin.info_field("stats", "total_connections_received");
        CHECK(tls.admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
        std::this_thread::sleep_for(100ms);  // the closes reach the backend's sockets
        auto blocking =
            store.hold("game1", "after-" + std::to_string(round), seatlock::quantity("ga", 1));
        CHECK(blocking);
        auto async = store
                         .async_hold("game1", "after-async-" + std::to_string(round),
                                     seatlock::quantity("ga", 1), boost::asio::use_future)
                         .get();
        CHECK(async);
        CHECK(tls.admin.info_field("stats", "total_connections_received") > connections);
        const auto seen = tls.clients();
        CHECK(seen.tls >= 1);
        CHECK(seen.plain == 0);
    }
    CHECK(store.seats("game1", std::string("ga")).value().at(0).held == 6);
}

}  // namespace tls_test
