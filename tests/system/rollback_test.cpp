// SPDX-License-Identifier: MIT
// tests/system/rollback_test.cpp: the issue "A Redis that comes back with older data
// resells paid seats", reproduced against the built server. One redis-server that keeps
// only what an explicit SAVE wrote (an RDB file in its directory, no append-only file):
// seats paid after the SAVE are gone when it is SIGKILLed and restarted on that
// directory. With no buyer acting, the server must find the rollback within a second of
// Redis answering again (its version probe), and give the lost sales back to the storage
// from SQLite before anything is sold again.
#include <csignal>

#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"
#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace rollback_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const std::string event = "demo-game";
const std::string zone = "lower-1";
const std::string holds_url = "/events/" + event + "/holds";
const std::string losses_metric = "seatlock_ticketing_storage_losses_total";

// One second: probes are at most a second apart (the first drain tick, every 250 ms, at
// least 750 ms after the last probe), so a probe that failed just before Redis came back
// is followed by one within a second. 150 ms more for the round trips and the metric's
// poll on a loaded machine.
// Sanitizer builds run the server several times slower: the same rule, with a second more.
constexpr auto detection_bound = sanitized_build ? 2150ms : 1150ms;

// The server on `redis`, selling the built-in demo venue.
TicketingServer::Options on_redis(const RedisServer& redis) {
    return {{"--backend", "redis", "--redis-url", redis.url()}, std::nullopt};
}

// `buyer` holds `seats` of lower-1 (201) and pays them with `payment` (200).
void buy(HttpClient& client, const std::string& buyer, const std::vector<std::string>& seats,
         const std::string& payment) {
    const auto held = client.post(holds_url, seats_body(zone, seats), buyer);
    REQUIRE_MESSAGE(held.status == 201, buyer << " hold: " << held.body);
    const std::string token(held.json().at("token").as_string());
    const auto paid = client.post("/holds/" + token + "/confirm",
                                  R"({"payment_id":")" + payment + R"("})", buyer);
    REQUIRE_MESSAGE(paid.status == 200, buyer << " confirm: " << paid.body);
    REQUIRE(paid.json().at("status").as_string() == "paid");
}

// SIGKILL (nothing written at exit), then a restart on the same port and directory: the
// server loads the RDB file the last SAVE wrote. Returns when it answers PING again.
void kill_and_restart(RedisServer& redis) {
    REQUIRE(redis.running());
    REQUIRE(::kill(redis.pid(), SIGKILL) == 0);
    redis.restart();  // reaps the killed process first
}

// Waits (generously) until the server counted the storage loss and served the seat map
// again: the repair is done.
void wait_for_repair(HttpClient& client, std::map<std::string, std::string>& seats) {
    REQUIRE_MESSAGE(eventually([&] { return metric(client, losses_metric) > 0; }, 10s),
                    "no storage loss counted 10 s after Redis came back");
    const bool served = eventually(
        [&] {
            try {
                seats = seat_states(client, event, zone);  // throws while not 200
                return true;
            } catch (const std::runtime_error&) {
                return false;
            }
        },
        10s);
    REQUIRE_MESSAGE(served, "the seat map was not served again within 10 s");
    // The repair is over (cancellations made again too) once /healthz says so.
    REQUIRE_MESSAGE(eventually([&] { return client.get("/healthz").status == 200; }, 10s),
                    "/healthz still not 200 10 s after the repair began");
    settle_seat_maps();  // the seat feed reads the repaired map
    seats = seat_states(client, event, zone);
}

// The paid orders of SQLite that have `seat` of the demo zone.
std::int64_t paid_orders_with(const TicketingServer& server, const std::string& seat) {
    return server.db_count(
        "SELECT count(*) FROM orders o, json_each(o.seats) j"
        " WHERE o.event = ?1 AND o.zone = ?2 AND j.value = ?3 AND o.status = 'paid'",
        {event, zone, seat});
}

}  // namespace

TEST_CASE(
    "Redis restarted from an older snapshot: the rollback is found within a second with no "
    "traffic, and every paid seat is paid again before anything is sold" *
    doctest::timeout(90)) {
    RedisServer redis;  // no automatic snapshots: only the SAVE below writes one
    TicketingServer server(on_redis(redis));
    INFO(server.log());
    auto client = server.client();

    buy(client, "alice", {"A-1", "A-2"}, "pay-alice");
    RedisAdmin(redis.port()).expect_ok({"SAVE"});
    buy(client, "bob", {"B-1", "B-2"}, "pay-bob");
    buy(client, "carol", {"C-1"}, "pay-carol");
    REQUIRE(metric(client, losses_metric) == 0);

    kill_and_restart(redis);
    const auto answered = Clock::now();
    // Only /metrics, which reads nothing from the storage: the probe alone must find it.
    std::int64_t losses = 0;
    auto detected = answered;
    while (Clock::now() - answered < 10s) {
        losses = metric(client, losses_metric);
        detected = Clock::now();
        if (losses > 0) break;
        std::this_thread::sleep_for(5ms);
    }
    REQUIRE_MESSAGE(losses > 0, "no storage loss counted 10 s after Redis came back");
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(detected - answered);
    MESSAGE("rollback detected " << took.count() << " ms after Redis answered again (bound "
                                 << detection_bound.count() << " ms)");
    CHECK(took <= detection_bound);

    // The first seat map served again shows every sale, those after the snapshot included.
    std::map<std::string, std::string> seats;
    wait_for_repair(client, seats);
    for (const char* seat : {"A-1", "A-2", "B-1", "B-2", "C-1"}) {
        CAPTURE(seat);
        CHECK(seats.at(seat) == "paid");
    }
    CHECK(seats.at("C-2") == "free");
    CHECK(eventually([&] { return client.get("/healthz").status == 200; }, 10s));

    // Nothing paid is sold again.
    // Pairs, not structured bindings: clang 14 cannot capture those in CAPTURE's lambda.
    for (const auto& buyer_seat :
         {std::pair{"dave", "B-1"}, std::pair{"erin", "C-1"}, std::pair{"frank", "A-1"}}) {
        const std::string buyer = buyer_seat.first;
        const std::string seat = buyer_seat.second;
        CAPTURE(buyer);
        const auto refused = client.post(holds_url, seats_body(zone, {seat}), std::string(buyer));
        CHECK(refused.status == 409);
        CHECK(refused.error() == "seat_taken");
    }
    // And the rest is on sale again.
    buy(client, "gina", {"C-2"}, "pay-gina");

    for (const auto& seat_order :
         {std::pair{"A-1", "pay-alice"}, std::pair{"A-2", "pay-alice"}, std::pair{"B-1", "pay-bob"},
          std::pair{"B-2", "pay-bob"}, std::pair{"C-1", "pay-carol"},
          std::pair{"C-2", "pay-gina"}}) {
        const std::string seat = seat_order.first;
        const std::string order = seat_order.second;
        CAPTURE(seat);
        CHECK(paid_orders_with(server, seat) == 1);
        CHECK(server.db_text("SELECT order_id FROM sold_seats WHERE event = ?1 AND zone = ?2"
                             " AND seat = ?3",
                             {event, zone, seat}) == order);
    }
    CHECK(server.db_count("SELECT count(*) FROM orders WHERE status = 'paid'") == 4);
    CHECK(server.db_count("SELECT count(*) FROM refused_payments") == 0);
    // Found once, by the probe (a read against SQLite's highest version: no write was
    // sent), repaired, and said so.
    CHECK(metric(client, losses_metric) == 1);
    CHECK(metric(client, "seatlock_ticketing_restore_conflicts_total") == 0);
    const std::string log = server.log();
    CHECK(log.find("went back to older data") != std::string::npos);
    CHECK(log.find("that the application's records hold") != std::string::npos);
    CHECK(log.find("repaired after the storage went back to older data") != std::string::npos);
}

TEST_CASE(
    "a hold made on the older data before the rollback is found is answered storage_lost, and "
    "ends when the paid order it overlaps is restored" *
    doctest::timeout(90)) {
    RedisServer redis;
    TicketingServer server(on_redis(redis));
    INFO(server.log());
    auto client = server.client();
    buy(client, "alice", {"A-1"}, "pay-alice");
    RedisAdmin(redis.port()).expect_ok({"SAVE"});
    buy(client, "bob", {"B-1"}, "pay-bob");

    kill_and_restart(redis);
    // At once, before the probe: B-1 is free in the older data. The hold is a write, whose
    // version finds the rollback; the buyer is told to retry, safely with the same key.
    const std::vector<std::pair<std::string, std::string>> as_dave = {
        {"Content-Type", "application/json"}, {"X-User-Id", "dave"}, {"Idempotency-Key", "cart-1"}};
    const auto first = client.send("POST", holds_url, seats_body(zone, {"B-1"}), as_dave);
    CHECK(first.status == 503);
    CHECK(first.error() == "storage_lost");
    CHECK(first.body.find("older data") != std::string::npos);
    CHECK(first.json().at("retry_safe") == true);

    std::map<std::string, std::string> seats;
    wait_for_repair(client, seats);
    CHECK(seats.at("A-1") == "paid");
    CHECK(seats.at("B-1") == "paid");
    // The retry finds the hold the older data granted, ended by bob's restored order.
    HttpReply again;
    CHECK(eventually(
        [&] {
            again = client.send("POST", holds_url, seats_body(zone, {"B-1"}), as_dave);
            return again.status != 503;
        },
        10s));
    MESSAGE("dave's retry: " << again.status << " " << again.body);
    CHECK_MESSAGE(again.status != 201, again.body);
    if (again.status == 200) {
        CHECK(again.header("Idempotent-Replayed") == "true");
        CHECK(again.json().at("status") != "held");
    } else {
        CHECK(again.status == 409);
        CHECK(again.error() == "seat_taken");
    }
    CHECK(server.db_count("SELECT count(*) FROM pending_reservations WHERE holder = 'dave'") == 0);
    CHECK(paid_orders_with(server, "B-1") == 1);
    CHECK(server.db_text("SELECT order_id FROM sold_seats WHERE seat = 'B-1'") == "pay-bob");
}

TEST_CASE("a cancellation the rollback took back is made again by the repair, and the seat sells once" *
          doctest::timeout(90)) {
    RedisServer redis;
    TicketingServer server(on_redis(redis));
    INFO(server.log());
    auto client = server.client();
    buy(client, "alice", {"A-1"}, "pay-alice");
    RedisAdmin(redis.port()).expect_ok({"SAVE"});
    const auto cancelled = client.post("/orders/pay-alice/cancel", "", std::string("alice"));
    REQUIRE_MESSAGE(cancelled.status == 200, cancelled.body);

    kill_and_restart(redis);
    std::map<std::string, std::string> seats;
    wait_for_repair(client, seats);
    // The older data has the order paid, SQLite cancelled: the repair cancels it again
    // (docs/operations.md).
    CHECK(seat_states(client, event, zone).at("A-1") == "free");
    buy(client, "bob", {"A-1"}, "pay-bob");
    CHECK(paid_orders_with(server, "A-1") == 1);
    CHECK(server.db_text("SELECT order_id FROM sold_seats WHERE seat = 'A-1'") == "pay-bob");
    CHECK(server.db_text("SELECT status FROM orders WHERE order_id = 'pay-alice'") == "cancelled");
    CHECK(server.db_count("SELECT count(*) FROM refused_payments") == 0);
}

}  // namespace rollback_test
