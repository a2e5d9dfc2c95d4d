// SPDX-License-Identifier: MIT
// RedisOptions: redis:// URLs and the options RedisBackend refuses outright.
#include <seatlock/backends/redis.hpp>

#include <doctest/doctest.h>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace options_test {

using seatlock::errc;
using seatlock::RedisOptions;

namespace {

// Whether the constructor refuses the default options as `change` leaves them.
template <typename Change>
bool refused(Change change) {
    RedisOptions o;
    change(o);
    try {
        seatlock::RedisBackend backend(o);
    } catch (const seatlock::Error& e) {
        return e.code() == seatlock::make_error_code(errc::invalid_argument);
    }
    return false;
}

// Every URL of `urls` is invalid_argument, its message naming `shown` (the forms expected).
template <std::size_t N>
void check_refused(const char* const (&urls)[N], const std::string& shown) {
    for (const char* url : urls) {
        auto o = RedisOptions::from_url(url);
        CHECK_MESSAGE(o.is(errc::invalid_argument), "accepted: " << url);
        if (!o) CHECK(o.error().detail.find(shown) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("a full redis:// URL sets user, password, host, port and db") {
    auto o = RedisOptions::from_url("redis://ticketing:s3cret@cache.internal:6380/4").value();
    CHECK(o.user == "ticketing");
    CHECK(o.password == "s3cret");
    CHECK(o.host == "cache.internal");
    CHECK(o.port == 6380);
    CHECK(o.db == 4);
    CHECK(o.prefix == "seatlock");  // what the URL does not say keeps its default
    CHECK(o.pool_size == 8);
    CHECK(o.async_connections == 1);
}

TEST_CASE("URL parts are optional: password only, no credentials, default port, no db") {
    auto password_only = RedisOptions::from_url("redis://:pw@10.0.0.5:6379").value();
    CHECK(password_only.user.empty());
    CHECK(password_only.password == "pw");
    CHECK(password_only.host == "10.0.0.5");
    CHECK(password_only.db == 0);

    auto bare = RedisOptions::from_url("redis://localhost").value();
    CHECK(bare.host == "localhost");
    CHECK(bare.port == 6379);
    CHECK(bare.password.empty());

    auto slash = RedisOptions::from_url("redis://localhost:7000/").value();
    CHECK(slash.port == 7000);
    CHECK(slash.db == 0);

    auto v6 = RedisOptions::from_url("redis://[::1]:6390/2").value();
    CHECK(v6.host == "::1");
    CHECK(v6.port == 6390);
    CHECK(v6.db == 2);
}

TEST_CASE("percent-escapes let passwords contain @, : and /") {
    auto o = RedisOptions::from_url("redis://app:p%40ss%3Aw%2Frd@h:1").value();
    CHECK(o.user == "app");
    CHECK(o.password == "p@ss:w/rd");
}

TEST_CASE("bad URLs are invalid_argument naming the problem, never echoing the password") {
    const char* bad[] = {
        "",
        "http://localhost:6379",
        "rediss+clusters://localhost:6379",
        "redis+sentinels://localhost:26379/mymaster",
        "redis://localhost:6379?tls_ca_file=/ca.pem",
        "redis://",
        "redis://:6379",
        "redis://host:",
        "redis://host:0",
        "redis://host:65536",
        "redis://host:port",
        "redis://host:6379/db",
        "redis://host:6379/-1",
        "redis://host:6379/1/2",
        "redis://host:6379?timeout=1",
        "redis://user@host:6379",
        "redis://user:@host:6379",
        "redis://u:p%4@host:6379",
        "redis://u:p%zz@host:6379",
        "redis://[::1:6379",
        "redis://[::1]x:6379",
        "redis://a b:6379",
    };
    check_refused(bad, "expected redis://");
    auto secret = RedisOptions::from_url("redis://u:hunter2@host:99999");
    REQUIRE(secret.is(errc::invalid_argument));
    CHECK(secret.error().detail.find("hunter2") == std::string::npos);
    CHECK(secret.error().detail.find("port") != std::string::npos);
}

TEST_CASE("options that can never work are refused by the constructor") {
    CHECK(refused([](RedisOptions& o) { o.host.clear(); }));
    CHECK(refused([](RedisOptions& o) { o.port = 0; }));
    CHECK(refused([](RedisOptions& o) { o.pool_size = 0; }));
    CHECK(refused([](RedisOptions& o) { o.async_connections = 0; }));
    CHECK(refused([](RedisOptions& o) { o.command_timeout = seatlock::Millis(0); }));
    CHECK(refused([](RedisOptions& o) { o.connect_timeout = seatlock::Millis(-1); }));
    CHECK(refused([](RedisOptions& o) { o.prefix = "with{brace}"; }));
    CHECK(refused([](RedisOptions& o) { o.prefix = "with space"; }));
    CHECK(refused([](RedisOptions& o) { o.prefix.clear(); }));
    CHECK_FALSE(refused([](RedisOptions& o) { o.prefix = "tickets:prod"; }));
}

TEST_CASE("a unix:// URL names the server's Unix domain socket, credentials and db") {
    auto bare = RedisOptions::from_url("unix:///run/redis/redis-server.sock").value();
    CHECK(bare.unix_socket == "/run/redis/redis-server.sock");
    CHECK(bare.db == 0);
    CHECK(bare.password.empty());

    auto full =
        RedisOptions::from_url("unix://app:p%40ss@/tmp/r.sock?db=3&replicas_to_ack=1").value();
    CHECK(full.unix_socket == "/tmp/r.sock");
    CHECK(full.user == "app");
    CHECK(full.password == "p@ss");
    CHECK(full.db == 3);
    CHECK(full.replicas_to_ack == 1);

    auto password_only = RedisOptions::from_url("unix://:pw@/tmp/r.sock").value();
    CHECK(password_only.user.empty());
    CHECK(password_only.password == "pw");

    // TCP URLs leave it empty.
    CHECK(RedisOptions::from_url("redis://localhost").value().unix_socket.empty());
}

TEST_CASE("bad unix:// URLs are invalid_argument naming the problem") {
    const char* bad[] = {
        "unix://",
        "unix://localhost",
        "unix://localhost/tmp/r.sock",
        "unix://u:p@",
        "unix://u@/tmp/r.sock",
        "unix://u:@/tmp/r.sock",
        "unix:///tmp/r.sock?db=x",
        "unix:///tmp/r.sock?db=-1",
        "unix:///tmp/r.sock?timeout=1",
        "unix:///tmp/r.sock#x",
    };
    check_refused(bad, "unix://");
    // db is an option of unix:// URLs only: redis:// says it after the last /.
    CHECK(RedisOptions::from_url("redis://h:1?db=2").is(errc::invalid_argument));
    auto secret = RedisOptions::from_url("unix://u:hunter2@/tmp/r.sock?db=x");
    REQUIRE(secret.is(errc::invalid_argument));
    CHECK(secret.error().detail.find("hunter2") == std::string::npos);
}

TEST_CASE("unix_socket: host and port unused, the path's length checked, one server only") {
    CHECK_FALSE(refused([](RedisOptions& o) {
        o.unix_socket = "/tmp/redis.sock";
        o.host.clear();
        o.port = 0;
    }));
    CHECK_FALSE(refused([](RedisOptions& o) { o.unix_socket = "/" + std::string(106, 'a'); }));
    CHECK(refused([](RedisOptions& o) { o.unix_socket = "/" + std::string(107, 'a'); }));
    CHECK(refused([](RedisOptions& o) { o.unix_socket = std::string("/tmp/a\0b", 8); }));
    CHECK(refused([](RedisOptions& o) {
        o.unix_socket = "/tmp/redis.sock";
        o.cluster_nodes = {{"127.0.0.1", 7000}};
    }));
    CHECK(refused([](RedisOptions& o) {
        o.unix_socket = "/tmp/redis.sock";
        o.sentinels = {{"127.0.0.1", 26379}};
        o.sentinel_service = "mymaster";
    }));
}

}  // namespace options_test
