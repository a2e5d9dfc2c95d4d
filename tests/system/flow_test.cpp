// SPDX-License-Identifier: MIT
// tests/system/flow_test.cpp: the whole ticketing flow over HTTP, on every storage the
// server can use: list seats, hold, confirm, release, expire, cancel, and the SQLite
// rows that follow each step. The first flow also runs on Redis through its Unix socket.
#include <thread>

#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace flow_test {

using namespace seatlock::testing;

namespace {

const std::string seats_url = "/events/demo-game/seats?zone=lower-1";
const std::string holds_url = "/events/demo-game/holds";

std::int64_t pending_rows(const TicketingServer& server, const std::string& token) {
    return server.db_count("SELECT count(*) FROM pending_reservations WHERE hold_token = ?",
                           {token});
}

// Holds seats of lower-1 for `user`; the reply's JSON (token, seats, expires_at).
boost::json::object hold(HttpClient& client, const std::string& user,
                         const std::vector<std::string>& seats) {
    const auto reply = client.post(holds_url, seats_body("lower-1", seats), user);
    REQUIRE_MESSAGE(reply.status == 201, reply.body);
    return reply.json().as_object();
}

std::string token_of(const boost::json::object& hold) {
    return std::string(hold.at("token").as_string());
}

}  // namespace

TEST_CASE_TEMPLATE("held seats are paid once the hold is confirmed", Storage,
                   SEATLOCK_SYSTEM_STORAGES_AND_UNIX_SOCKET) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();

    auto before = seat_states(client, "demo-game", "lower-1");
    CHECK(before.at("A-1") == "free");
    CHECK(before.at("A-2") == "free");

    const auto held = hold(client, "alice", {"A-1", "A-2"});
    CHECK(strings(held.at("seats")) == std::vector<std::string>{"A-1", "A-2"});
    CHECK(held.at("expires_at").as_string().ends_with("Z"));
    const std::string token = token_of(held);
    auto during = seat_states(client, "demo-game", "lower-1");
    CHECK(during.at("A-1") == "held");
    CHECK(during.at("A-2") == "held");
    CHECK(pending_rows(server, token) == 1);
    CHECK(server.db_text("SELECT holder FROM pending_reservations WHERE hold_token = ?", {token}) ==
          "alice");
    // A hold takes no lock: its row carries no fencing token until an extend writes one.
    CHECK(server.db_count("SELECT fencing_token FROM pending_reservations WHERE hold_token = ?",
                          {token}) == 0);

    const auto confirmed =
        client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-1001"})", "alice");
    REQUIRE_MESSAGE(confirmed.status == 200, confirmed.body);
    const auto order = confirmed.json().as_object();
    CHECK(order.at("order_id").as_string() == "pay-1001");
    CHECK(order.at("status").as_string() == "paid");
    CHECK(strings(order.at("seats")) == std::vector<std::string>{"A-1", "A-2"});

    auto after = seat_states(client, "demo-game", "lower-1");
    CHECK(after.at("A-1") == "paid");
    CHECK(after.at("A-2") == "paid");
    CHECK(after.at("A-3") == "free");
    CHECK(pending_rows(server, token) == 0);
    CHECK(server.db_text("SELECT status FROM orders WHERE order_id = 'pay-1001'") == "paid");
    CHECK(server.db_text("SELECT hold_token FROM orders WHERE order_id = 'pay-1001'") == token);
    // The order was written under a lock: its fencing token.
    CHECK(server.db_count("SELECT fencing_token FROM orders WHERE order_id = 'pay-1001'") > 0);
}

TEST_CASE_TEMPLATE("confirming again with the same payment returns the same order", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();
    const std::string token = token_of(hold(client, "alice", {"B-1"}));

    const auto first =
        client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-7"})", "alice");
    const auto again =
        client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-7"})", "alice");
    REQUIRE(first.status == 200);
    REQUIRE(again.status == 200);
    CHECK(again.json() == first.json());
    const auto other =
        client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-8"})", "alice");
    CHECK(other.status == 409);
    CHECK(other.error() == "order_conflict");
    CHECK(server.db_count("SELECT count(*) FROM orders") == 1);
}

TEST_CASE_TEMPLATE("a released hold frees its seats and its pending row", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();
    const std::string token = token_of(hold(client, "bob", {"C-5", "C-6"}));
    REQUIRE(pending_rows(server, token) == 1);

    const auto released = client.del("/holds/" + token, "bob");
    CHECK(released.status == 204);
    CHECK(released.body.empty());

    auto states = seat_states(client, "demo-game", "lower-1");
    CHECK(states.at("C-5") == "free");
    CHECK(states.at("C-6") == "free");
    CHECK(pending_rows(server, token) == 0);
    CHECK(server.db_text("SELECT outcome FROM closed_holds WHERE hold_token = ?", {token}) ==
          "released");
    // The seats can be held again, by anyone.
    hold(client, "carol", {"C-5", "C-6"});
}

TEST_CASE_TEMPLATE("an expired hold frees its seats and its pending row is deleted", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage, {"--hold-ttl", "1"}));
    INFO(server.log());
    auto client = server.client();
    const std::string token = token_of(hold(client, "dave", {"D-1", "D-2"}));
    REQUIRE(pending_rows(server, token) == 1);

    CHECK(eventually([&] {
        auto states = seat_states(client, "demo-game", "lower-1");
        return states.at("D-1") == "free" && states.at("D-2") == "free";
    }));
    CHECK(eventually([&] { return pending_rows(server, token) == 0; }));
    CHECK(server.db_text("SELECT outcome FROM closed_holds WHERE hold_token = ?", {token}) ==
          "expired");
    CHECK(eventually([&] {
        return client.get("/metrics").body.find("seatlock_ticketing_expiries_total 1\n") !=
               std::string::npos;
    }));
}

TEST_CASE_TEMPLATE("confirming an expired hold answers 410 hold_expired", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage, {"--hold-ttl", "1"}));
    INFO(server.log());
    auto client = server.client();
    const std::string token = token_of(hold(client, "erin", {"E-3", "E-4"}));
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));

    const auto late =
        client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-late"})", "erin");
    CHECK(late.status == 410);
    CHECK(late.error() == "hold_expired");
    CHECK(strings(late.json().at("seats")) == std::vector<std::string>{"E-3", "E-4"});
    CHECK(server.db_count("SELECT count(*) FROM orders") == 0);
    auto states = seat_states(client, "demo-game", "lower-1");
    CHECK(states.at("E-3") == "free");
    CHECK(states.at("E-4") == "free");
}

TEST_CASE_TEMPLATE("an extended hold outlives its first expiry", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage, {"--hold-ttl", "1"}));
    INFO(server.log());
    auto client = server.client();
    const auto held = hold(client, "frank", {"F-1"});
    const std::string token = token_of(held);

    const auto extended = client.post("/holds/" + token + "/extend", R"({"ttl_s":60})", "frank");
    REQUIRE_MESSAGE(extended.status == 200, extended.body);
    CHECK(extended.json().at("expires_at").as_string() > held.at("expires_at").as_string());
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));

    CHECK(seat_states(client, "demo-game", "lower-1").at("F-1") == "held");
    CHECK(pending_rows(server, token) == 1);
    CHECK(
        client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-f"})", "frank").status ==
        200);
}

TEST_CASE_TEMPLATE("a cancelled order frees its seats", Storage, SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();
    const std::string token = token_of(hold(client, "gina", {"A-7", "A-8"}));
    REQUIRE(
        client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-g"})", "gina").status ==
        200);

    const auto cancelled = client.post("/orders/pay-g/cancel", "", "gina");
    REQUIRE_MESSAGE(cancelled.status == 200, cancelled.body);
    CHECK(cancelled.json().at("status").as_string() == "cancelled");
    auto states = seat_states(client, "demo-game", "lower-1");
    CHECK(states.at("A-7") == "free");
    CHECK(states.at("A-8") == "free");
    CHECK(server.db_text("SELECT status FROM orders WHERE order_id = 'pay-g'") == "cancelled");
    // Cancelling frees the buyer's allowance too: three new seats fit.
    hold(client, "gina", {"A-9", "A-10", "A-11"});
}

TEST_CASE_TEMPLATE("bleacher places are assigned lowest first", Storage, SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();

    const auto first = client.post(holds_url, R"({"zone":"bleachers-left","quantity":2})", "hank");
    const auto second = client.post(holds_url, R"({"zone":"bleachers-left","quantity":1})", "ivy");
    REQUIRE_MESSAGE(first.status == 201, first.body);
    REQUIRE_MESSAGE(second.status == 201, second.body);
    CHECK(strings(first.json().at("seats")) == std::vector<std::string>{"1", "2"});
    CHECK(strings(second.json().at("seats")) == std::vector<std::string>{"3"});
    const auto counts = zone_counts(client, "demo-game", "bleachers-left");
    CHECK(counts.at("held") == 3);
    CHECK(counts.at("free") == counts.at("capacity") - 3);
}

TEST_CASE_TEMPLATE("best_available picks adjacent seats in one row", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();
    hold(client, "jack", {"A-2"});  // splits row A: A-1 alone, then A-3..

    const auto best = client.post(holds_url, R"({"zone":"lower-1","best_available":3})", "kim");
    REQUIRE_MESSAGE(best.status == 201, best.body);
    CHECK(strings(best.json().at("seats")) == std::vector<std::string>{"A-3", "A-4", "A-5"});
}

}  // namespace flow_test
