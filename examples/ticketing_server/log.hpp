// SPDX-License-Identifier: MIT
// log.hpp: the server's event lines on stderr, one per event, with a UTC timestamp and a
// level: `2026-01-02T03:04:05.678Z seatlock-ticketing warn: <message>`. Lines below the
// process's level (--log-level) are not formatted at all. fmt does the formatting. The
// access log (access_log.hpp) is apart: JSON, one line per request, filtered by the same
// level.
#pragma once

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace ticketing {

/// How much a line matters; a process logs the lines at its level and above.
enum class LogLevel { debug, info, warn, error };

/// "debug", "info", "warn", "error".
constexpr std::string_view to_string(LogLevel level) {
    constexpr std::string_view names[] = {"debug", "info", "warn", "error"};
    return names[static_cast<int>(level)];
}

/// The level `name` names (as to_string gives it); nullopt for any other text.
constexpr std::optional<LogLevel> parse_log_level(std::string_view name) {
    for (const auto level : {LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error})
        if (to_string(level) == name) return level;
    return std::nullopt;
}

namespace detail {
// The process's level: set once at start (set_log_level), read by every line.
inline std::atomic<LogLevel> log_threshold{LogLevel::info};
}  // namespace detail

/// Lines below `level` are dropped from now on (--log-level).
inline void set_log_level(LogLevel level) {
    detail::log_threshold.store(level, std::memory_order_relaxed);
}

/// Whether a line of `level` is written.
[[nodiscard]] inline bool logs(LogLevel level) {
    return level >= detail::log_threshold.load(std::memory_order_relaxed);
}

/// `t` as the log lines give it: "2026-01-02T03:04:05.678Z" (UTC, milliseconds).
inline std::string utc_time(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
    return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z",
                       std::chrono::time_point_cast<std::chrono::seconds>(t), ms.count() % 1000);
}

namespace detail {
template <typename... Args>
void write_line(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
    // One fmt::print call per line, so lines from several threads never interleave.
    fmt::print(stderr, "{} seatlock-ticketing {}: {}\n", utc_time(std::chrono::system_clock::now()),
               to_string(level), fmt::format(format, std::forward<Args>(args)...));
    std::fflush(stderr);
}
}  // namespace detail

/// One line at `level`, when the process logs that level.
template <typename... Args>
void log_at(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
    if (logs(level)) detail::write_line(level, format, std::forward<Args>(args)...);
}

/// An info line written at every level: the one that says where the server listens,
/// which scripts (and the tests) read the port from.
template <typename... Args>
void log_always(fmt::format_string<Args...> format, Args&&... args) {
    detail::write_line(LogLevel::info, format, std::forward<Args>(args)...);
}

/// What the server does, step by step: start, stop, recoveries.
template <typename... Args>
void log(fmt::format_string<Args...> format, Args&&... args) {
    log_at(LogLevel::info, format, std::forward<Args>(args)...);
}

/// Detail for finding a fault; not written by default.
template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
    log_at(LogLevel::debug, format, std::forward<Args>(args)...);
}

/// Something went wrong that the server works around (a storage or database failure it
/// retries, a viewer cut off, data the storage lost).
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
    log_at(LogLevel::warn, format, std::forward<Args>(args)...);
}

/// Something failed that the server cannot work around: a request's handler that threw,
/// a start that fails.
template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
    log_at(LogLevel::error, format, std::forward<Args>(args)...);
}

}  // namespace ticketing
