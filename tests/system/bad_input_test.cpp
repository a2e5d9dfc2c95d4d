// SPDX-License-Identifier: MIT
// tests/system/bad_input_test.cpp: every kind of bad request gets a 4xx with a JSON
// error, and changes nothing: the seats, the pending reservations and the orders are
// the same before and after.
#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace bad_input_test {

using namespace seatlock::testing;

namespace {

const std::string holds_url = "/events/demo-game/holds";

// What a bad request must not change.
struct Snapshot {
    std::string seats;
    std::int64_t pending = 0;
    std::int64_t orders = 0;
    bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const TicketingServer& server) {
    auto client = server.client();
    return {client.get("/events/demo-game/seats").body,
            server.db_count("SELECT count(*) FROM pending_reservations"),
            server.db_count("SELECT count(*) FROM orders")};
}

// A server where alice holds A-1 (token) and has paid A-2 (order pay-a).
struct Shop {
    TicketingServer server;
    HttpClient client;
    std::string token;
    Snapshot before;

    Shop()
        : server(TicketingServer::Options{{"--backend", "memory"}, std::nullopt}),
          client(server.client()) {
        auto paid = client.post(holds_url, seats_body("lower-1", {"A-2"}), "alice");
        REQUIRE(paid.status == 201);
        const std::string paid_token(paid.json().at("token").as_string());
        REQUIRE(
            client.post("/holds/" + paid_token + "/confirm", R"({"payment_id":"pay-a"})", "alice")
                .status == 200);
        auto held = client.post(holds_url, seats_body("lower-1", {"A-1"}), "alice");
        REQUIRE(held.status == 201);
        token = std::string(held.json().at("token").as_string());
        before = snapshot(server);
    }

    // Checks the reply is `status` with a JSON error `error`, and that nothing changed.
    void refused(const HttpReply& reply, int status, const std::string& error) {
        INFO(reply.body);
        CHECK(reply.status == status);
        CHECK(reply.header("Content-Type") == "application/json");
        CHECK(reply.error() == error);
        CHECK(reply.json().at("message").as_string().size() > 0);
        CHECK(snapshot(server) == before);
    }
};

}  // namespace

TEST_CASE("malformed JSON is refused") {
    Shop shop;
    shop.refused(shop.client.post(holds_url, R"({"zone": "lower-1", "seats": ["A-3")", "bob"), 400,
                 "invalid_argument");
    shop.refused(shop.client.post(holds_url, "zone=lower-1&seats=A-3", "bob"), 400,
                 "invalid_argument");
    shop.refused(shop.client.post(holds_url, "", "bob"), 400, "invalid_argument");
}

TEST_CASE("a body that is not a JSON object is refused") {
    Shop shop;
    shop.refused(shop.client.post(holds_url, R"(["lower-1", "A-3"])", "bob"), 400,
                 "invalid_argument");
    shop.refused(shop.client.post("/holds/" + shop.token + "/confirm", R"("pay-x")", "alice"), 400,
                 "invalid_argument");
}

TEST_CASE("fields of the wrong type are refused") {
    Shop shop;
    for (const char* body :
         {R"({"zone": 7, "seats": ["A-3"]})", R"({"zone": "lower-1", "seats": "A-3"})",
          R"({"zone": "lower-1", "seats": [3]})", R"({"zone": "lower-1", "seats": null})",
          R"({"zone": "bleachers-left", "quantity": "2"})",
          R"({"zone": "bleachers-left", "quantity": 1.5})",
          R"({"zone": "bleachers-left", "quantity": true})"}) {
        shop.refused(shop.client.post(holds_url, body, "bob"), 400, "invalid_argument");
    }
    shop.refused(
        shop.client.post("/holds/" + shop.token + "/confirm", R"({"payment_id": 42})", "alice"),
        400, "invalid_argument");
    shop.refused(
        shop.client.post("/holds/" + shop.token + "/extend", R"({"ttl_s": "60"})", "alice"), 400,
        "invalid_argument");
}

TEST_CASE("unknown fields and mixed requests are refused") {
    Shop shop;
    shop.refused(
        shop.client.post(holds_url, R"({"zone": "lower-1", "seats": ["A-3"], "price": 0})", "bob"),
        400, "invalid_argument");
    shop.refused(
        shop.client.post(holds_url, R"({"zone": "bleachers-left", "seats": ["1"], "quantity": 1})",
                         "bob"),
        400, "invalid_argument");
    shop.refused(shop.client.post(holds_url, R"({"zone": "lower-1"})", "bob"), 400,
                 "invalid_argument");
}

TEST_CASE("a body over the size limit is refused with 413") {
    Shop shop;
    const std::string huge =
        R"({"zone": "lower-1", "seats": [")" + std::string(1024 * 1024, 'A') + R"("]})";
    shop.refused(shop.client.post(holds_url, huge, "bob"), 413, "payload_too_large");
    // The server is still serving.
    CHECK(shop.client.get("/healthz").status == 200);
}

TEST_CASE("unknown events, zones and seats are 404") {
    Shop shop;
    shop.refused(
        shop.client.post("/events/no-such-game/holds", seats_body("lower-1", {"A-3"}), "bob"), 404,
        "unknown_event");
    shop.refused(shop.client.post(holds_url, seats_body("lower-9", {"A-3"}), "bob"), 404,
                 "unknown_zone");
    const auto seat = shop.client.post(holds_url, seats_body("lower-1", {"A-3", "Z-99"}), "bob");
    shop.refused(seat, 404, "unknown_seat");
    CHECK(strings(seat.json().at("seats")) == std::vector<std::string>{"Z-99"});
    shop.refused(shop.client.get("/events/no-such-game/seats"), 404, "unknown_event");
    shop.refused(shop.client.get("/events/demo-game/seats?zone=lower-9"), 404, "unknown_zone");
}

TEST_CASE("zero or negative quantities are refused") {
    Shop shop;
    for (const char* body :
         {R"({"zone": "bleachers-left", "quantity": 0})",
          R"({"zone": "bleachers-left", "quantity": -2})",
          R"({"zone": "lower-1", "best_available": 0})",
          R"({"zone": "lower-1", "best_available": -1})", R"({"zone": "lower-1", "seats": []})"}) {
        shop.refused(shop.client.post(holds_url, body, "bob"), 400, "invalid_argument");
    }
}

TEST_CASE("four seats are over the limit of three per buyer") {
    Shop shop;
    const auto reply =
        shop.client.post(holds_url, seats_body("lower-1", {"B-1", "B-2", "B-3", "B-4"}), "bob");
    shop.refused(reply, 422, "limit_exceeded");
    CHECK(reply.json().at("limit").as_int64() == 3);
    CHECK(reply.json().at("current").as_int64() == 0);
    // alice has two seats already: two more would make four.
    const auto more = shop.client.post(holds_url, seats_body("lower-1", {"B-1", "B-2"}), "alice");
    shop.refused(more, 422, "limit_exceeded");
    CHECK(more.json().at("current").as_int64() == 2);
}

TEST_CASE("a seat asked twice is refused") {
    Shop shop;
    shop.refused(shop.client.post(holds_url, seats_body("lower-1", {"B-1", "B-1"}), "bob"), 400,
                 "invalid_argument");
}

TEST_CASE("ids with forbidden characters are refused") {
    Shop shop;
    shop.refused(shop.client.post(holds_url, seats_body("lower-1", {"B{1}"}), "bob"), 400,
                 "invalid_argument");
    shop.refused(shop.client.post(holds_url, seats_body("lower 1", {"B-1"}), "bob"), 400,
                 "invalid_argument");
    shop.refused(
        shop.client.post("/events/demo%7Bgame%7D/holds", seats_body("lower-1", {"B-1"}), "bob"),
        400, "invalid_argument");
    shop.refused(shop.client.post(holds_url, seats_body("lower-1", {"B-1"}), "bob:admin"), 400,
                 "invalid_argument");
    shop.refused(shop.client.post("/holds/" + shop.token + "/confirm", R"({"payment_id": "pay 1"})",
                                  "alice"),
                 400, "invalid_argument");
    shop.refused(shop.client.post("/orders/pay%3Aa/cancel", "", "alice"), 400, "invalid_argument");
}

TEST_CASE("a request that names no buyer is refused with 401") {
    Shop shop;
    shop.refused(shop.client.post(holds_url, seats_body("lower-1", {"B-1"}), std::nullopt), 401,
                 "unauthenticated");
    shop.refused(shop.client.post("/holds/" + shop.token + "/confirm", R"({"payment_id": "pay-b"})",
                                  std::nullopt),
                 401, "unauthenticated");
    shop.refused(shop.client.del("/holds/" + shop.token, std::nullopt), 401, "unauthenticated");
    shop.refused(shop.client.post("/orders/pay-a/cancel", "", std::nullopt), 401, "unauthenticated");
}

TEST_CASE("another buyer's hold token is refused with 403") {
    Shop shop;
    const std::string hold = "/holds/" + shop.token;
    shop.refused(shop.client.post(hold + "/confirm", R"({"payment_id": "pay-m"})", "mallory"), 403,
                 "not_owner");
    shop.refused(shop.client.post(hold + "/extend", R"({"ttl_s": 60})", "mallory"), 403,
                 "not_owner");
    shop.refused(shop.client.del(hold, "mallory"), 403, "not_owner");
    // The hold is still alice's to pay.
    CHECK(shop.client.post(hold + "/confirm", R"({"payment_id": "pay-c"})", "alice").status == 200);
}

TEST_CASE("another buyer's order cannot be cancelled") {
    Shop shop;
    shop.refused(shop.client.post("/orders/pay-a/cancel", "", "mallory"), 403, "not_owner");
    CHECK(seat_states(shop.client, "demo-game", "lower-1").at("A-2") == "paid");
}

TEST_CASE("unknown hold tokens and orders are 404") {
    Shop shop;
    shop.refused(shop.client.post("/holds/demo-game.0123456789abcdef0123456789abcdef/confirm",
                                  R"({"payment_id": "pay-u"})", "alice"),
                 404, "unknown_hold");
    shop.refused(shop.client.del("/holds/not-a-token", "alice"), 404, "unknown_hold");
    shop.refused(shop.client.post("/orders/pay-nobody/cancel", "", "alice"), 404, "unknown_order");
}

TEST_CASE("unknown endpoints are 404 and wrong methods 405") {
    Shop shop;
    shop.refused(shop.client.get("/tickets"), 404, "not_found");
    const auto wrong = shop.client.send("PUT", holds_url, "{}", {{"X-User-Id", "bob"}});
    shop.refused(wrong, 405, "method_not_allowed");
    CHECK(wrong.header("Allow") == "POST");
}

}  // namespace bad_input_test
