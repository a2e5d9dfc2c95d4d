// SPDX-License-Identifier: MIT
// benchmarks/auth_scenario.hpp: the http_auth scenario of seatlock-bench: what signed
// sessions and rate limits cost the example server's hold over HTTP. Two servers on the
// memory backend, side by side: one that takes the buyer from X-User-Id as given, with
// rate limits off (--trust-user-header, --rate-buyer-* 0), and one as it runs by default
// (sessions checked, HMAC-SHA-256, and the per-buyer rate limits), with a session key file
// of the benchmark's. The same load (http_load.hpp: 64 keep-alive connections holding one
// bleacher place and releasing it) runs against each in interleaved slices, so that a
// neighbour's load hits both alike; reported as pairs a second and the servers' CPU time
// a pair (less disturbed by a busy machine than the rate), and the ratios of the two.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"
#include "options.hpp"

namespace seatlock::bench {

inline constexpr std::string_view auth_scenario = "http_auth";

/// The scenario's two measurements, or why it did not run.
struct AuthResult {
    bool wanted = false;  ///< asked for (or every scenario was), with the memory backend
    std::string not_run;  ///< why it has no figures (empty when it has)
    int connections = 64;
    Measurement open;     ///< X-User-Id taken as given, no rate limits
    Measurement secured;  ///< Bearer sessions and the default rate limits
    double open_cpu_seconds = 0;     ///< the open server's CPU time over its slices
    double secured_cpu_seconds = 0;  ///< the secured server's

    /// Server CPU microseconds a pair.
    [[nodiscard]] static double cpu_us_per_pair(double cpu_seconds, const Measurement& m) {
        return m.ops > 0 ? cpu_seconds * 1e6 / static_cast<double>(m.ops) : 0;
    }

    /// Pairs a second with sessions and rate limits over those without: below 1 is their cost.
    [[nodiscard]] double ratio() const {
        return open.ops_per_second() > 0 ? secured.ops_per_second() / open.ops_per_second() : 0;
    }
};

/// Runs it when `options` want it (and the ticketing server was built).
[[nodiscard]] AuthResult run_auth(const Options& options);
/// Its table: pairs a second and CPU a pair of each server, and their ratios.
void print_auth(const AuthResult& result, bool quick);
/// Why it did not run, as a problem; nothing when it ran or was not wanted.
[[nodiscard]] std::vector<std::string> check_auth(const AuthResult& result);

}  // namespace seatlock::bench
