// SPDX-License-Identifier: MIT
// Retries the way a careful client makes them, after answers it could not trust: a hold
// replayed with its Idempotency-Key, a release retried after the database refused it.
#include <sqlite3.h>

#include <thread>

#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace retry_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;

namespace {

HttpReply hold_with_key(HttpClient& client, const std::string& user, const std::string& key,
                        const std::string& body) {
    return client.send("POST", "/events/demo-game/holds", body,
                       {{"X-User-Id", user}, {"Idempotency-Key", key},
                        {"Content-Type", "application/json"}});
}

}  // namespace

TEST_CASE_TEMPLATE("a hold replayed with its Idempotency-Key answers the first hold, never a second",
                   Storage, SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    auto client = server.client();
    const std::string body = seats_body("lower-1", {"A-1", "A-2"});
    auto first = hold_with_key(client, "alice", "intent-1", body);
    REQUIRE(first.status == 201);
    const std::string token(first.json().at("token").as_string());
    CHECK(first.json().at("status").as_string() == "held");
    // The buyer has two seats; without the key a third, fourth... would be 409 or 422.
    for (int i = 0; i < 3; ++i) {
        auto again = hold_with_key(client, "alice", "intent-1", body);
        REQUIRE(again.status == 200);
        CHECK(again.header("Idempotent-Replayed") == "true");
        CHECK(again.json().at("token").as_string() == token);
    }
    CHECK(seat_states(client, "demo-game", "lower-1")["A-1"] == "held");
    CHECK(server.db_count("SELECT count(*) FROM pending_reservations") == 1);
    // Another request under the same key is a client bug, answered 400.
    auto other = hold_with_key(client, "alice", "intent-1", seats_body("lower-1", {"A-3"}));
    CHECK(other.status == 400);
    CHECK(hold_with_key(client, "alice", "bad key!", body).status == 400);
    // Once paid, the replay says so.
    REQUIRE(client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-1"})", "alice").status ==
            200);
    auto paid = hold_with_key(client, "alice", "intent-1", body);
    REQUIRE(paid.status == 200);
    CHECK(paid.json().at("status").as_string() == "confirmed");
    CHECK(paid.json().at("order_id").as_string() == "pay-1");
}

TEST_CASE("a release retried after the database refused it answers 204 and closes the row") {
    TicketingServer server(on(MemoryStorage{}));
    auto client = server.client();
    auto hold = client.post("/events/demo-game/holds", seats_body("lower-1", {"A-1"}), "bob");
    REQUIRE(hold.status == 201);
    const std::string token(hold.json().at("token").as_string());

    // Another process keeps the database write-locked past the server's busy timeout.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(server.db_path().c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);
    std::thread unlock([db] {
        std::this_thread::sleep_for(6500ms);
        sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    });
    auto refused = client.del("/holds/" + token, "bob");
    unlock.join();
    sqlite3_close(db);
    CHECK(refused.status == 503);
    CHECK(refused.json().at("retry_safe").as_bool());
    CHECK(refused.header("Retry-After") != "");
    // seatlock released the seat; the row stayed. The retry finishes the job.
    auto retried = client.del("/holds/" + token, "bob");
    CHECK(retried.status == 204);
    CHECK(server.db_count("SELECT count(*) FROM pending_reservations") == 0);
    CHECK(seat_states(client, "demo-game", "lower-1")["A-1"] == "free");
    CHECK(client.del("/holds/" + token, "bob").status == 204);  // and again
}

}  // namespace retry_test
