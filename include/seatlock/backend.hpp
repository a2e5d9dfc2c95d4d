// seatlock/backend.hpp: the vocabulary of seats, holds and orders, and the concepts a
// storage backend satisfies.
//
// A backend performs each operation below as ONE atomic step against its storage (one
// Lua script call on Redis, one critical section in memory). Policy, validation, token
// generation, waiting and retries live in the front classes (LockManager,
// SeatHoldStore); a backend only applies commands that are already checked. Time
// (lease and hold expiry) is the backend's own clock, never the caller's.
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

/// A hold: seats kept for one holder until `expires_at`. The token is the capability for
/// every later call on the hold.
struct Hold {
    std::string token;
    std::string event;
    std::string holder;
    std::string zone;
    std::vector<std::string> seats;  ///< seat ids, or place numbers in a GA zone
    WallTime expires_at;
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
};

/// A confirm command. `late`: when the hold expired, take the same seats again if every
/// one of them is still free (and the holder's limit allows), then pay them.
struct ConfirmCommand {
    std::string token;
    std::string order_id;
    bool late = false;
    HoldLimits limits;
};

// ---------------------------------------------------------------------------------------
// Concepts

/// Storage for locks. Keys are validated by the caller (is_valid_lock_key), distinct, and
/// `owner` is a fresh 32-hex-digit token per acquisition.
template <typename B>
concept LockBackend = requires(B& b, std::span<const std::string> keys, const std::string& owner,
                               Millis lease) {
    /// Takes every key for `owner` until now + lease, or none of them. Succeeds also when
    /// `owner` already holds them (a retry). Returns a fencing token that is larger than
    /// any token returned before for any key of the same group. Fails with lock_busy
    /// (Failure::items = the keys held by others) when any key is held by someone else.
    { b.acquire_locks(keys, owner, lease) } -> std::same_as<Result<std::uint64_t>>;
    /// Frees the keys still held by `owner`; true when it still held all of them. Keys
    /// held by anyone else are never touched.
    { b.release_locks(keys, owner) } -> std::same_as<Result<bool>>;
    /// Moves the expiry of every key to now + lease if `owner` still holds all of them;
    /// false (and nothing changed) otherwise.
    { b.extend_locks(keys, owner, lease) } -> std::same_as<Result<bool>>;
};

/// Storage for seat holds. Commands arrive validated (ids, counts, no duplicate seats).
template <typename B>
concept HoldBackend = requires(B& b, const EventSpec& spec, const HoldCommand& hold,
                               const ConfirmCommand& confirm, const std::string& s,
                               const std::optional<std::string>& opt, Millis ttl,
                               std::size_t limit, std::span<const std::string> tokens) {
    /// Stores an event's inventory. The same spec again succeeds; another spec under the
    /// same id fails with event_exists.
    { b.create_event(spec) } -> std::same_as<Result<void>>;
    { b.events() } -> std::same_as<Result<std::vector<EventSpec>>>;
    /// All or nothing: seat_taken (items = the taken seats), sold_out (current = places
    /// left), limit_exceeded (limit, current), active_hold_exists, unknown_zone/seat.
    { b.hold(hold) } -> std::same_as<Result<Hold>>;
    /// held -> paid. Idempotent per (token, order id); order_conflict for another order id
    /// or an order id already used by another hold; hold_expired when it ran out.
    { b.confirm(confirm) } -> std::same_as<Result<Order>>;
    /// held -> free, and the hold is forgotten (unknown_hold from then on). Releasing an
    /// expired hold succeeds (its seats are free already); a confirmed one fails with
    /// hold_not_active.
    { b.release(s) } -> std::same_as<Result<void>>;
    /// Moves the expiry to now + ttl, capped at creation + max_lifetime.
    { b.extend(s, ttl, ttl) } -> std::same_as<Result<Hold>>;
    /// paid -> free (event, order id, and when given the holder that must own it:
    /// not_owner otherwise). Cancelling a cancelled order returns it again.
    { b.cancel(s, s, opt) } -> std::same_as<Result<Order>>;
    /// Every zone of the event, or only `zone` when given.
    { b.seats(s, opt) } -> std::same_as<Result<std::vector<ZoneState>>>;
    /// Up to `limit` expired holds not yet acknowledged and not delivered during the last
    /// `redeliver_after` (the second Millis). Each is reported at least once.
    { b.expired(limit, ttl) } -> std::same_as<Result<std::vector<ExpiredHold>>>;
    /// Acknowledges expired holds: they are never reported again.
    { b.ack_expired(tokens) } -> std::same_as<Result<void>>;
};

/// A complete backend: locks and holds over one storage.
template <typename B>
concept Backend = LockBackend<B> && HoldBackend<B>;

}  // namespace seatlock
