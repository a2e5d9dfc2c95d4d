// ticketing.hpp: the ticketing flow of the seed apps (hold, pay, release, cancel, expire)
// on seatlock, with the application's SQLite rows kept in step.
//
// seatlock's SeatHoldStore decides every seat atomically; this class adds what an
// application adds around it: who may act on a hold or an order (the buyer who made
// it), the pending-reservation and order rows, and a LockManager lock around each row
// write whose fencing token is stored with the row. Transport-free: the HTTP layer
// (api.hpp) turns requests into these calls and Results into responses.
#pragma once

#include <optional>
#include <seatlock/any_backend.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/lock_manager.hpp>
#include <string>
#include <vector>

#include "database.hpp"
#include "metrics.hpp"

namespace ticketing {

/// The ticketing flow; thread-safe (every worker thread calls it).
class Ticketing {
public:
    /// `db` and `metrics` must outlive this object.
    Ticketing(seatlock::AnyBackend backend, seatlock::HoldPolicy policy, Database& db,
              Metrics& metrics);

    /// Stores the venue's events in the backend (a no-op for events already there with
    /// the same inventory, so several servers may share one Redis).
    seatlock::Result<void> create_events(const std::vector<seatlock::EventSpec>& events);

    /// What is on sale, and the state of its seats (every zone, or only `zone`).
    seatlock::Result<std::vector<seatlock::EventSpec>> events();
    seatlock::Result<std::vector<seatlock::ZoneState>> seats(
        const std::string& event, const std::optional<std::string>& zone);

    /// Holds seats for `buyer` (policy: hold ttl, at most 3 seats per buyer and event)
    /// and records the pending reservation.
    seatlock::Result<seatlock::Hold> hold(const std::string& buyer, const std::string& event,
                                          const seatlock::HoldRequest& request);

    /// The calls on a hold: `token` must be one of `buyer`'s holds (not_owner otherwise,
    /// unknown_hold when this server never handed it out).
    seatlock::Result<seatlock::Hold> extend(const std::string& buyer, const std::string& token,
                                            seatlock::Millis ttl);
    /// Pays the hold; the payment id becomes the order id. Retrying with the same payment
    /// id returns the same order.
    seatlock::Result<seatlock::Order> confirm(const std::string& buyer, const std::string& token,
                                              const std::string& payment_id);
    /// Gives the seats back before the hold runs out.
    seatlock::Result<void> release(const std::string& buyer, const std::string& token);

    /// Cancels one of `buyer`'s orders: its seats become free again.
    seatlock::Result<seatlock::Order> cancel(const std::string& buyer, const std::string& order_id);

    /// Deletes the pending rows of holds that expired and acknowledges them to seatlock;
    /// how many. A hold whose row could not be handled is delivered again later.
    seatlock::Result<std::size_t> drain_expired();

    /// Forgets closed-hold records older than a day (seatlock's own memory of a hold).
    void prune_closed_holds();

private:
    seatlock::Result<HoldOwner> owned_hold(const std::string& buyer, const std::string& token);

    seatlock::AnyBackend backend_;
    seatlock::SeatHoldStore<seatlock::AnyBackend> store_;
    seatlock::LockManager<seatlock::AnyBackend> locks_;
    Database& db_;
    Metrics& metrics_;
};

/// A seatlock wall-clock instant as Unix milliseconds.
std::int64_t to_unix_ms(seatlock::WallTime t);

}  // namespace ticketing
