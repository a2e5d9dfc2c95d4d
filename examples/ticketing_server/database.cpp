// SPDX-License-Identifier: MIT
// database.cpp: the SQLite schema and statements behind Database.
#include "database.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>

namespace ticketing {
namespace {

constexpr const char* schema = R"sql(
CREATE TABLE IF NOT EXISTS pending_reservations (
    hold_token     TEXT PRIMARY KEY,
    event          TEXT NOT NULL,
    holder         TEXT NOT NULL,
    zone           TEXT NOT NULL,
    seats          TEXT NOT NULL,      -- JSON array of seat ids (place numbers in GA zones)
    expires_at_ms  INTEGER NOT NULL,   -- Unix milliseconds, as reported by seatlock
    fencing_token  INTEGER NOT NULL,
    created_at_ms  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_by_holder ON pending_reservations(event, holder);
CREATE INDEX IF NOT EXISTS pending_of_holder ON pending_reservations(holder);
CREATE TABLE IF NOT EXISTS closed_holds (
    hold_token     TEXT PRIMARY KEY,
    event          TEXT NOT NULL,
    holder         TEXT NOT NULL,
    outcome        TEXT NOT NULL CHECK (outcome IN ('released', 'confirmed', 'expired', 'lost')),
    fencing_token  INTEGER NOT NULL,
    closed_at_ms   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS closed_by_time ON closed_holds(closed_at_ms);
CREATE TABLE IF NOT EXISTS orders (
    order_id         TEXT PRIMARY KEY,   -- the payment id
    event            TEXT NOT NULL,
    holder           TEXT NOT NULL,
    zone             TEXT NOT NULL,
    seats            TEXT NOT NULL,
    hold_token       TEXT NOT NULL UNIQUE,
    status           TEXT NOT NULL CHECK (status IN ('paid', 'cancelled')),
    paid_at_ms       INTEGER NOT NULL,
    cancelled_at_ms  INTEGER,
    fencing_token    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS orders_of_holder ON orders(holder);
CREATE TABLE IF NOT EXISTS event_storage (
    event  TEXT PRIMARY KEY,
    epoch  INTEGER NOT NULL   -- recoveries of the event after the storage lost it
);
-- One row per seat sold: the database itself refuses to sell a seat twice, whatever the
-- storage said (one that went back to older data would sell a paid seat again).
CREATE TABLE IF NOT EXISTS sold_seats (
    event     TEXT NOT NULL,
    zone      TEXT NOT NULL,
    seat      TEXT NOT NULL,
    order_id  TEXT NOT NULL,
    PRIMARY KEY (event, zone, seat)
);
CREATE INDEX IF NOT EXISTS sold_by_order ON sold_seats(order_id);
-- Payments refused because their seats were sold already: kept for a refund.
CREATE TABLE IF NOT EXISTS refused_payments (
    order_id       TEXT PRIMARY KEY,   -- the payment id
    event          TEXT NOT NULL,
    holder         TEXT NOT NULL,
    zone           TEXT NOT NULL,
    seats          TEXT NOT NULL,
    hold_token     TEXT NOT NULL,
    sold_to        TEXT NOT NULL,      -- the order that has the seats
    refused_at_ms  INTEGER NOT NULL
);
)sql";

// Added to files written before they existed (see Database::migrate_columns).
constexpr const char* added_columns[][3] = {
    // The event version seatlock answered the write with: the storage must never be below it.
    {"orders", "version", "INTEGER NOT NULL DEFAULT 0"},
    {"pending_reservations", "version", "INTEGER NOT NULL DEFAULT 0"},
};

std::string seats_json(const std::vector<std::string>& seats) {
    boost::json::array array;
    for (const auto& seat : seats) array.emplace_back(seat);
    return boost::json::serialize(array);
}

std::vector<std::string> seats_from_json(std::string_view text) {
    std::vector<std::string> seats;
    boost::system::error_code ec;
    const auto value = boost::json::parse(text, ec);
    if (ec || !value.is_array())
        throw DatabaseError("unreadable seats column: " + std::string(text));
    for (const auto& seat : value.get_array()) {
        if (seat.is_string()) seats.emplace_back(seat.get_string());
    }
    return seats;
}

const char* outcome_name(HoldOutcome outcome) {
    switch (outcome) {
        case HoldOutcome::released:
            return "released";
        case HoldOutcome::confirmed:
            return "confirmed";
        case HoldOutcome::expired:
            return "expired";
        case HoldOutcome::lost:
            return "lost";
    }
    return "released";
}

// SQLite integers are signed; fencing tokens start at 1 and would need 2^63 locks to
// reach the sign bit.
std::int64_t as_column(std::uint64_t fencing_token) {
    return static_cast<std::int64_t>(fencing_token);
}

}  // namespace

std::int64_t unix_ms_now() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// A prepared statement. Each use binds, steps and is reset by a Use guard, so a
// statement never keeps a read transaction open between calls.
class Database::Statement {
public:
    Statement(Database& db, const char* sql) : db_(&db) {
        if (sqlite3_prepare_v3(db.db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) !=
            SQLITE_OK) {
            db.fail("prepare");
        }
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    class Use {
    public:
        explicit Use(Statement& s) : s_(&s) {}
        ~Use() {
            sqlite3_reset(s_->stmt_);
            sqlite3_clear_bindings(s_->stmt_);
        }
        Use(const Use&) = delete;
        Use& operator=(const Use&) = delete;

        Use& bind(int index, std::int64_t value) {
            check(sqlite3_bind_int64(s_->stmt_, index, value));
            return *this;
        }
        Use& bind(int index, const std::string& value) {
            check(sqlite3_bind_text(s_->stmt_, index, value.data(), static_cast<int>(value.size()),
                                    SQLITE_TRANSIENT));
            return *this;
        }
        /// true while there is a row to read.
        bool step() {
            const int rc = sqlite3_step(s_->stmt_);
            if (rc == SQLITE_ROW) return true;
            if (rc != SQLITE_DONE) s_->db_->fail("step");
            return false;
        }
        /// Runs a statement that returns no rows; how many rows it changed.
        int run() {
            while (step()) {
            }
            return sqlite3_changes(s_->db_->db_);
        }
        std::string text(int column) const {
            const auto* p = sqlite3_column_text(s_->stmt_, column);
            return p ? std::string(
                           reinterpret_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(s_->stmt_, column)))
                     : std::string();
        }
        std::int64_t integer(int column) const { return sqlite3_column_int64(s_->stmt_, column); }

    private:
        void check(int rc) const {
            if (rc != SQLITE_OK) s_->db_->fail("bind");
        }
        Statement* s_;
    };

private:
    Database* db_;
    sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE takes the write lock up front, so two processes sharing the file
// wait on busy_timeout instead of failing halfway through a transaction.
class Database::Transaction {
public:
    explicit Transaction(Database& db) : db_(&db) { db.exec("BEGIN IMMEDIATE"); }
    ~Transaction() {
        if (!committed_) sqlite3_exec(db_->db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit() {
        db_->exec("COMMIT");
        committed_ = true;
    }

private:
    Database* db_;
    bool committed_ = false;
};

Database::Database(const std::string& path) {
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
        const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw DatabaseError(fmt::format("cannot open database {}: {}", path, why));
    }
    try {
        sqlite3_busy_timeout(db_, 5000);
        exec("PRAGMA journal_mode = WAL");  // ":memory:" stays in memory mode; that is fine
        exec("PRAGMA synchronous = NORMAL");
        migrate_closed_holds();
        exec(schema);
        migrate_columns();
        auto prepare = [this](const char* sql) {
            statements_.push_back(std::make_unique<Statement>(*this, sql));
            return statements_.back().get();
        };
        insert_pending_ = prepare(
            "INSERT INTO pending_reservations (hold_token, event, holder, zone, seats, "
            "expires_at_ms,"
            " fencing_token, created_at_ms, version)"
            " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9"
            " WHERE NOT EXISTS (SELECT 1 FROM closed_holds WHERE hold_token = ?1)"
            " ON CONFLICT (hold_token) DO NOTHING");
        update_pending_ = prepare(
            "UPDATE pending_reservations SET expires_at_ms = ?2, fencing_token = ?3"
            " WHERE hold_token = ?1 AND fencing_token < ?3");
        delete_pending_ = prepare("DELETE FROM pending_reservations WHERE hold_token = ?1");
        insert_closed_ = prepare(
            "INSERT INTO closed_holds (hold_token, event, holder, outcome, fencing_token, "
            "closed_at_ms)"
            " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (hold_token) DO NOTHING");
        select_pending_owner_ =
            prepare("SELECT event, holder FROM pending_reservations WHERE hold_token = ?1");
        select_closed_owner_ =
            prepare("SELECT event, holder FROM closed_holds WHERE hold_token = ?1");
        insert_order_ = prepare(
            "INSERT INTO orders (order_id, event, holder, zone, seats, hold_token, status, "
            "paid_at_ms,"
            " fencing_token, version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'paid', ?7, ?8, ?9)"
            " ON CONFLICT DO NOTHING");
        // No ON CONFLICT: the primary key refuses a second sale of a seat (add_order looks
        // first, to name the order that has it).
        insert_sold_ = prepare("INSERT INTO sold_seats (event, zone, seat, order_id)"
                               " SELECT ?1, ?2, value, ?3 FROM json_each(?4)");
        select_sold_to_ = prepare(
            "SELECT DISTINCT s.order_id FROM sold_seats s, json_each(?3) j"
            " WHERE s.event = ?1 AND s.zone = ?2 AND s.seat = j.value AND s.order_id <> ?4");
        delete_sold_ = prepare("DELETE FROM sold_seats WHERE order_id = ?1");
        insert_refused_ = prepare(
            "INSERT INTO refused_payments (order_id, event, holder, zone, seats, hold_token,"
            " sold_to, refused_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            " ON CONFLICT (order_id) DO NOTHING");
        select_refused_ = prepare(
            "SELECT sold_to, seats FROM refused_payments WHERE order_id = ?1");
        select_max_version_ = prepare(
            "SELECT max(m) FROM (SELECT max(version) AS m FROM orders WHERE event = ?1"
            " UNION ALL SELECT max(version) FROM pending_reservations WHERE event = ?1)");
        select_order_ = prepare(
            "SELECT order_id, event, holder, zone, seats, hold_token, status, paid_at_ms, "
            "fencing_token, version FROM orders WHERE order_id = ?1");
        cancel_order_ = prepare(
            "UPDATE orders SET status = 'cancelled', cancelled_at_ms = coalesce(cancelled_at_ms, "
            "?3),"
            " fencing_token = ?2 WHERE order_id = ?1 AND fencing_token < ?2");
        prune_closed_ = prepare("DELETE FROM closed_holds WHERE closed_at_ms < ?1");
        select_paid_ = prepare(
            "SELECT order_id, event, holder, zone, seats, hold_token, status, paid_at_ms, "
            "fencing_token, version FROM orders WHERE event = ?1 AND status = 'paid'"
            " ORDER BY paid_at_ms");
        select_cancelled_ = prepare(
            "SELECT order_id, event, holder, zone, seats, hold_token, status, paid_at_ms, "
            "fencing_token, version FROM orders WHERE event = ?1 AND status = 'cancelled'"
            " ORDER BY paid_at_ms");
        select_pending_of_ = prepare(
            "SELECT hold_token, holder FROM pending_reservations WHERE event = ?1");
        select_max_fence_ = prepare(
            "SELECT max(m) FROM (SELECT max(fencing_token) AS m FROM pending_reservations"
            " WHERE event = ?1 UNION ALL SELECT max(fencing_token) FROM closed_holds"
            " WHERE event = ?1 UNION ALL SELECT max(fencing_token) FROM orders WHERE event = ?1)");
        // ?2 left unbound (NULL): every event.
        select_holds_of_ = prepare(
            "SELECT hold_token, event, holder, zone, seats, expires_at_ms, fencing_token"
            " FROM pending_reservations WHERE holder = ?1 AND (?2 IS NULL OR event = ?2)"
            " AND expires_at_ms > ?3 ORDER BY created_at_ms, hold_token");
        select_orders_of_ = prepare(
            "SELECT order_id, event, holder, zone, seats, hold_token, status, paid_at_ms, "
            "fencing_token, version FROM orders WHERE holder = ?1 AND (?2 IS NULL OR event = ?2)"
            " ORDER BY paid_at_ms DESC, order_id");
        select_epoch_ = prepare("SELECT epoch FROM event_storage WHERE event = ?1");
        bump_epoch_ = prepare(
            "INSERT INTO event_storage (event, epoch) VALUES (?1, 1)"
            " ON CONFLICT (event) DO UPDATE SET epoch = epoch + 1");
    } catch (...) {
        statements_.clear();
        sqlite3_close(db_);
        throw;
    }
}

Database::~Database() {
    statements_.clear();
    sqlite3_close(db_);
}

// Files written before holds could be closed as 'lost' check the outcome against the three
// older values: the table is rebuilt with the new check, rows kept.
void Database::migrate_closed_holds() {
    sqlite3_stmt* stmt = nullptr;
    std::string sql;
    if (sqlite3_prepare_v2(db_, "SELECT sql FROM sqlite_master WHERE name = 'closed_holds'", -1,
                           &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        if (const auto* text = sqlite3_column_text(stmt, 0)) sql = reinterpret_cast<const char*>(text);
    }
    sqlite3_finalize(stmt);
    if (sql.empty() || sql.find("'lost'") != std::string::npos) return;
    exec("BEGIN IMMEDIATE; ALTER TABLE closed_holds RENAME TO closed_holds_before_lost;"
         " DROP INDEX IF EXISTS closed_by_time;");
    exec(schema);
    exec("INSERT INTO closed_holds SELECT * FROM closed_holds_before_lost;"
         " DROP TABLE closed_holds_before_lost; COMMIT;");
}

// Columns and rows that files written by an older server lack: the version columns, and
// the seats of their paid orders in sold_seats.
void Database::migrate_columns() {
    bool added = false;
    for (const auto& [table, column, declaration] : added_columns) {
        sqlite3_stmt* stmt = nullptr;
        bool found = false;
        const std::string info = fmt::format("PRAGMA table_info({})", table);
        if (sqlite3_prepare_v2(db_, info.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
            while (sqlite3_step(stmt) == SQLITE_ROW) {
                const auto* name = sqlite3_column_text(stmt, 1);
                if (name && std::string_view(reinterpret_cast<const char*>(name)) == column) found = true;
            }
        }
        sqlite3_finalize(stmt);
        if (found) continue;
        exec(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", table, column, declaration).c_str());
        added = true;
    }
    if (added) {
        exec("INSERT OR IGNORE INTO sold_seats (event, zone, seat, order_id)"
             " SELECT o.event, o.zone, j.value, o.order_id FROM orders o, json_each(o.seats) j"
             " WHERE o.status = 'paid'");
    }
    exec("CREATE INDEX IF NOT EXISTS orders_by_version ON orders(event, version)");
    exec("CREATE INDEX IF NOT EXISTS pending_by_version ON pending_reservations(event, version)");
}

void Database::exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        const std::string why = error ? error : sqlite3_errmsg(db_);
        sqlite3_free(error);
        throw DatabaseError(fmt::format("database: {}", why));
    }
}

void Database::fail(const char* what) const {
    throw DatabaseError(fmt::format("database {}: {}", what, sqlite3_errmsg(db_)));
}

// The epoch is compared in the write's own transaction: a recovery's close_lost_holds
// (which moves it) comes either before, and the row is refused, or after, and closes it.
RowWrite Database::add_pending(const PendingReservation& row, std::int64_t epoch) {
    std::lock_guard lock(mutex_);
    Transaction tx(*this);
    if (epoch_of(row.event) != epoch) return RowWrite::storage_recovered;
    const bool added = Statement::Use(*insert_pending_)
                           .bind(1, row.token)
                           .bind(2, row.event)
                           .bind(3, row.holder)
                           .bind(4, row.zone)
                           .bind(5, seats_json(row.seats))
                           .bind(6, row.expires_at_ms)
                           .bind(7, as_column(row.fencing_token))
                           .bind(8, unix_ms_now())
                           .bind(9, as_column(row.version))
                           .run() > 0;
    // Not added: the hold was closed, or its row is there already (a replay with the same
    // idempotency key raced the first call), which is this write done.
    const bool there = added || Statement::Use(*select_pending_owner_).bind(1, row.token).step();
    tx.commit();
    return there ? RowWrite::recorded : RowWrite::refused;
}

bool Database::extend_pending(const std::string& token, std::int64_t expires_at_ms,
                              std::uint64_t fencing_token) {
    std::lock_guard lock(mutex_);
    Statement::Use update(*update_pending_);
    return update.bind(1, token).bind(2, expires_at_ms).bind(3, as_column(fencing_token)).run() > 0;
}

// No fencing token: the storage ended the hold, and an ended hold never comes back, so
// the row goes whoever wrote it last.
void Database::close_hold(const std::string& token, const std::string& event,
                          const std::string& holder, HoldOutcome outcome) {
    const HoldToClose hold{token, event, holder};
    close_holds(std::span(&hold, 1), outcome);
}

void Database::close_holds(std::span<const HoldToClose> holds, HoldOutcome outcome) {
    std::lock_guard lock(mutex_);
    Transaction tx(*this);
    const std::string outcome_text(outcome_name(outcome));
    const std::int64_t now = unix_ms_now();
    for (const HoldToClose& hold : holds) {
        Statement::Use(*delete_pending_).bind(1, hold.token).run();
        Statement::Use(*insert_closed_)
            .bind(1, hold.token)
            .bind(2, hold.event)
            .bind(3, hold.holder)
            .bind(4, outcome_text)
            .bind(5, std::int64_t{0})
            .bind(6, now)
            .run();
    }
    tx.commit();
}

std::optional<HoldOwner> Database::hold_owner(const std::string& token) {
    std::lock_guard lock(mutex_);
    for (Statement* query : {select_pending_owner_, select_closed_owner_}) {
        Statement::Use select(*query);
        if (select.bind(1, token).step()) {
            return HoldOwner{select.text(0), select.text(1)};
        }
    }
    return std::nullopt;
}

RowWrite Database::add_order(const OrderRecord& order, std::int64_t epoch,
                             std::string* sold_to) {
    std::lock_guard lock(mutex_);
    Transaction tx(*this);
    if (epoch_of(order.event) != epoch) return RowWrite::storage_recovered;
    const std::string seats = seats_json(order.seats);
    const bool inserted = Statement::Use(*insert_order_)
                              .bind(1, order.order_id)
                              .bind(2, order.event)
                              .bind(3, order.holder)
                              .bind(4, order.zone)
                              .bind(5, seats)
                              .bind(6, order.hold_token)
                              .bind(7, order.paid_at_ms)
                              .bind(8, as_column(order.fencing_token))
                              .bind(9, as_column(order.version))
                              .run() > 0;
    // The row may be ours already (a retried confirm): only another hold's row is a conflict.
    {
        Statement::Use select(*select_order_);
        if (!select.bind(1, order.order_id).step() || select.text(5) != order.hold_token)
            return RowWrite::refused;
    }
    if (inserted) {
        // A seat another order has: the storage sold it twice. Nothing of this order is
        // written (the transaction rolls back); the payment is kept for a refund.
        {
            Statement::Use taken(*select_sold_to_);
            taken.bind(1, order.event).bind(2, order.zone).bind(3, seats).bind(4, order.order_id);
            if (taken.step()) {
                if (sold_to) *sold_to = taken.text(0);
                return RowWrite::sold_twice;
            }
        }
        Statement::Use(*insert_sold_)
            .bind(1, order.event)
            .bind(2, order.zone)
            .bind(3, order.order_id)
            .bind(4, seats)
            .run();
    }
    Statement::Use(*delete_pending_).bind(1, order.hold_token).run();
    Statement::Use(*insert_closed_)
        .bind(1, order.hold_token)
        .bind(2, order.event)
        .bind(3, order.holder)
        .bind(4, std::string(outcome_name(HoldOutcome::confirmed)))
        .bind(5, as_column(order.fencing_token))
        .bind(6, unix_ms_now())
        .run();
    tx.commit();
    return RowWrite::recorded;
}

namespace {

template <typename Use>
OrderRecord order_of(const Use& row) {
    return OrderRecord{row.text(0),
                       row.text(1),
                       row.text(2),
                       row.text(3),
                       seats_from_json(row.text(4)),
                       row.text(5),
                       row.text(6) == "cancelled",
                       row.integer(7),
                       static_cast<std::uint64_t>(row.integer(8)),
                       static_cast<seatlock::EventVersion>(row.integer(9))};
}

}  // namespace

std::optional<OrderRecord> Database::order(const std::string& order_id) {
    std::lock_guard lock(mutex_);
    Statement::Use select(*select_order_);
    if (!select.bind(1, order_id).step()) return std::nullopt;
    return order_of(select);
}

std::vector<OrderRecord> Database::paid_orders(const std::string& event) {
    std::lock_guard lock(mutex_);
    Statement::Use select(*select_paid_);
    select.bind(1, event);
    std::vector<OrderRecord> out;
    while (select.step()) out.push_back(order_of(select));
    return out;
}

std::vector<OrderRecord> Database::cancelled_orders(const std::string& event) {
    std::lock_guard lock(mutex_);
    Statement::Use select(*select_cancelled_);
    select.bind(1, event);
    std::vector<OrderRecord> out;
    while (select.step()) out.push_back(order_of(select));
    return out;
}

std::vector<PendingReservation> Database::holds_of(const std::string& holder,
                                                   const std::optional<std::string>& event,
                                                   std::int64_t now_ms) {
    std::lock_guard lock(mutex_);
    Statement::Use select(*select_holds_of_);
    select.bind(1, holder).bind(3, now_ms);
    if (event) select.bind(2, *event);
    std::vector<PendingReservation> out;
    while (select.step()) {
        out.push_back(PendingReservation{select.text(0), select.text(1), select.text(2),
                                         select.text(3), seats_from_json(select.text(4)),
                                         select.integer(5),
                                         static_cast<std::uint64_t>(select.integer(6))});
    }
    return out;
}

std::vector<OrderRecord> Database::orders_of(const std::string& holder,
                                             const std::optional<std::string>& event) {
    std::lock_guard lock(mutex_);
    Statement::Use select(*select_orders_of_);
    select.bind(1, holder);
    if (event) select.bind(2, *event);
    std::vector<OrderRecord> out;
    while (select.step()) out.push_back(order_of(select));
    return out;
}

std::size_t Database::close_lost_holds(const std::string& event) {
    std::lock_guard lock(mutex_);
    Transaction tx(*this);
    std::vector<std::pair<std::string, std::string>> rows;  // token, holder
    {
        Statement::Use select(*select_pending_of_);
        select.bind(1, event);
        while (select.step()) rows.emplace_back(select.text(0), select.text(1));
    }
    for (const auto& [token, holder] : rows) {
        Statement::Use(*delete_pending_).bind(1, token).run();
        Statement::Use(*insert_closed_)
            .bind(1, token)
            .bind(2, event)
            .bind(3, holder)
            .bind(4, std::string(outcome_name(HoldOutcome::lost)))
            .bind(5, std::int64_t{0})
            .bind(6, unix_ms_now())
            .run();
    }
    // A hold, payment or cancellation made before the loss whose row comes after this is
    // refused it.
    Statement::Use(*bump_epoch_).bind(1, event).run();
    tx.commit();
    return rows.size();
}

std::int64_t Database::storage_epoch(const std::string& event) {
    std::lock_guard lock(mutex_);
    return epoch_of(event);
}

std::int64_t Database::epoch_of(const std::string& event) {
    Statement::Use select(*select_epoch_);
    return select.bind(1, event).step() ? select.integer(0) : 0;
}

std::uint64_t Database::max_fencing_token(const std::string& event) {
    std::lock_guard lock(mutex_);
    Statement::Use select(*select_max_fence_);
    if (!select.bind(1, event).step()) return 0;
    return static_cast<std::uint64_t>(select.integer(0));
}

RowWrite Database::cancel_order(const std::string& order_id, const std::string& event,
                                std::uint64_t fencing_token, std::int64_t epoch) {
    std::lock_guard lock(mutex_);
    Transaction tx(*this);
    if (epoch_of(event) != epoch) return RowWrite::storage_recovered;
    const bool cancelled = Statement::Use(*cancel_order_)
                               .bind(1, order_id)
                               .bind(2, as_column(fencing_token))
                               .bind(3, unix_ms_now())
                               .run() > 0;
    if (cancelled) Statement::Use(*delete_sold_).bind(1, order_id).run();
    tx.commit();
    return cancelled ? RowWrite::recorded : RowWrite::refused;
}

void Database::refuse_payment(const OrderRecord& order, const std::string& sold_to) {
    std::lock_guard lock(mutex_);
    Statement::Use(*insert_refused_)
        .bind(1, order.order_id)
        .bind(2, order.event)
        .bind(3, order.holder)
        .bind(4, order.zone)
        .bind(5, seats_json(order.seats))
        .bind(6, order.hold_token)
        .bind(7, sold_to)
        .bind(8, unix_ms_now())
        .run();
}

std::optional<RefusedPayment> Database::refused_payment(const std::string& order_id) {
    std::lock_guard lock(mutex_);
    Statement::Use select(*select_refused_);
    if (!select.bind(1, order_id).step()) return std::nullopt;
    return RefusedPayment{select.text(0), seats_from_json(select.text(1))};
}

seatlock::EventVersion Database::max_version(const std::string& event) {
    std::lock_guard lock(mutex_);
    Statement::Use select(*select_max_version_);
    if (!select.bind(1, event).step()) return 0;
    return static_cast<seatlock::EventVersion>(select.integer(0));
}

void Database::prune_closed_holds(std::int64_t before_ms) {
    std::lock_guard lock(mutex_);
    Statement::Use(*prune_closed_).bind(1, before_ms).run();
}

}  // namespace ticketing
