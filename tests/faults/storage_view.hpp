// SPDX-License-Identifier: MIT
// tests/faults/storage_view.hpp: what the storage says, read behind the servers' backs:
// the SQLite tables (with the sqlite3 C API, read-only) and the seat map one server
// serves (GET /events/{e}/seats).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster_of_servers.hpp"

namespace seatlock::testing::faults {

/// A row of the orders table.
struct OrderRow {
    std::string order_id;
    std::string holder;
    std::string hold_token;
    std::vector<std::string> seats;
    bool paid = false;  ///< status 'paid' (else 'cancelled')
};

/// A row of the pending_reservations table.
struct PendingRow {
    std::string token;
    std::string holder;
    std::int64_t expires_at_ms = 0;
};

/// The server's database as it is now.
struct DatabaseView {
    std::vector<OrderRow> orders;
    std::vector<PendingRow> pending;
    /// Every hold token the database knows for a buyer: pending, closed or paid.
    std::map<std::string, std::vector<std::string>> tokens_by_holder;

    /// Reads the file; throws when it cannot.
    static DatabaseView read(const std::string& db_path);
    /// How many rows pending_reservations has.
    static std::int64_t pending_count(const std::string& db_path);

    [[nodiscard]] const OrderRow* order(const std::string& order_id) const;
};

/// seat id -> "free", "held" or "paid", from a server; nullopt (and `error` says why)
/// when it does not answer 200.
std::optional<std::map<std::string, std::string>> seat_map(int port, const Venue& venue,
                                                           std::string* error = nullptr);

}  // namespace seatlock::testing::faults
