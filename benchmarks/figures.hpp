// SPDX-License-Identifier: MIT
// benchmarks/figures.hpp: the figures the project is judged by — ratios between the rows of
// one run (same-run ratios hold on a noisy machine), round trips, commands and bytes per
// held seat — read from the rows. targets.hpp says which of them must reach what.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "row.hpp"

namespace seatlock::bench {

struct Figure {
    std::string key;              ///< its name in the JSON results (and in targets.hpp)
    std::string text;             ///< what it is, for the printed list
    std::optional<double> value;  ///< nothing when its rows did not run
    const char* format = "{:.2f}";
};

/// Every figure, in the order they are printed and written.
[[nodiscard]] std::vector<Figure> figures(const std::vector<Row>& rows);

}  // namespace seatlock::bench
