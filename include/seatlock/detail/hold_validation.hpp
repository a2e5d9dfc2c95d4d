// SPDX-License-Identifier: MIT
// seatlock/detail/hold_validation.hpp: the input checks of SeatHoldStore, each call's
// arguments turned into the op:: value the backend runs, or the Failure that says which
// argument is wrong (nothing is sent then).
//
// Shared by the blocking and asynchronous calls: both prepare the same value here. What
// the store knows (fences, versions seen) is not read here: the store passes it in.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/random.hpp>
#include <seatlock/errors.hpp>
#include <seatlock/hold_policy.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/operations.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seatlock::detail {

/// Throws seatlock::Error (invalid_argument) for a policy no store can apply.
inline void check_policy(const HoldPolicy& policy) {
    if (policy.hold_ttl <= Millis(0) || policy.max_hold_lifetime < policy.hold_ttl ||
        policy.max_seats_per_holder < 0 || policy.retries_on_unknown_outcome < 0) {
        throw Error(make_error_code(errc::invalid_argument),
                    "HoldPolicy needs hold_ttl > 0, max_hold_lifetime >= hold_ttl, "
                    "max_seats_per_holder >= 0 and retries_on_unknown_outcome >= 0");
    }
}

inline HoldLimits limits_of(const HoldPolicy& policy) {
    return {policy.max_seats_per_holder, policy.one_active_hold_per_holder};
}

/// unknown_hold for a string that is no hold token (it names no event).
inline Result<void> check_token(const std::string& token) {
    if (token_event(token).empty()) {
        return Failure(errc::unknown_hold, "malformed hold token '" + token.substr(0, 80) + "'");
    }
    return {};
}

/// The ids of a hold request, its seats asked once each, or its quantity in range.
inline Result<void> check_request(const std::string& event, const std::string& holder,
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

/// An event's inventory: ids, zones and seats defined once, sizes in range.
inline Result<void> check_spec(const EventSpec& spec) {
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

// One prepare_* per operation: its checked input as the op:: value, or why not.

inline Result<op::create_event> prepare_create(const EventSpec& spec) {
    if (auto ok = check_spec(spec); !ok) return std::move(ok).error();
    return op::create_event{spec};
}

/// `fenced`: whether the store fenced the event (its storage went back to older data).
inline Result<op::begin_recovery> prepare_recover(const EventSpec& spec, bool fenced) {
    if (auto ok = check_spec(spec); !ok) return std::move(ok).error();
    return op::begin_recovery{spec, fenced};
}

inline Result<op::restore_order> prepare_restore(const RestoreCommand& cmd) {
    for (auto [what, id] : {std::pair{"event", &cmd.event}, {"order", &cmd.order_id},
                            {"holder", &cmd.holder}, {"zone", &cmd.zone}}) {
        if (auto ok = validate_id(what, *id); !ok) return std::move(ok).error();
    }
    if (token_event(cmd.hold_token) != cmd.event) {
        return Failure(errc::invalid_argument,
                       "hold token '" + cmd.hold_token.substr(0, 80) + "' is not of event " + cmd.event);
    }
    if (cmd.seats.empty()) return Failure(errc::invalid_argument, "an order has seats");
    for (const auto& seat : cmd.seats) {
        if (auto ok = validate_id("seat", seat); !ok) return std::move(ok).error();
    }
    std::vector<std::string_view> sorted(cmd.seats.begin(), cmd.seats.end());
    std::sort(sorted.begin(), sorted.end());
    if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
        return Failure(errc::invalid_argument, "seat " + std::string(*twice) + " listed twice",
                       {std::string(*twice)});
    }
    return op::restore_order{cmd};
}

/// `at_least`: the version the event must go above (the caller's, or the highest seen).
inline Result<op::end_recovery> prepare_finish_recovery(const std::string& event,
                                                        EventVersion at_least) {
    if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
    return op::end_recovery{event, at_least};
}

inline Result<op::version> prepare_check_version(const std::string& event, EventVersion at_least) {
    if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
    return op::version{event, at_least};
}

/// A hold with a fresh token, its length checked against the policy.
inline Result<op::hold> prepare_hold(const HoldPolicy& policy, const std::string& event,
                                     const std::string& holder, const HoldRequest& request,
                                     const HoldOptions& options) {
    if (auto ok = check_request(event, holder, request); !ok) return std::move(ok).error();
    if (!options.idempotency_key.empty()) {
        if (auto ok = validate_id("idempotency key", options.idempotency_key); !ok) {
            return std::move(ok).error();
        }
    }
    const Millis length = options.ttl.value_or(policy.hold_ttl);
    if (length <= Millis(0) || length > policy.max_hold_lifetime) {
        return Failure(errc::invalid_argument,
                       "hold ttl must be positive and at most max_hold_lifetime (" +
                           std::to_string(policy.max_hold_lifetime.count()) + " ms)");
    }
    return op::hold{HoldCommand{event, holder, event + "." + random_hex128(), request, length,
                                limits_of(policy), options.idempotency_key}};
}

inline Result<op::confirm> prepare_confirm(const HoldPolicy& policy, const std::string& token,
                                           const std::string& order_id, bool late) {
    if (auto ok = check_token(token); !ok) return std::move(ok).error();
    if (auto ok = validate_id("order", order_id); !ok) return std::move(ok).error();
    return op::confirm{ConfirmCommand{token, order_id, late, limits_of(policy)}};
}

inline Result<op::release> prepare_release(const std::string& token) {
    if (auto ok = check_token(token); !ok) return std::move(ok).error();
    return op::release{token};
}

inline Result<op::extend> prepare_extend(const HoldPolicy& policy, const std::string& token,
                                         Millis ttl) {
    if (auto ok = check_token(token); !ok) return std::move(ok).error();
    if (ttl <= Millis(0)) return Failure(errc::invalid_argument, "extend ttl must be positive");
    return op::extend{token, ttl, policy.max_hold_lifetime};
}

inline Result<op::cancel> prepare_cancel(const std::string& event, const std::string& order_id,
                                         const std::optional<std::string>& holder) {
    if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
    if (auto ok = validate_id("order", order_id); !ok) return std::move(ok).error();
    if (holder) {
        if (auto ok = validate_id("holder", *holder); !ok) return std::move(ok).error();
    }
    return op::cancel{event, order_id, holder};
}

inline Result<op::seats> prepare_seats(const std::string& event,
                                       const std::optional<std::string>& zone) {
    if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
    if (zone) {
        if (auto ok = validate_id("zone", *zone); !ok) return std::move(ok).error();
    }
    return op::seats{event, zone};
}

/// The most changes one changes() call may ask for.
inline constexpr std::size_t max_changes_limit = 100'000;

inline Result<op::changes> prepare_changes(const std::string& event, EventVersion after,
                                           std::optional<EventHistory> history, std::size_t limit) {
    if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
    if (limit == 0 || limit > max_changes_limit) {
        return Failure(errc::invalid_argument,
                       "changes() needs 1 <= limit <= " + std::to_string(max_changes_limit));
    }
    return op::changes{event, after, history, limit};
}

inline Result<op::expired> prepare_expired(std::size_t limit, Millis redeliver_after) {
    if (limit == 0 || redeliver_after < Millis(0)) {
        return Failure(errc::invalid_argument, "expired() needs limit > 0 and redeliver_after >= 0");
    }
    return op::expired{limit, redeliver_after};
}

inline Result<op::ack_expired> prepare_ack(std::span<const std::string> tokens) {
    for (const auto& token : tokens) {
        if (auto ok = check_token(token); !ok) return std::move(ok).error();
    }
    return op::ack_expired{{tokens.begin(), tokens.end()}};
}

}  // namespace seatlock::detail
