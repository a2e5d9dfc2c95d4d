// seatlock/vocabulary.hpp: the vocabulary of seats, holds and orders that the front
// classes, the operations (seatlock/operations.hpp) and every backend share.
#pragma once

#include <seatlock/result.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace seatlock {

using Millis = std::chrono::milliseconds;
/// Instants reported to callers, on the wall clock. Expiry is decided by the storage's
/// clock; this is that instant translated for display and for clients.
using WallTime = std::chrono::system_clock::time_point;

// ---------------------------------------------------------------------------------------
// Inventory

/// One named seat. Its order is its position in the zone; seats that follow each other in
/// the zone and share a row are adjacent.
struct SeatSpec {
    std::string id;
    std::string row;  ///< empty when the zone has no rows
    bool operator==(const SeatSpec&) const = default;
};

enum class ZoneKind { named, general_admission };

/// "named" or "general_admission": the name used by the Redis functions and the server's JSON.
constexpr const char* to_string(ZoneKind k) noexcept {
    return k == ZoneKind::general_admission ? "general_admission" : "named";
}

/// A zone: named seats, or a general-admission zone of `capacity` places that are
/// assigned on hold as place numbers "1".."capacity", lowest free first.
struct ZoneSpec {
    std::string id;
    ZoneKind kind = ZoneKind::named;
    std::vector<SeatSpec> seats;  ///< named zones
    std::int64_t capacity = 0;    ///< general-admission zones

    static ZoneSpec named(std::string id, std::vector<SeatSpec> seats) {
        return {std::move(id), ZoneKind::named, std::move(seats), 0};
    }
    static ZoneSpec general_admission(std::string id, std::int64_t capacity) {
        return {std::move(id), ZoneKind::general_admission, {}, capacity};
    }
    bool operator==(const ZoneSpec&) const = default;
};

/// An event (a game, a show) and its zones.
struct EventSpec {
    std::string id;
    std::string name;  ///< free text for people
    std::vector<ZoneSpec> zones;
    bool operator==(const EventSpec&) const = default;
};

inline constexpr std::int64_t max_zone_places = 1'000'000;

// ---------------------------------------------------------------------------------------
// Holds and orders

enum class HoldKind {
    seats,           ///< these named seats
    quantity,        ///< n places of a general-admission zone, auto-assigned
    best_available,  ///< the n lowest-ordered free seats of a named zone, one row if possible
};

/// "seats", "quantity" or "best_available".
constexpr const char* to_string(HoldKind k) noexcept {
    switch (k) {
        case HoldKind::seats: return "seats";
        case HoldKind::quantity: return "quantity";
        case HoldKind::best_available: return "best_available";
    }
    return "seats";
}

/// What a buyer asks to hold; always within one zone.
struct HoldRequest {
    HoldKind kind = HoldKind::seats;
    std::string zone;
    std::vector<std::string> seats;  ///< HoldKind::seats
    std::int64_t quantity = 0;       ///< HoldKind::quantity and best_available
};

/// Named seats of one zone.
inline HoldRequest named_seats(std::string zone, std::vector<std::string> seats) {
    return {HoldKind::seats, std::move(zone), std::move(seats), 0};
}
/// n places in a general-admission zone.
inline HoldRequest quantity(std::string zone, std::int64_t n) {
    return {HoldKind::quantity, std::move(zone), {}, n};
}
/// The n best (lowest-ordered) free seats of a named zone, adjacent in one row when such
/// a run exists.
inline HoldRequest best_available(std::string zone, std::int64_t n) {
    return {HoldKind::best_available, std::move(zone), {}, n};
}

/// Where a hold stands. A new hold is always `held`; the others are seen when a hold
/// call is answered again (the same idempotency key, or a retry of a lost reply).
enum class HoldStatus {
    held,       ///< active until expires_at
    confirmed,  ///< paid: Hold::order_id names the order
    released,   ///< given back by release()
    expired,    ///< ran out
};

constexpr const char* to_string(HoldStatus s) noexcept {
    switch (s) {
        case HoldStatus::held: return "held";
        case HoldStatus::confirmed: return "confirmed";
        case HoldStatus::released: return "released";
        case HoldStatus::expired: return "expired";
    }
    return "held";
}

/// A hold: seats kept for one holder until `expires_at`. The token is the capability for
/// every later call on the hold.
struct Hold {
    std::string token;
    std::string event;
    std::string holder;
    std::string zone;
    std::vector<std::string> seats;  ///< seat ids, or place numbers in a GA zone
    WallTime expires_at;
    HoldStatus status = HoldStatus::held;
    std::string order_id;   ///< the order that paid it, when status is confirmed
    bool replayed = false;  ///< true when an earlier hold call with the same idempotency key made it
    /// The event's version after the step that answered (see EventVersion).
    std::uint64_t version = 0;
};

/// A paid order: seats that stay the holder's until cancelled.
struct Order {
    std::string id;
    std::string event;
    std::string holder;
    std::string zone;
    std::vector<std::string> seats;
    std::string hold_token;
    WallTime paid_at;
    bool cancelled = false;
    /// The event's version after the step that answered (see EventVersion).
    std::uint64_t version = 0;
};

enum class SeatState { free, held, paid };

constexpr const char* to_string(SeatState s) noexcept {
    switch (s) {
        case SeatState::free: return "free";
        case SeatState::held: return "held";
        case SeatState::paid: return "paid";
    }
    return "free";
}

struct SeatStatus {
    std::string id;
    std::string row;
    SeatState state = SeatState::free;
};

/// The state of one zone at one instant. Named zones list every seat; GA zones count.
struct ZoneState {
    std::string zone;
    ZoneKind kind = ZoneKind::named;
    std::int64_t capacity = 0;
    std::int64_t free = 0;
    std::int64_t held = 0;
    std::int64_t paid = 0;
    std::vector<SeatStatus> seats;  ///< named zones only, in zone order
};

/// A hold that ran out, reported by `expired()` until acknowledged.
struct ExpiredHold {
    std::string token;
    std::string event;
    std::string holder;
    std::string zone;
    std::vector<std::string> seats;
    WallTime expired_at;
};

/// The business limits a hold is checked against, atomically with the hold itself.
struct HoldLimits {
    std::int64_t max_seats_per_holder = 3;  ///< held + paid seats of a holder in one event; 0 = none
    bool one_active_hold_per_holder = false;
};

/// A fully validated hold command, as the store hands it to a backend.
struct HoldCommand {
    std::string event;
    std::string holder;
    std::string token;  ///< fresh; a retry with the same token returns the same hold
    HoldRequest request;
    Millis ttl{};
    HoldLimits limits;
    /// The caller's idempotency key, or empty. While the hold made with this key by this
    /// holder is remembered, the same key returns that hold (with its status) instead of
    /// making another; the same key for another zone or other seats is invalid_argument.
    std::string idempotency_key;
};

/// A paid order to put back into storage that lost it (SeatHoldStore::restore_order),
/// from the application's own records.
struct RestoreCommand {
    std::string event;
    std::string order_id;
    std::string holder;
    std::string zone;
    std::vector<std::string> seats;  ///< seat ids, or place numbers of a GA zone
    std::string hold_token;          ///< the hold it paid: a retried confirm finds the order
    WallTime paid_at;
};

/// What begin_recovery found.
enum class Recovery {
    created,  ///< the event was missing: it now exists, hidden, with every seat free
    existed,  ///< the event was there (open, or hidden by another recovery): left as it was
    /// The event was there, but the storage had gone back to older data (a rollback this
    /// store detected): it is now hidden, as it stands, until end_recovery.
    rolled_back,
};

/// Every event has a version: a counter that each step changing the event (hold,
/// confirm, release, extend, cancel, the expiry of holds, recovery) raises by one in the
/// same atomic step, and that every such step's result carries. A storage that answers
/// with a version at or below one already seen went back to older data.
using EventVersion = std::uint64_t;

/// A confirm command. `late`: when the hold expired, take the same seats again if every
/// one of them is still free (and the holder's limit allows), then pay them.
struct ConfirmCommand {
    std::string token;
    std::string order_id;
    bool late = false;
    HoldLimits limits;
};

}  // namespace seatlock
