// seatlock/hold_store.hpp: SeatHoldStore<B>, holds, payments and cancellations of seats.
//
//     seatlock::MemoryBackend backend;
//     seatlock::SeatHoldStore store(backend);                  // HoldPolicy defaults
//     store.create_event(spec).value();
//     auto hold = store.hold("game1", "alice", seatlock::named_seats("lower", {"A-1", "A-2"}));
//     if (hold) store.confirm(hold->token, "payment-77");      // held -> paid, for good
//
// The store validates every input (ids, counts, duplicates) before anything reaches the
// backend, applies the HoldPolicy inside the backend's single atomic step, and retries
// once an operation whose reply was lost, which is safe because each is idempotent.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/random.hpp>
#include <seatlock/keys.hpp>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace seatlock {

/// The business rules every hold is checked against.
struct HoldPolicy {
    Millis hold_ttl = std::chrono::minutes(10);           ///< default hold length
    Millis max_hold_lifetime = std::chrono::hours(2);     ///< extend() never goes past creation + this
    std::int64_t max_seats_per_holder = 3;                ///< held + paid per holder and event; 0 = no limit
    bool one_active_hold_per_holder = false;              ///< refuse a second active hold in an event
    int retries_on_unknown_outcome = 1;                   ///< re-sends of idempotent calls whose reply was lost
};

template <HoldBackend B>
class SeatHoldStore {
public:
    /// `backend` must outlive the store.
    explicit SeatHoldStore(B& backend, HoldPolicy policy = {})
        : backend_(&backend), policy_(policy) {
        if (policy_.hold_ttl <= Millis(0) || policy_.max_hold_lifetime < policy_.hold_ttl ||
            policy_.max_seats_per_holder < 0 || policy_.retries_on_unknown_outcome < 0) {
            throw Error(make_error_code(errc::invalid_argument),
                        "HoldPolicy needs hold_ttl > 0, max_hold_lifetime >= hold_ttl, "
                        "max_seats_per_holder >= 0 and retries_on_unknown_outcome >= 0");
        }
    }

    [[nodiscard]] const HoldPolicy& policy() const noexcept { return policy_; }
    [[nodiscard]] B& backend() const noexcept { return *backend_; }

    /// Stores an event's inventory. Creating the same spec again is a no-op, so several
    /// server instances may all create it at start-up.
    Result<void> create_event(const EventSpec& spec) {
        if (auto ok = validate(spec); !ok) return ok;
        return retried([&] { return backend_->create_event(spec); });
    }

    /// Every event, in id order.
    Result<std::vector<EventSpec>> events() { return retried([&] { return backend_->events(); }); }

    /// Holds seats for `holder` until now + ttl (default `policy().hold_ttl`); all or nothing.
    Result<Hold> hold(const std::string& event, const std::string& holder,
                      const HoldRequest& request, std::optional<Millis> ttl = std::nullopt) {
        if (auto ok = validate(event, holder, request); !ok) return std::move(ok).error();
        const Millis length = ttl.value_or(policy_.hold_ttl);
        if (length <= Millis(0) || length > policy_.max_hold_lifetime) {
            return Failure(errc::invalid_argument,
                           "hold ttl must be positive and at most max_hold_lifetime (" +
                               std::to_string(policy_.max_hold_lifetime.count()) + " ms)");
        }
        HoldCommand cmd{event,   holder, event + "." + detail::random_hex128(),
                        request, length, limits()};
        return retried([&] { return backend_->hold(cmd); });
    }

    /// held -> paid, for good. The same token and order id again returns the same order
    /// (safe to retry after a lost reply); hold_expired when the hold ran out first.
    Result<Order> confirm(const std::string& token, const std::string& order_id) {
        return confirm_impl(token, order_id, false);
    }

    /// Like confirm, but a hold that expired is paid anyway when every one of its seats is
    /// still free (and the holder's limit allows); seat_taken otherwise. For payments that
    /// arrive after the hold ran out.
    Result<Order> confirm_late(const std::string& token, const std::string& order_id) {
        return confirm_impl(token, order_id, true);
    }

    /// held -> free; the hold is forgotten (a later call on it gets unknown_hold).
    /// Releasing an expired hold succeeds; a confirmed one is hold_not_active (cancel the
    /// order instead).
    Result<void> release(const std::string& token) {
        if (auto ok = validate_token(token); !ok) return ok;
        auto result = backend_->release(token);
        for (int i = 0; i < policy_.retries_on_unknown_outcome && result.is(errc::outcome_unknown); ++i) {
            result = backend_->release(token);
            // The hold is gone: the attempt whose reply was lost released it.
            if (result.is(errc::unknown_hold)) return {};
        }
        return result;
    }

    /// Moves the hold's expiry to now + ttl. Capped, never refused: a hold never lives
    /// past its creation + policy().max_hold_lifetime; the returned Hold says where it ends.
    Result<Hold> extend(const std::string& token, Millis ttl) {
        if (auto ok = validate_token(token); !ok) return std::move(ok).error();
        if (ttl <= Millis(0)) return Failure(errc::invalid_argument, "extend ttl must be positive");
        return retried([&] { return backend_->extend(token, ttl, policy_.max_hold_lifetime); });
    }

    /// paid -> free. When `holder` is given, the order must be theirs (not_owner otherwise).
    /// Order ids are the caller's own (payment ids), scoped by event: hence the event.
    Result<Order> cancel(const std::string& event, const std::string& order_id,
                         const std::optional<std::string>& holder = std::nullopt) {
        if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
        if (auto ok = validate_id("order", order_id); !ok) return std::move(ok).error();
        if (holder) {
            if (auto ok = validate_id("holder", *holder); !ok) return std::move(ok).error();
        }
        return retried([&] { return backend_->cancel(event, order_id, holder); });
    }

    /// The state of every zone of `event` (or just `zone`), as of the storage's now.
    Result<std::vector<ZoneState>> seats(const std::string& event,
                                         const std::optional<std::string>& zone = std::nullopt) {
        if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
        if (zone) {
            if (auto ok = validate_id("zone", *zone); !ok) return std::move(ok).error();
        }
        return retried([&] { return backend_->seats(event, zone); });
    }

    /// Up to `limit` holds that expired and are not yet acknowledged, including those that
    /// expired while nobody asked. A hold handed out here is handed out again after
    /// `redeliver_after` until acknowledged with ack_expired(): delivery is at least once.
    Result<std::vector<ExpiredHold>> expired(std::size_t limit = 100,
                                             Millis redeliver_after = std::chrono::seconds(30)) {
        if (limit == 0 || redeliver_after < Millis(0)) {
            return Failure(errc::invalid_argument, "expired() needs limit > 0 and redeliver_after >= 0");
        }
        return retried([&] { return backend_->expired(limit, redeliver_after); });
    }

    /// Acknowledges expired holds: they are never reported again.
    Result<void> ack_expired(std::span<const std::string> tokens) {
        for (const auto& token : tokens) {
            if (auto ok = validate_token(token); !ok) return ok;
        }
        return retried([&] { return backend_->ack_expired(tokens); });
    }

private:
    HoldLimits limits() const {
        return {policy_.max_seats_per_holder, policy_.one_active_hold_per_holder};
    }

    Result<Order> confirm_impl(const std::string& token, const std::string& order_id, bool late) {
        if (auto ok = validate_token(token); !ok) return std::move(ok).error();
        if (auto ok = validate_id("order", order_id); !ok) return std::move(ok).error();
        ConfirmCommand cmd{token, order_id, late, limits()};
        return retried([&] { return backend_->confirm(cmd); });
    }

    // Re-sends a call whose reply was lost. Only used for calls that are idempotent.
    template <typename F>
    auto retried(F&& call) -> decltype(call()) {
        auto result = call();
        for (int i = 0; i < policy_.retries_on_unknown_outcome && result.is(errc::outcome_unknown); ++i) {
            result = call();
        }
        return result;
    }

    static Result<void> validate_token(const std::string& token) {
        if (token_event(token).empty()) {
            return Failure(errc::unknown_hold, "malformed hold token '" + token.substr(0, 80) + "'");
        }
        return {};
    }

    static Result<void> validate(const std::string& event, const std::string& holder,
                                 const HoldRequest& request) {
        if (auto ok = validate_id("event", event); !ok) return ok;
        if (auto ok = validate_id("holder", holder); !ok) return ok;
        if (auto ok = validate_id("zone", request.zone); !ok) return ok;
        if (request.kind == HoldKind::seats) {
            if (request.seats.empty()) return Failure(errc::invalid_argument, "no seats asked");
            for (const auto& seat : request.seats) {
                if (auto ok = validate_id("seat", seat); !ok) return ok;
            }
            const auto& seats = request.seats;
            auto twice = seats.end();
            if (seats.size() <= 16) {  // the usual few seats: a scan beats building anything
                for (auto it = seats.begin(); it != seats.end() && twice == seats.end(); ++it) {
                    if (std::find(seats.begin(), it, *it) != it) twice = it;
                }
            } else {
                std::vector<std::string_view> sorted(seats.begin(), seats.end());
                std::sort(sorted.begin(), sorted.end());
                auto dup = std::adjacent_find(sorted.begin(), sorted.end());
                if (dup != sorted.end()) twice = std::find(seats.begin(), seats.end(), *dup);
            }
            if (twice != seats.end()) {
                return Failure(errc::invalid_argument, "seat " + *twice + " asked twice", {*twice});
            }
            return {};
        }
        if (!request.seats.empty()) {
            return Failure(errc::invalid_argument, "a quantity request names no seats");
        }
        if (request.quantity <= 0 || request.quantity > max_zone_places) {
            return Failure(errc::invalid_argument,
                           "quantity must be between 1 and " + std::to_string(max_zone_places) +
                               ", got " + std::to_string(request.quantity));
        }
        return {};
    }

    static Result<void> validate(const EventSpec& spec) {
        if (auto ok = validate_id("event", spec.id); !ok) return ok;
        if (spec.name.size() > 256) return Failure(errc::invalid_argument, "event name over 256 characters");
        if (spec.zones.empty()) return Failure(errc::invalid_argument, "event " + spec.id + " has no zone");
        std::set<std::string> zones;
        for (const auto& zone : spec.zones) {
            if (auto ok = validate_id("zone", zone.id); !ok) return ok;
            if (!zones.insert(zone.id).second) {
                return Failure(errc::invalid_argument, "zone " + zone.id + " defined twice");
            }
            if (zone.kind == ZoneKind::general_admission) {
                if (zone.capacity <= 0 || zone.capacity > max_zone_places || !zone.seats.empty()) {
                    return Failure(errc::invalid_argument,
                                   "general-admission zone " + zone.id +
                                       " needs a capacity from 1 to " +
                                       std::to_string(max_zone_places) + " and no named seats");
                }
                continue;
            }
            if (zone.seats.empty() || zone.seats.size() > static_cast<std::size_t>(max_zone_places) ||
                zone.capacity != 0) {
                return Failure(errc::invalid_argument,
                               "zone " + zone.id + " needs 1 to " + std::to_string(max_zone_places) +
                                   " named seats and no capacity");
            }
            std::set<std::string> seats;
            for (const auto& seat : zone.seats) {
                if (auto ok = validate_id("seat", seat.id); !ok) return ok;
                if (!seat.row.empty()) {
                    if (auto ok = validate_id("row", seat.row); !ok) return ok;
                }
                if (!seats.insert(seat.id).second) {
                    return Failure(errc::invalid_argument,
                                   "seat " + seat.id + " defined twice in zone " + zone.id);
                }
            }
        }
        return {};
    }

    B* backend_;
    HoldPolicy policy_;
};

}  // namespace seatlock
