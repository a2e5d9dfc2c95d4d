// SPDX-License-Identifier: MIT
// benchmarks/viewers.hpp: the viewers scenario. The ticketing server sells a 60,000-seat
// venue (60 sections of 40 rows of 25 seats, a --venue file this benchmark writes) on the
// memory backend and on the run's redis-server; 64 buyer connections hold and release
// single seats while V viewers follow the seat map:
//
//   none; 1,000 pollers (GET /seats with If-None-Match, every 500 ms); 1,000 stream
//   viewers (Server-Sent Events); 1,000 stream viewers and 1,000 pollers; 10,000 stream
//   viewers.
//
// Each run reports the buyers' pairs/s and hold p99 against the run without viewers (same
// server, same cores), the staleness of what viewers see (a hold's answer names the version
// it made; the time until each viewer has that version), Redis calls and CPU per
// viewer-second (INFO commandstats and INFO cpu around the measured part), the server's
// RSS and CPU per viewer, and the viewers the server dropped. A separate phase counts the
// whole maps per second the server serves from its snapshot, gzip and not. The issue's
// targets are printed beside the figures, never asserted.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "options.hpp"
#include "redis_client.hpp"
#include "viewer_load.hpp"

namespace seatlock::testing {
class RedisServer;
}

namespace seatlock::bench {

/// The name --scenario selects the viewers scenario by.
inline constexpr std::string_view viewers_scenario = "viewers";

/// The viewers of one run.
struct ViewerMix {
    std::string name;
    int streams = 0;
    int pollers = 0;
    [[nodiscard]] int viewers() const { return streams + pollers; }
};

/// One run: a backend and a mix of viewers, with the buyers' load.
struct ViewerRun {
    Kind kind = Kind::memory;
    ViewerMix mix;
    std::string not_run;  ///< why it has no figures (empty when it has)
    Measurement m;        ///< the buyers: one operation is a hold and its release
    LatencyHistogram stream_staleness;
    LatencyHistogram poll_staleness;
    std::size_t probes = 0;            ///< holds whose version was followed
    std::uint64_t missed = 0;          ///< (probe, viewer) pairs not delivered by the end
    std::uint64_t holds = 0;           ///< holds answered in the measured part
    std::uint64_t holds_with_version = 0;
    ViewerCounters viewers;            ///< in the measured part (dropped: over the whole run)
    std::optional<CounterDelta> redis;  ///< the Redis backend's runs
    double feed_calls = 0;  ///< the server's seat-map reader's storage calls in the measured part
    double server_cpu_seconds = 0;     ///< in the measured part
    std::int64_t server_rss_kib_before = 0;  ///< before the viewers connected
    std::int64_t server_rss_kib = 0;         ///< at the end of the measured part

    [[nodiscard]] bool measured() const { return not_run.empty() && m.seconds > 0; }
};

/// The full-map phase: whole maps per second, gzip or not.
struct FullMapRun {
    Kind kind = Kind::memory;
    bool gzip = false;
    std::string not_run;
    Measurement m;
};

struct ViewersResult {
    std::vector<ViewerRun> runs;
    std::vector<FullMapRun> maps;
    std::int64_t seats = 0;          ///< of the venue
    std::uint64_t open_files = 0;    ///< this process's open-file limit
};

/// Runs the scenario on each wanted backend (Redis: on `redis`, whose counters `stats`
/// reads; both may be null when Redis is not wanted), printing each run as it ends.
[[nodiscard]] ViewersResult run_viewers(const Options& options, testing::RedisServer* redis,
                                        Connection* stats);

/// The figures of every run against its backend's run without viewers, with the issue's
/// targets and whether each was met.
void print_viewer_figures(const ViewersResult& result, bool quick);

/// What a run measured that cannot be right (the harness's sanity, not speed).
[[nodiscard]] std::vector<std::string> check_viewers(const ViewersResult& result);

/// The results as the JSON document's "viewers" member.
[[nodiscard]] boost::json::object viewers_json(const ViewersResult& result);

}  // namespace seatlock::bench
