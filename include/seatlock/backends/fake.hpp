// seatlock/backends/fake.hpp: FakeBackend, a deterministic backend for tests — yours and
// ours. Its clock only moves when told (`advance`), its faults are scripted (fail before
// applying; apply, then lose the reply; added latency), and it records every call.
//
//     seatlock::FakeBackend fake;
//     fake.inject({seatlock::op::id<seatlock::op::confirm>, seatlock::FakeBackend::FaultKind::lose_reply});
//     auto r = store.confirm(token, "pay-1");   // applied, but reported outcome_unknown
//     fake.advance(std::chrono::minutes(11));   // every hold of 10 minutes has now expired
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/hold_table.hpp>
#include <seatlock/detail/lock_table.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

namespace seatlock {

class FakeBackend {
public:
    /// An operation, named by its value type: `op::id<op::confirm>` (seatlock/operations.hpp).
    using Op = op::Id;
    enum class FaultKind {
        fail_before,  ///< not applied; reported as io_error
        lose_reply,   ///< applied, then reported as outcome_unknown (a reply lost in transit)
        latency,      ///< applied normally after sleeping `latency` of real time
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

    /// The clock starts at `start` (by default 2026-01-01T00:00:00Z) and moves only by advance().
    explicit FakeBackend(WallTime start = WallTime(std::chrono::seconds(1767225600)))
        : locks_(1),
          holds_([](std::int64_t ms) { return WallTime(std::chrono::milliseconds(ms)); }),
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
        if (fault && fault->kind == FaultKind::latency) std::this_thread::sleep_for(fault->latency);
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
    std::atomic<std::int64_t> now_ms_;
    std::deque<Fault> faults_;
    std::vector<Call> calls_;
};

static_assert(Backend<FakeBackend>);

}  // namespace seatlock
