// seatlock/backends/memory.hpp: MemoryBackend, the in-process backend and embedded
// default. Thread-safe: locks live in striped mutexes, holds behind one mutex per event;
// time is std::chrono::steady_clock; no background thread is needed for correctness
// (every operation expires what is due before it acts).
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/hold_table.hpp>
#include <seatlock/detail/lock_table.hpp>

#include <chrono>

namespace seatlock {

class MemoryBackend {
public:
    /// `lock_stripes`: how many mutexes the lock table is spread over.
    explicit MemoryBackend(std::size_t lock_stripes = 64)
        : locks_(lock_stripes), holds_([](std::int64_t ms) { return to_wall(ms); }) {}

    MemoryBackend(const MemoryBackend&) = delete;
    MemoryBackend& operator=(const MemoryBackend&) = delete;

    Result<std::uint64_t> acquire_locks(std::span<const std::string> keys, const std::string& owner,
                                        Millis lease) {
        return locks_.acquire(keys, owner, lease.count(), now());
    }
    Result<bool> release_locks(std::span<const std::string> keys, const std::string& owner) {
        return locks_.release(keys, owner, now());
    }
    Result<bool> extend_locks(std::span<const std::string> keys, const std::string& owner,
                              Millis lease) {
        return locks_.extend(keys, owner, lease.count(), now());
    }

    /// Every later fencing token of `key`'s group is larger than `at_least`: after a
    /// restart, fencing tokens go on from what the application's records hold.
    Result<void> raise_fencing(std::string_view key, std::uint64_t at_least) {
        (void)key;
        return locks_.raise_fencing(at_least);
    }

    Result<void> create_event(const EventSpec& spec) { return holds_.create_event(spec); }
    Result<std::vector<EventSpec>> events() { return holds_.events(); }
    Result<Hold> hold(const HoldCommand& cmd) { return holds_.hold(cmd, now()); }
    Result<Order> confirm(const ConfirmCommand& cmd) { return holds_.confirm(cmd, now()); }
    Result<EventVersion> release(const std::string& token) { return holds_.release(token, now()); }
    Result<Hold> extend(const std::string& token, Millis ttl, Millis max_lifetime) {
        return holds_.extend(token, ttl, max_lifetime, now());
    }
    Result<Order> cancel(const std::string& event, const std::string& order_id,
                         const std::optional<std::string>& holder) {
        return holds_.cancel(event, order_id, holder, now());
    }
    Result<std::vector<ZoneState>> seats(const std::string& event,
                                         const std::optional<std::string>& zone) {
        return holds_.seats(event, zone, now());
    }
    Result<std::vector<ExpiredHold>> expired(std::size_t limit, Millis redeliver_after) {
        return holds_.expired(limit, redeliver_after, now());
    }
    Result<void> ack_expired(std::span<const std::string> tokens) {
        return holds_.ack_expired(tokens, now());
    }
    Result<Recovery> begin_recovery(const EventSpec& spec, bool hide_existing) {
        return holds_.begin_recovery(spec, hide_existing);
    }
    Result<Order> restore_order(const RestoreCommand& cmd) { return holds_.restore_order(cmd, now()); }
    Result<EventVersion> end_recovery(const std::string& event, EventVersion at_least) {
        return holds_.end_recovery(event, at_least);
    }
    Result<EventVersion> version(const std::string& event) { return holds_.version(event, now()); }

    /// Forgets every event, hold and order (locks stay), as a storage restarted without
    /// persistence would: for tests of recovery. Not safe while other calls run.
    void wipe() { holds_.wipe(); }

private:
    static std::int64_t now() {
        using namespace std::chrono;
        return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
    }
    static WallTime to_wall(std::int64_t ms) {
        return std::chrono::time_point_cast<WallTime::duration>(std::chrono::system_clock::now() +
                                                                Millis(ms - now()));
    }

    detail::LockTable locks_;
    detail::HoldTable holds_;
};

static_assert(Backend<MemoryBackend>);

}  // namespace seatlock
