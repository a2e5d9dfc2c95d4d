// SPDX-License-Identifier: MIT
// ticketing.hpp: the ticketing flow of a hand-written service (hold, pay, release, cancel, expire)
// on seatlock, with the application's SQLite rows kept in step.
//
// seatlock's SeatHoldStore decides every seat atomically; this class adds what an
// application adds around it: who may act on a hold or an order (the buyer who made
// it), the pending-reservation and order rows, and a LockManager lock around each
// write that changes a live row (an extend, a payment, a cancellation), whose fencing
// token is stored with the row. Transport-free: the HTTP layer
// (api.hpp) turns requests into these calls and Results into responses.
//
// Every call is a coroutine that never blocks its thread: seatlock is called through its
// asynchronous API (a lock wait pauses on a timer), and the database through its own
// thread (database_pool.hpp). Arguments are taken by value, since a call outlives the
// caller's expression.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <seatlock/any_backend.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/lock_manager.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "database.hpp"
#include "database_pool.hpp"
#include "metrics.hpp"

namespace ticketing {

/// What a call of the ticketing flow completes with.
template <typename T>
using Task = boost::asio::awaitable<seatlock::Result<T>>;

/// The ticketing flow; thread-safe (its calls run on any thread of the server).
class Ticketing {
public:
    /// `db` and `metrics` must outlive this object.
    Ticketing(seatlock::AnyBackend backend, seatlock::HoldPolicy policy, Database& db,
              Metrics& metrics);

    /// Stores the venue's events in the backend, or repairs them: an event the storage
    /// lacks is recovered (created hidden, its pending rows closed as lost, every paid
    /// order of the database restored, then shown), so a restart never frees a paid
    /// seat; an event already there gets any paid order it misses. Several servers may
    /// do this at once over one Redis.
    Task<void> create_events(std::vector<seatlock::EventSpec> events);

    /// Why the server cannot sell right now (the storage lost its data and the venue is
    /// not repaired yet), or nothing when healthy.
    std::optional<std::string> trouble() const;

    /// Why this server should not be sent traffic now (GET /readyz), or nothing: the venue
    /// is being repaired after a storage loss (trouble()); the server is draining
    /// (begin_draining()); or the storage and the database were not both reached by a
    /// probe (probe_versions(), at most 750 ms apart) within `probe_fresh`: the last one failed,
    /// or none has ended since. Reads only what the probes noted: no storage call.
    std::optional<std::string> not_ready() const;
    /// How recent a successful probe must be for not_ready() to say nothing.
    static constexpr std::chrono::milliseconds probe_fresh{2500};
    /// From now on not_ready() says the server is draining (SIGTERM's window in which a
    /// load balancer stops sending it requests before its listener closes).
    void begin_draining();

    /// What is on sale: the venue's events, from memory (no storage call).
    Task<std::vector<seatlock::EventSpec>> events();
    /// The state of every seat of `event` at one version (the seat feed's whole read).
    Task<seatlock::SeatMap> seat_map(std::string event);
    /// The changes of `event` after position `after`, at most `limit` (the seat feed's
    /// reader, seat_feed.hpp).
    Task<seatlock::ChangePage> changes(std::string event, seatlock::FeedPosition after,
                                       std::size_t limit);

    /// What `buyer` has, from the server's rows: holds that may still be paid, and orders
    /// (paid or cancelled); in every event, or only in `event` (unknown_event when this
    /// server does not sell it).
    Task<std::vector<PendingReservation>> holds_of(std::string buyer,
                                                   std::optional<std::string> event);
    Task<std::vector<OrderRecord>> orders_of(std::string buyer, std::optional<std::string> event);

    /// Holds seats for `buyer` (policy: hold ttl, seats per buyer and event)
    /// and records the pending reservation. With an idempotency key, a repeated call
    /// returns the first one's hold (Hold::replayed) and finishes what it left undone
    /// (its pending row); a failure then never gives the seats back, so that the retry
    /// can finish it.
    Task<seatlock::Hold> hold(std::string buyer, std::string event, seatlock::HoldRequest request,
                              std::string idempotency_key);

    /// The calls on a hold: `token` must be one of `buyer`'s holds (not_owner otherwise,
    /// unknown_hold when this server never handed it out).
    Task<seatlock::Hold> extend(std::string buyer, std::string token, seatlock::Millis ttl);
    /// Pays the hold; the payment id becomes the order id. Retrying with the same payment
    /// id returns the same order.
    Task<seatlock::Order> confirm(std::string buyer, std::string token, std::string payment_id);
    /// Gives the seats back before the hold runs out.
    Task<void> release(std::string buyer, std::string token);

    /// Cancels one of `buyer`'s orders: its seats become free again. No buyer: the
    /// operator's cancel, of any order, for the buyer who paid it.
    Task<seatlock::Order> cancel(std::optional<std::string> buyer, std::string order_id);

    /// Deletes the pending rows of holds that expired and acknowledges them to seatlock;
    /// how many. A hold whose row could not be handled is delivered again later. When
    /// the storage was found to have lost data, repairs the venue first.
    Task<std::size_t> drain_expired();

    /// How many times an event was recovered or repaired (create_events, drain_expired):
    /// its versions may have started over, so a copy of its seats must be read anew.
    std::uint64_t repairs() const { return repairs_.load(); }

    /// What to do when a buyer is done with an event that `watched` names (Rooms::done, for
    /// the events with a room): called, and waited for, after a payment, and after a
    /// release or an expiry that left the buyer no other hold on the event. Set before the
    /// server serves; none: nothing. Other events cost nothing more.
    using DoneHook = std::function<boost::asio::awaitable<void>(std::string buyer, std::string event)>;
    void on_buyer_done(DoneHook hook, std::function<bool(std::string_view event)> watched) {
        on_done_ = std::move(hook);
        done_watched_ = std::move(watched);
    }

    /// Forgets closed-hold records older than a day (seatlock's own memory of a hold).
    boost::asio::awaitable<void> prune_closed_holds();

    /// Compares each event's version in the storage with what this server saw and what
    /// the database recorded: one storage read per event, cheap enough to run every
    /// second. A storage that went back to older data is found so with no buyer acting:
    /// trouble() says so, and the next drain_expired() repairs the venue. Its outcome is
    /// noted for not_ready().
    Task<void> probe_versions();

private:
    Task<HoldOwner> owned_hold(std::string buyer, std::string token);
    seatlock::Result<void> sold_here(const std::optional<std::string>& event) const;
    Task<void> recover(seatlock::EventSpec event);
    // The storage's version of `event`, checked against the database's highest.
    Task<seatlock::EventVersion> check_version(std::string event);
    // The answer to a payment refused because its seats had been sold to `sold_to`.
    static seatlock::Failure sold_to_another(const std::string& payment_id,
                                             const std::vector<std::string>& seats,
                                             const std::string& sold_to);
    // The event's storage epoch as this server last read it from the database (0 before).
    std::int64_t known_epoch(const std::string& event) const;
    boost::asio::awaitable<void> refresh_epoch(std::string event);
    // The storage_lost failure of a row refused because the event's storage epoch moved
    // on while `what` ("hold ... was being recorded"); tells the caller to `retry`. Reads
    // the epoch anew first.
    boost::asio::awaitable<seatlock::Failure> recovered_meanwhile(std::string event,
                                                                  std::string what,
                                                                  std::string retry);
    Task<void> raise_fencing(std::string group_key, std::uint64_t at_least);
    // Gives back the seats of a hold whose row could not be written, unless the buyer can
    // find the hold again with its idempotency key.
    boost::asio::awaitable<void> undo(std::string token, std::string idempotency_key);
    // Releases a lock before the answer goes out, so that the buyer's next call on the same
    // hold finds it free.
    template <typename Guard>
    boost::asio::awaitable<void> unlock(Guard& guard);
    // Notes a storage_lost answer: the next drain repairs the venue.
    template <typename T>
    void watch(const seatlock::Result<T>& result);

    // After a hold closed without a payment: on_done_ when `buyer` has no other hold on
    // `event` left.
    boost::asio::awaitable<void> done_unless_holding(std::string buyer, std::string event);

    DoneHook on_done_;
    std::function<bool(std::string_view)> done_watched_;
    seatlock::AnyBackend backend_;
    seatlock::SeatHoldStore<seatlock::AnyBackend> store_;
    seatlock::LockManager<seatlock::AnyBackend> locks_;
    Metrics& metrics_;
    std::vector<seatlock::EventSpec> venue_;
    std::atomic<bool> lost_{false};
    std::atomic<std::uint64_t> repairs_{0};
    mutable std::mutex trouble_mutex_;
    std::string trouble_;
    // What the last probe_versions() found (trouble_mutex_): when one last succeeded,
    // and the last failure since ("" when it succeeded).
    std::optional<std::chrono::steady_clock::time_point> probed_ok_;
    std::string probe_failure_ = "the storage has not been probed yet";
    std::atomic<bool> draining_{false};
    // Each event's storage epoch (Database::storage_epoch), only ever raised.
    mutable std::mutex epochs_mutex_;
    std::map<std::string, std::int64_t, std::less<>> epochs_;
    // Last, so destroyed first: calls still queued run while everything they use exists.
    DatabasePool db_;
};

/// A seatlock wall-clock instant as Unix milliseconds.
std::int64_t to_unix_ms(seatlock::WallTime t);

}  // namespace ticketing
