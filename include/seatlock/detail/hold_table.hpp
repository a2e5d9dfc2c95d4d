// seatlock/detail/hold_table.hpp: the in-process seat-hold state machine shared by
// MemoryBackend and FakeBackend (the Redis backend implements the same rules in Lua, and
// the conformance suite holds the two to one behaviour).
//
// State is kept per event, each event behind its own mutex. Every operation on an event
// first expires the holds whose deadline has passed (the "sweep"), so an expired hold is
// gone the moment it expires, whoever looks next, and its expiry is queued for
// `expired()` in the same step: no expiry is ever lost.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/keys.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace seatlock::detail {

/// How long an expired hold is remembered after its expiry was acknowledged, so that a
/// late confirm gets hold_expired (and confirm_late can still pay it) instead of
/// unknown_hold. Confirmed holds are kept with their order; released holds are forgotten.
inline constexpr std::int64_t hold_memory_ms = 3600LL * 1000;

/// Joins ids for error messages: "A-1, A-2".
inline std::string join(const std::vector<std::string>& items) {
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i) text += (i ? ", " : "") + items[i];
    return text;
}

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

class HoldTable {
public:
    /// Translates the table's clock (milliseconds) to wall time for callers.
    using WallFn = std::function<WallTime(std::int64_t)>;

    explicit HoldTable(WallFn wall) : wall_(std::move(wall)) {}

    Result<void> create_event(const EventSpec& spec) {
        Shard& shard = shard_of(spec.id);
        std::unique_lock lock(shard.mutex);
        auto it = shard.events.find(spec.id);
        if (it != shard.events.end()) {
            if (it->second->spec == spec) return {};
            return Failure(errc::event_exists,
                           "event " + spec.id + " already exists with another inventory");
        }
        shard.events.emplace(spec.id, std::make_unique<Event>(spec));
        return {};
    }

    Result<std::vector<EventSpec>> events() const {
        std::vector<EventSpec> specs;
        for (Event* event : all_events()) specs.push_back(event->spec);
        std::sort(specs.begin(), specs.end(),
                  [](const EventSpec& a, const EventSpec& b) { return a.id < b.id; });
        return specs;
    }

    Result<Hold> hold(const HoldCommand& cmd, std::int64_t now) {
        return with_event(cmd.event, now, [&](Event& e) { return e.hold(cmd, now, *this); });
    }

    Result<Order> confirm(const ConfirmCommand& cmd, std::int64_t now) {
        return with_token(cmd.token, now, [&](Event& e) { return e.confirm(cmd, now, *this); });
    }

    Result<void> release(const std::string& token, std::int64_t now) {
        return with_token(token, now, [&](Event& e) { return e.release(token); });
    }

    Result<Hold> extend(const std::string& token, Millis ttl, Millis max_lifetime,
                        std::int64_t now) {
        return with_token(token, now, [&](Event& e) {
            return e.extend(token, ttl.count(), max_lifetime.count(), now, *this);
        });
    }

    Result<Order> cancel(const std::string& event, const std::string& order_id,
                         const std::optional<std::string>& holder, std::int64_t now) {
        return with_event(event, now,
                          [&](Event& e) { return e.cancel(order_id, holder, now, *this); });
    }

    Result<std::vector<ZoneState>> seats(const std::string& event,
                                         const std::optional<std::string>& zone,
                                         std::int64_t now) {
        return with_event(event, now, [&](Event& e) { return e.states(zone); });
    }

    Result<std::vector<ExpiredHold>> expired(std::size_t limit, Millis redeliver_after,
                                             std::int64_t now) {
        std::vector<ExpiredHold> out;
        for (Event* event : all_events()) {
            if (out.size() >= limit) break;
            std::lock_guard lock(event->mutex);
            event->sweep(now);
            event->collect_expired(out, limit, now + redeliver_after.count(), now, *this);
        }
        return out;
    }

    Result<void> ack_expired(std::span<const std::string> tokens, std::int64_t now) {
        for (const auto& token : tokens) {
            Event* event = find(std::string(token_event(token)));
            if (!event) continue;  // unknown tokens are already as acknowledged as they can be
            std::lock_guard lock(event->mutex);
            event->ack(token, now);
        }
        return {};
    }

private:
    enum class Status { held, confirmed, expired };

    struct HoldRecord {
        std::string holder;
        std::string zone;
        std::vector<std::string> seats;
        std::vector<std::size_t> slots;
        std::int64_t created_ms = 0;
        std::int64_t expires_ms = 0;
        Status status = Status::held;
        std::string order_id;
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

    struct HolderCount {
        std::int64_t held = 0;
        std::int64_t paid = 0;
        std::int64_t active_holds = 0;
    };

    struct Event {
        explicit Event(EventSpec s) : spec(std::move(s)) {
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
        std::unordered_map<std::string, Zone> zones;
        std::unordered_map<std::string, HoldRecord> holds;
        std::unordered_map<std::string, HolderCount> holders;
        std::unordered_map<std::string, Order> orders;
        // Active holds by expiry; the token points at the key inside `holds`.
        std::set<std::pair<std::int64_t, const std::string*>> deadlines;
        std::map<std::string, std::int64_t> pending_expired;  // token -> next delivery
        // Inactive holds to drop, oldest first (the clock only moves forward).
        std::deque<std::pair<std::int64_t, const std::string*>> forget;

        // Expires every active hold whose deadline has passed and forgets old records.
        void sweep(std::int64_t now) {
            while (!deadlines.empty() && deadlines.begin()->first <= now) {
                const std::string* token = deadlines.begin()->second;
                deadlines.erase(deadlines.begin());
                HoldRecord& h = holds.find(*token)->second;
                free_slots(h.zone, h.slots, token);
                count_hold_end(h);
                h.status = Status::expired;
                pending_expired[*token] = now;
            }
            while (!forget.empty() && forget.front().first <= now) {
                holds.erase(*forget.front().second);
                forget.pop_front();
            }
        }

        void free_slots(const std::string& zone_id, const std::vector<std::size_t>& slots,
                        const std::string* owner) {
            Zone& zone = zones.at(zone_id);
            for (std::size_t slot : slots) {
                Slot& s = zone.slots[slot];
                if (s.owner != owner) continue;
                (s.state == SeatState::held ? zone.held : zone.paid) -= 1;
                s = Slot{};
                zone.free.insert(slot);
            }
        }

        void take_slots(Zone& zone, const std::vector<std::size_t>& slots, SeatState state,
                        const std::string* owner) {
            for (std::size_t slot : slots) {
                Slot& s = zone.slots[slot];
                if (s.state == SeatState::free) zone.free.erase(slot);
                else (s.state == SeatState::held ? zone.held : zone.paid) -= 1;
                s = Slot{state, owner};
                (state == SeatState::held ? zone.held : zone.paid) += 1;
            }
        }

        void count_hold_end(const HoldRecord& h) {
            HolderCount& c = holders[h.holder];
            c.held -= static_cast<std::int64_t>(h.slots.size());
            c.active_holds -= 1;
        }

        Hold to_hold(const std::string& token, const HoldRecord& h, const HoldTable& t) const {
            return Hold{token, spec.id, h.holder, h.zone, h.seats, t.wall_(h.expires_ms)};
        }

        Result<Zone*> zone_for(const std::string& zone_id) {
            auto it = zones.find(zone_id);
            if (it == zones.end()) {
                return Failure(errc::unknown_zone,
                               "event " + spec.id + " has no zone " + zone_id, {zone_id});
            }
            return &it->second;
        }

        // Which slots a request names or picks; a Failure when it cannot be served.
        Result<std::vector<std::size_t>> pick(Zone& zone, const HoldRequest& req) {
            const auto n = static_cast<std::size_t>(req.quantity);
            if (req.kind == HoldKind::seats) {
                if (zone.general_admission()) {
                    return Failure(errc::invalid_argument,
                                   "zone " + zone.spec->id +
                                       " is general admission: ask for a quantity of places");
                }
                std::vector<std::size_t> slots;
                std::vector<std::string> unknown, taken;
                for (const auto& seat : req.seats) {
                    auto it = zone.index.find(seat);
                    if (it == zone.index.end()) unknown.push_back(seat);
                    else if (zone.slots[it->second].state != SeatState::free) taken.push_back(seat);
                    else slots.push_back(it->second);
                }
                if (!unknown.empty()) {
                    return Failure(errc::unknown_seat,
                                   "zone " + zone.spec->id + " has no seat " + join(unknown),
                                   unknown);
                }
                if (!taken.empty()) {
                    return Failure(errc::seat_taken,
                                   (taken.size() == 1 ? "seat " : "seats ") + join(taken) +
                                       " of zone " + zone.spec->id + " already taken",
                                   taken);
                }
                return slots;
            }
            if (req.kind == HoldKind::quantity && !zone.general_admission()) {
                return Failure(errc::invalid_argument,
                               "zone " + zone.spec->id +
                                   " has named seats: name them or ask for best_available");
            }
            if (zone.free.size() < n) {
                Failure f(errc::sold_out, "zone " + zone.spec->id + " has " +
                                              std::to_string(zone.free.size()) +
                                              " free places, " + std::to_string(n) + " asked");
                f.current = static_cast<std::int64_t>(zone.free.size());
                return f;
            }
            if (!zone.general_admission()) {
                // The first run of n free seats that follow each other in one row.
                std::vector<std::size_t> run;
                for (std::size_t slot = zone.free.next(0); slot != FreeSlots::npos;
                     slot = zone.free.next(slot + 1)) {
                    const bool continues =
                        !run.empty() && slot == run.back() + 1 &&
                        zone.spec->seats[slot].row == zone.spec->seats[run.back()].row;
                    if (!continues) run.clear();
                    run.push_back(slot);
                    if (run.size() == n) return run;
                }
            }
            std::vector<std::size_t> lowest;
            for (std::size_t slot = zone.free.next(0); lowest.size() < n;
                 slot = zone.free.next(slot + 1)) {
                lowest.push_back(slot);
            }
            return lowest;
        }

        Result<void> check_limits(const std::string& holder, std::size_t n,
                                  const HoldLimits& limits) {
            const HolderCount& c = holders[holder];
            if (limits.one_active_hold_per_holder && c.active_holds > 0) {
                return Failure(errc::active_hold_exists,
                               "holder " + holder + " already has an active hold in event " +
                                   spec.id);
            }
            const auto has = c.held + c.paid;
            if (limits.max_seats_per_holder > 0 &&
                has + static_cast<std::int64_t>(n) > limits.max_seats_per_holder) {
                Failure f(errc::limit_exceeded,
                          "holder " + holder + " has " + std::to_string(has) + " seats in event " +
                              spec.id + " and asked for " + std::to_string(n) +
                              " more; the limit is " + std::to_string(limits.max_seats_per_holder));
                f.limit = limits.max_seats_per_holder;
                f.current = has;
                return f;
            }
            return {};
        }

        Result<Hold> hold(const HoldCommand& cmd, std::int64_t now, const HoldTable& t) {
            if (auto it = holds.find(cmd.token); it != holds.end()) {
                // A retry of a hold whose reply was lost.
                if (it->second.holder != cmd.holder || it->second.status != Status::held) {
                    return Failure(errc::invalid_argument, "hold token already used");
                }
                return to_hold(cmd.token, it->second, t);
            }
            auto zone = zone_for(cmd.request.zone);
            if (!zone) return std::move(zone).error();
            const std::size_t n = cmd.request.kind == HoldKind::seats
                                      ? cmd.request.seats.size()
                                      : static_cast<std::size_t>(cmd.request.quantity);
            if (auto ok = check_limits(cmd.holder, n, cmd.limits); !ok) return std::move(ok).error();
            auto slots = pick(**zone, cmd.request);
            if (!slots) return std::move(slots).error();

            HoldRecord h;
            h.holder = cmd.holder;
            h.zone = cmd.request.zone;
            h.slots = std::move(*slots);
            for (std::size_t slot : h.slots) h.seats.push_back((*zone)->seat_id(slot));
            h.created_ms = now;
            h.expires_ms = now + cmd.ttl.count();
            auto [it, inserted] = holds.emplace(cmd.token, std::move(h));
            const std::string* token = &it->first;
            HoldRecord& stored = it->second;
            take_slots(**zone, stored.slots, SeatState::held, token);
            HolderCount& c = holders[cmd.holder];
            c.held += static_cast<std::int64_t>(n);
            c.active_holds += 1;
            deadlines.emplace(stored.expires_ms, token);
            return to_hold(cmd.token, stored, t);
        }

        // The stored hold and its token (the key inside `holds`).
        Result<std::pair<const std::string*, HoldRecord*>> record(const std::string& token) {
            auto it = holds.find(token);
            if (it == holds.end()) {
                return Failure(errc::unknown_hold, "no hold " + token + " in event " + spec.id);
            }
            return std::pair<const std::string*, HoldRecord*>(&it->first, &it->second);
        }

        static Failure inactive(const std::string& token, const HoldRecord& h) {
            switch (h.status) {
                case Status::expired:
                    return Failure(errc::hold_expired, "hold " + token + " expired", h.seats);
                case Status::confirmed:
                    return Failure(errc::hold_not_active,
                                   "hold " + token + " was confirmed as order " + h.order_id);
                case Status::held: break;
            }
            return Failure(errc::hold_not_active, "hold " + token + " is not active");
        }

        void forget_later(const std::string* token, std::int64_t now) {
            forget.emplace_back(now + hold_memory_ms, token);
        }

        Result<Order> confirm(const ConfirmCommand& cmd, std::int64_t now, const HoldTable& t) {
            if (auto it = orders.find(cmd.order_id); it != orders.end()) {
                if (it->second.hold_token == cmd.token) return it->second;  // a retry
                return Failure(errc::order_conflict, "order " + cmd.order_id +
                                                         " already paid another hold");
            }
            auto rec = record(cmd.token);
            if (!rec) return std::move(rec).error();
            auto [token, hp] = *rec;
            HoldRecord& h = *hp;
            Zone& zone = zones.at(h.zone);
            if (h.status == Status::confirmed) {
                return Failure(errc::order_conflict,
                               "hold " + cmd.token + " was already confirmed as order " + h.order_id);
            }
            if (h.status == Status::expired && !cmd.late) return inactive(cmd.token, h);
            HolderCount& c = holders[h.holder];
            const auto n = static_cast<std::int64_t>(h.slots.size());
            if (h.status == Status::expired) {
                // confirm_late: the same seats, if every one is still free.
                std::vector<std::string> taken;
                for (std::size_t slot : h.slots) {
                    if (zone.slots[slot].state != SeatState::free) taken.push_back(zone.seat_id(slot));
                }
                if (!taken.empty()) {
                    return Failure(errc::seat_taken,
                                   "hold " + cmd.token + " expired and seats " + join(taken) +
                                       " were taken since",
                                   taken);
                }
                if (auto ok = check_limits(h.holder, h.slots.size(),
                                           {cmd.limits.max_seats_per_holder, false});
                    !ok) {
                    return std::move(ok).error();
                }
            } else {
                deadlines.erase({h.expires_ms, token});
                c.held -= n;
                c.active_holds -= 1;
            }
            auto [order, inserted] = orders.emplace(
                cmd.order_id,
                Order{cmd.order_id, spec.id, h.holder, h.zone, h.seats, cmd.token, t.wall_(now), false});
            take_slots(zone, h.slots, SeatState::paid, &order->first);
            c.paid += n;
            h.status = Status::confirmed;
            h.order_id = cmd.order_id;  // kept as long as the order: confirm stays idempotent
            return order->second;
        }

        Result<void> release(const std::string& token) {
            auto rec = record(token);
            if (!rec) return std::move(rec).error();
            auto [key, hp] = *rec;
            HoldRecord& h = *hp;
            if (h.status == Status::confirmed) return inactive(token, h);
            if (h.status == Status::expired) return {};  // its seats are already free
            deadlines.erase({h.expires_ms, key});
            free_slots(h.zone, h.slots, key);
            count_hold_end(h);
            // Forgotten at once: a released hold is worth nothing to anyone, and keeping
            // every one of them would grow memory with traffic.
            holds.erase(token);
            return {};
        }

        Result<Hold> extend(const std::string& token, std::int64_t ttl, std::int64_t max_lifetime,
                            std::int64_t now, const HoldTable& t) {
            auto rec = record(token);
            if (!rec) return std::move(rec).error();
            auto [key, hp] = *rec;
            HoldRecord& h = *hp;
            if (h.status != Status::held) return inactive(token, h);
            // Capped, never refused: the hold lives at most max_lifetime from its creation.
            const std::int64_t target =
                std::max(h.expires_ms, std::min(now + ttl, h.created_ms + max_lifetime));
            deadlines.erase({h.expires_ms, key});
            h.expires_ms = target;
            deadlines.emplace(h.expires_ms, key);
            return to_hold(token, h, t);
        }

        Result<Order> cancel(const std::string& order_id, const std::optional<std::string>& holder,
                             std::int64_t /*now*/, const HoldTable&) {
            auto it = orders.find(order_id);
            if (it == orders.end()) {
                return Failure(errc::unknown_order, "no order " + order_id + " in event " + spec.id);
            }
            Order& order = it->second;
            if (holder && *holder != order.holder) {
                return Failure(errc::not_owner,
                               "order " + order_id + " belongs to another holder than " + *holder);
            }
            if (order.cancelled) return order;
            Zone& zone = zones.at(order.zone);
            std::vector<std::size_t> slots;
            for (const auto& seat : order.seats) {
                slots.push_back(zone.general_admission()
                                    ? static_cast<std::size_t>(std::stoll(seat) - 1)
                                    : zone.index.at(seat));
            }
            free_slots(order.zone, slots, &it->first);
            holders[order.holder].paid -= static_cast<std::int64_t>(slots.size());
            order.cancelled = true;
            return order;
        }

        Result<std::vector<ZoneState>> states(const std::optional<std::string>& only) {
            std::vector<ZoneState> out;
            if (only) {
                auto zone = zone_for(*only);
                if (!zone) return std::move(zone).error();
            }
            for (const auto& zs : spec.zones) {
                if (only && *only != zs.id) continue;
                const Zone& zone = zones.at(zs.id);
                ZoneState st{zs.id, zs.kind, static_cast<std::int64_t>(zone.slots.size()),
                             static_cast<std::int64_t>(zone.free.size()), zone.held, zone.paid, {}};
                if (zs.kind == ZoneKind::named) {
                    for (std::size_t i = 0; i < zs.seats.size(); ++i) {
                        st.seats.push_back({zs.seats[i].id, zs.seats[i].row, zone.slots[i].state});
                    }
                }
                out.push_back(std::move(st));
            }
            return out;
        }

        void collect_expired(std::vector<ExpiredHold>& out, std::size_t limit,
                             std::int64_t next_delivery, std::int64_t now, const HoldTable& t) {
            for (auto& [token, due] : pending_expired) {
                if (out.size() >= limit) return;
                if (due > now) continue;
                const HoldRecord& h = holds.at(token);
                out.push_back({token, spec.id, h.holder, h.zone, h.seats, t.wall_(h.expires_ms)});
                due = next_delivery;
            }
        }

        void ack(const std::string& token, std::int64_t now) {
            if (pending_expired.erase(token) == 0) return;
            auto it = holds.find(token);
            // A hold paid by confirm_late after it expired stays with its order.
            if (it != holds.end() && it->second.status == Status::expired) forget_later(&it->first, now);
        }
    };

    // Events are spread over shards, each behind its own reader-writer mutex, so callers
    // working on different events do not even share the cache line of a lookup lock.
    struct alignas(64) Shard {
        mutable std::shared_mutex mutex;
        std::unordered_map<std::string, std::unique_ptr<Event>> events;
    };
    static constexpr std::size_t shard_count = 16;

    Shard& shard_of(const std::string& id) const {
        return shards_[std::hash<std::string>{}(id) % shard_count];
    }

    Event* find(const std::string& id) const {
        Shard& shard = shard_of(id);
        std::shared_lock lock(shard.mutex);
        auto it = shard.events.find(id);
        return it == shard.events.end() ? nullptr : it->second.get();
    }

    std::vector<Event*> all_events() const {
        std::vector<Event*> out;
        for (Shard& shard : shards_) {
            std::shared_lock lock(shard.mutex);
            for (const auto& [id, event] : shard.events) out.push_back(event.get());
        }
        return out;
    }

    template <typename F>
    auto with_event(const std::string& id, std::int64_t now, F&& f) -> decltype(f(std::declval<Event&>())) {
        Event* event = find(id);
        if (!event) return Failure(errc::unknown_event, "no event " + id, {id});
        std::lock_guard lock(event->mutex);
        event->sweep(now);
        return f(*event);
    }

    template <typename F>
    auto with_token(const std::string& token, std::int64_t now, F&& f)
        -> decltype(f(std::declval<Event&>())) {
        const std::string_view event = token_event(token);
        if (event.empty()) return Failure(errc::unknown_hold, "malformed hold token");
        Event* e = find(std::string(event));
        if (!e) return Failure(errc::unknown_hold, "no hold " + token + " (unknown event)");
        std::lock_guard lock(e->mutex);
        e->sweep(now);
        return f(*e);
    }

    WallFn wall_;
    mutable std::array<Shard, shard_count> shards_;
};

}  // namespace seatlock::detail
