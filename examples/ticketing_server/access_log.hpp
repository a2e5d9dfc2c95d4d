// SPDX-License-Identifier: MIT
// access_log.hpp: the access log, one JSON line per answered request (Boost.JSON encodes
// it), and the request ids that tie a line to its answer (docs/ticketing-server.md,
// "Logs"):
//
//   {"time":"2026-01-02T03:04:05.678Z","level":"info","request_id":"5f0c...-2a",
//    "method":"POST","route":"/events/{event}/holds","path":"/events/demo-game/holds",
//    "status":201,"duration_us":412,"bytes":198,"client":"127.0.0.1","buyer":"alice"}
//
// A request's id is its X-Request-Id header when that is a valid id (request_id_for), so
// that a proxy's id follows the request through; a new one otherwise. Every answer carries
// it back as X-Request-Id.
//
// The lines have levels like the server's other lines (log.hpp), and the same --log-level
// filters them: probes and scrapes (/healthz, /readyz, /metrics) are debug, so that a load
// balancer and Prometheus do not fill the log; an answer 500 or above is warn; every
// other answer is info.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "log.hpp"

namespace ticketing {

/// The longest X-Request-Id taken from a request.
inline constexpr std::size_t max_request_id_length = 128;

/// Whether `id` may be used as a request id: 1 to max_request_id_length characters of
/// visible ASCII (no space, no control character), so that it is safe in a header and a
/// log line as it is.
[[nodiscard]] bool valid_request_id(std::string_view id);
/// A new request id, unique in this process and (with a random part chosen at start)
/// across processes: 16 hex digits, '-', a hex counter.
[[nodiscard]] std::string new_request_id();
/// The id of a request whose X-Request-Id is `given` (nullopt: none): `given` when
/// valid_request_id, a new id otherwise (an invalid one is dropped, never echoed).
[[nodiscard]] std::string request_id_for(std::optional<std::string_view> given);

/// One answered request, as its access line tells it. The views must stay valid for the
/// call to AccessLog::write.
struct AccessEntry {
    std::string_view request_id;
    std::string_view method;  ///< Api::method_label
    std::string_view route;   ///< Api::route_label
    std::string_view path;    ///< the request target as sent (path and query)
    unsigned status = 0;
    std::chrono::steady_clock::duration took{};  ///< from a parsed request to its answer
    std::uint64_t bytes = 0;                     ///< the answer's body (a stream: all it sent)
    std::string_view client;                     ///< the peer's address
    std::string_view buyer;                      ///< empty: not known (not written)
};

/// The level of a request's line (see above).
[[nodiscard]] LogLevel access_level(std::string_view route, unsigned status);

/// The JSON line of `entry` at `level`, written at `now`, ending in '\n'.
[[nodiscard]] std::string access_line(const AccessEntry& entry, LogLevel level,
                                      std::chrono::system_clock::time_point now);

/// Where the access lines go: stderr (with the server's other lines), a file, or nowhere.
class AccessLog {
public:
    /// Lines to stderr.
    AccessLog() = default;
    /// `where` as --access-log gives it: "on" (stderr), "off" (none), or a file that lines
    /// are appended to (created when missing); throws std::system_error when it cannot be
    /// opened.
    explicit AccessLog(const std::string& where);
    ~AccessLog();
    AccessLog(const AccessLog&) = delete;
    AccessLog& operator=(const AccessLog&) = delete;

    /// Whether a line of this route and status would be written (the entry need not be
    /// made otherwise).
    [[nodiscard]] bool wants(std::string_view route, unsigned status) const {
        return file_ != nullptr && logs(access_level(route, status));
    }
    /// Writes `entry`'s line when wants() it. Thread-safe: each line is one write.
    void write(const AccessEntry& entry);

private:
    std::FILE* file_ = stderr;
    bool owned_ = false;
};

}  // namespace ticketing
