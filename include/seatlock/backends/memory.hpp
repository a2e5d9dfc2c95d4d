// SPDX-License-Identifier: MIT
// seatlock/backends/memory.hpp: MemoryBackend, the in-process backend and embedded
// default. Thread-safe: locks live in striped mutexes, holds behind one mutex per event;
// time is std::chrono::steady_clock; no background thread is needed for correctness
// (every operation expires what is due before it acts). Waiting rooms run on
// std::chrono::system_clock.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/hold_table.hpp>
#include <seatlock/detail/lock_table.hpp>
#include <seatlock/detail/room_table.hpp>

#include <chrono>

namespace seatlock {

class MemoryBackend {
public:
    /// `lock_stripes`: how many mutexes the lock table is spread over.
    /// `change_log_limit`: how many steps' changes each event's change log keeps
    /// (SeatHoldStore::changes; at least 1).
    explicit MemoryBackend(std::size_t lock_stripes = 64,
                           std::size_t change_log_limit = default_change_log_limit)
        : locks_(lock_stripes),
          holds_([](std::int64_t ms) { return to_wall(ms); }, change_log_limit) {}

    MemoryBackend(const MemoryBackend&) = delete;
    MemoryBackend& operator=(const MemoryBackend&) = delete;

    /// Runs one operation (seatlock/operations.hpp) in place, as one critical section.
    template <op::lock_op O>
        requires requires(detail::LockTable& t, const O& o) { t.run(o, std::int64_t{}); }
    op::result_of<O> run(const O& operation) {
        return locks_.run(operation, now());
    }
    template <op::hold_op O>
        requires requires(detail::HoldTable& t, const O& o) { t.run(o, std::int64_t{}); }
    op::result_of<O> run(const O& operation) {
        return holds_.run(operation, now());
    }
    /// Waiting rooms run on the wall clock: their opening time is one.
    template <op::room_op O>
        requires requires(detail::RoomTable& t, const O& o) { t.run(o, std::int64_t{}); }
    op::result_of<O> run(const O& operation) {
        using namespace std::chrono;
        const auto wall = system_clock::now().time_since_epoch();
        return rooms_.run(operation, duration_cast<milliseconds>(wall).count());
    }

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
    detail::RoomTable rooms_{[](std::int64_t ms) { return WallTime(Millis(ms)); }};
};

static_assert(Backend<MemoryBackend>);

}  // namespace seatlock
