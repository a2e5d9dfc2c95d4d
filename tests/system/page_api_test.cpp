// SPDX-License-Identifier: MIT
// tests/system/page_api_test.cpp: what the seat-map page needs from the server, over HTTP
// on every storage: the page and its assets built into the binary, the buyer's own holds
// and orders (GET /me/holds, GET /me/orders), and conditional GETs (ETag, If-None-Match
// -> 304) that let the page poll the seat map cheaply.
#include <thread>

#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace page_api_test {

using namespace seatlock::testing;

namespace {

const std::string holds_url = "/events/demo-game/holds";
const std::string seats_url = "/events/demo-game/seats?zone=lower-1";

HttpReply get_as(HttpClient& client, const std::string& target, const std::string& user,
                 std::vector<std::pair<std::string, std::string>> headers = {}) {
    headers.emplace_back("X-User-Id", user);
    return client.send("GET", target, "", headers);
}

std::string hold(HttpClient& client, const std::string& user, const std::string& zone,
                 const std::vector<std::string>& seats) {
    const auto reply = client.post(holds_url, seats_body(zone, seats), user);
    REQUIRE_MESSAGE(reply.status == 201, reply.body);
    return std::string(reply.json().at("token").as_string());
}

// The "holds" or "orders" array of a buyer's listing.
boost::json::array listing(HttpClient& client, const std::string& what, const std::string& user,
                           const std::string& query = "?event=demo-game") {
    const auto reply = get_as(client, "/me/" + what + query, user);
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    return reply.json().at(what).as_array();
}

}  // namespace

TEST_CASE_TEMPLATE("a buyer's holds list only that buyer's holds that can still be paid", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();

    const std::string alice = hold(client, "alice", "lower-1", {"A-1", "A-2"});
    const std::string bob = hold(client, "bob", "lower-2", {"B-1"});

    const auto mine = listing(client, "holds", "alice");
    REQUIRE(mine.size() == 1);
    CHECK(mine[0].at("token").as_string() == alice);
    CHECK(mine[0].at("event").as_string() == "demo-game");
    CHECK(mine[0].at("zone").as_string() == "lower-1");
    CHECK(strings(mine[0].at("seats")) == std::vector<std::string>{"A-1", "A-2"});
    CHECK(mine[0].at("expires_at").as_string().ends_with("Z"));
    CHECK(mine[0].at("status").as_string() == "held");

    const auto his = listing(client, "holds", "bob", "");  // every event
    REQUIRE(his.size() == 1);
    CHECK(his[0].at("token").as_string() == bob);
    CHECK(listing(client, "holds", "carol").empty());

    CHECK(client.del("/holds/" + bob, "bob").status == 204);
    CHECK(listing(client, "holds", "bob").empty());
    const auto paid =
        client.post("/holds/" + alice + "/confirm", R"({"payment_id":"pay-7"})", "alice");
    REQUIRE_MESSAGE(paid.status == 200, paid.body);
    CHECK(listing(client, "holds", "alice").empty());
}

TEST_CASE_TEMPLATE("a hold leaves its buyer's holds the moment it expires", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage, {"--hold-ttl", "1"}));
    INFO(server.log());
    auto client = server.client();
    hold(client, "dora", "upper-1", {"C-3"});
    CHECK(listing(client, "holds", "dora").size() == 1);
    // Filtered by its end, not by when the expiry drain deletes the row.
    CHECK(eventually([&] { return listing(client, "holds", "dora").empty(); },
                     std::chrono::milliseconds(1500)));
}

TEST_CASE_TEMPLATE("a buyer's orders list paid and cancelled orders, newest first", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();

    const std::string first = hold(client, "erin", "lower-1", {"D-1"});
    REQUIRE(
        client.post("/holds/" + first + "/confirm", R"({"payment_id":"pay-a"})", "erin").status ==
        200);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a later paid_at
    const std::string second = hold(client, "erin", "lower-2", {"D-2", "D-3"});
    REQUIRE(
        client.post("/holds/" + second + "/confirm", R"({"payment_id":"pay-b"})", "erin").status ==
        200);
    REQUIRE(client.post("/orders/pay-a/cancel", "", "erin").status == 200);

    const auto orders = listing(client, "orders", "erin");
    REQUIRE(orders.size() == 2);
    CHECK(orders[0].at("order_id").as_string() == "pay-b");
    CHECK(orders[0].at("status").as_string() == "paid");
    CHECK(orders[0].at("zone").as_string() == "lower-2");
    CHECK(strings(orders[0].at("seats")) == std::vector<std::string>{"D-2", "D-3"});
    CHECK(orders[0].at("hold_token").as_string() == second);
    CHECK(orders[0].at("paid_at").as_string().ends_with("Z"));
    CHECK(orders[1].at("order_id").as_string() == "pay-a");
    CHECK(orders[1].at("status").as_string() == "cancelled");
    CHECK(listing(client, "orders", "frank").empty());
}

TEST_CASE_TEMPLATE("a buyer's listings need the buyer and take only a known event", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();
    for (const std::string what : {"holds", "orders"}) {
        CAPTURE(what);
        CHECK(client.get("/me/" + what).error() == "unauthenticated");
        const auto unknown = get_as(client, "/me/" + what + "?event=no-such-game", "alice");
        CHECK(unknown.status == 404);
        CHECK(unknown.error() == "unknown_event");
        const auto other = get_as(client, "/me/" + what + "?zone=lower-1", "alice");
        CHECK(other.status == 400);
        CHECK(other.error() == "invalid_argument");
        const auto posted = client.post("/me/" + what, "{}", "alice");
        CHECK(posted.status == 405);
        CHECK(posted.header("Allow") == "GET");
    }
}

TEST_CASE_TEMPLATE("the seat map answers 304 until it changes", Storage, SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();

    const auto first = client.get(seats_url);
    REQUIRE(first.status == 200);
    const std::string tag = first.header("ETag");
    REQUIRE(tag.size() > 2);
    CHECK(tag.front() == '"');
    CHECK(first.header("Cache-Control") == "no-cache");

    for (const std::string& asked : {tag, "W/" + tag, "\"other\", " + tag, std::string("*")}) {
        CAPTURE(asked);
        const auto same = client.send("GET", seats_url, "", {{"If-None-Match", asked}});
        CHECK(same.status == 304);
        CHECK(same.body.empty());
        CHECK(same.header("ETag") == tag);
    }
    const auto stale = client.send("GET", seats_url, "", {{"If-None-Match", "\"other\""}});
    CHECK(stale.status == 200);
    CHECK(stale.body == first.body);

    hold(client, "gus", "lower-1", {"E-5"});
    const auto changed = client.send("GET", seats_url, "", {{"If-None-Match", tag}});
    CHECK(changed.status == 200);
    CHECK(changed.header("ETag") != tag);
    CHECK(seat_states_of(changed.json().at("zones").as_array().at(0).as_object()).at("E-5") ==
          "held");

    // A buyer's listing the same way: a new hold changes it.
    const auto mine = get_as(client, "/me/holds?event=demo-game", "gus");
    REQUIRE(mine.status == 200);
    CHECK(
        get_as(client, "/me/holds?event=demo-game", "gus", {{"If-None-Match", mine.header("ETag")}})
            .status == 304);
    // Errors carry no validator and are never 304.
    const auto refused = client.send("GET", "/events/nope/seats", "", {{"If-None-Match", "*"}});
    CHECK(refused.status == 404);
    CHECK(refused.header("ETag").empty());
}

TEST_CASE("the page and its assets are served from the binary") {
    MemoryStorage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();

    const auto page = client.get("/");
    REQUIRE(page.status == 200);
    CHECK(page.header("Content-Type") == "text/html; charset=utf-8");
    CHECK(page.body.starts_with("<!doctype html>"));
    CHECK(page.body.find("/assets/app.js") != std::string::npos);
    CHECK(page.body.find("/assets/style.css") != std::string::npos);
    CHECK(page.header("Content-Security-Policy").find("default-src 'self'") != std::string::npos);

    const auto script = client.get("/assets/app.js");
    REQUIRE(script.status == 200);
    CHECK(script.header("Content-Type") == "text/javascript; charset=utf-8");
    CHECK(script.body.find("\"use strict\";") != std::string::npos);
    const auto style = client.get("/assets/style.css");
    REQUIRE(style.status == 200);
    CHECK(style.header("Content-Type") == "text/css; charset=utf-8");
    CHECK(client.send("GET", "/assets/app.js", "", {{"If-None-Match", script.header("ETag")}})
              .status == 304);

    CHECK(client.get("/assets/index.html").status == 404);
    CHECK(client.get("/assets/missing.js").error() == "not_found");
    CHECK(client.post("/", "", std::nullopt).status == 405);
}

#ifdef SEATLOCK_SYSTEM_TEST_REDIS
TEST_CASE("two servers on one Redis tag the same seat map alike") {
    RedisStorage storage;
    TicketingServer one(on(storage));
    TicketingServer two(on(storage));
    INFO(one.log());
    auto a = one.client();
    auto b = two.client();
    hold(a, "hana", "lower-1", {"F-1"});
    const auto from_one = a.get(seats_url);
    // A page polling the other process sees the hold once that process's seat feed read
    // it (every 50 ms), and its tag is the same: the version.
    HttpReply from_two;
    CHECK(eventually([&] {
        from_two = b.send("GET", seats_url, "", {{"If-None-Match", from_one.header("ETag")}});
        return from_two.status == 304;
    }));
    CHECK(from_two.header("ETag") == from_one.header("ETag"));
}
#endif

}  // namespace page_api_test
