// SPDX-License-Identifier: MIT
// tests/integration/private_servers.cpp: the private servers the tests start
// (tests/support/redis_server.hpp) are the servers the tests talk to. Under ctest -j
// another program may take the port a server was to use before it binds it: the start
// then moves to another port, and never counts another program's server as its own.
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"

#include <doctest/doctest.h>

#include <string>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace private_servers_test {

using seatlock::testing::ClosedPort;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;

namespace {

// The process id the server on `port` reports.
long long pid_on(int port, const std::string& password = {}) {
    return RedisAdmin(port, password).info_field("server", "process_id");
}

}  // namespace

TEST_CASE("a server whose port another server took first starts on a port of its own") {
    const RedisServer other;
    const RedisServer server({}, {}, other.port());  // tries the other's port first
    CHECK(server.port() != other.port());
    CHECK(pid_on(server.port()) == server.pid());
    CHECK(pid_on(other.port()) == other.pid());
}

TEST_CASE("a server with a password is recognised as the one started") {
    const RedisServer other({"--requirepass", "other"});
    const RedisServer server({"--requirepass", "s3cret"}, {}, other.port());
    CHECK(server.port() != other.port());
    CHECK(pid_on(server.port(), "s3cret") == server.pid());
}

TEST_CASE("a restart on a port another server took meanwhile fails, and leaves that server alone") {
    RedisServer server;
    const int port = server.port();
    server.stop();
    const RedisServer other({}, {}, port);
    REQUIRE(other.port() == port);
    CHECK_THROWS_WITH_AS(server.restart(), doctest::Contains("another program took it"),
                         std::runtime_error);
    CHECK_FALSE(server.running());
    CHECK(pid_on(port) == other.pid());
}

TEST_CASE("a closed port refuses connections, and no server can start on it while it lives") {
    const ClosedPort closed;
    CHECK_THROWS_AS(RedisAdmin{closed.port()}, std::runtime_error);
    const RedisServer server({}, {}, closed.port());
    CHECK(server.port() != closed.port());
    CHECK(pid_on(server.port()) == server.pid());
}

}  // namespace private_servers_test
