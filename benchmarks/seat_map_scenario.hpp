// SPDX-License-Identifier: MIT
// benchmarks/seat_map_scenario.hpp: the seat_map_read scenario of seatlock-bench. It runs
// seatlock-seat-map-bench (seat_map_read.cpp, built beside it) to its end: the longest
// Redis call while a 100,000-seat venue's seat map is read through seats(), in pieces,
// under holds and releases. Its figures go into the printed figures and the JSON results.
#pragma once

#include "options.hpp"

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace seatlock::bench {

inline constexpr std::string_view seat_map_scenario = "seat_map_read";

/// What seatlock-seat-map-bench reported (its --json), or why it did not run.
struct SeatMapRead {
    bool wanted = false;     ///< the scenario was asked for (or every scenario was)
    std::string not_run;     ///< why it has no figures (empty when it has)
    boost::json::object figures;
};

/// Runs it when `options` want the scenario (--quick: 10,000 seats, 4 reads).
[[nodiscard]] SeatMapRead run_seat_map_read(const Options& options);
/// Its figures against the target (no Redis call of 1 ms or more), as the figures print.
void print_seat_map_read(const SeatMapRead& result, bool quick);
/// Why it did not run, as a problem; nothing when it ran or was not wanted.
[[nodiscard]] std::vector<std::string> check_seat_map_read(const SeatMapRead& result);

}  // namespace seatlock::bench
