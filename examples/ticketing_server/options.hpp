// SPDX-License-Identifier: MIT
// options.hpp: the command line of seatlock-ticketing, parsed into ServerOptions.
//
// Parsing never exits the process itself: it returns either the options or what to
// print and which exit code to use (0 for --help, 2 for a bad flag), so that main()
// stays the only place that decides to stop.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ticketing {

/// Where seats are held: in this process, or in Redis.
enum class BackendKind { memory, redis };

/// Everything the server can be told on its command line.
struct ServerOptions {
    BackendKind backend = BackendKind::memory;
    std::string redis_url = "redis://127.0.0.1:6379";
    std::string db_path = "seatlock-ticketing.db";  ///< ":memory:" keeps nothing on disk
    std::string listen_host = "127.0.0.1";
    std::uint16_t listen_port = 8080;  ///< 0 picks a free port (logged at start)
    std::chrono::seconds hold_ttl{600};
    unsigned threads = 4;
    std::optional<std::string> venue_file;  ///< none: the built-in demo venue
    /// How often the seat feed asks the storage for each event's changes.
    std::chrono::milliseconds feed_interval{50};
    /// The recent changes the seat feed keeps per event for ?since= and stream resumes.
    std::size_t feed_retained = 20000;
    /// Seat map streams: a heartbeat comment after this long without a frame.
    std::chrono::milliseconds stream_heartbeat{15000};
    /// Seat map streams: a viewer with more unsent bytes than this is cut off.
    std::size_t stream_buffer = 256 * 1024;
    /// Seat map streams: each stream socket's kernel send buffer (SO_SNDBUF).
    int stream_send_buffer = 64 * 1024;
    /// Seat map streams: the frames a second all streams may take together
    /// (HttpLimits::frame_budget).
    std::size_t stream_frame_budget = 25000;
    /// On SIGTERM or SIGINT: how long /readyz answers 503 while requests are still served,
    /// before the listener closes (0: it closes at once). A second signal cuts it short.
    std::chrono::seconds drain{0};
};

/// What main() should do instead of serving: print `text` (to stdout when exit_code is
/// 0, to stderr otherwise) and exit with `exit_code`.
struct EarlyExit {
    int exit_code = 0;
    std::string text;
};

/// Parses argv[1..]; unknown flags, missing values and out-of-range numbers are an
/// EarlyExit with code 2 and a message that names the flag.
std::variant<ServerOptions, EarlyExit> parse_options(const std::vector<std::string>& args);

/// The --help text.
std::string usage();

}  // namespace ticketing
