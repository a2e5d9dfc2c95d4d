// SPDX-License-Identifier: MIT
// tests/system/row_rules_test.cpp: the example server's rows only move forward, whatever
// order their writes arrive in (examples/ticketing_server/database.hpp). A hold and a
// release write their rows without a lock, so the database itself must refuse a row
// written after its hold was closed, and a close must delete a row whatever fencing
// token a locked write gave it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "database.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace row_rules_test {

using ticketing::Database;
using ticketing::HoldOutcome;
using ticketing::OrderRecord;
using ticketing::PendingReservation;
using ticketing::RowWrite;

namespace {

constexpr std::int64_t epoch = 0;  // never recovered

PendingReservation row(const std::string& token, std::int64_t expires_at_ms = 2'000'000) {
    return PendingReservation{token, "game1", "ann", "lower", {"A-1"}, expires_at_ms, 0};
}

std::size_t pending(Database& db) { return db.holds_of("ann", std::string("game1"), 0).size(); }

}  // namespace

TEST_CASE("a hold closed before its row is written gets no row") {
    Database db(":memory:");
    // The expiry drain (or a release after a replay) closed it first.
    db.close_hold("game1.t1", "game1", "ann", HoldOutcome::expired);
    CHECK(db.add_pending(row("game1.t1"), epoch) == RowWrite::refused);
    CHECK(pending(db) == 0);
    REQUIRE(db.hold_owner("game1.t1"));
    CHECK(db.hold_owner("game1.t1")->holder == "ann");
}

TEST_CASE("closing a hold deletes its row whatever fencing token an extend gave it") {
    Database db(":memory:");
    REQUIRE(db.add_pending(row("game1.t1"), epoch) == RowWrite::recorded);
    CHECK(db.extend_pending("game1.t1", 3'000'000, 9));
    db.close_hold("game1.t1", "game1", "ann", HoldOutcome::released);
    CHECK(pending(db) == 0);
}

TEST_CASE("an extend written after the close does not bring the row back") {
    Database db(":memory:");
    REQUIRE(db.add_pending(row("game1.t1"), epoch) == RowWrite::recorded);
    db.close_hold("game1.t1", "game1", "ann", HoldOutcome::released);
    CHECK_FALSE(db.extend_pending("game1.t1", 3'000'000, 9));
    CHECK(pending(db) == 0);
}

TEST_CASE("a hold's row written twice (a replay racing its first call) is recorded both times") {
    Database db(":memory:");
    CHECK(db.add_pending(row("game1.t1"), epoch) == RowWrite::recorded);
    CHECK(db.add_pending(row("game1.t1"), epoch) == RowWrite::recorded);
    CHECK(pending(db) == 1);
}

TEST_CASE("a replayed hold's row leaves the row an extend moved as it is") {
    Database db(":memory:");
    REQUIRE(db.add_pending(row("game1.t1", 2'000'000), epoch) == RowWrite::recorded);
    REQUIRE(db.extend_pending("game1.t1", 3'000'000, 9));
    CHECK(db.add_pending(row("game1.t1", 2'000'000), epoch) == RowWrite::recorded);
    const auto rows = db.holds_of("ann", std::string("game1"), 0);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].expires_at_ms == 3'000'000);
    CHECK(rows[0].fencing_token == 9);
}

TEST_CASE("a payment closes the hold's row whatever its fencing token") {
    Database db(":memory:");
    REQUIRE(db.add_pending(row("game1.t1"), epoch) == RowWrite::recorded);
    REQUIRE(db.extend_pending("game1.t1", 3'000'000, 50));
    const OrderRecord order{"pay-1", "game1", "ann", "lower", {"A-1"}, "game1.t1", false, 1, 10};
    CHECK(db.add_order(order, epoch) == RowWrite::recorded);
    CHECK(pending(db) == 0);
    // And a late row write of the hold after the payment is refused.
    CHECK(db.add_pending(row("game1.t1"), epoch) == RowWrite::refused);
    CHECK(pending(db) == 0);
}

TEST_CASE("a batch of expired holds is closed together, as one hold is") {
    Database db(":memory:");
    REQUIRE(db.add_pending(row("game1.t1"), epoch) == RowWrite::recorded);
    REQUIRE(db.add_pending(row("game1.t2"), epoch) == RowWrite::recorded);
    REQUIRE(db.add_pending(row("game1.t4"), epoch) == RowWrite::recorded);
    db.close_hold("game1.t2", "game1", "ann", HoldOutcome::released);  // closed before
    const std::vector<ticketing::HoldToClose> batch = {
        {"game1.t1", "game1", "ann"}, {"game1.t2", "game1", "ann"}, {"game1.t3", "game1", "bob"}};
    db.close_holds(batch, HoldOutcome::expired);
    const auto rows = db.holds_of("ann", std::string("game1"), 0);
    REQUIRE(rows.size() == 1);  // t4 is not in the batch
    CHECK(rows[0].token == "game1.t4");
    // Each closed token keeps its owner, and no row comes back for it.
    for (const auto& closed : batch) {
        CAPTURE(closed.token);
        REQUIRE(db.hold_owner(closed.token));
        CHECK(db.hold_owner(closed.token)->holder == closed.holder);
        CHECK(db.add_pending(row(closed.token), epoch) == RowWrite::refused);
    }
    CHECK(pending(db) == 1);
}

}  // namespace row_rules_test
