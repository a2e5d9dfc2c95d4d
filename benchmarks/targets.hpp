// SPDX-License-Identifier: MIT
// benchmarks/targets.hpp: the targets the project is judged by, as data: each names a
// figure of figures.hpp and the bound it must reach. A figure without a target is shown
// for what it explains.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace seatlock::bench {

enum class Comparison { at_least, at_most };

struct Target {
    std::string_view figure;  ///< a Figure::key
    Comparison comparison;
    double bound;

    [[nodiscard]] constexpr bool met_by(double value) const {
        return comparison == Comparison::at_least ? value >= bound : value <= bound;
    }
};

inline constexpr std::array<Target, 17> targets{{
    {"redis_hold_release_64_vs_by_hand", Comparison::at_least, 3.0},
    {"redis_hold_release_64_vs_raw", Comparison::at_least, 0.6},
    {"redis_lock_all3_cpu_us_per_op_64", Comparison::at_most, 25.0},
    {"redis_hold3_release_cpu_us_per_op_64", Comparison::at_most, 40.0},
    {"redis_async_try_lock_all3_64_vs_node_redlock", Comparison::at_least, 2.0},
    {"redis_async_try_lock_all3_cpu_us_per_op_64", Comparison::at_most, 25.0},
    {"redis_async_try_lock_all3_requests_per_read_64", Comparison::at_least, 4.0},
    {"redis_async_lock_all3_cpu_us_per_op_64", Comparison::at_most, 25.0},
    {"redis_async_lock_all3_requests_per_read_64", Comparison::at_least, 4.0},
    {"redis_async_hold3_release_cpu_us_per_op_64", Comparison::at_most, 40.0},
    {"redis_async_hold3_release_requests_per_read_64", Comparison::at_least, 4.0},
    {"redis_round_trips_per_hold", Comparison::at_most, 1.0},
    {"by_hand_round_trips_per_hold", Comparison::at_least, 9.0},
    {"memory_pairs_per_second_1_caller", Comparison::at_least, 500'000.0},
    {"memory_2_callers_event_per_caller_vs_1", Comparison::at_least, 1.5},
    {"http_hold_release_64_redis_vs_memory", Comparison::at_least, 0.8},
    {"http_apart_hold_release_64_redis_vs_memory", Comparison::at_least, 0.8},
}};

/// The target of `figure`, if it has one.
constexpr std::optional<Target> target_of(std::string_view figure) {
    for (const auto& t : targets) {
        if (t.figure == figure) return t;
    }
    return std::nullopt;
}

}  // namespace seatlock::bench
