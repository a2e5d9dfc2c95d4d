// SPDX-License-Identifier: MIT
// seatlock/detail/hold_state.hpp: the containers of one event's seats, holds and orders
// for the in-process backends, and the bookkeeping that keeps them consistent (which slot
// is free, held or paid, holders' counts, timers). The rules that decide what a call may
// do live in hold_table.hpp.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/event_history.hpp>
#include <seatlock/detail/released_tokens.hpp>
#include <seatlock/detail/text.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace seatlock::detail {

/// The free slots of a zone as a bitmap, walked lowest first. `hint_` is a lower bound of
/// the lowest free slot, so that filling a zone from the front stays cheap.
class FreeSlots {
public:
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

    explicit FreeSlots(std::size_t n) : words_((n + 63) / 64, ~std::uint64_t{0}), count_(n) {
        if (n % 64) words_.back() = (std::uint64_t{1} << (n % 64)) - 1;
    }
    std::size_t size() const { return count_; }
    bool contains(std::size_t i) const { return words_[i / 64] >> (i % 64) & 1; }
    void insert(std::size_t i) {
        if (contains(i)) return;
        words_[i / 64] |= std::uint64_t{1} << (i % 64);
        ++count_;
        hint_ = std::min(hint_, i);
    }
    void erase(std::size_t i) {
        if (!contains(i)) return;
        words_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
        --count_;
    }
    /// The lowest free slot >= from, or npos.
    std::size_t next(std::size_t from) {
        if (from <= hint_) {
            hint_ = scan(hint_);
            return hint_ == npos ? npos : hint_;
        }
        return scan(from);
    }

private:
    std::size_t scan(std::size_t from) const {
        if (from == npos) return npos;
        for (std::size_t w = from / 64; w < words_.size(); ++w) {
            std::uint64_t bits = words_[w];
            if (w == from / 64) bits &= ~std::uint64_t{0} << (from % 64);
            if (bits) return w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
        }
        return npos;
    }

    std::vector<std::uint64_t> words_;
    std::size_t count_;
    std::size_t hint_ = 0;
};

/// How long an expired hold is remembered after its expiry was acknowledged, so that a
/// late confirm gets hold_expired (and confirm_late can still pay it) instead of
/// unknown_hold. Confirmed holds are kept with their order.
inline constexpr std::int64_t hold_memory_ms = 3600LL * 1000;
/// How long a released hold is remembered: a retried release succeeds and a replayed
/// idempotency key finds it for this long after the release. Retries come within
/// seconds; under heavy traffic every released hold costs memory for this long (about
/// 200 bytes each on Redis, about 11 in memory).
inline constexpr std::int64_t released_memory_ms = 2LL * 60 * 1000;

/// One event's state: its zones' slots, holds, holders' counts, orders and timers, behind
/// one mutex. Records point at each other instead of copying names: at keys of `holds`,
/// `orders` and `keyed`, at entries of `holders` and at `zones`, whose nodes never move
/// (zones and holders are never erased while the event lives).
struct EventState {
using Status = HoldStatus;

struct HolderCount {
    std::int64_t held = 0;
    std::int64_t paid = 0;
    std::int64_t active_holds = 0;
};
using Holder = std::pair<const std::string, HolderCount>;

struct Zone;

struct HoldRecord {
    Holder* holder = nullptr;
    Zone* zone = nullptr;
    std::vector<std::size_t> slots;  // its seats: Zone::seat_id of each
    std::int64_t created_ms = 0;
    std::int64_t expires_ms = 0;
    Status status = Status::held;
    const std::string* order_id = nullptr;  // the key inside `orders`, once confirmed
    const std::string* keyed_as = nullptr;  // the key inside `keyed`, for an idempotency key

    [[nodiscard]] const std::string& holder_id() const { return holder->first; }
    [[nodiscard]] const std::string& zone_id() const { return zone->spec->id; }
    [[nodiscard]] std::vector<std::string> seats() const {
        std::vector<std::string> ids;
        ids.reserve(slots.size());
        for (std::size_t slot : slots) ids.push_back(zone->seat_id(slot));
        return ids;
    }
};

struct Slot {
    SeatState state = SeatState::free;
    // The hold token while held, the order id while paid: the key inside `holds` or
    // `orders`, whose nodes never move.
    const std::string* owner = nullptr;
};

struct Zone {
    const ZoneSpec* spec = nullptr;
    std::vector<Slot> slots;
    std::unordered_map<std::string, std::size_t> index;  // seat id -> slot
    FreeSlots free{0};
    std::int64_t held = 0;
    std::int64_t paid = 0;

    bool general_admission() const { return spec->kind == ZoneKind::general_admission; }
    std::string seat_id(std::size_t slot) const {
        return general_admission() ? std::to_string(slot + 1) : spec->seats[slot].id;
    }
};

using Holds = std::unordered_map<std::string, HoldRecord>;

    explicit EventState(EventSpec s) : spec(std::move(s)) {
        for (const auto& zs : spec.zones) {
            Zone& zone = zones[zs.id];
            zone.spec = &zs;
            const std::size_t n = zs.kind == ZoneKind::general_admission
                                      ? static_cast<std::size_t>(zs.capacity)
                                      : zs.seats.size();
            zone.slots.resize(n);
            zone.free = FreeSlots(n);
            for (std::size_t i = 0; i < zs.seats.size(); ++i) zone.index[zs.seats[i].id] = i;
        }
    }

    std::mutex mutex;
    const EventSpec spec;
    std::atomic<bool> visible{true};  // false from begin_recovery to end_recovery
    EventVersion version = 0;         // raised by every step that changes the event
    EventHistory history = new_history();  // a new one at end_recovery of a hidden event

    // The change log: the changes of the last `log_limit` steps that changed a seat or a
    // count, oldest first, in version order (a step's changes share its version). Every
    // change after `log_floor()` is in it. A change names its zone and slot, not their
    // ids: changes_after makes the SeatChange a reader gets.
    struct LoggedChange {
        EventVersion version = 0;
        const Zone* zone = nullptr;
        std::size_t slot = 0;  // FreeSlots::npos: a general-admission zone's counts
        SeatState state = SeatState::free;
        WallTime expires_at{};
        std::int64_t free = 0, held = 0, paid = 0;
    };
    std::deque<LoggedChange> log;
    std::size_t log_steps = 0;  // the steps in `log`
    std::size_t log_limit = default_change_log_limit;
    bool log_trimmed = false;       // a step has left the log
    EventVersion log_restart = 0;   // end_recovery of a hidden event starts the log afresh here
                                    // (and a new history)
    // The slots the step under way changed (GA zones: npos, once per zone), logged when it
    // raises the version (bump) and dropped when it fails.
    std::vector<std::pair<Zone*, std::size_t>> touched;
    // The wall time of a storage-clock instant (the table's), for the log's expiries.
    std::function<WallTime(std::int64_t)> wall;

    /// Changes after this version are all in the log: after a trim, the version just
    /// before the oldest step kept.
    [[nodiscard]] EventVersion log_floor() const {
        EventVersion floor = log_restart;
        if (log_trimmed && !log.empty()) floor = std::max(floor, log.front().version - 1);
        return floor;
    }
    std::unordered_map<std::string, Zone> zones;
    Holds holds;
    std::unordered_map<std::string, HolderCount> holders;
    using Orders = std::unordered_map<std::string, Order>;
    Orders orders;
    // Active holds by expiry; the token points at the key inside `holds`.
    std::set<std::pair<std::int64_t, const std::string*>> deadlines;
    std::map<std::string, std::int64_t> pending_expired;  // token -> next delivery
    // Expired and released holds to drop, oldest first (the clock only moves
    // forward; one queue per memory length keeps each in order).
    std::deque<std::pair<std::int64_t, const std::string*>> forget;
    std::deque<std::pair<std::int64_t, const std::string*>> forget_released;
    // "<holder>\n<idempotency key>" -> the token of the hold it made.
    std::unordered_map<std::string, const std::string*> keyed;

    // Released holds made without an idempotency key are remembered by the random bits of
    // their token alone: all a retried release, confirm or extend needs to know is that
    // the hold was released. A whole record per release would grow memory (and slow
    // every hold) many times as much under heavy traffic.
    ReleasedTokens released{released_memory_ms};

    bool was_released(std::string_view token, std::int64_t now) const {
        return released.contains(TokenBits::of(token), now);
    }

    static std::string key_of(const std::string& holder, const std::string& key) {
        return holder + '\n' + key;
    }

    Holder& holder(const std::string& id) { return *holders.try_emplace(id).first; }

    // Forgets the records of `queue` that are due.
    void drop(std::deque<std::pair<std::int64_t, const std::string*>>& queue, std::int64_t now) {
        while (!queue.empty() && queue.front().first <= now) {
            auto it = holds.find(*queue.front().second);
            queue.pop_front();
            // A hold paid by confirm_late after it expired stays with its order.
            if (it == holds.end() || it->second.status == Status::confirmed) continue;
            if (it->second.keyed_as) keyed.erase(keyed.find(*it->second.keyed_as));
            holds.erase(it);
        }
    }

    void touch(Zone& zone, std::size_t slot) {
        touched.emplace_back(&zone, zone.general_admission() ? FreeSlots::npos : slot);
    }

    void free_slots(Zone& zone, const std::vector<std::size_t>& slots, const std::string* owner) {
        for (std::size_t slot : slots) {
            Slot& s = zone.slots[slot];
            if (s.owner != owner) continue;
            touch(zone, slot);
            (s.state == SeatState::held ? zone.held : zone.paid) -= 1;
            s = Slot{};
            zone.free.insert(slot);
        }
    }

    void take_slots(Zone& zone, const std::vector<std::size_t>& slots, SeatState state,
                    const std::string* owner) {
        for (std::size_t slot : slots) {
            Slot& s = zone.slots[slot];
            touch(zone, slot);
            if (s.state == SeatState::free) zone.free.erase(slot);
            else (s.state == SeatState::held ? zone.held : zone.paid) -= 1;
            s = Slot{state, owner};
            (state == SeatState::held ? zone.held : zone.paid) += 1;
        }
    }

    static void count_hold_end(const HoldRecord& h) {
        HolderCount& c = h.holder->second;
        c.held -= static_cast<std::int64_t>(h.slots.size());
        c.active_holds -= 1;
    }

    Result<Zone*> zone_for(const std::string& zone_id) {
        auto it = zones.find(zone_id);
        if (it == zones.end()) {
            return Failure(errc::unknown_zone,
                           "event " + spec.id + " has no zone " + zone_id, {zone_id});
        }
        return &it->second;
    }

    // The stored hold (its key is the token, whose node never moves).
    Result<Holds::iterator> record(const std::string& token, std::int64_t now) {
        auto it = holds.find(token);
        if (it == holds.end()) {
            if (was_released(token, now)) {
                return Failure(errc::hold_not_active, "hold " + token + " was released");
            }
            return Failure(errc::unknown_hold, "no hold " + token + " in event " + spec.id);
        }
        return it;
    }
};

}  // namespace seatlock::detail
