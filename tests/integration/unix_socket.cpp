// SPDX-License-Identifier: MIT
// tests/integration/unix_socket.cpp: RedisOptions::unix_socket. Every connection, pooled
// (a blocking call alone) or pipelined (asynchronous calls, blocking calls of several
// threads), goes through the server's Unix domain socket, never TCP; a path nobody
// listens on fails the call with connection_failed naming it; a restarted server is
// reached again through the same path.
#include "support/every_path.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"

#include <seatlock/lock_manager.hpp>

#include <doctest/doctest.h>

#include <boost/asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace unix_socket_test {

using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;

namespace {

seatlock::RedisOptions through_socket(const std::string& path) {
    seatlock::RedisOptions o;
    o.unix_socket = path;
    o.host.clear();  // not used: an empty host would otherwise be refused
    o.port = 0;
    o.connect_timeout = 500ms;
    o.command_timeout = 10s;
    return o;
}

// The server's clients as CLIENT LIST shows them: [unix socket?] per client but the
// admin's own connection (TCP, the one asking).
struct Clients {
    int unix_socket = 0;
    int tcp = 0;
};
Clients clients_of(RedisAdmin& admin) {
    std::istringstream lines(admin.text({"CLIENT", "LIST"}));
    Clients seen;
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.find("cmd=client|list") != std::string::npos) continue;
        // Redis flags a Unix socket client with U.
        const auto flags = line.find(" flags=");
        const auto end = line.find(' ', flags + 1);
        const bool unix_flag = line.substr(flags, end - flags).find('U') != std::string::npos;
        ++(unix_flag ? seen.unix_socket : seen.tcp);
    }
    return seen;
}

// A private server, a backend that reaches it through its socket, and event game1 (100
// general-admission places).
struct OnSocket {
    OnSocket() {
        store.create_event({"game1", "Game", {seatlock::ZoneSpec::general_admission("ga", 100)}})
            .value();
    }
    RedisServer server;
    seatlock::RedisBackend backend{through_socket(server.unix_socket())};
    seatlock::SeatHoldStore<seatlock::RedisBackend> store{backend, seatlock::testing::no_limit()};
};

}  // namespace

TEST_CASE("blocking and asynchronous calls go through the Unix socket, none over TCP") {
    OnSocket venue;
    // Plain references, not structured bindings: clang 14 cannot capture those in lambdas.
    RedisServer& server = venue.server;
    seatlock::RedisBackend& backend = venue.backend;
    auto& store = venue.store;

    // Blocking calls alone and of several threads, asynchronous calls: all through the
    // socket.
    seatlock::testing::hold_on_every_path(store);
    // Locks too.
    seatlock::LockManager locks(backend);
    {
        auto guard = locks.try_lock("game1:row-a");
        REQUIRE(guard);
    }

    RedisAdmin admin(server.port());
    const auto seen = clients_of(admin);
    MESSAGE(seen.unix_socket << " clients on the Unix socket, " << seen.tcp << " over TCP");
    CHECK(seen.unix_socket >= 2);  // the pool's and the pipeline's
    CHECK(seen.tcp == 0);
}

TEST_CASE("a socket path nobody listens on: connection_failed naming it, on both APIs") {
    const std::string path = "/tmp/seatlock-no-such-directory/redis.sock";
    seatlock::RedisBackend backend(through_socket(path));
    seatlock::SeatHoldStore store(backend);

    auto ping = backend.ping();
    REQUIRE(ping.is(errc::connection_failed));
    CHECK(ping.error().detail.find("unix:" + path) != std::string::npos);

    auto blocking = store.hold("game1", "b", seatlock::quantity("ga", 1));
    REQUIRE(blocking.is(errc::connection_failed));
    CHECK(blocking.error().detail.find(path) != std::string::npos);

    auto async =
        store.async_hold("game1", "b", seatlock::quantity("ga", 1), boost::asio::use_future).get();
    REQUIRE(async.is(errc::connection_failed));
    CHECK(async.error().detail.find("unix:" + path) != std::string::npos);
}

TEST_CASE("a restarted server is reached again through the same socket") {
    OnSocket venue;
    // Plain references, not structured bindings: clang 14 cannot capture those in lambdas.
    RedisServer& server = venue.server;
    seatlock::RedisBackend& backend = venue.backend;
    auto& store = venue.store;
    REQUIRE(store.hold("game1", "before", seatlock::quantity("ga", 1)));
    REQUIRE(store
                .async_hold("game1", "before-async", seatlock::quantity("ga", 1),
                            boost::asio::use_future)
                .get());

    server.restart();  // no persistence: the event is gone, the socket file is new

    // The first call on each path may find its connection closed (a call in flight when
    // it broke would be outcome_unknown; these were not in flight): both reconnect.
    auto blocking = backend.ping();
    CHECK(blocking);
    CHECK(store.create_event({"game2", "Game", {seatlock::ZoneSpec::general_admission("ga", 10)}}));
    auto async =
        store.async_hold("game2", "after", seatlock::quantity("ga", 1), boost::asio::use_future)
            .get();
    if (!async) {  // a request written on the old connection as it broke
        MESSAGE("first asynchronous call after the restart: " << async.error().message());
        CHECK((async.is(errc::io_error) || async.is(errc::outcome_unknown)));
        async =
            store.async_hold("game2", "after", seatlock::quantity("ga", 1), boost::asio::use_future)
                .get();
    }
    CHECK(async);
}

}  // namespace unix_socket_test
