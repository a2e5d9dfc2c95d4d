// SPDX-License-Identifier: MIT
// benchmarks/async_runner.hpp: runs N operations in flight from ONE thread through
// seatlock's asynchronous API and measures them as harness.hpp measures the blocking
// callers: operations per second, latency of every operation and of its first step, CPU
// and peak memory of the process.
//
// N slots share one io_context, run on the calling thread. Each slot is a loop: it starts
// an operation, and the operation's completion starts the slot's next one, so exactly N
// are in flight until the budget is spent. A phase ends when its last operation has
// completed, even when the io_context has other work (a RedisBackend whose connection runs
// on it keeps a read pending): the runner then stops it. Slots are built and warmed up
// before the clock starts, and `at_start` / `at_end` run with nothing in flight, so that
// server counters change only through the measured operations.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"

namespace seatlock::bench {

/// How a slot's operation says it ended; called from a handler on the slot's io_context.
using Done = std::function<void(Outcome)>;
/// One operation of one slot: starts it and returns; its last handler calls `done` (one
/// per slot, alive for the whole run). A failure throws from the handler that sees it,
/// which stops the run.
using AsyncOperation = std::function<void(Lap&, const Done& done)>;
/// Builds slot `index`'s operation (0-based).
using AsyncFactory = std::function<AsyncOperation(int index)>;

class AsyncRunner {
public:
    /// Runs `make(i)`'s operation in `in_flight` slots on `io` (which the operations must
    /// complete on) under `budget`, per slot. Throws the first failure of any operation.
    static Measurement run(boost::asio::io_context& io, int in_flight, const Budget& budget,
                           const AsyncFactory& make, const std::function<void()>& at_start = {},
                           const std::function<void()>& at_end = {}) {
        reset_peak_resident();
        AsyncRunner runner(io, in_flight, make);
        runner.drive(budget.warmup_ops, {}, false);
        if (at_start) at_start();
        const double cpu_at_start = process_cpu_seconds();
        const auto start = Clock::now();
        runner.drive(budget.ops_per_caller, budget.duration, true);
        const auto end = Clock::now();
        const double cpu = process_cpu_seconds() - cpu_at_start;
        if (at_end) at_end();

        Measurement m = std::move(runner.measured_);
        m.callers = in_flight;
        m.seconds = std::chrono::duration<double>(end - start).count();
        m.peak_rss_kib = peak_resident_kib();
        m.cpu_seconds = cpu;
        return m;
    }

private:
    struct Slot {
        AsyncOperation op;
        Done done;
        Lap lap;
        Clock::time_point started{};
        std::uint64_t left = 0;  // operations still to start in a phase of a fixed count
    };

    AsyncRunner(boost::asio::io_context& io, int in_flight, const AsyncFactory& make)
        : io_(io), slots_(static_cast<std::size_t>(in_flight)) {
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            Slot& slot = slots_[i];
            slot.op = make(static_cast<int>(i));
            slot.done = [this, &slot](Outcome outcome) { finished(slot, outcome); };
        }
    }

    // One phase: `per_slot` operations in each slot, or, when `duration` is positive, as
    // many as fit in it. Returns once the last operation in flight has completed.
    void drive(std::uint64_t per_slot, std::chrono::milliseconds duration, bool measure) {
        const bool timed = duration.count() > 0;
        if (!timed && per_slot == 0) return;
        measuring_ = measure;
        timed_ = timed;
        stop_ = false;
        deadline_ = Clock::now() + duration;
        in_flight_ = 0;
        for (auto& slot : slots_) {
            slot.left = timed ? 0 : per_slot;
            boost::asio::post(io_, [this, &slot] { start(slot, Clock::now()); });
        }
        io_.restart();
        // A handler's exception leaves run(); the other slots then end the operation they
        // have in flight, and nothing is left pending on a backend's thread.
        for (;;) {
            try {
                io_.run();
                break;
            } catch (const std::exception& e) {
                if (error_.empty()) error_ = e.what();
                stop_ = true;
                // The operation whose handler threw has ended without calling `done`.
                if (in_flight_ > 0) --in_flight_;
                if (in_flight_ == 0) break;
            }
        }
        if (!error_.empty()) throw std::runtime_error(error_);
    }

    void start(Slot& slot, Clock::time_point now) {
        if (stop_ || (timed_ ? now >= deadline_ : slot.left == 0)) {
            if (in_flight_ == 0) io_.stop();  // the phase's last operation has ended
            return;
        }
        if (!timed_) --slot.left;
        ++in_flight_;
        slot.lap.mark_ = {};
        slot.started = now;
        slot.op(slot.lap, slot.done);
    }

    void finished(Slot& slot, Outcome outcome) {
        const auto end = Clock::now();
        --in_flight_;
        if (measuring_) {
            measured_.latency.record((end - slot.started).count());
            if (slot.lap.mark_ != Clock::time_point{})
                measured_.first_step.record((slot.lap.mark_ - slot.started).count());
            ++measured_.ops;
            if (outcome == Outcome::refused) ++measured_.refused;
        }
        start(slot, end);
    }

    boost::asio::io_context& io_;
    std::vector<Slot> slots_;
    Measurement measured_;
    bool measuring_ = false;
    bool timed_ = false;  // the phase ends at deadline_, not on a count
    Clock::time_point deadline_{};
    bool stop_ = false;  // a failure: start nothing more
    int in_flight_ = 0;  // operations started and not yet ended
    std::string error_;
};

}  // namespace seatlock::bench
