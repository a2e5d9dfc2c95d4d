// SPDX-License-Identifier: MIT
// redis_metrics.hpp: what the server tells about its Redis connections: each event of the
// backend (RedisOptions::on_event) logged as one line (a lost connection and a slow call
// at level warn, the others at info) and counted by kind, and the
// backend's counters (RedisBackend::stats()) rendered for GET /metrics at every scrape
// (docs/ticketing-server.md, "Metrics").
#pragma once

#include "log.hpp"
#include "metrics.hpp"

#include <seatlock/backends/redis.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>

namespace ticketing {

/// Logs and counts every event of the backend made from `options` into `metrics`, which
/// must outlive that backend. The callback runs on the backend's notifier thread: it only
/// formats a line and takes the metrics' lock.
inline void observe_redis(seatlock::RedisOptions& options, Metrics& metrics) {
    options.on_event = [&metrics](const seatlock::RedisEvent& e) {
        metrics.redis_event(seatlock::to_string(e.kind));
        std::string line = fmt::format("redis: {} ({} connection, {})", seatlock::to_string(e.kind),
                                       seatlock::to_string(e.connection), e.node);
        if (!e.previous.empty()) line += fmt::format(", before {}", e.previous);
        if (e.slot >= 0) line += fmt::format(", slot {}", e.slot);
        if (e.error) line += fmt::format(", {}", e.error.message());
        if (!e.reason.empty()) line += fmt::format(": {}", e.reason);
        if (e.kind == seatlock::RedisEvent::Kind::slow_call)
            line += fmt::format(" took {} ms", std::chrono::duration<double, std::milli>(e.took).count());
        if (e.dropped > 0) line += fmt::format(" ({} events dropped before this one)", e.dropped);
        // A lost connection and a slow call are worth an operator's look; the rest is the
        // backend doing its job.
        using Kind = seatlock::RedisEvent::Kind;
        const bool trouble = e.kind == Kind::disconnected || e.kind == Kind::slow_call;
        log_at(trouble ? LogLevel::warn : LogLevel::info, "{}", line);
    };
}

/// The counters of `stats` in Prometheus text format: per connection (labels: its index
/// in the list, its kind and node), the reconnects of all of them, and the events dropped.
inline std::string render_redis_stats(const seatlock::RedisStats& stats) {
    std::string out;
    auto family = [&out, &stats](const char* name, const char* type, const char* help,
                         auto value_of) {
        fmt::format_to(std::back_inserter(out), "# HELP {0} {1}\n# TYPE {0} {2}\n", name, help, type);
        for (std::size_t i = 0; i < stats.connections.size(); ++i) {
            const auto& c = stats.connections[i];
            fmt::format_to(std::back_inserter(out), "{}{{id=\"{}\",connection=\"{}\",node=\"{}\"}} {}\n",
                           name, i, seatlock::to_string(c.connection), c.node, value_of(c));
        }
    };
    using C = seatlock::RedisConnectionStats;
    family("seatlock_redis_calls_in_flight", "gauge", "Calls given to a Redis connection and not answered yet.",
           [](const C& c) { return c.in_flight; });
    family("seatlock_redis_commands_sent_total", "counter", "Commands written to Redis.",
           [](const C& c) { return c.sent; });
    family("seatlock_redis_socket_writes_total", "counter", "Socket writes to Redis.",
           [](const C& c) { return c.writes; });
    family("seatlock_redis_reads_total", "counter", "Reads of replies from Redis.",
           [](const C& c) { return c.reads; });
    family("seatlock_redis_connects_total", "counter", "Connection attempts to Redis.",
           [](const C& c) { return c.connects; });
    family("seatlock_redis_connection_reconnects_total", "counter",
           "Connections to Redis made again after one was lost.",
           [](const C& c) { return c.reconnects; });
    std::uint64_t reconnects = 0;
    for (const auto& c : stats.connections) reconnects += c.reconnects;
    fmt::format_to(std::back_inserter(out),
                   "# HELP seatlock_redis_reconnects_total Connections to Redis made again after "
                   "one was lost, all connections.\n"
                   "# TYPE seatlock_redis_reconnects_total counter\n"
                   "seatlock_redis_reconnects_total {}\n"
                   "# HELP seatlock_redis_events_dropped_total Events of the Redis backend dropped "
                   "because their queue was full.\n"
                   "# TYPE seatlock_redis_events_dropped_total counter\n"
                   "seatlock_redis_events_dropped_total {}\n",
                   reconnects, stats.events_dropped);
    return out;
}

/// Renders `backend`'s counters into `metrics` at every scrape, while it exists.
inline void scrape_redis(const std::shared_ptr<seatlock::RedisBackend>& backend, Metrics& metrics) {
    metrics.add_scraped([weak = std::weak_ptr<seatlock::RedisBackend>(backend)] {
        const auto alive = weak.lock();
        return alive ? render_redis_stats(alive->stats()) : std::string();
    });
}

}  // namespace ticketing
