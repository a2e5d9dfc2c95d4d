// SPDX-License-Identifier: MIT
// seatlock/detail/hold_event.hpp: the rules of one event of the in-process seat-hold
// state machine (HoldTable keeps the events, finds them and locks them; the rules of each
// step on one event are here): holds, confirms, releases, extensions, cancellations,
// restores, the sweep of expired holds and the reading of seat states. The containers
// they act on are in hold_state.hpp. A HoldEvent is used under its own mutex.
#pragma once

#include <seatlock/detail/hold_state.hpp>
#include <seatlock/detail/text.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/operations.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace seatlock::detail {

struct HoldEvent : EventState {
    using EventState::EventState;
    /// Translates the storage clock (milliseconds) to wall time for callers.
    using WallFn = std::function<WallTime(std::int64_t)>;

    // Raises the version of a successful write's result (and logs its changes); a failed
    // step changed nothing.
    template <typename T>
    Result<T> versioned(Result<T> r) {
        if (r) r->version = bump();
        else touched.clear();
        return r;
    }

    // Raises the version by one, logging the changes of the step (the slots it touched).
    EventVersion bump() {
        ++version;
        if (!touched.empty()) log_step();
        return version;
    }

    // One change per slot touched (a GA zone: one per zone), with the state after the
    // step; the oldest steps leave the log past log_limit.
    void log_step() {
        // A slot touched twice in one step is logged once. Steps touch few slots: a look
        // back is cheaper than a sort, until they are many.
        const bool few = touched.size() <= 16;
        if (!few) {
            std::sort(touched.begin(), touched.end());
            touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        }
        for (auto t = touched.begin(); t != touched.end(); ++t) {
            if (few && std::find(touched.begin(), t, *t) != t) continue;
            const auto [zone, slot] = *t;
            LoggedChange& c = log.emplace_back();
            c.version = version;
            c.zone = zone;
            c.slot = slot;
            c.free = static_cast<std::int64_t>(zone->free.size());
            c.held = zone->held;
            c.paid = zone->paid;
            if (slot != FreeSlots::npos) {
                const Slot& s = zone->slots[slot];
                c.state = s.state;
                if (s.state == SeatState::held) c.expires_at = wall(holds.at(*s.owner).expires_ms);
            }
        }
        touched.clear();
        ++log_steps;
        while (log_steps > std::max<std::size_t>(log_limit, 1)) {
            const EventVersion oldest = log.front().version;
            while (!log.empty() && log.front().version == oldest) log.pop_front();
            --log_steps;
            log_trimmed = true;
        }
    }

    // end_recovery of a hidden event: what readers saw before may be of another history,
    // so the event gets a new one, and the log starts afresh at the new version (older
    // readers get changes_trimmed, whatever their version).
    void restart_log() {
        log.clear();
        log_steps = 0;
        log_trimmed = false;
        log_restart = version;
        history = new_history();
    }

    Result<ChangePage> changes_after(EventVersion after, std::optional<EventHistory> of,
                                     std::size_t limit) const {
        if (of && *of != history) {
            return Failure(errc::changes_trimmed,
                           "event " + spec.id + " was recovered since the version " +
                               std::to_string(after) +
                               " was read (another history): read its seats again",
                           {spec.id});
        }
        if (after > version) {
            return Failure(errc::invalid_argument,
                           "version " + std::to_string(after) + " is above event " + spec.id +
                               "'s version " + std::to_string(version));
        }
        if (after < log_floor()) {
            return Failure(errc::changes_trimmed,
                           "the change log of event " + spec.id + " keeps the changes after version " +
                               std::to_string(log_floor()) + ", not after " + std::to_string(after),
                           {spec.id});
        }
        ChangePage page{version, history, {}, false};
        auto it = std::upper_bound(log.begin(), log.end(), after,
                                   [](EventVersion v, const LoggedChange& c) { return v < c.version; });
        while (it != log.end()) {
            // One step: the changes of its version.
            auto end = it;
            while (end != log.end() && end->version == it->version) ++end;
            const auto n = static_cast<std::size_t>(end - it);
            if (!page.changes.empty() && page.changes.size() + n > limit) {
                page.more = true;
                page.version = page.changes.back().version;
                break;
            }
            for (; it != end; ++it) {
                SeatChange& c = page.changes.emplace_back();
                c.version = it->version;
                c.zone = it->zone->spec->id;
                if (it->slot != FreeSlots::npos) {
                    c.seat = it->zone->spec->seats[it->slot].id;
                    c.state = it->state;
                    c.expires_at = it->expires_at;
                }
                c.free = it->free;
                c.held = it->held;
                c.paid = it->paid;
            }
        }
        return page;
    }

    void sweep(std::int64_t now) {
        bool expired = false;
        while (!deadlines.empty() && deadlines.begin()->first <= now) {
            expired = true;
            const std::string* token = deadlines.begin()->second;
            deadlines.erase(deadlines.begin());
            HoldRecord& h = holds.find(*token)->second;
            free_slots(*h.zone, h.slots, token);
            count_hold_end(h);
            h.status = Status::expired;
            pending_expired[*token] = now;
        }
        if (expired) bump();
        drop(forget, now);
        drop(forget_released, now);
        released.forget(now);
    }

    Hold to_hold(const std::string& token, const HoldRecord& h, const WallFn& wall,
                 bool replayed = false) const {
        return Hold{token,
                    spec.id,
                    h.holder_id(),
                    h.zone_id(),
                    h.seats(),
                    wall(h.expires_ms),
                    h.status,
                    h.order_id ? *h.order_id : std::string(),
                    replayed};
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

    Result<void> check_limits(const Holder& holder_entry, std::size_t n,
                              const HoldLimits& limits) const {
        const std::string& holder = holder_entry.first;
        const HolderCount& c = holder_entry.second;
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

    Result<Hold> hold(const HoldCommand& cmd, std::int64_t now, const WallFn& wall) {
        if (auto it = holds.find(cmd.token); it != holds.end()) {
            // A retry of a hold whose reply was lost.
            if (it->second.holder_id() != cmd.holder) {
                return Failure(errc::invalid_argument, "hold token already used");
            }
            return to_hold(cmd.token, it->second, wall);
        }
        if (!cmd.idempotency_key.empty()) {
            if (auto it = keyed.find(key_of(cmd.holder, cmd.idempotency_key)); it != keyed.end()) {
                const HoldRecord& h = holds.at(*it->second);
                if (!same_request(h, cmd.request)) {
                    return Failure(errc::invalid_argument,
                                   "idempotency key " + cmd.idempotency_key +
                                       " was used for another request (hold " + *it->second + ")");
                }
                return to_hold(*it->second, h, wall, true);
            }
        }
        auto zone = zone_for(cmd.request.zone);
        if (!zone) return std::move(zone).error();
        const std::size_t n = cmd.request.kind == HoldKind::seats
                                  ? cmd.request.seats.size()
                                  : static_cast<std::size_t>(cmd.request.quantity);
        Holder& buyer = holder(cmd.holder);
        if (auto ok = check_limits(buyer, n, cmd.limits); !ok) return std::move(ok).error();
        auto slots = pick(**zone, cmd.request);
        if (!slots) return std::move(slots).error();

        HoldRecord h;
        h.holder = &buyer;
        h.zone = *zone;
        h.slots = std::move(*slots);
        h.created_ms = now;
        h.expires_ms = now + cmd.ttl.count();
        auto [it, inserted] = holds.emplace(cmd.token, std::move(h));
        const std::string* token = &it->first;
        HoldRecord& stored = it->second;
        if (!cmd.idempotency_key.empty()) {
            auto key = keyed.emplace(key_of(cmd.holder, cmd.idempotency_key), token).first;
            stored.keyed_as = &key->first;
        }
        take_slots(**zone, stored.slots, SeatState::held, token);
        buyer.second.held += static_cast<std::int64_t>(n);
        buyer.second.active_holds += 1;
        deadlines.emplace(stored.expires_ms, token);
        return to_hold(cmd.token, stored, wall);
    }

    // Whether a hold answers a request: the same zone, and the same seats (named) or
    // as many places.
    static bool same_request(const HoldRecord& h, const HoldRequest& req) {
        if (h.zone_id() != req.zone) return false;
        if (req.kind != HoldKind::seats) {
            return h.slots.size() == static_cast<std::size_t>(req.quantity);
        }
        const std::vector<std::string> seats = h.seats();
        std::vector<std::string_view> had(seats.begin(), seats.end());
        std::vector<std::string_view> asked(req.seats.begin(), req.seats.end());
        std::sort(had.begin(), had.end());
        std::sort(asked.begin(), asked.end());
        return had == asked;
    }

    static Failure inactive(const std::string& token, const HoldRecord& h) {
        switch (h.status) {
            case Status::expired:
                return Failure(errc::hold_expired, "hold " + token + " expired", h.seats());
            case Status::confirmed:
                return Failure(errc::hold_not_active,
                               "hold " + token + " was confirmed as order " + *h.order_id);
            case Status::released:
                return Failure(errc::hold_not_active, "hold " + token + " was released");
            case Status::held: break;
        }
        return Failure(errc::hold_not_active, "hold " + token + " is not active");
    }

    void forget_later(const std::string* token, std::int64_t now) {
        forget.emplace_back(now + hold_memory_ms, token);
    }

    Result<Order> confirm(const ConfirmCommand& cmd, std::int64_t now, const WallFn& wall) {
        if (auto it = orders.find(cmd.order_id); it != orders.end()) {
            if (it->second.hold_token == cmd.token) return it->second;  // a retry
            return Failure(errc::order_conflict, "order " + cmd.order_id +
                                                     " already paid another hold");
        }
        auto rec = record(cmd.token, now);
        if (!rec) return std::move(rec).error();
        const std::string* token = &(*rec)->first;
        HoldRecord& h = (*rec)->second;
        Zone& zone = *h.zone;
        if (h.status == Status::confirmed) {
            return Failure(errc::order_conflict,
                           "hold " + cmd.token + " was already confirmed as order " + *h.order_id);
        }
        if (h.status == Status::released || (h.status == Status::expired && !cmd.late)) {
            return inactive(cmd.token, h);
        }
        HolderCount& c = h.holder->second;
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
            if (auto ok = check_limits(*h.holder, h.slots.size(),
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
            cmd.order_id, Order{cmd.order_id, spec.id, h.holder_id(), h.zone_id(), h.seats(),
                                cmd.token, wall(now), false});
        take_slots(zone, h.slots, SeatState::paid, &order->first);
        c.paid += n;
        h.status = Status::confirmed;
        h.order_id = &order->first;  // kept as long as the order: confirm stays idempotent
        return order->second;
    }

    Result<void> release(const std::string& token, std::int64_t now) {
        auto rec = record(token, now);
        if (rec.is(errc::hold_not_active)) return {};  // released before: a retry
        if (!rec) return std::move(rec).error();
        const std::string* key = &(*rec)->first;
        HoldRecord& h = (*rec)->second;
        if (h.status == Status::confirmed) return inactive(token, h);
        // Expired: its seats are free already. Released: a retry.
        if (h.status != Status::held) return {};
        deadlines.erase({h.expires_ms, key});
        free_slots(*h.zone, h.slots, key);
        count_hold_end(h);
        if (!h.keyed_as) {
            released.insert(TokenBits::of(token), now);
            holds.erase(*rec);
            return {};
        }
        // A replayed key answers with the whole hold: keep its record.
        h.status = Status::released;
        forget_released.emplace_back(now + released_memory_ms, key);
        return {};
    }

    Result<Hold> extend(const std::string& token, std::int64_t ttl, std::int64_t max_lifetime,
                        std::int64_t now, const WallFn& wall) {
        auto rec = record(token, now);
        if (!rec) return std::move(rec).error();
        const std::string* key = &(*rec)->first;
        HoldRecord& h = (*rec)->second;
        if (h.status != Status::held) return inactive(token, h);
        // Capped, never refused: the hold lives at most max_lifetime from its creation.
        const std::int64_t target =
            std::max(h.expires_ms, std::min(now + ttl, h.created_ms + max_lifetime));
        deadlines.erase({h.expires_ms, key});
        h.expires_ms = target;
        deadlines.emplace(h.expires_ms, key);
        // Named seats stay held with a new expiry; a GA zone's counts do not change.
        if (!h.zone->general_admission()) {
            for (std::size_t slot : h.slots) touch(*h.zone, slot);
        }
        return to_hold(token, h, wall);
    }

    Result<Order> cancel(const std::string& order_id, const std::optional<std::string>& holder,
                         std::int64_t /*now*/, const WallFn&) {
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
        free_slots(zone, slots, &it->first);
        holders[order.holder].paid -= static_cast<std::int64_t>(slots.size());
        order.cancelled = true;
        return order;
    }

    // Ends an active hold as if it expired now: its seats are free, and its expiry is
    // reported by expired() (recovery gives its seats to a restored order).
    void expire_now(const std::string* token, HoldRecord& h, std::int64_t now) {
        deadlines.erase({h.expires_ms, token});
        free_slots(*h.zone, h.slots, token);
        count_hold_end(h);
        h.status = Status::expired;
        h.expires_ms = std::min(h.expires_ms, now);
        pending_expired[*token] = now;
    }

    // Takes a record that is about to be erased out of the queues that point at it.
    void forget_record(const std::string* token) {
        for (auto* queue : {&forget, &forget_released}) {
            std::erase_if(*queue, [token](const auto& entry) { return entry.second == token; });
        }
    }

    Result<Order> restore(const RestoreCommand& cmd, std::int64_t now) {
        // An event under recovery (hidden) may have gone back to older data: the
        // application's paid orders win over what the storage has since. A shown
        // event's holds and cancellations are live: they are never undone.
        const bool repairing = !visible;
        // The order, when the storage has it cancelled while the application's records
        // say paid (the records are the authority during a repair): paid again.
        Orders::iterator reopened = orders.end();
        if (auto it = orders.find(cmd.order_id); it != orders.end()) {
            if (it->second.hold_token != cmd.hold_token) {
                return Failure(errc::order_conflict,
                               "order " + cmd.order_id + " already paid another hold");
            }
            // Restored before, or never lost.
            if (!it->second.cancelled || !repairing) return it->second;
            auto had = it->second.seats, asked = cmd.seats;
            std::sort(had.begin(), had.end());
            std::sort(asked.begin(), asked.end());
            if (it->second.zone != cmd.zone || had != asked) {
                return Failure(errc::order_conflict,
                               "order " + cmd.order_id + " has other seats in storage");
            }
            reopened = it;
        }
        // The storage went back to before this hold was paid: the hold is there, held,
        // expired or released. The order replaces it (once every check passed).
        Holds::iterator replaced = holds.end();
        if (auto it = holds.find(cmd.hold_token);
            it != holds.end() && reopened == orders.end()) {
            if (!repairing) {
                return Failure(errc::order_conflict,
                               "hold " + cmd.hold_token + " is in storage: it is not lost");
            }
            if (it->second.status == Status::confirmed) {
                return Failure(errc::order_conflict, "hold " + cmd.hold_token +
                                                         " was confirmed as another order");
            }
            replaced = it;
        }
        auto zone = zone_for(cmd.zone);
        if (!zone) return std::move(zone).error();
        Zone& z = **zone;
        std::vector<std::size_t> slots;
        std::vector<std::string> unknown, taken;
        for (const auto& seat : cmd.seats) {
            std::optional<std::size_t> slot;
            if (z.general_admission()) {
                const auto n = place_number(seat);
                if (n >= 1 && static_cast<std::size_t>(n) <= z.slots.size()) {
                    slot = static_cast<std::size_t>(n - 1);
                }
            } else if (auto it = z.index.find(seat); it != z.index.end()) {
                slot = it->second;
            }
            if (!slot) unknown.push_back(seat);
            else if (z.slots[*slot].state == SeatState::paid ||
                     (z.slots[*slot].state == SeatState::held && !repairing) ||
                     std::find(slots.begin(), slots.end(), *slot) != slots.end())
                taken.push_back(seat);
            else slots.push_back(*slot);
        }
        if (!unknown.empty()) {
            return Failure(errc::unknown_seat,
                           "zone " + cmd.zone + " has no seat " + join(unknown), unknown);
        }
        if (!taken.empty()) {
            return Failure(errc::seat_taken,
                           "order " + cmd.order_id + " cannot be restored: " + join(taken) +
                               " of zone " + cmd.zone + " held or paid by another",
                           taken);
        }
        if (replaced != holds.end()) {
            if (replaced->second.status == Status::held) {
                expire_now(&replaced->first, replaced->second, now);
            }
            pending_expired.erase(replaced->first);
            if (replaced->second.keyed_as) keyed.erase(keyed.find(*replaced->second.keyed_as));
            forget_record(&replaced->first);
            holds.erase(replaced);
        }
        // The paid order wins over a hold made after the storage went back.
        for (std::size_t slot : slots) {
            if (z.slots[slot].state != SeatState::held) continue;
            const std::string* holding = z.slots[slot].owner;
            expire_now(holding, holds.at(*holding), now);
        }
        if (reopened != orders.end()) {
            Order& order = reopened->second;
            order.cancelled = false;
            holder(order.holder).second.paid += static_cast<std::int64_t>(slots.size());
            take_slots(z, slots, SeatState::paid, &reopened->first);
            return order;
        }
        auto [order, inserted] = orders.emplace(
            cmd.order_id, Order{cmd.order_id, spec.id, cmd.holder, cmd.zone, cmd.seats,
                                cmd.hold_token, cmd.paid_at, false});
        HoldRecord h;
        h.holder = &holder(cmd.holder);
        h.zone = &z;
        h.slots = slots;
        h.status = Status::confirmed;
        h.order_id = &order->first;
        h.holder->second.paid += static_cast<std::int64_t>(slots.size());
        holds.emplace(cmd.hold_token, std::move(h));
        take_slots(z, slots, SeatState::paid, &order->first);
        return order->second;
    }

    // A general-admission place number ("1".."capacity"), or 0 when `seat` is none.
    static std::int64_t place_number(const std::string& seat) {
        if (seat.empty() || seat.size() > 9 || seat[0] == '0') return 0;
        std::int64_t n = 0;
        for (char c : seat) {
            if (c < '0' || c > '9') return 0;
            n = n * 10 + (c - '0');
        }
        return n;
    }

    Result<SeatMap> states(const std::optional<std::string>& only, const WallFn& wall) {
        SeatMap map{version, history, {}};
        std::vector<ZoneState>& out = map.zones;
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
                st.seats.reserve(zs.seats.size());
                for (std::size_t i = 0; i < zs.seats.size(); ++i) {
                    const Slot& slot = zone.slots[i];
                    st.seats.push_back({zs.seats[i].id, zs.seats[i].row, slot.state, {}});
                    if (slot.state == SeatState::held) {
                        st.seats.back().expires_at = wall(holds.at(*slot.owner).expires_ms);
                    }
                }
            }
            out.push_back(std::move(st));
        }
        return map;
    }

    void collect_expired(std::vector<ExpiredHold>& out, std::size_t limit,
                         std::int64_t next_delivery, std::int64_t now, const WallFn& wall) {
        for (auto& [token, due] : pending_expired) {
            if (out.size() >= limit) return;
            if (due > now) continue;
            const HoldRecord& h = holds.at(token);
            out.push_back(
                {token, spec.id, h.holder_id(), h.zone_id(), h.seats(), wall(h.expires_ms)});
            due = next_delivery;
        }
    }

    void ack(const std::string& token, std::int64_t now) {
        if (pending_expired.erase(token) == 0) return;
        auto it = holds.find(token);
        if (it != holds.end() && it->second.status == Status::expired) forget_later(&it->first, now);
    }
};

}  // namespace seatlock::detail
