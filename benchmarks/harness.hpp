// SPDX-License-Identifier: MIT
// benchmarks/harness.hpp: runs one operation from N caller threads at once and measures
// it: operations per second, the latency of every operation (and of its first step, e.g.
// the hold of a hold + release), and the process's peak resident memory during the run.
//
// Every caller builds its own state (connection, seats, requests) before the clock
// starts, runs a few warm-up operations, then waits at a common start line, so that
// neither connection set-up nor thread start-up is measured, and so that server counters
// can be read at the exact point where measuring begins.
#pragma once

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <latch>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::bench {

using Clock = std::chrono::steady_clock;

/// Latencies in nanoseconds, kept in a log-linear histogram (128 buckets per power of
/// two, so every reported quantile is within 1% of the exact one) instead of a vector of
/// samples: millions of operations cost a fixed 36 KiB per caller and do not inflate the
/// peak memory the benchmark reports.
class LatencyHistogram {
public:
    LatencyHistogram() : counts_(bucket_count, 0) {}

    void record(std::int64_t ns, std::uint64_t times = 1) {
        counts_[index(static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0)))] += times;
        total_ += times;
    }

    void merge(const LatencyHistogram& other) {
        for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
        total_ += other.total_;
    }

    [[nodiscard]] std::uint64_t count() const noexcept { return total_; }

    /// The latency in microseconds that a fraction `q` of the samples do not exceed (the
    /// upper edge of the bucket holding that sample); 0 without samples.
    [[nodiscard]] double quantile_us(double q) const {
        if (total_ == 0) return 0;
        const auto rank =
            static_cast<std::uint64_t>(std::max(1.0, q * static_cast<double>(total_) + 0.5));
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            seen += counts_[i];
            if (seen >= rank) return static_cast<double>(upper_edge(i)) / 1000.0;
        }
        return static_cast<double>(upper_edge(counts_.size() - 1)) / 1000.0;
    }

private:
    static constexpr unsigned sub_bits = 7;
    static constexpr std::uint64_t sub = 1u << sub_bits;
    static constexpr unsigned max_shift = 34;  // values up to ~2^41 ns (over half an hour)
    static constexpr std::size_t bucket_count = sub + (max_shift + 1) * sub;

    static std::size_t index(std::uint64_t v) {
        if (v < sub) return static_cast<std::size_t>(v);
        const unsigned shift =
            std::min<unsigned>(static_cast<unsigned>(std::bit_width(v)) - sub_bits - 1, max_shift);
        const std::uint64_t mantissa = std::min<std::uint64_t>(v >> shift, 2 * sub - 1);
        return static_cast<std::size_t>(sub + shift * sub + (mantissa - sub));
    }
    static std::uint64_t upper_edge(std::size_t i) {
        if (i < sub) return i;
        const std::uint64_t shift = (i - sub) / sub;
        const std::uint64_t mantissa = (i - sub) % sub + sub;
        return ((mantissa + 1) << shift) - 1;
    }

    std::vector<std::uint64_t> counts_;
    std::uint64_t total_ = 0;
};

/// How much work each caller does: for a duration, or a fixed number of operations (for
/// `--quick`, and for operations that use up inventory, such as a confirm).
struct Budget {
    std::chrono::milliseconds duration{0};  ///< when positive: run this long
    std::uint64_t ops_per_caller = 0;       ///< otherwise: this many operations per caller
    std::uint64_t warmup_ops = 0;           ///< per caller, before measuring starts
};

/// How one operation ended. Anything else (an error, an unexpected refusal) throws and
/// stops the whole run: a benchmark of failing calls measures nothing.
enum class Outcome {
    done,     ///< did what it set out to do
    refused,  ///< an expected refusal (a contended seat another caller had)
};

/// Lets an operation mark the end of its first step (the hold of a hold + release), whose
/// latency is then reported apart.
class Lap {
public:
    void first_step_done() noexcept { mark_ = Clock::now(); }

private:
    friend struct Runner;
    friend class AsyncRunner;
    Clock::time_point mark_{};
};

/// One operation of one caller; built by the caller's own thread.
using Operation = std::function<Outcome(Lap&)>;
/// Builds caller `index`'s operation (0-based).
using CallerFactory = std::function<Operation(int index)>;

/// What a run measured.
struct Measurement {
    int callers = 0;
    double seconds = 0;
    std::uint64_t ops = 0;      ///< operations measured, refused ones included
    std::uint64_t refused = 0;  ///< of which ended in an expected refusal
    LatencyHistogram latency;
    LatencyHistogram first_step;  ///< empty unless the operation marks its first step
    std::int64_t peak_rss_kib = 0;
    double cpu_seconds = 0;  ///< CPU time the whole process used while measuring

    [[nodiscard]] double ops_per_second() const {
        return seconds > 0 ? static_cast<double>(ops) / seconds : 0;
    }
    /// How many cores the process kept busy on average: on a shared machine, whether the
    /// callers got the cores they needed.
    [[nodiscard]] double cores_used() const { return seconds > 0 ? cpu_seconds / seconds : 0; }

    /// Adds another slice of the same run (same operation, same callers).
    void merge(const Measurement& other) {
        seconds += other.seconds;
        ops += other.ops;
        refused += other.refused;
        latency.merge(other.latency);
        first_step.merge(other.first_step);
        peak_rss_kib = std::max(peak_rss_kib, other.peak_rss_kib);
        cpu_seconds += other.cpu_seconds;
    }
};

// ---------------------------------------------------------------------------------------
// Process memory

namespace detail {
inline std::int64_t status_field_kib(const std::string& name) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(name + ":", 0) == 0) return std::stoll(line.substr(name.size() + 1));
    }
    return -1;
}
}  // namespace detail

/// Resident memory now, in bytes.
inline std::int64_t resident_bytes() {
    return detail::status_field_kib("VmRSS") * 1024;
}

/// Peak resident memory since the last reset_peak_resident(), in KiB.
inline std::int64_t peak_resident_kib() {
    return detail::status_field_kib("VmHWM");
}

/// Starts a new peak-memory window (Linux: writing 5 to clear_refs resets VmHWM), so each
/// run reports its own peak rather than the largest of every run before it.
inline void reset_peak_resident() {
    // Memory freed by earlier runs goes back to the system first: it would otherwise
    // stay resident and count towards this run's peak.
    ::malloc_trim(0);
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
}

/// Bytes handed out by malloc and not yet freed: exact, unlike resident memory, which
/// moves in pages and keeps what the allocator has not returned.
/// CPU time (user + system) of every thread of the process so far, in seconds.
inline double process_cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

inline std::int64_t heap_in_use_bytes() {
    const struct mallinfo2 info = ::mallinfo2();
    return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
}

// ---------------------------------------------------------------------------------------
// Runner

/// Runs `make(i)`'s operation from `callers` threads under `budget`. `at_start` runs once
/// every caller is built and warmed up, just before the clock starts; `at_end` once every
/// caller has stopped, while their operations (and what they hold) still exist: between
/// the two, server counters and memory change only through the measured operations.
/// Rethrows the first error of any caller.
struct Runner {
    static Measurement run(int callers, const Budget& budget, const CallerFactory& make,
                           const std::function<void()>& at_start = {},
                           const std::function<void()>& at_end = {}) {
        struct PerCaller {
            Operation op;
            LatencyHistogram latency, first_step;
            std::uint64_t ops = 0, refused = 0;
        };
        std::vector<PerCaller> results(static_cast<std::size_t>(callers));
        std::latch ready(callers);
        std::latch go(1);
        std::atomic<bool> stop{false};
        std::mutex error_mutex;
        std::string error;
        auto fail = [&](const std::string& what) {
            std::lock_guard lock(error_mutex);
            if (error.empty()) error = what;
            stop = true;
        };

        auto body = [&](int index) {
            PerCaller& mine = results[static_cast<std::size_t>(index)];
            Operation& op = mine.op;
            bool counted_down = false;
            try {
                op = make(index);
                Lap lap;
                for (std::uint64_t i = 0; i < budget.warmup_ops && !stop; ++i) op(lap);
                ready.count_down();
                counted_down = true;
                go.wait();
                const bool timed = budget.duration.count() > 0;
                for (std::uint64_t n = 0; timed || n < budget.ops_per_caller; ++n) {
                    if (stop.load(std::memory_order_relaxed)) break;
                    lap.mark_ = {};
                    const auto start = Clock::now();
                    const Outcome outcome = op(lap);
                    const auto end = Clock::now();
                    mine.latency.record((end - start).count());
                    if (lap.mark_ != Clock::time_point{})
                        mine.first_step.record((lap.mark_ - start).count());
                    ++mine.ops;
                    if (outcome == Outcome::refused) ++mine.refused;
                }
            } catch (const std::exception& e) {
                fail("caller " + std::to_string(index) + ": " + e.what());
            }
            if (!counted_down) ready.count_down();
        };

        reset_peak_resident();
        std::vector<std::thread> threads;
        threads.reserve(results.size());
        for (int i = 0; i < callers; ++i) threads.emplace_back(body, i);
        ready.wait();
        try {
            if (at_start && !stop) at_start();
        } catch (const std::exception& e) {
            fail(std::string("at start: ") + e.what());
        }
        const double cpu_at_start = process_cpu_seconds();
        const auto start = Clock::now();
        go.count_down();
        if (budget.duration.count() > 0) {
            const auto deadline = start + budget.duration;
            while (!stop && Clock::now() < deadline) {
                std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(20),
                                                                      deadline - Clock::now()));
            }
            stop = true;
        }
        for (auto& t : threads) t.join();
        const auto end = Clock::now();
        const double cpu = process_cpu_seconds() - cpu_at_start;
        try {
            if (at_end && error.empty()) at_end();
        } catch (const std::exception& e) {
            fail(std::string("at end: ") + e.what());
        }
        if (!error.empty()) throw std::runtime_error(error);

        Measurement m;
        m.callers = callers;
        m.seconds = std::chrono::duration<double>(end - start).count();
        for (const auto& r : results) {
            m.ops += r.ops;
            m.refused += r.refused;
            m.latency.merge(r.latency);
            m.first_step.merge(r.first_step);
        }
        m.peak_rss_kib = peak_resident_kib();
        m.cpu_seconds = cpu;
        return m;
    }
};

}  // namespace seatlock::bench
