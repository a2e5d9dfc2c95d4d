// SPDX-License-Identifier: MIT
// tests/system/configuration_test.cpp: the built server configured as an operator would
// run it without secrets in its command line: settings from SEATLOCK_TICKETING_*
// variables and from a config file, the Redis password from a file, against a
// redis-server that requires that password. Each setting is checked by what the server
// does, and the password is in neither the server's command line nor its environment.
#include "support/temp_files.hpp"
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/redis_server.hpp"
#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace configuration_test {

using namespace seatlock::testing;

namespace {

const std::string password = "conf-test-pw-7f3a9c";
const std::string holds_url = "/events/demo-game/holds";


std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}


}  // namespace

TEST_CASE(
    "settings from the environment and a config file, and the Redis password from a file, "
    "take effect, and the password shows in no command line" *
    doctest::timeout(90)) {
    RedisServer redis({"--requirepass", password});
    TempFiles files;
    const auto password_file = files.write("redis.password", password + "\n");
    // The file: where Redis is, and settings the environment or the command line override.
    const auto config = files.write("server.conf",
                                    "# seatlock-ticketing\n"
                                    "redis-url = " +
                                        redis.url() +
                                        "\n"
                                        "redis-password-file = " +
                                        password_file +
                                        "\n"
                                        "max-seats-per-buyer = 5\n"
                                        "hold-ttl = 900\n"
                                        "max-hold-lifetime = 1200\n");
    TicketingServer server({{"--hold-ttl", "600"}, std::nullopt},
                           {{"SEATLOCK_TICKETING_CONFIG", config},
                            {"SEATLOCK_TICKETING_BACKEND", "redis"},
                            {"SEATLOCK_TICKETING_MAX_SEATS_PER_BUYER", "2"},
                            {"SEATLOCK_TICKETING_HOLD_TTL", "700"},
                            {"SEATLOCK_TICKETING_HTTP_BODY_LIMIT", "2048"}});
    INFO(server.log());
    // On Redis, which answers only with the password; the command line's hold ttl.
    CHECK(server.log().find("backend redis") != std::string::npos);
    CHECK(server.log().find("hold ttl 600 s") != std::string::npos);

    auto client = server.client();
    // The environment's limit of 2 seats a buyer, not the file's 5 nor the default 3.
    const auto held = client.post(holds_url, seats_body("lower-1", {"D-1", "D-2"}), "dana");
    REQUIRE_MESSAGE(held.status == 201, held.body);
    const auto third = client.post(holds_url, seats_body("lower-1", {"D-3"}), "dana");
    CHECK(third.status == 422);
    CHECK(third.error() == "limit_exceeded");
    CHECK(third.json().at("limit").as_int64() == 2);

    // The file's maximum hold lifetime, 1200 s from the hold's creation (600 s before its
    // first expiry), caps an extend.
    const std::int64_t created_ms = unix_ms(held.json().at("expires_at")) - 600 * 1000;
    const auto extended =
        client.post("/holds/" + std::string(held.json().at("token").as_string()) + "/extend",
                    R"({"ttl_s":86400})", "dana");
    REQUIRE_MESSAGE(extended.status == 200, extended.body);
    CHECK(std::abs(unix_ms(extended.json().at("expires_at")) - (created_ms + 1200 * 1000)) <= 1000);

    // The environment's body limit.
    const std::string big = R"({"zone":"lower-1","seats":[")" + std::string(3000, 'E') + R"("]})";
    CHECK(client.post(holds_url, big, "erin").status == 413);
    CHECK(client.post(holds_url, seats_body("lower-1", {"E-1"}), "erin").status == 201);

    // The password is in none of what ps or /proc show, nor in the log.
    const auto proc = "/proc/" + std::to_string(server.pid());
    const auto cmdline = read_all(proc + "/cmdline");
    REQUIRE_FALSE(cmdline.empty());
    CHECK(cmdline.find(password) == std::string::npos);
    CHECK(cmdline.find("--hold-ttl") != std::string::npos);  // the right process
    CHECK(read_all(proc + "/environ").find(password) == std::string::npos);
    CHECK(server.log().find(password) == std::string::npos);
}

TEST_CASE(
    "without the password file, or with a wrong password in it, the server cannot start on a Redis "
    "that requires one" *
    doctest::timeout(60)) {
    RedisServer redis({"--requirepass", password});
    // The server exits at start, its log saying why (TicketingServer throws with it).
    const TicketingServer::Options options{{"--backend", "redis"}, std::nullopt};
    TicketingServer::Environment environment = {{"SEATLOCK_TICKETING_REDIS_URL", redis.url()}};
    CHECK_THROWS_WITH_AS(TicketingServer(options, environment), doctest::Contains("auth_failed"),
                         std::runtime_error);
    TempFiles files;
    environment.emplace_back("SEATLOCK_TICKETING_REDIS_PASSWORD_FILE",
                             files.write("wrong.password", "not-the-password\n"));
    CHECK_THROWS_WITH_AS(TicketingServer(options, environment), doctest::Contains("auth_failed"),
                         std::runtime_error);
}

}  // namespace configuration_test
