// SPDX-License-Identifier: MIT
// benchmarks/machine.hpp: what the figures were measured on, for the banner and the JSON
// record: a run on a shared machine is read with its load.
#pragma once

#include <string>

namespace seatlock::bench {

/// The CPU model from /proc/cpuinfo, or "unknown".
[[nodiscard]] std::string cpu_model();
/// The 1, 5 and 15 minute load averages from /proc/loadavg.
[[nodiscard]] std::string load_average();
/// The kernel's name and release.
[[nodiscard]] std::string kernel();

}  // namespace seatlock::bench
