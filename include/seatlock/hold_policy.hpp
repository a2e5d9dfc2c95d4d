// SPDX-License-Identifier: MIT
// seatlock/hold_policy.hpp: the rules a SeatHoldStore applies to every hold (HoldPolicy),
// and the per-call choices of SeatHoldStore::hold (HoldOptions).
#pragma once

#include <seatlock/backend.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace seatlock {

/// The business rules every hold is checked against.
struct HoldPolicy {
    Millis hold_ttl = std::chrono::minutes(10);           ///< default hold length
    Millis max_hold_lifetime = std::chrono::hours(2);     ///< extend() never goes past creation + this
    std::int64_t max_seats_per_holder = 3;                ///< held + paid per holder and event; 0 = no limit
    bool one_active_hold_per_holder = false;              ///< refuse a second active hold in an event
    int retries_on_unknown_outcome = 1;                   ///< re-sends of idempotent calls whose reply was lost
};

/// Per-call choices of SeatHoldStore::hold.
struct HoldOptions {
    /// The hold's length; policy().hold_ttl when not given.
    std::optional<Millis> ttl;
    /// The caller's idempotency key (an id: 1 to 128 characters of [A-Za-z0-9._@+-]), or
    /// empty. A hold call with a key that this holder already used in this event returns
    /// that hold as it stands now (Hold::replayed, Hold::status: held, confirmed, released
    /// or expired) instead of making a second one, for as long as the hold is remembered:
    /// while it is active, with its order once confirmed, 2 minutes after a release, an
    /// hour after its expiry was acknowledged. The same key for another zone or other
    /// seats is invalid_argument. Use a fresh key (a UUID) per buyer intent, and the same
    /// one for every retry of it.
    std::string idempotency_key;
};

}  // namespace seatlock
