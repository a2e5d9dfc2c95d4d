// SPDX-License-Identifier: MIT
// benchmarks/options.hpp: seatlock-bench's command line — what to run, how long, and where
// the JSON goes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend_kind.hpp"

namespace seatlock::bench {

extern const std::string_view usage;

struct Options {
    bool quick = false;
    std::string out;                     ///< the JSON results file; empty: none
    std::vector<std::string> scenarios;  ///< empty: all
    std::vector<std::string> backends;   ///< empty: all
    std::vector<std::string> apis;       ///< seatlock's APIs to run; empty: both
    std::vector<int> callers;            ///< empty: each scenario's defaults
    double seconds = 3.0;
    int rounds = 3;
    std::string command;  ///< as typed, for the record

    /// Whether --backend asks for `k` (every kind when it is not given).
    [[nodiscard]] bool wanted(Kind k) const;
    /// Whether --api asks for `a` (both when it is not given).
    [[nodiscard]] bool wanted(Api a) const;
    /// Interleaved slices of a timed run: one in quick mode.
    [[nodiscard]] int rounds_per_run() const { return quick ? 1 : rounds; }
};

/// The options of `argv`, or nothing when they cannot be understood (then print `usage`).
[[nodiscard]] std::optional<Options> parse(int argc, char** argv);

}  // namespace seatlock::bench
