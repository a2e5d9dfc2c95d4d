// SPDX-License-Identifier: MIT
// metrics.hpp: the counters and the latency histogram behind GET /metrics, rendered in
// the Prometheus text exposition format (docs/ticketing-server.md, "Metrics"). The counters
// are atomics; the maps by label (kind, status, route and method) take a mutex, once per
// request at most. Every label's values come from a bounded set: a route is its template
// (`/events/{event}/holds`), never the path asked for.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ticketing {

/// The server's counters; shared by every worker thread.
class Metrics {
public:
    // One count per event of the ticketing flow.
    void hold_granted() { holds_.fetch_add(1, std::memory_order_relaxed); }
    void hold_confirmed() { confirms_.fetch_add(1, std::memory_order_relaxed); }
    void hold_released() { releases_.fetch_add(1, std::memory_order_relaxed); }
    void hold_extended() { extends_.fetch_add(1, std::memory_order_relaxed); }
    /// `n` expired holds whose pending rows were deleted.
    void holds_expired(std::uint64_t n) { expiries_.fetch_add(n, std::memory_order_relaxed); }
    void order_cancelled() { cancels_.fetch_add(1, std::memory_order_relaxed); }
    /// A lock release given up after its retries (LockOptions::on_release_error).
    void lock_release_error() { lock_release_errors_.fetch_add(1, std::memory_order_relaxed); }
    /// The storage was found to have lost data (storage_lost).
    void storage_lost() { storage_losses_.fetch_add(1, std::memory_order_relaxed); }
    /// `n` pending rows closed because their holds were lost with the storage.
    void holds_lost(std::uint64_t n) { holds_lost_.fetch_add(n, std::memory_order_relaxed); }
    /// A paid order recovery could not put back (its seats were taken meanwhile).
    void restore_conflict() { restore_conflicts_.fetch_add(1, std::memory_order_relaxed); }
    /// A payment the database refused because its seats were sold already (kept for a refund).
    void payment_refused() { payments_refused_.fetch_add(1, std::memory_order_relaxed); }
    /// A storage call of the seat feed's reader (seat_feed.hpp): viewers make none.
    void feed_storage_call() { feed_calls_.fetch_add(1, std::memory_order_relaxed); }
    /// A new snapshot of an event published by the seat feed.
    void snapshot_published() { snapshots_.fetch_add(1, std::memory_order_relaxed); }
    /// A seat map answered from a snapshot: 200 with a body, or 304.
    void seat_map_served(bool unchanged) {
        (unchanged ? seat_maps_unchanged_ : seat_maps_sent_).fetch_add(1, std::memory_order_relaxed);
    }
    /// A stream viewer came (+1) or went (-1).
    void stream_viewers(std::int64_t delta) {
        viewers_.fetch_add(delta, std::memory_order_relaxed);
    }
    /// The stream viewers open now.
    [[nodiscard]] std::int64_t open_streams() const { return viewers_.load(std::memory_order_relaxed); }
    /// A frame (not a heartbeat) queued to a stream viewer.
    void stream_frame() { frames_.fetch_add(1, std::memory_order_relaxed); }
    /// A heartbeat comment sent to an idle stream viewer.
    void stream_heartbeat() { heartbeats_.fetch_add(1, std::memory_order_relaxed); }
    /// A stream viewer cut off: its buffer of unsent frames passed the bound.
    void stream_cut_off() { cut_offs_.fetch_add(1, std::memory_order_relaxed); }
    /// A request refused by the state of the seats or of a hold: "seat_taken",
    /// "sold_out", "limit_exceeded", "hold_expired", ...
    void conflict(const std::string& kind);
    /// A request refused with 429 (rate_limit.hpp): its lane ("write", "read") and the key
    /// whose bucket refused it ("buyer", "address").
    void rate_limited(std::string_view lane, std::string_view by);
    /// One answered HTTP request: its route's template (Api::route_label; "other" for a
    /// path the server has no endpoint at), its method (Api::method_label), its status code
    /// and how long it took. `route` and `method` must be views of static strings: they
    /// are kept as the histogram's labels.
    void request_done(std::string_view route, std::string_view method, unsigned status,
                      std::chrono::steady_clock::duration took);
    /// One event of the Redis backend's connections (RedisOptions::on_event), by its kind
    /// ("reconnecting", "slow_call", ...).
    void redis_event(std::string_view kind);
    /// Text rendered after the server's own metrics at every scrape, in the order added
    /// (the seat gauges of seat_feed.hpp, the Redis backend's counters of
    /// redis_metrics.hpp); added before the server serves.
    void add_scraped(std::function<std::string()> render);

    /// Everything, in Prometheus text format (version 0.0.4).
    std::string render() const;

private:
    // Upper bounds in seconds; the last bucket (+Inf) is implicit.
    static constexpr std::array<double, 12> bucket_bounds = {
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};

    std::atomic<std::uint64_t> holds_{0};
    std::atomic<std::uint64_t> confirms_{0};
    std::atomic<std::uint64_t> releases_{0};
    std::atomic<std::uint64_t> extends_{0};
    std::atomic<std::uint64_t> expiries_{0};
    std::atomic<std::uint64_t> cancels_{0};
    std::atomic<std::uint64_t> lock_release_errors_{0};
    std::atomic<std::uint64_t> storage_losses_{0};
    std::atomic<std::uint64_t> holds_lost_{0};
    std::atomic<std::uint64_t> restore_conflicts_{0};
    std::atomic<std::uint64_t> payments_refused_{0};
    std::atomic<std::uint64_t> feed_calls_{0};
    std::atomic<std::uint64_t> snapshots_{0};
    std::atomic<std::uint64_t> seat_maps_sent_{0};
    std::atomic<std::uint64_t> seat_maps_unchanged_{0};
    std::atomic<std::int64_t> viewers_{0};
    std::atomic<std::uint64_t> frames_{0};
    std::atomic<std::uint64_t> heartbeats_{0};
    std::atomic<std::uint64_t> cut_offs_{0};

    // One latency histogram per route and method.
    struct Latency {
        std::array<std::uint64_t, bucket_bounds.size() + 1> buckets{};
        std::uint64_t sum_ns = 0;
    };

    mutable std::mutex maps_mutex_;
    std::map<std::string, std::uint64_t> conflicts_;
    std::map<std::pair<std::string, std::string>, std::uint64_t> rate_limited_;
    std::map<unsigned, std::uint64_t> responses_;
    std::map<std::pair<std::string_view, std::string_view>, Latency> latencies_;
    std::map<std::string, std::uint64_t, std::less<>> redis_events_;
    std::vector<std::function<std::string()>> scraped_;
};

}  // namespace ticketing
