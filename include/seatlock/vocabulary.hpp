// SPDX-License-Identifier: MIT
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
#include <string_view>
#include <unordered_map>
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

/// One named seat's state.
struct SeatStatus {
    std::string id;
    std::string row;
    SeatState state = SeatState::free;
    /// state == held: when the hold runs out (a hold past it is still reported held until
    /// the expiry sweep has run; a viewer shows it free from expires_at on).
    WallTime expires_at{};
    bool operator==(const SeatStatus&) const = default;
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
    bool operator==(const ZoneState&) const = default;
};

/// Every event has a version: a counter that each step changing the event (hold,
/// confirm, release, extend, cancel, the expiry of holds, recovery) raises by one in the
/// same atomic step, and that every such step's result carries. A storage that answers
/// with a version at or below one already seen went back to older data.
using EventVersion = std::uint64_t;

/// Which history of an event a version belongs to. The event gets one when it is created
/// and another at every end_recovery of it while hidden, which starts its versions again
/// from storage that may differ from what readers saw (a loss, older data): the same
/// version in two histories need not be the same state. Drawn at random (never 0, but on
/// events a storage holds from before histories existed).
using EventHistory = std::uint64_t;

/// Where a reader of the change feed stands: a version of one history of the event. A
/// SeatMap's and a ChangePage's position() are what changes() takes to go on from them.
struct FeedPosition {
    EventVersion version = 0;
    EventHistory history = 0;
    bool operator==(const FeedPosition&) const = default;
};

/// The seats of an event at exactly one version: what seats() answers. A range over its
/// zones (begin, end, size, operator[], at) as well.
struct SeatMap {
    EventVersion version = 0;
    EventHistory history = 0;      ///< the history `version` belongs to
    std::vector<ZoneState> zones;  ///< in the event's zone order (or the one zone asked for)

    /// Where a change feed reader that starts from this map stands (changes()).
    [[nodiscard]] FeedPosition position() const { return {version, history}; }

    [[nodiscard]] auto begin() const { return zones.begin(); }
    [[nodiscard]] auto end() const { return zones.end(); }
    [[nodiscard]] auto begin() { return zones.begin(); }
    [[nodiscard]] auto end() { return zones.end(); }
    [[nodiscard]] std::size_t size() const { return zones.size(); }
    [[nodiscard]] bool empty() const { return zones.empty(); }
    [[nodiscard]] const ZoneState& operator[](std::size_t i) const { return zones[i]; }
    [[nodiscard]] ZoneState& operator[](std::size_t i) { return zones[i]; }
    [[nodiscard]] const ZoneState& at(std::size_t i) const { return zones.at(i); }
    [[nodiscard]] ZoneState& at(std::size_t i) { return zones.at(i); }
    [[nodiscard]] const ZoneState& front() const { return zones.front(); }
    [[nodiscard]] const ZoneState& back() const { return zones.back(); }
    bool operator==(const SeatMap&) const = default;
};

/// One seat (or a general-admission zone's counts) after one step.
struct SeatChange {
    EventVersion version = 0;  ///< the version the step raised the event to
    std::string zone;
    std::string seat;  ///< named zone: the seat id; general-admission zone: empty
    SeatState state = SeatState::free;  ///< named zone: the seat's new state
    WallTime expires_at{};              ///< state held: when the hold runs out
    /// The zone's counts after the step (named and general-admission zones).
    std::int64_t free = 0, held = 0, paid = 0;
    bool operator==(const SeatChange&) const = default;
};

/// Changes after a version, in version order. A page never splits one step's changes.
struct ChangePage {
    /// Applying `changes` to the state at `after` gives the state at `version`.
    EventVersion version = 0;
    EventHistory history = 0;  ///< the history of the event, the same as the reader's
    std::vector<SeatChange> changes;
    bool more = false;  ///< later changes exist: ask again with after = position()

    /// Where the reader stands once it has applied `changes`.
    [[nodiscard]] FeedPosition position() const { return {version, history}; }
};

/// How many steps' changes an event's change log keeps by default (MemoryBackend,
/// FakeBackend, RedisOptions::change_log_limit): the log of each event holds the changes
/// of its last this many steps that changed a seat or a count.
inline constexpr std::size_t default_change_log_limit = 10'000;

/// Applies changes (a ChangePage's, in order) to a map: each seat change sets the seat's
/// state and expiry, and each change sets its zone's counts; the map's version becomes
/// `version`. Zones or seats the map does not have are skipped (a map of one zone). Costs
/// the changes plus one pass over the seats of each zone they touch.
inline void apply(SeatMap& map, const std::vector<SeatChange>& changes, EventVersion version) {
    struct Index {
        ZoneState* zone = nullptr;
        std::unordered_map<std::string_view, SeatStatus*> seats;  // built on first use
    };
    std::unordered_map<std::string_view, Index> zones;
    for (ZoneState& z : map.zones) zones[z.zone].zone = &z;
    for (const SeatChange& c : changes) {
        auto it = zones.find(c.zone);
        if (it == zones.end()) continue;
        Index& index = it->second;
        index.zone->free = c.free;
        index.zone->held = c.held;
        index.zone->paid = c.paid;
        if (c.seat.empty()) continue;
        if (index.seats.empty()) {
            for (SeatStatus& s : index.zone->seats) index.seats.emplace(s.id, &s);
        }
        auto seat = index.seats.find(c.seat);
        if (seat == index.seats.end()) continue;
        seat->second->state = c.state;
        seat->second->expires_at = c.state == SeatState::held ? c.expires_at : WallTime{};
    }
    map.version = version;
}

/// Applies a page of changes (changes() from the map's position()) to the map: the map is
/// then at the page's position.
inline void apply(SeatMap& map, const ChangePage& page) {
    apply(map, page.changes, page.version);
    map.history = page.history;
}

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

/// A confirm command. `late`: when the hold expired, take the same seats again if every
/// one of them is still free (and the holder's limit allows), then pay them.
struct ConfirmCommand {
    std::string token;
    std::string order_id;
    bool late = false;
    HoldLimits limits;
};

}  // namespace seatlock
