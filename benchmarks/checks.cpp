// SPDX-License-Identifier: MIT
// benchmarks/checks.cpp: the soundness checks of a row.
#include "checks.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "scenarios.hpp"

namespace seatlock::bench {

std::vector<std::string> check(const Row& row) {
    std::vector<std::string> problems;
    const std::string what =
        fmt::format("{} on {} with {} {}", row.label(), kind_name(row.kind), row.m.callers,
                    row.api == Api::async ? "in flight" : "callers");
    const auto& s = *std::find_if(scenarios.begin(), scenarios.end(),
                                  [&](const auto& i) { return i.name == row.scenario; });
    if (row.peer) {
        // A peer that could not start here says so in its row; one that broke down is a problem.
        if (row.peer->failed) problems.push_back(what + ": " + row.peer->not_run);
        if (!row.measured()) return problems;
        if (row.peer->errors > 0) {
            problems.push_back(fmt::format("{}: {} operations failed (first: {})", what,
                                           row.peer->errors, row.peer->first_error));
        }
    }
    if (row.m.ops == 0 || !(row.m.ops_per_second() > 0) || !(row.m.latency.quantile_us(0.5) > 0)) {
        problems.push_back(what + ": no operation measured");
    }
    if (row.m.refused > 0 && !s.may_refuse) problems.push_back(what + ": operations refused");
    if (s.may_refuse && row.m.refused >= row.m.ops)
        problems.push_back(what + ": every operation was refused");
    if (!row.redis) return problems;
    if (row.kind == Kind::node_redlock) {
        // Its requests come many to a write, so writes are no round trips; but every attempt
        // is one EVALSHA to acquire and one to release (a refused acquire releases too).
        const double requests = *row.requests_per_op();
        if (std::abs(requests - 2) > 0.02) {
            problems.push_back(
                fmt::format("{}: {:.3f} requests per attempt, expected 2", what, requests));
        }
        return problems;
    }
    // Round trips are the design (one per step): anything else is a bug, not noise.
    double expected = row.kind == Kind::by_hand ? s.by_hand_trips : s.round_trips;
    if (s.may_refuse)
        expected =
            static_cast<double>(2 * row.m.ops - row.m.refused) / static_cast<double>(row.m.ops);
    if (row.kind == Kind::redis_cluster) {
        // A primary's writes include the replication stream to its replica, so replies are
        // no round trips there; but every step is one function call, on either API.
        std::uint64_t calls = 0;
        for (const auto& script : row.redis->scripts) calls += script.calls;
        const double per_op = static_cast<double>(calls) / static_cast<double>(row.m.ops);
        if (std::abs(per_op - expected) > 0.01 * expected) {
            problems.push_back(
                fmt::format("{}: {:.3f} function calls per operation, expected {:.3f}", what,
                            per_op, expected));
        }
        return problems;
    }
    if (row.api == Api::async || (row.kind == Kind::redis && row.m.callers > 1)) {
        // Pipelined (the async API, and blocking calls of several callers at once:
        // RedisOptions::pipeline_blocking_calls): replies share writes, so count the
        // function calls instead, one per step.
        const double requests = *row.requests_per_op();
        // The example server also polls for expired holds, one call every 250 ms
        // (drain_period, examples/ticketing_server/main.cpp), and its seat-map reader asks
        // for the changes after its own writes, at most every 5 ms (FeedOptions::min_gap,
        // seat_feed.hpp): calls beside the pairs', bounded per second, not per pair.
        const double polls = row.scenario == info(Scenario::http_hold_release).name ||
                                     row.scenario == info(Scenario::http_hold_release_apart).name
                                 ? ((4 + 200) * row.m.seconds + 4) / static_cast<double>(row.m.ops)
                                 : 0;
        if (requests < expected - 0.01 * expected || requests > expected + polls + 0.01 * expected) {
            problems.push_back(fmt::format("{}: {:.3f} requests per operation, expected {:.3f}",
                                           what, requests, expected));
        }
        return problems;
    }
    const double trips = *row.per_op(&CounterDelta::replies);
    const double commands = *row.per_op(&CounterDelta::commands);
    if (std::abs(trips - expected) > 0.01 * expected) {
        problems.push_back(fmt::format("{}: {:.3f} round trips per operation, expected {:.3f}",
                                       what, trips, expected));
    }
    if (commands + 1e-9 < trips) {
        problems.push_back(fmt::format("{}: fewer commands ({:.3f}) than round trips ({:.3f})",
                                       what, commands, trips));
    }
    return problems;
}

}  // namespace seatlock::bench
