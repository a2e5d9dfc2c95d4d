// SPDX-License-Identifier: MIT
// seatlock/detail/hold_table.hpp: the rules of the in-process seat-hold state machine
// shared by MemoryBackend and FakeBackend (the Redis backend implements the same rules in
// Lua, and the conformance suite holds the two to one behaviour). The containers they act
// on are in hold_state.hpp.
//
// State is kept per event, each event behind its own mutex. Every operation on an event
// first expires the holds whose deadline has passed (the "sweep"), so an expired hold is
// gone the moment it expires, whoever looks next, and its expiry is queued for
// `expired()` in the same step: no expiry is ever lost.
#pragma once

#include <seatlock/operations.hpp>
#include <seatlock/detail/hold_event.hpp>
#include <seatlock/detail/hold_state.hpp>
#include <seatlock/detail/text.hpp>
#include <seatlock/keys.hpp>

#include <algorithm>
#include <array>
#include <atomic>
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

class HoldTable {
public:
    /// Translates the table's clock (milliseconds) to wall time for callers.
    using WallFn = std::function<WallTime(std::int64_t)>;

    /// `log_limit`: how many steps' changes each event's change log keeps (at least 1).
    explicit HoldTable(WallFn wall, std::size_t log_limit = default_change_log_limit)
        : wall_(std::move(wall)), log_limit_(std::max<std::size_t>(log_limit, 1)) {}

    // One run() per operation of op::hold_ops (seatlock/operations.hpp says what each
    // does); `now` is the storage clock in milliseconds.

    Result<void> run(const op::create_event& o, std::int64_t) {
        const EventSpec& spec = o.spec;
        Shard& shard = shard_of(spec.id);
        std::unique_lock lock(shard.mutex);
        auto it = shard.events.find(spec.id);
        if (it != shard.events.end()) {
            if (it->second->spec == spec) return {};
            return Failure(errc::event_exists,
                           "event " + spec.id + " already exists with another inventory");
        }
        shard.events.emplace(spec.id, make_event(spec));
        return {};
    }

    Result<std::vector<EventSpec>> run(const op::events&, std::int64_t) const {
        std::vector<EventSpec> specs;
        for (Event* event : all_events()) specs.push_back(event->spec);
        std::sort(specs.begin(), specs.end(),
                  [](const EventSpec& a, const EventSpec& b) { return a.id < b.id; });
        return specs;
    }

    // Every write below raises the event's version once when it succeeds (a retry
    // answered from memory too: one rule, whatever the step found), and its result
    // carries the new version.

    Result<Hold> run(const op::hold& o, std::int64_t now) {
        const HoldCommand& cmd = o.cmd;
        return with_event(cmd.event, now,
                          [&](Event& e) { return e.versioned(e.hold(cmd, now, wall_)); });
    }

    Result<Order> run(const op::confirm& o, std::int64_t now) {
        const ConfirmCommand& cmd = o.cmd;
        return with_token(cmd.token, now,
                          [&](Event& e) { return e.versioned(e.confirm(cmd, now, wall_)); });
    }

    Result<EventVersion> run(const op::release& o, std::int64_t now) {
        const std::string& token = o.token;
        return with_token(token, now, [&](Event& e) -> Result<EventVersion> {
            auto released = e.release(token, now);
            if (!released) {
                e.touched.clear();
                return std::move(released).error();
            }
            return e.bump();
        });
    }

    Result<Hold> run(const op::extend& o, std::int64_t now) {
        return with_token(o.token, now, [&](Event& e) {
            return e.versioned(e.extend(o.token, o.ttl.count(), o.max_lifetime.count(), now, wall_));
        });
    }

    Result<Order> run(const op::cancel& o, std::int64_t now) {
        return with_event(o.event, now, [&](Event& e) {
            return e.versioned(e.cancel(o.order_id, o.holder, now, wall_));
        });
    }

    /// Expires what is due first, as every call does.
    Result<EventVersion> run(const op::version& o, std::int64_t now) {
        return with_event(o.event, now, [](Event& e) -> Result<EventVersion> { return e.version; });
    }

    Result<SeatMap> run(const op::seats& o, std::int64_t now) {
        return with_event(o.event, now, [&](Event& e) { return e.states(o.zone, wall_); });
    }

    Result<ChangePage> run(const op::changes& o, std::int64_t now) {
        return with_event(o.event, now,
                          [&](Event& e) { return e.changes_after(o.after, o.history, o.limit); });
    }

    Result<std::vector<ExpiredHold>> run(const op::expired& o, std::int64_t now) {
        const std::size_t limit = o.limit;
        std::vector<ExpiredHold> out;
        for (Event* event : all_events()) {
            if (out.size() >= limit) break;
            std::lock_guard lock(event->mutex);
            event->sweep(now);
            event->collect_expired(out, limit, now + o.redeliver_after.count(), now, wall_);
        }
        return out;
    }

    Result<Recovery> run(const op::begin_recovery& o, std::int64_t) {
        const EventSpec& spec = o.spec;
        Shard& shard = shard_of(spec.id);
        std::unique_lock lock(shard.mutex);
        auto it = shard.events.find(spec.id);
        if (it != shard.events.end()) {
            if (it->second->spec != spec) {
                return Failure(errc::event_exists,
                               "event " + spec.id + " already exists with another inventory");
            }
            if (!o.hide_existing) return Recovery::existed;
            std::lock_guard event_lock(it->second->mutex);
            it->second->visible = false;
            it->second->bump();
            return Recovery::rolled_back;
        }
        auto event = make_event(spec);
        event->visible = false;
        shard.events.emplace(spec.id, std::move(event));
        return Recovery::created;
    }

    Result<Order> run(const op::restore_order& o, std::int64_t now) {
        return with_event(
            o.cmd.event, now, [&](Event& e) { return e.versioned(e.restore(o.cmd, now)); }, true);
    }

    Result<EventVersion> run(const op::end_recovery& o, std::int64_t) {
        Event* e = find(o.event, true);
        if (!e) return Failure(errc::unknown_event, "no event " + o.event, {o.event});
        std::lock_guard lock(e->mutex);
        const bool was_hidden = !e->visible;
        e->visible = true;
        e->version = std::max(e->version, o.at_least) + 1;
        if (was_hidden) e->restart_log();
        return e->version;
    }

    void wipe() {
        for (Shard& shard : shards_) {
            std::unique_lock lock(shard.mutex);
            shard.events.clear();
        }
    }

    Result<void> run(const op::ack_expired& o, std::int64_t now) {
        for (const auto& token : o.tokens) {
            Event* event = find(std::string(token_event(token)));
            if (!event) continue;  // unknown tokens are already as acknowledged as they can be
            std::lock_guard lock(event->mutex);
            event->ack(token, now);
        }
        return {};
    }

private:
    using Event = HoldEvent;

    // Events are spread over shards, each behind its own reader-writer mutex, so callers
    // working on different events do not even share the cache line of a lookup lock.
    struct alignas(64) Shard {
        mutable std::shared_mutex mutex;
        std::unordered_map<std::string, std::unique_ptr<Event>> events;
    };
    static constexpr std::size_t shard_count = 16;

    std::unique_ptr<Event> make_event(const EventSpec& spec) const {
        auto event = std::make_unique<Event>(spec);
        event->log_limit = log_limit_;
        event->wall = wall_;
        return event;
    }

    Shard& shard_of(const std::string& id) const {
        return shards_[std::hash<std::string>{}(id) % shard_count];
    }

    // The event `id`; hidden ones (under recovery) only when asked for.
    Event* find(const std::string& id, bool hidden_too = false) const {
        Shard& shard = shard_of(id);
        std::shared_lock lock(shard.mutex);
        auto it = shard.events.find(id);
        if (it == shard.events.end()) return nullptr;
        return hidden_too || it->second->visible ? it->second.get() : nullptr;
    }

    // Every event shown to callers.
    std::vector<Event*> all_events() const {
        std::vector<Event*> out;
        for (Shard& shard : shards_) {
            std::shared_lock lock(shard.mutex);
            for (const auto& [id, event] : shard.events) {
                if (event->visible) out.push_back(event.get());
            }
        }
        return out;
    }

    template <typename F>
    auto with_event(const std::string& id, std::int64_t now, F&& f, bool hidden_too = false)
        -> decltype(f(std::declval<Event&>())) {
        Event* event = find(id, hidden_too);
        if (!event) return Failure(errc::unknown_event, "no event " + id, {id});
        std::lock_guard lock(event->mutex);
        if (!event->visible && !hidden_too) return Failure(errc::unknown_event, "no event " + id, {id});
        event->sweep(now);
        return f(*event);
    }

    // Calls on a hold token. A token of an event that is not there is unknown_event: the
    // store tells callers unknown_hold, or storage_lost for an event it knew.
    template <typename F>
    auto with_token(const std::string& token, std::int64_t now, F&& f)
        -> decltype(f(std::declval<Event&>())) {
        const std::string_view event = token_event(token);
        if (event.empty()) return Failure(errc::unknown_hold, "malformed hold token");
        return with_event(std::string(event), now, std::forward<F>(f));
    }

    WallFn wall_;
    std::size_t log_limit_;
    mutable std::array<Shard, shard_count> shards_;
};

}  // namespace seatlock::detail
