// SPDX-License-Identifier: MIT
// src/redis/telemetry.hpp: what the backend tells about its connections: the counters of
// every pool and pipelined connection (RedisBackend::stats()) and the events handed to
// RedisOptions::on_event.
//
// Events never make a call wait for the callback: emit() puts them in a bounded queue (a
// short lock, no allocation beyond the event's own strings) and one notifier thread,
// started by the first event, runs the callback. A full queue drops the newest event and
// counts it; the next event delivered says how many were dropped before it. With no
// callback nothing is made: observed() is false and the connections skip building events
// and timing calls.
#pragma once

#include <seatlock/backends/redis.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::redis_detail {

/// The counters of one pool (its connections added up) or one pipelined connection,
/// updated with relaxed atomics by the connection, read by stats().
struct ConnectionCounters {
    ConnectionCounters(RedisEvent::Connection c, std::string where)
        : connection(c), node(std::move(where)) {}
    const RedisEvent::Connection connection;
    const std::string node;
    std::atomic<std::uint64_t> in_flight{0};
    std::atomic<std::uint64_t> sent{0};
    std::atomic<std::uint64_t> writes{0};
    std::atomic<std::uint64_t> reads{0};
    std::atomic<std::uint64_t> connects{0};
    std::atomic<std::uint64_t> reconnects{0};

    void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) noexcept {
        counter.fetch_add(n, std::memory_order_relaxed);
    }
    void remove_in_flight() noexcept { in_flight.fetch_sub(1, std::memory_order_relaxed); }
    [[nodiscard]] RedisConnectionStats read() const;
};

class Telemetry {
public:
    /// Takes on_event, slow_call_threshold and event_queue_limit from `options`.
    explicit Telemetry(const RedisOptions& options);
    /// stop(), if it was not called.
    ~Telemetry();
    Telemetry(const Telemetry&) = delete;
    Telemetry& operator=(const Telemetry&) = delete;

    /// Whether anyone listens: without it, no event is made.
    [[nodiscard]] bool observed() const noexcept { return observed_; }
    /// Whether a call that took `took` is a slow one (observed() only).
    template <typename Duration>
    [[nodiscard]] bool slow(Duration took) const noexcept {
        return observed_ && took >= slow_threshold_;
    }

    /// Hands `event` to the notifier thread (its `at` and `dropped` are set here); never
    /// waits for the callback. Dropped when the queue is full; nothing once stopped.
    void emit(RedisEvent event);
    /// The same, built here: for the common fields.
    void emit(RedisEvent::Kind kind, RedisEvent::Connection connection, std::string node,
              std::string reason = {});

    /// Counters for a new pool or pipelined connection, listed by stats() from now on.
    std::shared_ptr<ConnectionCounters> counters(RedisEvent::Connection connection,
                                                 std::string node);
    [[nodiscard]] RedisStats stats() const;

    /// Waits for the callback running, if any; drops what is queued; no event is
    /// delivered after it returns. Idempotent.
    void stop();

private:
    void notify();

    const std::function<void(const RedisEvent&)> on_event_;
    const bool observed_;
    const Millis slow_threshold_;
    const std::size_t limit_;

    mutable std::mutex mutex_;  // guards what follows
    std::condition_variable wake_;
    std::deque<RedisEvent> queue_;
    std::uint64_t dropped_since_last_ = 0;  // dropped since the last event queued
    bool stopping_ = false;
    std::thread notifier_;
    std::vector<std::shared_ptr<ConnectionCounters>> counters_;

    std::atomic<std::uint64_t> delivered_{0};
    std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace seatlock::redis_detail
