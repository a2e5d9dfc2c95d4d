// SPDX-License-Identifier: MIT
// tests/system/double_sale_test.cpp: the order database refuses to sell a seat twice,
// whatever the storage says (sold_seats, one row per seat sold). Here the storage forgets
// a sale without its version going back, which no version check can see: a seatlock
// client of the test's own, on the server's Redis and key prefix, cancels a paid order
// behind the server's back. The next buyer of the seat is granted a hold and pays; SQLite
// refuses the order, and the server must not answer 200: it gives the seat back to its
// first buyer, keeps the payment for a refund, and says so on the retry.
#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>

#include "support/redis_server.hpp"
#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace double_sale_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;

namespace {

const std::string event = "demo-game";
const std::string zone = "lower-1";
const std::string holds_url = "/events/" + event + "/holds";

std::string hold(HttpClient& client, const std::string& buyer, const std::string& seat) {
    const auto held = client.post(holds_url, seats_body(zone, {seat}), buyer);
    REQUIRE_MESSAGE(held.status == 201, buyer << " hold: " << held.body);
    return std::string(held.json().at("token").as_string());
}

HttpReply confirm(HttpClient& client, const std::string& buyer, const std::string& token,
                  const std::string& payment) {
    return client.post("/holds/" + token + "/confirm", R"({"payment_id":")" + payment + R"("})",
                       buyer);
}

}  // namespace

TEST_CASE(
    "a payment for a seat SQLite has sold already is refused with storage_lost, kept for a "
    "refund, and the seat goes back to its first buyer" *
    doctest::timeout(60)) {
    RedisServer redis;
    TicketingServer server({{"--backend", "redis", "--redis-url", redis.url()}, std::nullopt});
    INFO(server.log());
    auto client = server.client();

    const auto paid = confirm(client, "alice", hold(client, "alice", "B-1"), "pay-alice");
    REQUIRE_MESSAGE(paid.status == 200, paid.body);

    // Behind the server's back: the storage forgets alice's sale, and its version goes
    // forward, as it does for any cancellation.
    {
        seatlock::RedisBackend backend(seatlock::RedisOptions::from_url(redis.url()).value());
        seatlock::SeatHoldStore store(backend);
        const auto forgot = store.cancel(event, "pay-alice", std::string("alice"));
        REQUIRE_MESSAGE(forgot.has_value(), forgot.error().message());
        CHECK(forgot->cancelled);
    }
    settle_seat_maps();
    REQUIRE(seat_states(client, event, zone).at("B-1") == "free");
    CHECK(client.get("/healthz").status == 200);  // nothing went back: no probe can see it

    const std::string bobs = hold(client, "bob", "B-1");
    const auto refused = confirm(client, "bob", bobs, "pay-bob");
    CHECK(refused.status == 503);
    CHECK(refused.error() == "storage_lost");
    REQUIRE(refused.json().as_object().contains("retry_safe"));
    CHECK(refused.json().at("retry_safe") == true);
    CHECK(refused.header("Retry-After") == "1");
    CHECK(metric(client, "seatlock_ticketing_payments_refused_total") == 1);

    // The careful client retries with the same payment id: refused for good, and told why.
    const auto retried = confirm(client, "bob", bobs, "pay-bob");
    CHECK(retried.status == 409);
    CHECK(retried.error() == "seat_taken");
    const std::string message(retried.json().at("message").as_string());
    CHECK(message.find("pay-bob") != std::string::npos);
    CHECK(message.find("refused") != std::string::npos);
    CHECK(message.find("refund") != std::string::npos);
    CHECK(strings(retried.json().at("seats")) == std::vector<std::string>{"B-1"});

    // SQLite: the seat stays alice's; bob's payment is kept, and no order of his exists.
    CHECK(server.db_text("SELECT sold_to FROM refused_payments WHERE order_id = 'pay-bob'") ==
          "pay-alice");
    CHECK(server.db_text("SELECT holder FROM refused_payments WHERE order_id = 'pay-bob'") ==
          "bob");
    CHECK(server.db_text("SELECT order_id FROM sold_seats WHERE event = ?1 AND zone = ?2"
                         " AND seat = 'B-1'",
                         {event, zone}) == "pay-alice");
    CHECK(server.db_count("SELECT count(*) FROM orders o, json_each(o.seats) j WHERE"
                          " o.status = 'paid' AND j.value = 'B-1'") == 1);
    CHECK(server.db_text("SELECT status FROM orders WHERE order_id = 'pay-alice'") == "paid");
    CHECK(server.db_count("SELECT count(*) FROM orders WHERE order_id = 'pay-bob'") == 0);

    // Repaired from SQLite: alice's order holds the seat again, in the storage too.
    CHECK(eventually([&] { return client.get("/healthz").status == 200; }, 2500ms));
    const bool restored = eventually(
        [&] {
            try {
                return seat_states(client, event, zone).at("B-1") == "paid";
            } catch (const std::runtime_error&) {
                return false;
            }
        },
        2500ms);
    CHECK_MESSAGE(restored, "B-1 reads " << seat_states(client, event, zone).at("B-1")
                                         << " after the repair: order pay-alice, paid in SQLite"
                                            " and cancelled in the storage, was not restored");
    // The next buyer cannot have it: no hold, no payment to refuse.
    const auto again = client.post(holds_url, seats_body(zone, {"B-1"}), std::string("carol"));
    CHECK(again.status == 409);
    CHECK(again.error() == "seat_taken");
    CHECK(server.db_count("SELECT count(*) FROM refused_payments") == 1);
}

}  // namespace double_sale_test
