// SPDX-License-Identifier: MIT
// Expiry events are stored in Redis, not sent as keyspace notifications: holds that
// expired while no consumer (and no other call) ran are all delivered by expired()
// afterwards, to any process, until acknowledged.
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"
#include "support/redis_setup.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <set>
#include <thread>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace expiry_test {

namespace {

using namespace std::chrono_literals;
using seatlock::testing::no_limit;
using seatlock::testing::options_for;

seatlock::EventSpec event(const std::string& id) {
    std::vector<seatlock::SeatSpec> seats;
    for (int n = 1; n <= 30; ++n) seats.push_back({"A-" + std::to_string(n), "A"});
    return {id,
            "Expiry",
            {seatlock::ZoneSpec::named("lower", seats),
             seatlock::ZoneSpec::general_admission("bleachers", 100)}};
}

// Holds in three events from one process that then goes away; returns token -> seats.
std::map<std::string, std::vector<std::string>> holds_left_to_expire(
    const seatlock::testing::RedisServer& server) {
    seatlock::RedisBackend backend(options_for(server));
    seatlock::SeatHoldStore store(backend, no_limit());
    std::map<std::string, std::vector<std::string>> holds;
    for (const char* id : {"game1", "game2", "game3"}) {
        store.create_event(event(id)).value();
        for (int i = 0; i < 12; ++i) {
            auto request = i % 2 ? seatlock::named_seats("lower", {"A-" + std::to_string(i + 1)})
                                 : seatlock::quantity("bleachers", 2);
            auto h = store.hold(id, "buyer-" + std::to_string(i), request, 200ms).value();
            holds[h.token] = h.seats;
        }
    }
    return holds;
}

}  // namespace

TEST_CASE("holds that expired while no consumer ran are all delivered later, to a new process") {
    seatlock::testing::RedisServer server;
    const auto holds = holds_left_to_expire(server);
    REQUIRE(holds.size() == 36);
    std::this_thread::sleep_for(400ms);  // every hold expires; nothing touches the events

    seatlock::RedisBackend consumer(options_for(server));
    seatlock::SeatHoldStore store(consumer, no_limit());
    std::map<std::string, std::vector<std::string>> delivered;
    for (int round = 0; round < 10 && delivered.size() < holds.size(); ++round) {
        auto batch = store.expired(10, 1min).value();
        std::vector<std::string> acks;
        for (const auto& e : batch) {
            delivered[e.token] = e.seats;
            CHECK(e.event == e.token.substr(0, 5));
            CHECK(e.holder.rfind("buyer-", 0) == 0);
            acks.push_back(e.token);
        }
        REQUIRE(store.ack_expired(acks));
    }
    CHECK(delivered == holds);
    CHECK(store.expired(100, 0ms).value().empty());
    for (const char* id : {"game1", "game2", "game3"}) {
        const auto zones = store.seats(id).value();
        for (const auto& zone : zones) CHECK(zone.held == 0);
    }
}

TEST_CASE("an expiry delivered to a consumer that died is delivered again after redeliver_after") {
    seatlock::testing::RedisServer server;
    const auto holds = holds_left_to_expire(server);
    std::this_thread::sleep_for(400ms);
    {
        seatlock::RedisBackend crashed(options_for(server));
        seatlock::SeatHoldStore store(crashed, no_limit());
        CHECK(store.expired(1000, 300ms).value().size() == holds.size());  // never acknowledged
    }
    seatlock::RedisBackend next(options_for(server));
    seatlock::SeatHoldStore store(next, no_limit());
    CHECK(store.expired(1000, 300ms).value().empty());  // still within redeliver_after
    std::this_thread::sleep_for(400ms);
    std::set<std::string> again;
    const auto redelivered = store.expired(1000, 300ms).value();
    for (const auto& e : redelivered) again.insert(e.token);
    CHECK(again.size() == holds.size());
}

TEST_CASE("pending expiries live in Redis sorted sets, not in keyspace notifications") {
    seatlock::testing::RedisServer server;
    seatlock::testing::RedisAdmin admin(server.port());
    const auto holds = holds_left_to_expire(server);
    // Each hold waits in its event's deadline set (or, swept by a later call on the event
    // once due, already in its expired set).
    CHECK(admin.integer({"ZCARD", "seatlock:deadlines:{game2}"}) +
              admin.integer({"ZCARD", "seatlock:expired:{game2}"}) ==
          12);
    std::this_thread::sleep_for(400ms);
    seatlock::RedisBackend backend(options_for(server));
    seatlock::SeatHoldStore store(backend, no_limit());
    // Any call on the event moves its due holds from deadlines to expired, atomically.
    REQUIRE(store.seats("game2"));
    CHECK(admin.integer({"ZCARD", "seatlock:deadlines:{game2}"}) == 0);
    CHECK(admin.integer({"ZCARD", "seatlock:expired:{game2}"}) == 12);
    CHECK(store.expired(1000, 1min).value().size() == holds.size());
}

}  // namespace expiry_test
