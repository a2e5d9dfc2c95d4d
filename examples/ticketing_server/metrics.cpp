// SPDX-License-Identifier: MIT
// metrics.cpp: Prometheus text rendering.
#include "metrics.hpp"

#include <fmt/format.h>

#include <seatlock/version.hpp>

namespace ticketing {
namespace {

// "gcc 12.2.0", "clang 14.0.6": the compiler that built this binary, for build_info.
std::string compiler() {
#if defined(__clang__)
    return fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
    return fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
    return "unknown";
#endif
}

}  // namespace

void Metrics::conflict(const std::string& kind) {
    std::lock_guard lock(maps_mutex_);
    ++conflicts_[kind];
}

void Metrics::request_done(std::string_view route, std::string_view method, unsigned status,
                           std::chrono::steady_clock::duration took) {
    const double seconds = std::chrono::duration<double>(took).count();
    std::size_t bucket = 0;
    while (bucket < bucket_bounds.size() && seconds > bucket_bounds[bucket]) ++bucket;
    const auto ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    std::lock_guard lock(maps_mutex_);
    ++responses_[status];
    auto& latency = latencies_[{route, method}];
    ++latency.buckets[bucket];
    latency.sum_ns += ns;
}

void Metrics::redis_event(std::string_view kind) {
    std::lock_guard lock(maps_mutex_);
    auto at = redis_events_.find(kind);
    if (at == redis_events_.end()) at = redis_events_.emplace(std::string(kind), 0).first;
    ++at->second;
}

void Metrics::add_scraped(std::function<std::string()> render) {
    std::lock_guard lock(maps_mutex_);
    scraped_.push_back(std::move(render));
}

void Metrics::rate_limited(std::string_view lane, std::string_view by) {
    std::lock_guard lock(maps_mutex_);
    ++rate_limited_[{std::string(lane), std::string(by)}];
}

std::string Metrics::render() const {
    std::string out;
    auto counter = [&out](const char* name, const char* help, std::uint64_t value) {
        fmt::format_to(std::back_inserter(out), "# HELP {0} {1}\n# TYPE {0} counter\n{0} {2}\n",
                       name, help, value);
    };
    counter("seatlock_ticketing_holds_total", "Holds granted.", holds_.load());
    counter("seatlock_ticketing_confirms_total", "Holds confirmed as paid orders.",
            confirms_.load());
    counter("seatlock_ticketing_releases_total", "Holds released by their buyer.",
            releases_.load());
    counter("seatlock_ticketing_extends_total", "Holds extended.", extends_.load());
    counter("seatlock_ticketing_expiries_total",
            "Expired holds drained (their pending reservations deleted).", expiries_.load());
    counter("seatlock_ticketing_cancels_total", "Orders cancelled.", cancels_.load());
    counter("seatlock_ticketing_lock_release_errors_total",
            "Lock releases given up after retries: the lock stayed taken until its lease ended.",
            lock_release_errors_.load());
    counter("seatlock_ticketing_storage_losses_total",
            "Times the storage was found to have lost data (then the venue is repaired).",
            storage_losses_.load());
    counter("seatlock_ticketing_holds_lost_total",
            "Pending reservations closed because their holds were lost with the storage.",
            holds_lost_.load());
    counter("seatlock_ticketing_restore_conflicts_total",
            "Paid orders that recovery could not put back: their seats were taken meanwhile.",
            restore_conflicts_.load());
    counter("seatlock_ticketing_payments_refused_total",
            "Payments the order database refused: their seats were sold already (the storage "
            "went back to older data). Each is kept in refused_payments for a refund.",
            payments_refused_.load());
    counter("seatlock_ticketing_feed_storage_calls_total",
            "Storage calls of the seat feed's reader (changes and whole reads); viewers make none.",
            feed_calls_.load());
    counter("seatlock_ticketing_snapshots_total", "Seat map snapshots published by the seat feed.",
            snapshots_.load());
    counter("seatlock_ticketing_seat_maps_sent_total",
            "Seat maps answered with a body from a snapshot.", seat_maps_sent_.load());
    counter("seatlock_ticketing_seat_maps_unchanged_total",
            "Seat maps answered 304 Not Modified from a snapshot's version.",
            seat_maps_unchanged_.load());
    fmt::format_to(std::back_inserter(out),
                   "# HELP seatlock_ticketing_stream_viewers Open seat map streams.\n"
                   "# TYPE seatlock_ticketing_stream_viewers gauge\n"
                   "seatlock_ticketing_stream_viewers {}\n",
                   viewers_.load());
    counter("seatlock_ticketing_stream_frames_total", "Frames queued to stream viewers.",
            frames_.load());
    counter("seatlock_ticketing_stream_heartbeats_total",
            "Heartbeat comments sent to idle stream viewers.", heartbeats_.load());
    counter("seatlock_ticketing_stream_cut_offs_total",
            "Stream viewers cut off because their unsent frames passed the buffer bound.",
            cut_offs_.load());

    std::lock_guard lock(maps_mutex_);
    out +=
        "# HELP seatlock_ticketing_conflicts_total Requests refused by seat or hold state, by "
        "kind.\n"
        "# TYPE seatlock_ticketing_conflicts_total counter\n";
    for (const auto& [kind, n] : conflicts_) {
        fmt::format_to(std::back_inserter(out),
                       "seatlock_ticketing_conflicts_total{{kind=\"{}\"}} {}\n", kind, n);
    }
    out +=
        "# HELP seatlock_ticketing_rate_limited_total Requests refused with 429, by lane and by "
        "the key whose bucket refused them.\n"
        "# TYPE seatlock_ticketing_rate_limited_total counter\n";
    for (const auto& [key, n] : rate_limited_) {
        fmt::format_to(std::back_inserter(out),
                       "seatlock_ticketing_rate_limited_total{{lane=\"{}\",by=\"{}\"}} {}\n",
                       key.first, key.second, n);
    }
    out +=
        "# HELP seatlock_ticketing_http_responses_total HTTP responses, by status code.\n"
        "# TYPE seatlock_ticketing_http_responses_total counter\n";
    for (const auto& [status, n] : responses_) {
        fmt::format_to(std::back_inserter(out),
                       "seatlock_ticketing_http_responses_total{{code=\"{}\"}} {}\n", status, n);
    }

    out +=
        "# HELP seatlock_ticketing_http_request_duration_seconds Time from a parsed request "
        "to its response, by route (its template) and method.\n"
        "# TYPE seatlock_ticketing_http_request_duration_seconds histogram\n";
    for (const auto& [key, latency] : latencies_) {
        const auto labels = fmt::format("route=\"{}\",method=\"{}\"", key.first, key.second);
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < latency.buckets.size(); ++i) {
            cumulative += latency.buckets[i];
            const std::string le =
                i < bucket_bounds.size() ? fmt::format("{}", bucket_bounds[i]) : "+Inf";
            fmt::format_to(
                std::back_inserter(out),
                "seatlock_ticketing_http_request_duration_seconds_bucket{{{},le=\"{}\"}} {}\n",
                labels, le, cumulative);
        }
        fmt::format_to(std::back_inserter(out),
                       "seatlock_ticketing_http_request_duration_seconds_sum{{{0}}} {1}\n"
                       "seatlock_ticketing_http_request_duration_seconds_count{{{0}}} {2}\n",
                       labels, static_cast<double>(latency.sum_ns) / 1e9, cumulative);
    }
    if (!redis_events_.empty()) {
        out +=
            "# HELP seatlock_redis_events_total Events of the Redis backend's connections, by "
            "kind.\n"
            "# TYPE seatlock_redis_events_total counter\n";
        for (const auto& [kind, n] : redis_events_) {
            fmt::format_to(std::back_inserter(out), "seatlock_redis_events_total{{kind=\"{}\"}} {}\n",
                           kind, n);
        }
    }
    fmt::format_to(std::back_inserter(out),
                   "# HELP seatlock_ticketing_build_info The server's build: its seatlock version "
                   "and compiler. Always 1.\n"
                   "# TYPE seatlock_ticketing_build_info gauge\n"
                   "seatlock_ticketing_build_info{{version=\"{}\",compiler=\"{}\"}} 1\n",
                   SEATLOCK_VERSION, compiler());
    for (const auto& render : scraped_) out += render();
    return out;
}

}  // namespace ticketing
