// SPDX-License-Identifier: MIT
// benchmarks/tls_scenario.hpp: the tls scenario of seatlock-bench: what TLS to Redis
// (RedisOptions::tls) costs against plain TCP. One private redis-server serving both (a
// TLS port beside its plain one, certificates made with openssl at run time); lock and
// hold pairs with 64 in flight, through the asynchronous API (64 on one thread) and the
// blocking one (64 threads), each over TCP and over TLS in interleaved slices, so that a
// neighbour's load hits both alike. Reported as pairs a second and the ratio TLS / TCP.
#pragma once

#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"
#include "row.hpp"

namespace seatlock::bench {

inline constexpr std::string_view tls_scenario = "tls";

/// One pair measured over both transports.
struct TlsPair {
    std::string scenario;  ///< a scenario's name: hold3+release, lock_all3+unlock, lock+unlock
    Api api = Api::async;
    int in_flight = 64;
    Measurement tcp, tls;

    /// TLS pairs a second over TCP's: below 1 is what TLS costs.
    [[nodiscard]] double ratio() const {
        return tcp.ops_per_second() > 0 ? tls.ops_per_second() / tcp.ops_per_second() : 0;
    }
};

/// The scenario's pairs, or why it did not run.
struct TlsResult {
    bool wanted = false;  ///< asked for (or every scenario was), with the redis backend
    std::string not_run;  ///< why it has no figures (empty when it has)
    std::vector<TlsPair> pairs;
};

/// Runs it when `options` want it (and the Redis backend was built).
[[nodiscard]] TlsResult run_tls(const Options& options);
/// Its table: pairs a second over TCP and TLS, and their ratio.
void print_tls(const TlsResult& result, bool quick);
/// Why it did not run, as a problem; nothing when it ran or was not wanted.
[[nodiscard]] std::vector<std::string> check_tls(const TlsResult& result);
/// Its figures for the JSON results.
[[nodiscard]] boost::json::value tls_json(const TlsResult& result);

}  // namespace seatlock::bench
