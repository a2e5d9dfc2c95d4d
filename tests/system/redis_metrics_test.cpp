// SPDX-License-Identifier: MIT
// The server on Redis tells what its connections do: their events in its log and in
// /metrics (seatlock_redis_events_total by kind), the backend's counters at every scrape,
// and the reconnects after Redis dropped its connections (CLIENT KILL).
#include "support/redis_admin.hpp"
#include "support/system_test.hpp"

#include <string>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace redis_metrics_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;

TEST_CASE("on Redis, killing the server's connections shows as reconnects in /metrics and in its log") {
    RedisStorage storage;
    TicketingServer server(on(storage));
    auto client = server.client();
    REQUIRE(client.post("/events/demo-game/holds", seats_body("lower-1", {"A-1"}), "alice").status == 201);
    CHECK(metric(client, "seatlock_redis_reconnects_total") == 0);
    CHECK(metric(client, "seatlock_redis_events_total{kind=\"connected\"}") >= 1);
    CHECK(metric(client, "seatlock_redis_events_dropped_total") == 0);
    const std::string body = client.get("/metrics").body;
    CHECK(body.find("seatlock_redis_calls_in_flight{id=\"0\",") != std::string::npos);
    CHECK(body.find("seatlock_redis_commands_sent_total{id=\"0\",") != std::string::npos);

    RedisAdmin admin(storage.redis.port());
    REQUIRE(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
    // The next calls find their connections closed and make them again; the seat feed
    // reads Redis by itself, and a hold makes sure.
    const bool seen = eventually(
        [&] {
            client.post("/events/demo-game/holds", seats_body("lower-1", {"A-2"}), "bob");
            return metric(client, "seatlock_redis_reconnects_total") >= 1;
        },
        10s);
    CHECK(seen);
    CHECK(metric(client, "seatlock_redis_events_total{kind=\"disconnected\"}") >= 1);
    CHECK(metric(client, "seatlock_redis_events_total{kind=\"reconnecting\"}") >= 1);
    const std::string log = server.log();
    CHECK(log.find("redis: disconnected (pipelined connection, 127.0.0.1:" +
                   std::to_string(storage.redis.port()) + ")") != std::string::npos);
    CHECK(log.find("redis: reconnecting") != std::string::npos);
}

}  // namespace redis_metrics_test
