// ticketing.cpp: each call is "ask seatlock, then write the row under a lock".
//
// seatlock goes first because it is the authority on seats: a row is only ever written
// for something that really happened. The lock serialises the row writes of one hold or
// order across server processes that share the database, and its fencing token lets the
// database refuse a write from a process whose lease ran out meanwhile.
#include "ticketing.hpp"

#include <fmt/format.h>

#include <seatlock/keys.hpp>

namespace ticketing {
using seatlock::errc;
using seatlock::Failure;
using seatlock::Result;

namespace {

constexpr std::size_t drain_batch = 100;
constexpr auto redeliver_after = std::chrono::seconds(30);
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

seatlock::LockOptions lock_options() {
    seatlock::LockOptions options;
    options.wait = std::chrono::seconds(3);
    options.lease = std::chrono::seconds(10);
    return options;
}

}  // namespace

std::int64_t to_unix_ms(seatlock::WallTime t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

Ticketing::Ticketing(seatlock::AnyBackend backend, seatlock::HoldPolicy policy, Database& db,
                     Metrics& metrics)
    : backend_(std::move(backend)),
      store_(backend_, policy),
      locks_(backend_, lock_options()),
      db_(db),
      metrics_(metrics) {}

Result<void> Ticketing::create_events(const std::vector<seatlock::EventSpec>& events) {
    for (const auto& event : events) {
        if (auto created = store_.create_event(event); !created) return created;
    }
    return {};
}

Result<std::vector<seatlock::EventSpec>> Ticketing::events() {
    return store_.events();
}

Result<std::vector<seatlock::ZoneState>> Ticketing::seats(const std::string& event,
                                                          const std::optional<std::string>& zone) {
    return store_.seats(event, zone);
}

Result<seatlock::Hold> Ticketing::hold(const std::string& buyer, const std::string& event,
                                       const seatlock::HoldRequest& request) {
    auto hold = store_.hold(event, buyer, request);
    if (!hold) return hold;
    // Without its row nobody could act on the hold: give the seats back on any failure.
    auto undo = [&] { (void)store_.release(hold->token); };
    auto guard = locks_.lock(hold_key(event, hold->token));
    if (!guard) {
        undo();
        return std::move(guard).error();
    }
    bool recorded = false;
    try {
        recorded = db_.add_pending({hold->token, event, buyer, hold->zone, hold->seats,
                                    to_unix_ms(hold->expires_at), guard->fencing_token()});
    } catch (const DatabaseError&) {
        undo();
        throw;
    }
    if (!recorded) {
        // Only possible with a ttl shorter than this call: the drain closed it first.
        return Failure(errc::hold_expired,
                       "hold " + hold->token + " expired before it was recorded", hold->seats);
    }
    metrics_.hold_granted();
    return hold;
}

Result<HoldOwner> Ticketing::owned_hold(const std::string& buyer, const std::string& token) {
    if (seatlock::token_event(token).empty()) {
        return Failure(errc::unknown_hold, "'" + token.substr(0, 80) + "' is not a hold token");
    }
    auto owner = db_.hold_owner(token);
    if (!owner) return Failure(errc::unknown_hold, "no hold " + token);
    if (owner->holder != buyer) {
        return Failure(errc::not_owner,
                       "hold " + token + " belongs to another buyer than " + buyer);
    }
    return std::move(*owner);
}

Result<seatlock::Hold> Ticketing::extend(const std::string& buyer, const std::string& token,
                                         seatlock::Millis ttl) {
    auto owner = owned_hold(buyer, token);
    if (!owner) return std::move(owner).error();
    auto guard = locks_.lock(hold_key(owner->event, token));
    if (!guard) return std::move(guard).error();
    auto extended = store_.extend(token, ttl);
    if (!extended) return extended;
    db_.extend_pending(token, to_unix_ms(extended->expires_at), guard->fencing_token());
    metrics_.hold_extended();
    return extended;
}

Result<seatlock::Order> Ticketing::confirm(const std::string& buyer, const std::string& token,
                                           const std::string& payment_id) {
    if (auto ok = seatlock::validate_id("payment", payment_id); !ok) return std::move(ok).error();
    auto owner = owned_hold(buyer, token);
    if (!owner) return std::move(owner).error();
    // seatlock scopes order ids by event; this server's orders table does not (the
    // cancel URL names no event), so a payment id of another event's order is refused here.
    if (auto existing = db_.order(payment_id); existing && existing->hold_token != token) {
        return Failure(errc::order_conflict,
                       "payment " + payment_id + " already paid another hold");
    }
    auto guard =
        locks_.lock_all({hold_key(owner->event, token), order_key(owner->event, payment_id)});
    if (!guard) return std::move(guard).error();
    auto order = store_.confirm(token, payment_id);
    if (!order) return order;
    const bool recorded =
        db_.add_order({order->id, order->event, order->holder, order->zone, order->seats, token,
                       order->cancelled, to_unix_ms(order->paid_at), guard->fencing_token()});
    if (!recorded) {
        // Another event's hold took this payment id between the check above and now.
        (void)store_.cancel(order->event, order->id, buyer);
        return Failure(errc::order_conflict,
                       "payment " + payment_id + " already paid another hold");
    }
    metrics_.hold_confirmed();
    return order;
}

Result<void> Ticketing::release(const std::string& buyer, const std::string& token) {
    auto owner = owned_hold(buyer, token);
    if (!owner) return std::move(owner).error();
    auto guard = locks_.lock(hold_key(owner->event, token));
    if (!guard) return std::move(guard).error();
    if (auto released = store_.release(token); !released) return released;
    db_.close_hold(token, owner->event, buyer, HoldOutcome::released, guard->fencing_token());
    metrics_.hold_released();
    return {};
}

Result<seatlock::Order> Ticketing::cancel(const std::string& buyer, const std::string& order_id) {
    if (auto ok = seatlock::validate_id("order", order_id); !ok) return std::move(ok).error();
    auto record = db_.order(order_id);
    if (!record) return Failure(errc::unknown_order, "no order " + order_id);
    if (record->holder != buyer) {
        return Failure(errc::not_owner,
                       "order " + order_id + " belongs to another buyer than " + buyer);
    }
    auto guard = locks_.lock(order_key(record->event, order_id));
    if (!guard) return std::move(guard).error();
    auto order = store_.cancel(record->event, order_id, buyer);
    if (!order) return order;
    db_.cancel_order(order_id, guard->fencing_token());
    metrics_.order_cancelled();
    return order;
}

Result<std::size_t> Ticketing::drain_expired() {
    std::size_t drained = 0;
    for (;;) {
        auto batch = store_.expired(drain_batch, redeliver_after);
        if (!batch) return std::move(batch).error();
        std::vector<std::string> done;
        for (const auto& expired : *batch) {
            // Busy means a request is writing this hold's row right now: next delivery.
            auto guard = locks_.try_lock(hold_key(expired.event, expired.token));
            if (!guard) continue;
            db_.close_hold(expired.token, expired.event, expired.holder, HoldOutcome::expired,
                           guard->fencing_token());
            done.push_back(expired.token);
        }
        if (!done.empty()) {
            if (auto acked = store_.ack_expired(done); !acked) return std::move(acked).error();
            metrics_.holds_expired(done.size());
            drained += done.size();
        }
        if (batch->size() < drain_batch) return drained;
    }
}

void Ticketing::prune_closed_holds() {
    db_.prune_closed_holds(unix_ms_now() - closed_hold_memory_ms);
}

}  // namespace ticketing
