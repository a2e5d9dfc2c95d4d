// SPDX-License-Identifier: MIT
// tests/system/venue_test.cpp: --venue replaces the demo stadium. A venue file is checked
// whole before any of its events is stored, and a server lists and sells only its
// venue's events, even on a Redis that other servers fill with theirs.
#include <set>

#include "support/system_test.hpp"

#ifdef SEATLOCK_SYSTEM_TEST_REDIS
#include <seatlock/backends/redis.hpp>
#endif

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace venue_test {

using namespace seatlock::testing;

namespace {

std::string event_json(const std::string& id, const std::string& zones) {
    return R"({"id": ")" + id + R"(", "zones": [)" + zones + "]}";
}

std::string venue_json(const std::vector<std::string>& events) {
    std::string list;
    for (const auto& event : events) list += (list.empty() ? "" : ", ") + event;
    return R"({"events": [)" + list + "]}";
}

const std::string floor_zone = R"({"id": "floor", "capacity": 50})";

// The ids GET /events lists.
std::set<std::string> listed_events(const TicketingServer& server) {
    auto client = server.client();
    const auto reply = client.get("/events");
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    const auto json = reply.json();
    std::set<std::string> ids;
    for (const auto& event : json.at("events").as_array()) ids.emplace(event.at("id").as_string());
    return ids;
}

// The log of a server that failed to start ("" when it started).
template <typename Storage>
std::string start_failure(const Storage& storage, const std::string& venue) {
    try {
        TicketingServer server(on(storage, {}, venue));
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE_TEMPLATE("a venue file with an invalid event stops the server at start", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    for (const auto& bad : {event_json("bad gig", floor_zone),
                            event_json("twice-gig", floor_zone + ", " + floor_zone),
                            event_json("first-gig", R"({"id": "pit", "capacity": 5})")}) {
        CAPTURE(bad);
        const std::string failure =
            start_failure(storage, venue_json({event_json("first-gig", floor_zone), bad}));
        CHECK(failure.find("exited at start") != std::string::npos);
        CHECK(failure.find("venue") != std::string::npos);
    }
}

#ifdef SEATLOCK_SYSTEM_TEST_REDIS
TEST_CASE("a venue file whose second event is invalid stores none of its events in Redis") {
    RedisStorage storage;
    const std::string failure = start_failure(
        storage, venue_json({event_json("first-gig", floor_zone),
                             event_json("second-gig", floor_zone + ", " + floor_zone)}));
    CHECK(failure.find("second-gig") != std::string::npos);

    seatlock::RedisBackend redis(seatlock::RedisOptions::from_url(storage.redis.url()).value());
    const auto stored = redis.run(seatlock::op::events{});
    REQUIRE_MESSAGE(stored.has_value(), stored.error().message());
    CHECK(stored->empty());
}

TEST_CASE("servers sharing a Redis each list and sell only their own venue") {
    RedisStorage storage;
    const std::string spring = event_json("spring-gig", floor_zone);
    const std::string autumn = event_json("autumn-gig", floor_zone);
    const std::string shared = event_json("shared-gig", floor_zone);
    TicketingServer a(on(storage, {}, venue_json({spring, shared})));
    TicketingServer b(on(storage, {}, venue_json({autumn, shared})));
    TicketingServer demo(on(storage));
    INFO(a.log());
    INFO(b.log());

    CHECK(listed_events(a) == std::set<std::string>{"spring-gig", "shared-gig"});
    CHECK(listed_events(b) == std::set<std::string>{"autumn-gig", "shared-gig"});
    CHECK(listed_events(demo) == std::set<std::string>{"demo-game"});

    auto client_a = a.client();
    const std::string quantity_one = R"({"zone": "floor", "quantity": 1})";
    for (const std::string event : {"autumn-gig", "demo-game"}) {
        CAPTURE(event);
        const auto seats = client_a.get("/events/" + event + "/seats");
        CHECK(seats.status == 404);
        CHECK(seats.error() == "unknown_event");
        const auto held = client_a.post("/events/" + event + "/holds", quantity_one, "alice");
        CHECK(held.status == 404);
        CHECK(held.error() == "unknown_event");
    }

    // An event both venues hold is one inventory: a place held through one server is
    // held for the other too.
    const auto held = client_a.post("/events/shared-gig/holds", quantity_one, "alice");
    REQUIRE_MESSAGE(held.status == 201, held.body);
    auto client_b = b.client();
    // Seen by the other process once its seat feed read it.
    CHECK(eventually([&] { return zone_counts(client_b, "shared-gig", "floor").at("held") == 1; }));
    CHECK(zone_counts(client_b, "autumn-gig", "floor").at("held") == 0);
}
#endif

}  // namespace venue_test
