// SPDX-License-Identifier: MIT
// tests/system/readiness_test.cpp: GET /readyz of the built server, which a load balancer
// asks before sending it requests: 503 within 2 s of its Redis stopping or coming back
// empty (the probe finds both with no buyer acting), 200 again once the storage answers
// and the venue is repaired; 503 from SIGTERM on, for the drain window, while requests
// are still served. /healthz stays liveness.
#include <csignal>

#include "support/redis_server.hpp"
#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace readiness_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const std::string event = "demo-game";
const std::string zone = "lower-1";

// Two seconds, the bound the readiness promises (a probe at least every 750 ms, each
// bounded by the storage's command timeout); sanitizer builds run the server several
// times slower: a second more.
constexpr auto ready_bound = sanitized_build ? 3000ms : 2000ms;

// How long /readyz took to answer `status` (polling every 10 ms), or nullopt after 15 s.
std::optional<std::chrono::milliseconds> until_readyz(HttpClient& client, int status) {
    const auto from = Clock::now();
    while (Clock::now() - from < 15s) {
        if (client.get("/readyz").status == status)
            return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - from);
        std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
}

// A server on a Redis of its own, ready.
struct OnRedis {
    RedisServer redis;
    TicketingServer server{{{"--backend", "redis", "--redis-url", redis.url()}, std::nullopt}};
    HttpClient client = server.client();
    OnRedis() { REQUIRE_MESSAGE(until_readyz(client, 200), "/readyz never 200: " << server.log()); }
};

}  // namespace

TEST_CASE_FIXTURE(OnRedis, "/readyz is 200 on a working server and 503 within 2 s of its Redis stopping; 200 once "
          "it is back and the venue repaired" *
          doctest::timeout(90)) {
    INFO(server.log());
    const auto held = client.post("/events/" + event + "/holds", seats_body(zone, {"A-1"}),
                                  std::string("alice"));
    REQUIRE_MESSAGE(held.status == 201, held.body);
    const std::string token(held.json().at("token").as_string());
    const auto paid = client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-1"})",
                                  std::string("alice"));
    REQUIRE_MESSAGE(paid.status == 200, paid.body);

    redis.stop();  // no persistence: it comes back empty
    const auto down = until_readyz(client, 503);
    REQUIRE_MESSAGE(down, "/readyz still 200 15 s after Redis stopped");
    MESSAGE("503 " << down->count() << " ms after Redis stopped");
    CHECK(*down <= ready_bound);
    const auto why = client.get("/readyz");
    CHECK(why.json().at("status") == "not_ready");
    CHECK(!std::string(why.json().at("reason").as_string()).empty());
    CHECK(why.header("Retry-After") == "1");
    CHECK(client.get("/healthz").status == 200);  // liveness: the process itself is well

    redis.restart();
    const auto up = until_readyz(client, 200);
    REQUIRE_MESSAGE(up, "/readyz not 200 15 s after Redis came back: " << client.get("/readyz").body);
    // Ready means repaired: the paid seat reads paid again.
    CHECK(seat_states(client, event, zone).at("A-1") == "paid");
}

TEST_CASE_FIXTURE(OnRedis, "/readyz is 503 within 2 s of Redis coming back empty with no buyer acting, and 200 "
          "once the venue is repaired" *
          doctest::timeout(90)) {
    INFO(server.log());

    redis.restart();  // stopped and started at once: empty, the outage too short to see
    const auto lost = until_readyz(client, 503);
    REQUIRE_MESSAGE(lost, "/readyz still 200 15 s after Redis came back empty");
    MESSAGE("503 " << lost->count() << " ms after Redis came back empty");
    CHECK(*lost <= ready_bound);
    const auto up = until_readyz(client, 200);
    REQUIRE_MESSAGE(up, "/readyz not 200 15 s after the loss: " << client.get("/readyz").body);
    CHECK(client.get("/healthz").status == 200);
}

TEST_CASE("SIGTERM: /readyz 503 at once while requests are still served for --drain-seconds, then "
          "the listener closes; a second signal cuts the drain short" *
          doctest::timeout(90)) {
    SUBCASE("the drain runs out") {
        TicketingServer server({{"--drain-seconds", "1"}, std::nullopt});
        INFO(server.log());
        auto client = server.client();
        REQUIRE(until_readyz(client, 200));
        const auto signalled = Clock::now();
        REQUIRE(::kill(server.pid(), SIGTERM) == 0);
        const auto not_ready = until_readyz(client, 503);
        REQUIRE(not_ready);
        CHECK(*not_ready < 500ms);
        const auto why = client.get("/readyz");
        CHECK(std::string(why.json().at("reason").as_string()).find("draining") != std::string::npos);
        CHECK(client.get("/events").status == 200);  // still served
        // Then the listener closes: a new connection is refused.
        bool closed = false;
        while (Clock::now() - signalled < 10s && !closed) {
            try {
                (void)server.client().get("/healthz");
                std::this_thread::sleep_for(20ms);
            } catch (const std::exception&) {
                closed = true;
            }
        }
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - signalled);
        REQUIRE_MESSAGE(closed, "still answering 10 s after SIGTERM with a drain of 1 s");
        MESSAGE("the listener closed " << took.count() << " ms after SIGTERM");
        CHECK(took >= 1000ms);
        CHECK(server.stop(0) == 0);  // it ends by itself: no second signal
        CHECK(server.log().find("draining for 1 s") != std::string::npos);
    }
    SUBCASE("a second signal") {
        TicketingServer server({{"--drain-seconds", "60"}, std::nullopt});
        INFO(server.log());
        auto client = server.client();
        REQUIRE(until_readyz(client, 200));
        REQUIRE(::kill(server.pid(), SIGTERM) == 0);
        REQUIRE(until_readyz(client, 503));
        CHECK(client.get("/events").status == 200);
        const auto second = Clock::now();
        CHECK(server.stop(SIGTERM, 10s) == 0);
        CHECK(Clock::now() - second < 5s);
        CHECK(server.log().find("draining cut short") != std::string::npos);
    }
}

}  // namespace readiness_test
