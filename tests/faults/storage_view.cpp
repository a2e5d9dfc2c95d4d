// SPDX-License-Identifier: MIT
// tests/faults/storage_view.cpp: SQLite reads and the seat map.
#include "storage_view.hpp"

#include <sqlite3.h>

#include <boost/json.hpp>
#include <functional>
#include <set>
#include <stdexcept>

#include "support/http_client.hpp"
#include "support/wire_form.hpp"

namespace seatlock::testing::faults {
namespace {

// A read-only connection that waits out the servers' short write transactions.
class ReadOnly {
public:
    explicit ReadOnly(const std::string& path) {
        if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
            const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
            sqlite3_close(db_);
            throw std::runtime_error("cannot open " + path + ": " + why);
        }
        sqlite3_busy_timeout(db_, 3000);
    }
    ~ReadOnly() { sqlite3_close(db_); }
    ReadOnly(const ReadOnly&) = delete;
    ReadOnly& operator=(const ReadOnly&) = delete;

    // Calls `row` for each row of `sql` with the statement to read its columns from.
    void each(const char* sql, const std::function<void(sqlite3_stmt*)>& row) {
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK)
            throw std::runtime_error(std::string("bad query: ") + sqlite3_errmsg(db_));
        int rc = SQLITE_ROW;
        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) row(stmt);
        sqlite3_finalize(stmt);
        if (rc != SQLITE_DONE)
            throw std::runtime_error(std::string(sql) + " failed: " + sqlite3_errmsg(db_));
    }

private:
    sqlite3* db_ = nullptr;
};

std::string text(sqlite3_stmt* stmt, int column) {
    const auto* p = sqlite3_column_text(stmt, column);
    return p ? reinterpret_cast<const char*>(p) : "";
}

std::vector<std::string> seats_of(const std::string& json) {
    std::vector<std::string> seats;
    boost::system::error_code ec;
    const auto value = boost::json::parse(json, ec);
    if (ec || !value.is_array()) return seats;
    for (const auto& seat : value.get_array()) {
        if (seat.is_string()) seats.emplace_back(seat.get_string());
    }
    return seats;
}

}  // namespace

DatabaseView DatabaseView::read(const std::string& db_path) {
    ReadOnly db(db_path);
    DatabaseView view;
    std::map<std::string, std::set<std::string>> tokens;
    db.each("SELECT order_id, holder, hold_token, seats, status FROM orders", [&](sqlite3_stmt* s) {
        view.orders.push_back(
            {text(s, 0), text(s, 1), text(s, 2), seats_of(text(s, 3)), text(s, 4) == "paid"});
        tokens[text(s, 1)].insert(text(s, 2));
    });
    db.each("SELECT hold_token, holder, expires_at_ms FROM pending_reservations",
            [&](sqlite3_stmt* s) {
                view.pending.push_back({text(s, 0), text(s, 1), sqlite3_column_int64(s, 2)});
                tokens[text(s, 1)].insert(text(s, 0));
            });
    db.each("SELECT hold_token, holder FROM closed_holds",
            [&](sqlite3_stmt* s) { tokens[text(s, 1)].insert(text(s, 0)); });
    for (auto& [holder, set] : tokens) view.tokens_by_holder[holder].assign(set.begin(), set.end());
    return view;
}

std::int64_t DatabaseView::pending_count(const std::string& db_path) {
    ReadOnly db(db_path);
    std::int64_t count = 0;
    db.each("SELECT count(*) FROM pending_reservations",
            [&](sqlite3_stmt* s) { count = sqlite3_column_int64(s, 0); });
    return count;
}

const OrderRow* DatabaseView::order(const std::string& order_id) const {
    for (const auto& row : orders) {
        if (row.order_id == order_id) return &row;
    }
    return nullptr;
}

std::optional<std::map<std::string, std::string>> seat_map(int port, const Venue& venue,
                                                           std::string* error) {
    try {
        HttpClient client(port);
        const auto reply = client.get("/events/" + venue.event + "/seats?zone=" + venue.zone);
        if (reply.status != 200) {
            if (error)
                *error = "GET seats answered " + std::to_string(reply.status) + " " + reply.body;
            return std::nullopt;
        }
        return seatlock::testing::seat_states_of(reply.json().at("zones").as_array().at(0).as_object());
    } catch (const std::exception& e) {
        if (error) *error = std::string("GET seats failed: ") + e.what();
        return std::nullopt;
    }
}

}  // namespace seatlock::testing::faults
