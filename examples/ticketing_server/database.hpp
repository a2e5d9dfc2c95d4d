// SPDX-License-Identifier: MIT
// database.hpp: the server's own records in SQLite, as a hand-written ticketing service
// keeps them in its SQL database: one row per pending reservation (an active hold) and
// one per order.
//
// seatlock decides who holds and owns which seat; these rows are the application's
// bookkeeping of it (what a payment service, an e-mail job or a refund desk reads).
// Each row is written after seatlock applied the change it records, and no write can
// take a row back to an earlier state, whatever order writes from several requests or
// servers arrive in:
// - a hold's pending row is added once (add_pending; a replay's second write changes
//   nothing), never after the hold was closed;
// - closing a hold (released, confirmed, expired, lost) is final: the storage ended it;
// - the writes of an order and of a hold's new expiry (add_order, cancel_order,
//   extend_pending) are made under a seatlock lock and carry its fencing token: one whose
//   token is not larger than the row's comes from a writer whose lease ran out and is
//   refused, so a paused process can never overwrite newer state.
//
// A hold whose pending row is deleted (released, confirmed or expired) leaves a small
// "closed hold" record behind, for a day, so that a late call on its token is still
// checked against the buyer who made it.
#pragma once

#include <seatlock/backend.hpp>
#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ticketing {

/// SQLite could not do what was asked (disk full, file locked too long, corrupt file).
class DatabaseError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A hold the buyer may still pay: deleted on confirm, release or expiry.
struct PendingReservation {
    std::string token;
    std::string event;
    std::string holder;
    std::string zone;
    std::vector<std::string> seats;
    std::int64_t expires_at_ms = 0;  ///< Unix milliseconds
    std::uint64_t fencing_token = 0;  ///< of the last extend; 0 before (a hold takes no lock)
    seatlock::EventVersion version = 0;  ///< the event's version seatlock answered the hold with
};

/// How a hold ended, as recorded in closed_holds. `lost`: the storage lost it (its event
/// was recovered after a storage without persistence restarted empty).
enum class HoldOutcome { released, confirmed, expired, lost };

/// What a write of a row after a storage change did (add_pending, add_order, cancel_order).
enum class RowWrite {
    recorded,
    refused,            ///< by the write's own rule (see each)
    storage_recovered,  ///< the event's storage epoch moved on: a recovery ran since `epoch`
    sold_twice          ///< add_order: another paid order has one of its seats; nothing written
};

/// A payment refused because its seats were sold to another order (add_order's
/// sold_twice): kept for a refund.
struct RefusedPayment {
    std::string sold_to;  ///< the order that has the seats
    std::vector<std::string> seats;
};

/// A hold to close (Database::close_holds).
struct HoldToClose {
    std::string token;
    std::string event;
    std::string holder;
};

/// Whose hold a token is.
struct HoldOwner {
    std::string event;
    std::string holder;
};

/// A paid (or since cancelled) order; the order id is the payment id.
struct OrderRecord {
    std::string order_id;
    std::string event;
    std::string holder;
    std::string zone;
    std::vector<std::string> seats;
    std::string hold_token;
    bool cancelled = false;
    std::int64_t paid_at_ms = 0;
    std::uint64_t fencing_token = 0;
    seatlock::EventVersion version = 0;  ///< the event's version seatlock answered the confirm with
};

/// One SQLite connection (WAL mode, prepared statements), safe to share between threads:
/// calls are serialised, each is one short transaction.
class Database {
public:
    /// Opens or creates the file (":memory:" for none) and its tables. Throws DatabaseError.
    explicit Database(const std::string& path);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    /// Records a new hold; `epoch` is the event's storage epoch as read before the hold
    /// was made. Recorded, changing nothing, when the row is there already (a replay with
    /// the same idempotency key wrote it); refused when the token is already closed (a hold
    /// that expired, or was released after a replay wrote its row, before this row was
    /// written must not leave a row behind); storage_recovered when the epoch
    /// moved on: a recovery closed the event's rows meanwhile, and the hold may have gone
    /// with the storage.
    RowWrite add_pending(const PendingReservation& row, std::int64_t epoch);

    /// Moves a pending row's expiry. false when the row is gone or has a newer token.
    bool extend_pending(const std::string& token, std::int64_t expires_at_ms,
                        std::uint64_t fencing_token);

    /// Deletes the pending row (if any, whatever its fencing token) and remembers how the
    /// hold ended: the storage ended it, and nothing written after can bring the row back.
    /// Idempotent: closing again changes nothing (the first outcome stays).
    void close_hold(const std::string& token, const std::string& event, const std::string& holder,
                    HoldOutcome outcome);

    /// close_hold for each of `holds`, all in one transaction (the expiry drain closes a
    /// batch of expired holds at a time).
    void close_holds(std::span<const HoldToClose> holds, HoldOutcome outcome);

    /// Whose token this is, from the pending row or the closed-hold record.
    std::optional<HoldOwner> hold_owner(const std::string& token);

    /// Records a paid order, its seats as sold and closes its pending row, in one
    /// transaction; `epoch` as in add_pending, read before the payment was made. Refused
    /// when the order id is already used by another hold (order ids are unique
    /// server-wide); storage_recovered when the epoch moved on: a recovery restored the
    /// event's paid orders without this one, and the storage may have lost it;
    /// sold_twice, writing nothing, when another paid order has one of its seats (the
    /// storage sold it again: it went back to older data), naming that order in `sold_to`.
    RowWrite add_order(const OrderRecord& order, std::int64_t epoch,
                       std::string* sold_to = nullptr);

    /// Keeps a payment whose seats were sold to `sold_to` (add_order's sold_twice), for a
    /// refund. Idempotent.
    void refuse_payment(const OrderRecord& order, const std::string& sold_to);

    /// The refused payment with this id, if any.
    std::optional<RefusedPayment> refused_payment(const std::string& order_id);

    /// The highest event version any row of the event was written with (0 when none): the
    /// storage must be at least there, or it went back to older data.
    seatlock::EventVersion max_version(const std::string& event);

    /// The order with this id, if any.
    std::optional<OrderRecord> order(const std::string& order_id);

    /// Marks an order of `event` cancelled; `epoch` as in add_pending, read before the
    /// cancellation was made. Refused when its fencing token is newer than
    /// `fencing_token`; storage_recovered when the epoch moved on: a recovery restored the
    /// order paid meanwhile, and the storage may have lost the cancellation.
    RowWrite cancel_order(const std::string& order_id, const std::string& event,
                          std::uint64_t fencing_token, std::int64_t epoch);

    /// A buyer's pending holds that end after `now_ms` (a row outlives its hold until the
    /// expiry drain closes it), in every event or in `event`, oldest first.
    std::vector<PendingReservation> holds_of(const std::string& holder,
                                             const std::optional<std::string>& event,
                                             std::int64_t now_ms);

    /// A buyer's orders, paid and cancelled, in every event or in `event`, newest first.
    std::vector<OrderRecord> orders_of(const std::string& holder,
                                       const std::optional<std::string>& event);

    /// Every paid (not cancelled) order of an event, oldest first: what recovery restores.
    std::vector<OrderRecord> paid_orders(const std::string& event);

    /// Every cancelled order of an event: what a storage that went back to older data may
    /// have paid again.
    std::vector<OrderRecord> cancelled_orders(const std::string& event);

    /// Closes every pending row of an event as lost, whatever its fencing token, and moves
    /// the event's storage epoch on, in one transaction: recovery calls it once the
    /// storage has lost the event and every hold in it. How many.
    std::size_t close_lost_holds(const std::string& event);

    /// The event's storage epoch: how many times it was recovered after the storage lost
    /// it (0 when never). A change made in the storage under another epoch is refused its
    /// row.
    std::int64_t storage_epoch(const std::string& event);

    /// The largest fencing token any row of the event carries (0 when none): recovery
    /// raises the storage's fencing counter past it.
    std::uint64_t max_fencing_token(const std::string& event);

    /// Forgets closed-hold records older than `before_ms` (Unix milliseconds).
    void prune_closed_holds(std::int64_t before_ms);

private:
    class Statement;
    class Transaction;

    void exec(const char* sql);
    void migrate_closed_holds();
    void migrate_columns();
    std::int64_t epoch_of(const std::string& event);
    [[noreturn]] void fail(const char* what) const;

    std::mutex mutex_;
    sqlite3* db_ = nullptr;
    std::vector<std::unique_ptr<Statement>> statements_;
    Statement* insert_pending_ = nullptr;
    Statement* update_pending_ = nullptr;
    Statement* delete_pending_ = nullptr;
    Statement* insert_closed_ = nullptr;
    Statement* select_pending_owner_ = nullptr;
    Statement* select_closed_owner_ = nullptr;
    Statement* insert_order_ = nullptr;
    Statement* select_order_ = nullptr;
    Statement* cancel_order_ = nullptr;
    Statement* prune_closed_ = nullptr;
    Statement* select_paid_ = nullptr;
    Statement* select_pending_of_ = nullptr;
    Statement* select_cancelled_ = nullptr;
    Statement* select_max_fence_ = nullptr;
    Statement* select_holds_of_ = nullptr;
    Statement* select_orders_of_ = nullptr;
    Statement* select_epoch_ = nullptr;
    Statement* bump_epoch_ = nullptr;
    Statement* insert_sold_ = nullptr;
    Statement* select_sold_to_ = nullptr;
    Statement* delete_sold_ = nullptr;
    Statement* insert_refused_ = nullptr;
    Statement* select_refused_ = nullptr;
    Statement* select_max_version_ = nullptr;
};

/// Unix milliseconds now, the unit of every time column.
std::int64_t unix_ms_now();

}  // namespace ticketing
