// SPDX-License-Identifier: MIT
// tests/system/sold_seats_test.cpp: the example server's database sells a seat once
// (examples/ticketing_server/database.hpp, sold_seats), whatever the storage answered: an
// order on a seat another paid order has is refused whole, a cancellation gives the seat
// back, and a file written before the table existed gets its paid orders' seats on open.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "database.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace sold_seats_test {

using ticketing::Database;
using ticketing::OrderRecord;
using ticketing::PendingReservation;
using ticketing::RowWrite;

namespace {

constexpr std::int64_t epoch = 0;  // never recovered

OrderRecord order(const std::string& id, const std::string& holder,
                  const std::vector<std::string>& seats, std::uint64_t fencing_token = 1,
                  seatlock::EventVersion version = 1) {
    return OrderRecord{id,    "game1",   holder,        "lower", seats, "game1.t-" + id,
                       false, 1'000'000, fencing_token, version};
}

PendingReservation pending(const OrderRecord& o) {
    return PendingReservation{o.hold_token, o.event,   o.holder, o.zone,
                              o.seats,      2'000'000, 0,        o.version};
}

// A database file of its own, removed with its WAL files at the end.
class TemporaryFile {
public:
    TemporaryFile() {
        static std::atomic<int> serial{0};
        path_ = (std::filesystem::temp_directory_path() /
                 ("seatlock-sold-seats-" + std::to_string(::getpid()) + "-" +
                  std::to_string(serial++) + ".sqlite"))
                    .string();
    }
    ~TemporaryFile() {
        for (const char* suffix : {"", "-wal", "-shm"}) {
            std::error_code ignored;
            std::filesystem::remove(path_ + suffix, ignored);
        }
    }
    TemporaryFile(const TemporaryFile&) = delete;
    TemporaryFile& operator=(const TemporaryFile&) = delete;
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    std::string path_;
};

// Runs `sql` on the file with a connection of its own (sqlite3 C API), as an older
// server or a person with the sqlite3 shell would.
void run_sql(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    const std::string why = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    REQUIRE_MESSAGE(rc == SQLITE_OK, why);
}

// One number the query gives (first column of the first row), on a connection of its own.
std::int64_t count(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    REQUIRE_MESSAGE(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK,
                    sqlite3_errmsg(db));
    const bool row = sqlite3_step(stmt) == SQLITE_ROW;
    const std::int64_t n = row ? sqlite3_column_int64(stmt, 0) : -1;
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    REQUIRE_MESSAGE(row, "no row from " << sql);
    return n;
}

// The schema of a file written before the version columns and sold_seats existed (the
// server of the commit before them), with one paid and one cancelled order.
constexpr const char* schema_before_versions = R"sql(
CREATE TABLE pending_reservations (
    hold_token TEXT PRIMARY KEY, event TEXT NOT NULL, holder TEXT NOT NULL,
    zone TEXT NOT NULL, seats TEXT NOT NULL, expires_at_ms INTEGER NOT NULL,
    fencing_token INTEGER NOT NULL, created_at_ms INTEGER NOT NULL);
CREATE TABLE closed_holds (
    hold_token TEXT PRIMARY KEY, event TEXT NOT NULL, holder TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('released', 'confirmed', 'expired', 'lost')),
    fencing_token INTEGER NOT NULL, closed_at_ms INTEGER NOT NULL);
CREATE TABLE orders (
    order_id TEXT PRIMARY KEY, event TEXT NOT NULL, holder TEXT NOT NULL, zone TEXT NOT NULL,
    seats TEXT NOT NULL, hold_token TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('paid', 'cancelled')),
    paid_at_ms INTEGER NOT NULL, cancelled_at_ms INTEGER, fencing_token INTEGER NOT NULL);
CREATE TABLE event_storage (event TEXT PRIMARY KEY, epoch INTEGER NOT NULL);
INSERT INTO orders VALUES ('pay-old', 'game1', 'ann', 'lower', '["A-1","A-2"]', 'game1.t-old',
                           'paid', 1000, NULL, 3);
INSERT INTO orders VALUES ('pay-gone', 'game1', 'ben', 'lower', '["A-3"]', 'game1.t-gone',
                           'cancelled', 1000, 2000, 4);
INSERT INTO pending_reservations VALUES ('game1.t-open', 'game1', 'cid', 'lower', '["A-4"]',
                                         9000000000000, 0, 1000);
)sql";

}  // namespace

TEST_CASE(
    "an order on a seat another paid order has is refused as sold twice, and writes nothing") {
    Database db(":memory:");
    const auto first = order("pay-1", "ann", {"A-1", "A-2"});
    REQUIRE(db.add_pending(pending(first), epoch) == RowWrite::recorded);
    REQUIRE(db.add_order(first, epoch) == RowWrite::recorded);

    // The storage sold A-2 again (it went back to older data): the second order is refused.
    const auto second = order("pay-2", "bob", {"A-2", "A-3"}, 2, 2);
    REQUIRE(db.add_pending(pending(second), epoch) == RowWrite::recorded);
    std::string sold_to;
    CHECK(db.add_order(second, epoch, &sold_to) == RowWrite::sold_twice);
    CHECK(sold_to == "pay-1");

    // Nothing of it was written: no order, its hold still pending (not closed as confirmed),
    // no version recorded, and A-3 is not sold.
    CHECK_FALSE(db.order("pay-2"));
    CHECK(db.holds_of("bob", std::string("game1"), 0).size() == 1);
    CHECK(db.max_version("game1") == 2);  // the pending row's, not a sold order's
    REQUIRE(db.paid_orders("game1").size() == 1);
    CHECK(db.paid_orders("game1")[0].order_id == "pay-1");
    // A-3 alone is still free to sell.
    const auto third = order("pay-3", "cid", {"A-3"}, 3, 3);
    CHECK(db.add_order(third, epoch) == RowWrite::recorded);
}

TEST_CASE("a second sale is refused when the caller does not ask who has the seat") {
    Database db(":memory:");
    REQUIRE(db.add_order(order("pay-1", "ann", {"A-1"}), epoch) == RowWrite::recorded);
    CHECK(db.add_order(order("pay-2", "bob", {"A-1"}, 2, 2), epoch) == RowWrite::sold_twice);
    CHECK_FALSE(db.order("pay-2"));
}

TEST_CASE("a retried order's second write is recorded, not refused by its own seats") {
    Database db(":memory:");
    const auto first = order("pay-1", "ann", {"A-1", "A-2"});
    REQUIRE(db.add_order(first, epoch) == RowWrite::recorded);
    std::string sold_to;
    CHECK(db.add_order(first, epoch, &sold_to) == RowWrite::recorded);
    CHECK(sold_to.empty());
    CHECK(db.paid_orders("game1").size() == 1);
}

TEST_CASE("a cancelled order frees its seats for a later order") {
    Database db(":memory:");
    REQUIRE(db.add_order(order("pay-1", "ann", {"A-1", "A-2"}), epoch) == RowWrite::recorded);
    REQUIRE(db.add_order(order("pay-2", "bob", {"A-2"}, 2, 2), epoch) == RowWrite::sold_twice);

    REQUIRE(db.cancel_order("pay-1", "game1", 5, epoch) == RowWrite::recorded);
    CHECK(db.add_order(order("pay-2", "bob", {"A-2"}, 6, 6), epoch) == RowWrite::recorded);
    CHECK(db.add_order(order("pay-3", "cid", {"A-1"}, 7, 7), epoch) == RowWrite::recorded);
    // And the new owner of A-2 keeps it.
    CHECK(db.add_order(order("pay-4", "dan", {"A-2"}, 8, 8), epoch) == RowWrite::sold_twice);
}

TEST_CASE("a refused payment is kept once, with the order that has its seats") {
    Database db(":memory:");
    REQUIRE(db.add_order(order("pay-1", "ann", {"A-1"}), epoch) == RowWrite::recorded);
    const auto refused = order("pay-2", "bob", {"A-1"}, 2, 2);
    std::string sold_to;
    REQUIRE(db.add_order(refused, epoch, &sold_to) == RowWrite::sold_twice);
    db.refuse_payment(refused, sold_to);
    db.refuse_payment(refused, sold_to);  // idempotent
    const auto kept = db.refused_payment("pay-2");
    REQUIRE(kept);
    CHECK(kept->sold_to == "pay-1");
    CHECK(kept->seats == std::vector<std::string>{"A-1"});
    CHECK_FALSE(db.refused_payment("pay-1"));
}

TEST_CASE("the highest version recorded covers pending rows and orders of the event only") {
    Database db(":memory:");
    CHECK(db.max_version("game1") == 0);
    REQUIRE(db.add_order(order("pay-1", "ann", {"A-1"}, 1, 7), epoch) == RowWrite::recorded);
    auto later = order("pay-2", "bob", {"A-2"}, 2, 9);
    REQUIRE(db.add_pending(pending(later), epoch) == RowWrite::recorded);
    CHECK(db.max_version("game1") == 9);
    CHECK(db.max_version("game2") == 0);
}

TEST_CASE("a file written before sold_seats existed gets its paid orders' seats when opened") {
    TemporaryFile file;
    run_sql(file.path(), schema_before_versions);
    {
        Database db(file.path());
        // The paid order's seats are sold: a second sale of one is refused.
        std::string sold_to;
        CHECK(db.add_order(order("pay-new", "dan", {"A-2"}, 10, 10), epoch, &sold_to) ==
              RowWrite::sold_twice);
        CHECK(sold_to == "pay-old");
        // The cancelled order's seat is not: it sells.
        CHECK(db.add_order(order("pay-a3", "eve", {"A-3"}, 11, 11), epoch) == RowWrite::recorded);
        // Rows from before have version 0; the pending row is still there.
        CHECK(db.max_version("game1") == 11);
        CHECK(db.holds_of("cid", std::string("game1"), 0).size() == 1);
        REQUIRE(db.order("pay-old"));
        CHECK_FALSE(db.order("pay-old")->cancelled);
    }
    CHECK(count(file.path(), "SELECT count(*) FROM sold_seats WHERE order_id = 'pay-old'") == 2);
    CHECK(count(file.path(), "SELECT count(*) FROM sold_seats WHERE order_id = 'pay-gone'") == 0);
    CHECK(count(file.path(), "SELECT count(*) FROM sold_seats") == 3);  // + pay-a3's
    CHECK(count(file.path(), "SELECT count(*) FROM orders WHERE version = 0") == 2);

    // Opened again: nothing is added twice, and the sales stay.
    {
        Database db(file.path());
        CHECK(db.add_order(order("pay-x", "fay", {"A-1"}, 12, 12), epoch) == RowWrite::sold_twice);
    }
    CHECK(count(file.path(), "SELECT count(*) FROM sold_seats") == 3);
}

}  // namespace sold_seats_test
