// SPDX-License-Identifier: MIT
// log.hpp: one line per event on stderr, with a UTC timestamp; fmt does the formatting.
#pragma once

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

namespace ticketing {

template <typename... Args>
void log(fmt::format_string<Args...> format, Args&&... args) {
    const auto now =
        std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
    // One fmt::print call per line, so lines from several threads never interleave.
    fmt::print(stderr, "{:%Y-%m-%dT%H:%M:%S}Z seatlock-ticketing: {}\n", now,
               fmt::format(format, std::forward<Args>(args)...));
    std::fflush(stderr);
}

}  // namespace ticketing
