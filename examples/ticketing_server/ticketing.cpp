// SPDX-License-Identifier: MIT
// ticketing.cpp: each call is "ask seatlock, then write the row".
//
// seatlock goes first because it is the authority on seats: a row is only ever written
// for something that really happened. A hold's row is added once and closed once (the
// storage decides which of a release, a payment or an expiry ends a hold, and only one
// does), and the database refuses the writes that would take a row back (database.hpp):
// a hold and a release need no lock, one storage call each. The writes that change a live
// row (a new expiry, an order paid or cancelled) are made under a lock on the hold or
// order, which serialises them across server processes that share the database; its
// fencing token lets the database refuse a write from a process whose lease ran out
// meanwhile.
#include "ticketing.hpp"

#include <fmt/format.h>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <seatlock/keys.hpp>
#include <span>

#include "log.hpp"

namespace ticketing {
namespace asio = boost::asio;
using asio::use_awaitable;
using seatlock::errc;
using seatlock::Failure;
using seatlock::Result;

namespace {

constexpr std::size_t drain_batch = 100;
// A drain whose answer was lost (a broken connection: the store asks again) leaves the
// holds it was handed marked as delivered: they come back after this long. Short, since
// closing a row twice is harmless and a row left open keeps a buyer's hold on the books.
constexpr auto redeliver_after = std::chrono::seconds(3);
constexpr std::int64_t closed_hold_memory_ms = 25LL * 3600 * 1000;  // a bit over seatlock's day

// Lock keys share the event as their group (the part before ':'): one fencing counter
// and, on Redis, one hash slot per event, so a hold's and an order's locks can be taken
// in one step and their tokens compared.
std::string hold_key(const std::string& event, const std::string& token) {
    return event + ":hold:" + token;
}
std::string order_key(const std::string& event, const std::string& order_id) {
    return event + ":order:" + order_id;
}

seatlock::LockOptions lock_options(Metrics& metrics) {
    seatlock::LockOptions options;
    options.wait = std::chrono::seconds(3);
    options.lease = std::chrono::seconds(10);
    // A release seatlock gave up on after its retries: the hold's or order's lock stayed
    // taken until its lease ended, and requests for it waited meanwhile.
    options.on_release_error = [&metrics](const seatlock::Failure&) {
        metrics.lock_release_error();
    };
    return options;
}

// A release that failed in transit (the storage did not answer) goes on in the background
// and reaches on_release_error if it is given up; any other failure but a lease already
// lost is given up at once.
bool release_given_up(const Failure& f) {
    return !f.is(errc::lock_not_owned) && !f.is(errc::io_error) && !f.is(errc::timeout) &&
           !f.is(errc::connection_failed) && !f.is(errc::outcome_unknown);
}

}  // namespace

std::int64_t to_unix_ms(seatlock::WallTime t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

Ticketing::Ticketing(seatlock::AnyBackend backend, seatlock::HoldPolicy policy, Database& db,
                     Metrics& metrics)
    : backend_(std::move(backend)),
      store_(backend_, policy),
      locks_(backend_, lock_options(metrics)),
      metrics_(metrics),
      db_(db) {}

// Coroutines below bind every argument of a co_await expression to a named variable first:
// g++ 12 mishandles temporaries built from braces ({...}) inside co_await expressions.

Task<void> Ticketing::create_events(std::vector<seatlock::EventSpec> events) {
    venue_ = events;
    for (auto& event : events) {
        // A storage below the versions the database recorded went back to older data while
        // the server was down: the check fences the event, and recover() repairs it.
        auto checked = co_await check_version(event.id);
        if (!checked && !checked.is(errc::storage_lost) && !checked.is(errc::unknown_event)) {
            co_return std::move(checked).error();
        }
        auto recovered = co_await recover(std::move(event));
        if (!recovered) co_return recovered;
    }
    co_return Result<void>();
}

Task<seatlock::EventVersion> Ticketing::check_version(std::string event) {
    const auto recorded = co_await db_.run([&](Database& db) { return db.max_version(event); });
    auto checked = co_await store_.async_check_version(event, recorded, use_awaitable);
    co_return checked;
}

Task<void> Ticketing::probe_versions() {
    if (lost_) co_return Result<void>();  // the next drain repairs the venue
    // What not_ready() reads: when a probe last succeeded, or why the last one failed.
    const auto note = [this](std::string failure) {
        std::lock_guard lock(trouble_mutex_);
        if (failure.empty()) probed_ok_ = std::chrono::steady_clock::now();
        probe_failure_ = std::move(failure);
    };
    try {
        for (const auto& event : venue_) {
            auto checked = co_await check_version(event.id);
            watch(checked);
            if (!checked) {
                note(checked.error().message());
                co_return std::move(checked).error();
            }
        }
    } catch (const std::exception& e) {  // the database's; the drain logs it
        note(e.what());
        throw;
    }
    note("");
    co_return Result<void>();
}

std::optional<std::string> Ticketing::not_ready() const {
    if (draining_) return "draining: the server is shutting down";
    if (auto lost = trouble()) return "storage_lost: " + *lost;
    std::lock_guard lock(trouble_mutex_);
    if (!probe_failure_.empty()) return "probe failed: " + probe_failure_;
    const auto age = std::chrono::steady_clock::now() - *probed_ok_;
    if (age > probe_fresh) {
        return fmt::format("no probe of the storage and the database ended in the last {} ms",
                           std::chrono::duration_cast<std::chrono::milliseconds>(age).count());
    }
    return std::nullopt;
}

void Ticketing::begin_draining() {
    draining_ = true;
}

Task<void> Ticketing::recover(seatlock::EventSpec event) {
    auto started = co_await store_.async_recover_event(event, use_awaitable);
    if (!started) co_return std::move(started).error();
    if (*started != seatlock::Recovery::existed) {
        // Every hold of the event went with the storage, or may have (it went back to older
        // data: the holds since are gone, and the rows of those before are closed with
        // them): their rows would never close.
        const auto closed =
            co_await db_.run([&](Database& db) { return db.close_lost_holds(event.id); });
        metrics_.holds_lost(closed);
        if (closed > 0)
            log_warn("event {}: {} pending holds were lost with the storage", event.id, closed);
    }
    co_await refresh_epoch(event.id);
    // The storage's fencing counter may have gone with it: later tokens must still beat
    // every row's, or the database would refuse them.
    const auto fenced =
        co_await db_.run([&](Database& db) { return db.max_fencing_token(event.id); });
    auto raised = co_await raise_fencing(event.id + ":", fenced);
    if (!raised) co_return raised;
    const auto orders = co_await db_.run([&](Database& db) { return db.paid_orders(event.id); });
    std::size_t restored = 0;
    for (const auto& order : orders) {
        const seatlock::RestoreCommand command{
            order.event,
            order.order_id,
            order.holder,
            order.zone,
            order.seats,
            order.hold_token,
            seatlock::WallTime(std::chrono::milliseconds(order.paid_at_ms))};
        auto back = co_await store_.async_restore_order(command, use_awaitable);
        if (back) {
            ++restored;
            continue;
        }
        if (back.is(errc::seat_taken) || back.is(errc::order_conflict)) {
            // Only possible when the storage went back in time (an older snapshot) and sold
            // since: an operator must settle it.
            metrics_.restore_conflict();
            log_warn("event {}: order {} could not be restored: {}", event.id, order.order_id,
                     back.error().message());
            continue;
        }
        co_return std::move(back).error();
    }
    // Versions go on above every one the database recorded, so that the probe and the
    // next start-up compare against the repaired storage.
    const auto recorded = co_await db_.run([&](Database& db) { return db.max_version(event.id); });
    auto shown = co_await store_.async_finish_recovery(event.id, recorded, use_awaitable);
    if (!shown) co_return std::move(shown).error();
    if (*started == seatlock::Recovery::rolled_back) {
        // Older data may have paid again orders cancelled since: cancel them again (an order
        // cancelled already is answered as it is).
        const auto cancelled =
            co_await db_.run([&](Database& db) { return db.cancelled_orders(event.id); });
        for (const auto& order : cancelled) {
            const std::optional<std::string> holder = order.holder;
            auto again = co_await store_.async_cancel(event.id, order.order_id, holder,
                                                      use_awaitable);
            if (!again && !again.is(errc::unknown_order)) co_return std::move(again).error();
        }
    }
    repairs_.fetch_add(1);
    if (*started == seatlock::Recovery::created) {
        log("event {}: recovered with {} paid orders", event.id, restored);
    } else if (*started == seatlock::Recovery::rolled_back) {
        log("event {}: repaired after the storage went back to older data: {} paid orders "
            "restored, version {}",
            event.id, restored, *shown);
    }
    co_return Result<void>();
}

// The one backend step without a front-class call: sent the asynchronous way directly,
// its result handed back on the awaiting coroutine's executor.
Task<void> Ticketing::raise_fencing(std::string group_key, std::uint64_t at_least) {
    seatlock::op::raise_fencing step{std::move(group_key), at_least};
    co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(Result<void>)>(
        [this](auto handler, const seatlock::op::raise_fencing& step) {
            auto work = asio::prefer(asio::get_associated_executor(handler),
                                     asio::execution::outstanding_work.tracked);
            backend_.async_run(step, [handler = std::move(handler),
                                      work = std::move(work)](Result<void> result) mutable {
                asio::post(work,
                           [handler = std::move(handler), result = std::move(result)]() mutable {
                               std::move(handler)(std::move(result));
                           });
            });
        },
        use_awaitable, std::move(step));
}

std::int64_t Ticketing::known_epoch(const std::string& event) const {
    std::lock_guard lock(epochs_mutex_);
    const auto it = epochs_.find(event);
    return it == epochs_.end() ? 0 : it->second;
}

// Only ever raised: a slower read of an older epoch must not undo a newer one.
asio::awaitable<void> Ticketing::refresh_epoch(std::string event) {
    const auto epoch = co_await db_.run([&](Database& db) { return db.storage_epoch(event); });
    std::lock_guard lock(epochs_mutex_);
    auto& known = epochs_[event];
    known = std::max(known, epoch);
}

std::optional<std::string> Ticketing::trouble() const {
    if (!lost_) return std::nullopt;
    std::lock_guard lock(trouble_mutex_);
    return trouble_;
}

template <typename T>
void Ticketing::watch(const Result<T>& result) {
    if (result.is(errc::storage_lost) && !lost_.exchange(true)) {
        {
            std::lock_guard lock(trouble_mutex_);
            trouble_ = result.error().detail;
        }
        metrics_.storage_lost();
        log_warn("storage lost data: {}; repairing the venue", result.error().detail);
    }
}

template <typename Guard>
asio::awaitable<void> Ticketing::unlock(Guard& guard) {
    const auto released = co_await guard.async_unlock(use_awaitable);
    if (!released && release_given_up(released.error())) metrics_.lock_release_error();
}

asio::awaitable<Failure> Ticketing::recovered_meanwhile(std::string event, std::string what,
                                                        std::string retry) {
    // The server's epoch was stale or a recovery ran since it was read: either way the
    // next call must compare against the database's.
    co_await refresh_epoch(event);
    co_return Failure(errc::storage_lost,
                      "the storage lost its data while " + what + " (event " + event +
                          " was recovered meanwhile): " + retry,
                      {event});
}

asio::awaitable<void> Ticketing::undo(std::string token, std::string idempotency_key) {
    if (idempotency_key.empty()) (void)co_await store_.async_release(token, use_awaitable);
}

Task<std::vector<seatlock::EventSpec>> Ticketing::events() {
    // The venue is fixed once the events are created: every page load lists it, and a
    // read of every event's seats from the storage would cost it the whole venue.
    co_return venue_;
}

Task<seatlock::SeatMap> Ticketing::seat_map(std::string event) {
    const std::optional<std::string> every_zone;
    auto map = co_await store_.async_seats(event, every_zone, use_awaitable);
    watch(map);
    co_return map;
}

Task<seatlock::ChangePage> Ticketing::changes(std::string event, seatlock::FeedPosition after,
                                              std::size_t limit) {
    auto page = co_await store_.async_changes(event, after, limit, use_awaitable);
    watch(page);
    co_return page;
}

Result<void> Ticketing::sold_here(const std::optional<std::string>& event) const {
    if (!event) return Result<void>();
    if (auto ok = seatlock::validate_id("event", *event); !ok) return ok;
    for (const auto& sold : venue_) {
        if (sold.id == *event) return Result<void>();
    }
    return Failure(errc::unknown_event, "no event " + *event + " on sale here");
}

Task<std::vector<PendingReservation>> Ticketing::holds_of(std::string buyer,
                                                          std::optional<std::string> event) {
    if (auto ok = sold_here(event); !ok) co_return std::move(ok).error();
    const auto now = unix_ms_now();
    co_return co_await db_.run([&](Database& db) { return db.holds_of(buyer, event, now); });
}

Task<std::vector<OrderRecord>> Ticketing::orders_of(std::string buyer,
                                                    std::optional<std::string> event) {
    if (auto ok = sold_here(event); !ok) co_return std::move(ok).error();
    co_return co_await db_.run([&](Database& db) { return db.orders_of(buyer, event); });
}

Task<seatlock::Hold> Ticketing::hold(std::string buyer, std::string event,
                                     seatlock::HoldRequest request, std::string idempotency_key) {
    // Read before the hold is made: a recovery that may have lost it moves the database's
    // epoch past this one, and the row is then refused (see add_pending).
    const auto epoch = known_epoch(event);
    const seatlock::HoldOptions options{std::nullopt, idempotency_key};
    auto hold = co_await store_.async_hold(event, buyer, request, options, use_awaitable);
    watch(hold);
    if (!hold) co_return hold;
    if (hold->replayed && hold->status != seatlock::HoldStatus::held) co_return hold;
    // Without its row nobody could act on the hold: give the seats back on any failure,
    // unless the buyer can retry with the same key and find the hold again. No lock: the
    // row is new, and a close that came first (the hold expired, or a replay's row was
    // written and released) refuses it.
    const PendingReservation row{hold->token, event,
                                 buyer,       hold->zone,
                                 hold->seats, to_unix_ms(hold->expires_at),
                                 0,           hold->version};
    auto written = RowWrite::refused;
    std::exception_ptr failed;
    try {
        written =
            co_await db_.run([&row, epoch](Database& db) { return db.add_pending(row, epoch); });
    } catch (const DatabaseError&) {
        failed = std::current_exception();
    }
    if (failed) {
        co_await undo(hold->token, idempotency_key);
        std::rethrow_exception(failed);
    }
    if (written == RowWrite::storage_recovered) {
        // A recovery ran since `epoch` was read, so after the hold was made: the hold may
        // have gone with the storage and its seats be free for others, and its row would
        // never be closed. If it did not (this server had not yet seen another's recovery,
        // its epoch was stale), the buyer's retry records it under the epoch read here: a
        // stale epoch costs a retry, never a lost hold answered as made.
        auto lost = co_await recovered_meanwhile(
            event, "hold " + hold->token + " was being recorded", "hold again");
        co_await undo(hold->token, idempotency_key);
        co_return lost;
    }
    if (written != RowWrite::recorded && !hold->replayed) {
        // Only possible with a ttl shorter than this call: the drain closed it first.
        co_return Failure(errc::hold_expired,
                          "hold " + hold->token + " expired before it was recorded", hold->seats);
    }
    if (!hold->replayed) metrics_.hold_granted();
    co_return hold;
}

Task<HoldOwner> Ticketing::owned_hold(std::string buyer, std::string token) {
    if (seatlock::token_event(token).empty()) {
        co_return Failure(errc::unknown_hold, "'" + token.substr(0, 80) + "' is not a hold token");
    }
    auto owner = co_await db_.run([&token](Database& db) { return db.hold_owner(token); });
    if (!owner) co_return Failure(errc::unknown_hold, "no hold " + token);
    if (owner->holder != buyer) {
        co_return Failure(errc::not_owner,
                          "hold " + token + " belongs to another buyer than " + buyer);
    }
    co_return std::move(*owner);
}

Task<seatlock::Hold> Ticketing::extend(std::string buyer, std::string token, seatlock::Millis ttl) {
    auto owner = co_await owned_hold(buyer, token);
    if (!owner) co_return std::move(owner).error();
    const std::string key = hold_key(owner->event, token);
    auto guard = co_await locks_.async_lock(key, use_awaitable);
    if (!guard) co_return std::move(guard).error();
    auto extended = co_await store_.async_extend(token, ttl, use_awaitable);
    watch(extended);
    if (extended) {
        const auto expires_at = to_unix_ms(extended->expires_at);
        const auto fence = guard->fencing_token();
        co_await db_.run([&](Database& db) { return db.extend_pending(token, expires_at, fence); });
        metrics_.hold_extended();
    }
    co_await unlock(*guard);
    co_return extended;
}

Task<seatlock::Order> Ticketing::confirm(std::string buyer, std::string token,
                                         std::string payment_id) {
    if (auto ok = seatlock::validate_id("payment", payment_id); !ok)
        co_return std::move(ok).error();
    auto owner = co_await owned_hold(buyer, token);
    if (!owner) co_return std::move(owner).error();
    // A payment refused before because its seats had been sold (see below) stays refused.
    const auto refused =
        co_await db_.run([&payment_id](Database& db) { return db.refused_payment(payment_id); });
    if (refused) co_return sold_to_another(payment_id, refused->seats, refused->sold_to);
    // seatlock scopes order ids by event; this server's orders table does not (the
    // cancel URL names no event), so a payment id of another event's order is refused here.
    const auto existing =
        co_await db_.run([&payment_id](Database& db) { return db.order(payment_id); });
    if (existing && existing->hold_token != token) {
        co_return Failure(errc::order_conflict,
                          "payment " + payment_id + " already paid another hold");
    }
    std::vector<std::string> keys{hold_key(owner->event, token),
                                  order_key(owner->event, payment_id)};
    auto guard = co_await locks_.async_lock_all(std::move(keys), use_awaitable);
    if (!guard) co_return std::move(guard).error();
    // Read before the payment is made, as in hold(): an order row written after a recovery
    // that never restored it would stand for seats the storage sells again.
    const auto epoch = known_epoch(owner->event);
    auto order = co_await store_.async_confirm(token, payment_id, use_awaitable);
    watch(order);
    if (!order) {
        co_await unlock(*guard);
        co_return order;
    }
    const OrderRecord record{order->id,
                             order->event,
                             order->holder,
                             order->zone,
                             order->seats,
                             token,
                             order->cancelled,
                             to_unix_ms(order->paid_at),
                             guard->fencing_token(),
                             order->version};
    std::string sold_to;
    const auto written = co_await db_.run(
        [&record, epoch, &sold_to](Database& db) { return db.add_order(record, epoch, &sold_to); });
    if (written == RowWrite::sold_twice) {
        // The storage sold seats the database has sold already: it went back to older data
        // without this server noticing (another server sold meanwhile, or it started after).
        // The order goes back out of the storage, its payment is kept for a refund, and the
        // event is fenced and repaired before anything is sold again.
        const std::optional<std::string> holder = buyer;
        (void)co_await store_.async_cancel(order->event, order->id, holder, use_awaitable);
        co_await db_.run([&](Database& db) { db.refuse_payment(record, sold_to); });
        (void)store_.fence(order->event, "the order database refused payment " + payment_id +
                                       ": its seats were sold to order " + sold_to +
                                       " (the storage went back to older data)");
        Result<seatlock::Order> lost = Failure(
            errc::storage_lost, "the storage sold seats of order " + sold_to +
                                    " again: the event is being repaired; payment " +
                                    payment_id + " is refused and kept for a refund",
            {order->event});
        watch(lost);
        metrics_.payment_refused();
        co_await unlock(*guard);
        co_return lost;
    }
    if (written == RowWrite::storage_recovered) {
        // As in hold(). Nothing to undo: a lost order is gone, and a real one (a stale
        // epoch) stays paid: the retry with the same payment id gets it back from the
        // storage and records it.
        auto lost = co_await recovered_meanwhile(
            owner->event, "payment " + payment_id + " was being recorded",
            "confirm again (if the hold went with the storage, the retry says so)");
        co_await unlock(*guard);
        co_return lost;
    }
    if (written == RowWrite::refused) {
        // Another event's hold took this payment id between the check above and now.
        const std::optional<std::string> holder = buyer;
        (void)co_await store_.async_cancel(order->event, order->id, holder, use_awaitable);
        co_await unlock(*guard);
        co_return Failure(errc::order_conflict,
                          "payment " + payment_id + " already paid another hold");
    }
    co_await unlock(*guard);
    metrics_.hold_confirmed();
    if (on_done_ && done_watched_(order->event)) co_await on_done_(buyer, order->event);
    co_return order;
}

Failure Ticketing::sold_to_another(const std::string& payment_id,
                                   const std::vector<std::string>& seats,
                                   const std::string& sold_to) {
    std::string list;
    for (const auto& seat : seats) list += (list.empty() ? "" : ", ") + seat;
    return Failure(errc::seat_taken,
                   "payment " + payment_id + " was refused: seats " + list +
                       " had been sold to order " + sold_to +
                       " before the storage went back to older data; the payment is kept "
                       "for a refund",
                   seats);
}

Task<void> Ticketing::release(std::string buyer, std::string token) {
    auto owner = co_await owned_hold(buyer, token);
    if (!owner) co_return std::move(owner).error();
    // No lock: once the storage has ended the hold, its row closes whoever wrote it last.
    auto released = co_await store_.async_release(token, use_awaitable);
    watch(released);
    // unknown_hold: seatlock no longer remembers it (released long ago, or lost with the
    // storage): the hold is gone either way, and so must its row be.
    if (!released && !released.is(errc::unknown_hold)) co_return released;
    const auto outcome = released ? HoldOutcome::released : HoldOutcome::lost;
    co_await db_.run([&](Database& db) { db.close_hold(token, owner->event, buyer, outcome); });
    metrics_.hold_released();
    co_await done_unless_holding(buyer, owner->event);
    co_return Result<void>();
}

Task<seatlock::Order> Ticketing::cancel(std::optional<std::string> buyer,
                                       std::string order_id) {
    if (auto ok = seatlock::validate_id("order", order_id); !ok) co_return std::move(ok).error();
    const auto record = co_await db_.run([&order_id](Database& db) { return db.order(order_id); });
    if (!record) co_return Failure(errc::unknown_order, "no order " + order_id);
    if (buyer && record->holder != *buyer) {
        co_return Failure(errc::not_owner,
                          "order " + order_id + " belongs to another buyer than " + *buyer);
    }
    const std::string key = order_key(record->event, order_id);
    auto guard = co_await locks_.async_lock(key, use_awaitable);
    if (!guard) co_return std::move(guard).error();
    // Read before the cancellation is made, as in hold(): a recovery since then restored
    // the order paid, and the storage may have lost the cancellation.
    const auto epoch = known_epoch(record->event);
    const std::optional<std::string> holder = record->holder;
    auto order = co_await store_.async_cancel(record->event, order_id, holder, use_awaitable);
    watch(order);
    if (!order) {
        co_await unlock(*guard);
        co_return order;
    }
    const auto fence = guard->fencing_token();
    const auto written = co_await db_.run(
        [&](Database& db) { return db.cancel_order(order_id, record->event, fence, epoch); });
    co_await unlock(*guard);
    if (written == RowWrite::storage_recovered) {
        // Cancelling again is harmless: the retry cancels the restored order, or finds it
        // cancelled (a stale epoch), and records it.
        co_return co_await recovered_meanwhile(
            record->event, "order " + order_id + " was being cancelled", "cancel again");
    }
    metrics_.order_cancelled();
    co_return order;
}

Task<std::size_t> Ticketing::drain_expired() {
    if (lost_) {
        for (const auto& event : venue_) {
            auto recovered = co_await recover(event);
            if (!recovered) co_return std::move(recovered).error();
        }
        lost_ = false;
        log("venue repaired: selling again");
    }
    std::size_t drained = 0;
    for (;;) {
        const seatlock::Millis redeliver = redeliver_after;
        auto batch = co_await store_.async_expired(drain_batch, redeliver, use_awaitable);
        if (!batch) co_return std::move(batch).error();
        // No lock, as in release(): the storage ended these holds. Their rows are closed
        // in one transaction, then acknowledged.
        std::vector<HoldToClose> closes;
        std::vector<std::string> done;
        for (const auto& expired : *batch) {
            closes.push_back({expired.token, expired.event, expired.holder});
            done.push_back(expired.token);
        }
        if (!done.empty()) {
            co_await db_.run([&](Database& db) { db.close_holds(closes, HoldOutcome::expired); });
            const std::span<const std::string> tokens(done);
            auto acked = co_await store_.async_ack_expired(tokens, use_awaitable);
            if (!acked) co_return std::move(acked).error();
            metrics_.holds_expired(done.size());
            drained += done.size();
            for (const auto& closed : closes) co_await done_unless_holding(closed.holder, closed.event);
        }
        if (batch->size() < drain_batch) co_return drained;
    }
}

asio::awaitable<void> Ticketing::done_unless_holding(std::string buyer, std::string event) {
    if (!on_done_ || !done_watched_(event)) co_return;
    const auto now = unix_ms_now();
    const bool holding = co_await db_.run(
        [&](Database& db) { return !db.holds_of(buyer, std::optional<std::string>(event), now).empty(); });
    if (!holding) co_await on_done_(buyer, event);
}

asio::awaitable<void> Ticketing::prune_closed_holds() {
    const auto before = unix_ms_now() - closed_hold_memory_ms;
    co_await db_.run([before](Database& db) { db.prune_closed_holds(before); });
}

}  // namespace ticketing
