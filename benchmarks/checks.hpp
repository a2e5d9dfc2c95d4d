// SPDX-License-Identifier: MIT
// benchmarks/checks.hpp: what a row must show for its numbers to mean anything. Speed is
// reported, never asserted; a run that measured nothing, was refused, or took round trips
// other than the design's is a problem, and seatlock-bench exits non-zero.
#pragma once

#include <string>
#include <vector>

#include "row.hpp"

namespace seatlock::bench {

/// The problems of one row, each said with what ran; empty when it is sound.
[[nodiscard]] std::vector<std::string> check(const Row& row);

}  // namespace seatlock::bench
