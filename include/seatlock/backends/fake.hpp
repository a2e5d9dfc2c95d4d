// SPDX-License-Identifier: MIT
// seatlock/backends/fake.hpp: FakeBackend, a deterministic backend for tests — yours and
// ours. Its clock only moves when told (`advance`), its faults are scripted (fail before
// applying; apply, then lose the reply; added latency), and it records every call.
//
//     seatlock::FakeBackend fake;
//     fake.inject({seatlock::op::id<seatlock::op::confirm>, seatlock::FakeBackend::FaultKind::lose_reply});
//     auto r = store.confirm(token, "pay-1");   // applied, but reported outcome_unknown
//     fake.advance(std::chrono::minutes(11));   // every hold of 10 minutes has now expired
//
// FakeLockClock is the LockClock of a LockManager on the fake: lock waits, leases, lost
// leases and watchdog renewals run on the fake's clock, and no test sleeps.
//
//     seatlock::FakeLockClock clock(fake);
//     seatlock::LockManager locks(fake, clock);
//     auto guard = locks.lock("game1:A-1");      // a wait advances the clock, not a sleep
//     clock.advance(std::chrono::seconds(5));    // the watchdog renews what fell due meanwhile
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/hold_table.hpp>
#include <seatlock/detail/lock_table.hpp>
#include <seatlock/detail/room_table.hpp>
#include <seatlock/lock_clock.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace seatlock {

class FakeBackend {
public:
    /// An operation, named by its value type: `op::id<op::confirm>` (seatlock/operations.hpp).
    using Op = op::Id;
    enum class FaultKind {
        fail_before,  ///< not applied; reported as io_error
        lose_reply,   ///< applied, then reported as outcome_unknown (a reply lost in transit)
        /// applied normally, after the fake's clock moved `latency` forward (advance()): the
        /// call takes that long in the fake's time, and what ran out meanwhile has expired
        latency,
    };
    /// A scripted fault: the next `times` calls of `op` behave as `kind`.
    struct Fault {
        Op op;
        FaultKind kind;
        int times = 1;
        Millis latency{0};
    };
    /// One recorded call and its outcome (an empty code for success).
    struct Call {
        Op op;
        std::error_code result;
    };

    /// The clock starts at `start` (by default 2026-01-01T00:00:00Z) and moves only by
    /// advance(). `change_log_limit`: how many steps' changes each event's change log keeps
    /// (SeatHoldStore::changes; at least 1).
    explicit FakeBackend(WallTime start = WallTime(std::chrono::seconds(1767225600)),
                         std::size_t change_log_limit = default_change_log_limit)
        : locks_(1),
          holds_([](std::int64_t ms) { return WallTime(std::chrono::milliseconds(ms)); },
                 change_log_limit),
          now_ms_(std::chrono::duration_cast<Millis>(start.time_since_epoch()).count()) {}

    FakeBackend(const FakeBackend&) = delete;
    FakeBackend& operator=(const FakeBackend&) = delete;

    /// Moves the clock forward; leases and holds that end by then are expired. Storage
    /// clocks never go back: a negative `d` throws seatlock::Error (invalid_argument).
    void advance(Millis d) {
        if (d < Millis(0)) {
            throw Error(make_error_code(errc::invalid_argument), "FakeBackend clock cannot go back");
        }
        now_ms_.fetch_add(d.count());
    }
    WallTime now() const { return WallTime(Millis(now_ms_.load())); }

    /// Scripts a fault; throws seatlock::Error (invalid_argument) when `times` < 1 or the
    /// latency is negative.
    void inject(Fault fault) {
        if (fault.times < 1 || fault.latency < Millis(0)) {
            throw Error(make_error_code(errc::invalid_argument),
                        "a fault needs times >= 1 and a latency >= 0");
        }
        std::lock_guard lock(mutex_);
        faults_.push_back(fault);
    }
    void clear_faults() {
        std::lock_guard lock(mutex_);
        faults_.clear();
    }
    std::vector<Call> calls() const {
        std::lock_guard lock(mutex_);
        return calls_;
    }
    std::size_t count(Op op) const {
        std::lock_guard lock(mutex_);
        return static_cast<std::size_t>(
            std::count_if(calls_.begin(), calls_.end(), [op](const Call& c) { return c.op == op; }));
    }
    void clear_calls() {
        std::lock_guard lock(mutex_);
        calls_.clear();
    }

    /// Runs one operation (seatlock/operations.hpp) on the in-process rules, under the
    /// fake's single mutex (so runs are reproducible), with whatever fault is scripted for it.
    template <op::lock_op O>
        requires requires(detail::LockTable& t, const O& o) { t.run(o, std::int64_t{}); }
    op::result_of<O> run(const O& operation) {
        return apply(op::id<O>, [&](std::int64_t now) { return locks_.run(operation, now); });
    }
    template <op::hold_op O>
        requires requires(detail::HoldTable& t, const O& o) { t.run(o, std::int64_t{}); }
    op::result_of<O> run(const O& operation) {
        return apply(op::id<O>, [&](std::int64_t now) { return holds_.run(operation, now); });
    }
    template <op::room_op O>
        requires requires(detail::RoomTable& t, const O& o) { t.run(o, std::int64_t{}); }
    op::result_of<O> run(const O& operation) {
        return apply(op::id<O>, [&](std::int64_t now) { return rooms_.run(operation, now); });
    }

    /// Forgets every event, hold and order (locks stay), as a storage restarted without
    /// persistence would: for tests of recovery.
    void wipe() {
        std::lock_guard lock(mutex_);
        holds_.wipe();
    }

private:
    // Applies one operation under the fake's single mutex (so runs are reproducible), with
    // whatever fault is scripted for it.
    template <typename F>
    auto apply(Op op, F&& step) -> decltype(step(std::int64_t{})) {
        const auto fault = take_fault(op);
        if (fault && fault->kind == FaultKind::latency) advance(fault->latency);
        std::lock_guard lock(mutex_);
        if (fault && fault->kind == FaultKind::fail_before) {
            calls_.push_back({op, make_error_code(errc::io_error)});
            return Failure(errc::io_error, "injected fault: the call failed before it was applied");
        }
        auto result = step(now_ms_.load());
        if (fault && fault->kind == FaultKind::lose_reply) {
            calls_.push_back({op, make_error_code(errc::outcome_unknown)});
            return Failure(errc::outcome_unknown,
                           "injected fault: the call was applied and its reply lost");
        }
        calls_.push_back({op, result.code()});
        return result;
    }

    std::optional<Fault> take_fault(Op op) {
        std::lock_guard lock(mutex_);
        for (auto it = faults_.begin(); it != faults_.end(); ++it) {
            if (it->op != op) continue;
            Fault fault = *it;
            if (--it->times <= 0) faults_.erase(it);
            return fault;
        }
        return std::nullopt;
    }

    mutable std::mutex mutex_;
    detail::LockTable locks_;
    detail::HoldTable holds_;
    detail::RoomTable rooms_{[](std::int64_t ms) { return WallTime(Millis(ms)); }};
    std::atomic<std::int64_t> now_ms_;
    std::deque<Fault> faults_;
    std::vector<Call> calls_;
};

static_assert(Backend<FakeBackend>);

/// A LockClock on a FakeBackend's clock (which it moves; both read the same time). Time
/// moves only by advance(): called by the test, or by a LockManager pausing in its calling
/// thread (a pause of lock(), of a release or extend() being retried), which advances
/// the clock by the pause instead of sleeping. Move the fake's time through this clock
/// once a manager uses it: FakeBackend::advance() alone wakes nothing.
///
/// advance() returns once every manager's watchdog thread has done what fell due by then
/// (renewals, releases retried in the background) and waits again, so a test reads
/// their effects right after it. Asynchronous pauses that fell due are posted to their
/// executors; the test runs them (e.g. io_context::poll()). Must outlive the managers and
/// guards that use it, and be destroyed before the io_contexts whose calls wait on it
/// (a pending call holds an executor of its context).
class FakeLockClock final : public LockClock {
public:
    explicit FakeLockClock(FakeBackend& fake) : fake_(fake) {}
    FakeLockClock(const FakeLockClock&) = delete;
    FakeLockClock& operator=(const FakeLockClock&) = delete;

    /// The fake's time, as a steady_clock time_point.
    [[nodiscard]] time_point now() const override {
        return time_point(std::chrono::duration_cast<time_point::duration>(fake_.now().time_since_epoch()));
    }

    /// Moves the fake's clock by `d` (throws seatlock::Error for a negative one), then
    /// wakes what fell due and waits for the watchdog threads as the class comment says.
    void advance(Millis d) {
        std::vector<Call> due;
        std::vector<Sleeper> sleepers;
        {
            std::lock_guard lock(mutex_);
            fake_.advance(d);
            const auto t = now();
            auto first_later = std::stable_partition(calls_.begin(), calls_.end(),
                                                     [t](const Call& c) { return c.at <= t; });
            std::move(calls_.begin(), first_later, std::back_inserter(due));
            calls_.erase(calls_.begin(), first_later);
            for (const auto& entry : sleepers_) {
                if (entry.second.mutex) sleepers.push_back(entry.second);
            }
            ++notifying_;
        }
        std::stable_sort(due.begin(), due.end(), [](const Call& a, const Call& b) { return a.at < b.at; });
        for (auto& call : due) call.fire();
        for (const auto& sleeper : sleepers) {
            std::lock_guard lock(*sleeper.mutex);
            sleeper.cv->notify_all();
        }
        std::unique_lock lock(mutex_);
        --notifying_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return settled(); });
    }

    /// Advances the clock to `t` (nothing when it has passed).
    void sleep_until(time_point t) override {
        const auto now_ = now();
        if (t > now_) advance(std::chrono::ceil<Millis>(t - now_));
    }

    void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                    time_point t) override {
        {
            std::lock_guard guard(mutex_);
            Sleeper& sleeper = sleepers_[&cv];
            sleeper.mutex = lock.mutex();
            sleeper.cv = &cv;
            sleeper.thread = std::this_thread::get_id();
            if (now() >= t) {
                sleeper.waiting = false;
                return;
            }
            sleeper.waiting = true;
            sleeper.due = t;
            changed_.notify_all();
        }
        cv.wait(lock);
        std::lock_guard guard(mutex_);
        sleepers_[&cv].waiting = false;
    }

    void notify(std::condition_variable& cv) override {
        {
            std::lock_guard guard(mutex_);
            sleepers_[&cv].waiting = false;
        }
        cv.notify_all();
    }

    void forget(std::condition_variable& cv) override {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return notifying_ == 0; });
        sleepers_.erase(&cv);
        changed_.notify_all();
    }

    void call_at(time_point t, const void* id, std::function<void()> fire) override {
        {
            std::lock_guard lock(mutex_);
            if (t > now()) {
                calls_.push_back({t, id, std::move(fire)});
                return;
            }
        }
        fire();
    }

    /// How many timed calls (asynchronous pauses) wait for the clock to reach their time.
    std::size_t pending_calls() const {
        std::lock_guard lock(mutex_);
        return calls_.size();
    }

    bool cancel_call(const void* id) override {
        std::lock_guard lock(mutex_);
        auto it = std::find_if(calls_.begin(), calls_.end(), [id](const Call& c) { return c.id == id; });
        if (it == calls_.end()) return false;
        calls_.erase(it);
        return true;
    }

private:
    struct Call {
        time_point at;
        const void* id;
        std::function<void()> fire;
    };
    // A watchdog thread, by its condition variable.
    struct Sleeper {
        std::mutex* mutex = nullptr;
        std::condition_variable* cv = nullptr;
        std::thread::id thread;
        time_point due{};
        bool waiting = false;
    };

    // With mutex_ held: every watchdog thread but the caller's waits for a later time.
    bool settled() const {
        const auto t = now();
        return std::all_of(sleepers_.begin(), sleepers_.end(), [&](const auto& entry) {
            const Sleeper& s = entry.second;
            return s.thread == std::this_thread::get_id() || (s.waiting && s.due > t);
        });
    }

    FakeBackend& fake_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Call> calls_;
    std::map<const std::condition_variable*, Sleeper> sleepers_;
    int notifying_ = 0;
};

}  // namespace seatlock
