// SPDX-License-Identifier: MIT
// options.hpp: the configuration of seatlock-ticketing, parsed into ServerOptions.
//
// Every flag can be given in three places: on the command line (--stream-frame-budget
// 500), in the environment (SEATLOCK_TICKETING_STREAM_FRAME_BUDGET=500) and in a config
// file named by --config (`stream-frame-budget = 500`); Boost.Program_options reads the
// command line and the file. The command line wins over the environment, which wins
// over the file, which wins over the defaults. Every value given is checked, also one
// that a higher place overrides.
//
// Parsing never exits the process itself: it returns either the options or what to
// print and which exit code to use (0 for --help, 2 for a bad setting), so that main()
// stays the only place that decides to stop.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "log.hpp"

namespace ticketing {

/// Where seats are held: in this process, or in Redis.
enum class BackendKind { memory, redis };

/// Everything the server can be told on its command line, in its environment or in its
/// config file.
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
    /// Seat map streams: frames at most this often per viewer (HttpLimits::coalesce).
    std::chrono::milliseconds stream_coalesce{100};
    /// The config file the settings were read from, if any (--config).
    std::optional<std::string> config_file;
    /// Where the Redis password was read from (--redis-password-file), if anywhere.
    std::optional<std::string> redis_password_file;
    /// The Redis password from that file (its first line), set into RedisOptions::password
    /// after the URL is parsed. Never logged.
    std::optional<std::string> redis_password;
    /// Seats a buyer may hold and have paid in one event (HoldPolicy::max_seats_per_holder);
    /// 0: no limit.
    std::int64_t max_seats_per_buyer = 3;
    /// The longest a hold lives, from its creation, however often it is extended
    /// (HoldPolicy::max_hold_lifetime): an extend past it is capped. At least hold_ttl.
    std::chrono::seconds max_hold_lifetime{7200};
    /// After SIGTERM or SIGINT, how long requests in flight have to finish before their
    /// connections are closed.
    std::chrono::seconds shutdown_grace{10};
    /// Request bodies larger than this get 413 (HttpLimits::body_limit).
    std::size_t http_body_limit = 64 * 1024;
    /// Request headers larger than this get 431 (HttpLimits::header_limit).
    std::size_t http_header_limit = 16 * 1024;
    /// A connection silent this long is closed (HttpLimits::idle_timeout).
    std::chrono::seconds http_idle_timeout{30};
    /// On SIGTERM or SIGINT: how long /readyz answers 503 while requests are still served,
    /// before the listener closes (0: it closes at once). A second signal cuts it short.
    std::chrono::seconds drain{0};
    /// Rate limits (rate_limit.hpp): requests a second and the burst of each bucket, per
    /// buyer and per client address, for writes and for reads. A rate of 0: no limit.
    std::int64_t rate_buyer_writes = 5;
    std::int64_t rate_buyer_write_burst = 10;
    std::int64_t rate_buyer_reads = 20;
    std::int64_t rate_buyer_read_burst = 40;
    std::int64_t rate_address_writes = 0;
    std::int64_t rate_address_write_burst = 100;
    std::int64_t rate_address_reads = 0;
    std::int64_t rate_address_read_burst = 400;
    /// Who a request comes from (session.hpp; docs/ticketing-server.md, "Security").
    /// The session keys' file (--session-key-file): one key a line, the first signs, a
    /// second is accepted too (rotation). None: a key generated at start.
    std::optional<std::string> session_key_file;
    /// The keys read from that file. Never logged.
    std::vector<std::string> session_keys;
    /// How long a session lasts from POST /session.
    std::chrono::seconds session_ttl{12 * 3600};
    /// POST /session for anyone who names themselves (the demo), or only with the
    /// operator key (--sign-in operator).
    bool open_sign_in = true;
    /// X-User-Id names the buyer: only behind a gateway that authenticates buyers.
    bool trust_user_header = false;
    /// Served over TLS by a proxy in front: cookies are Secure, the page's origin https.
    bool behind_tls_proxy = false;
    /// The operator key's file (--admin-key-file), and the key (its first line).
    std::optional<std::string> admin_key_file;
    std::optional<std::string> admin_key;
    /// Waiting rooms (rooms.hpp). The admission key's file (--admission-key-file): its
    /// first line, at least 32 characters, shared by every server. None: a key generated
    /// at start.
    std::optional<std::string> admission_key_file;
    /// The key read from that file. Never logged.
    std::optional<std::string> admission_key;
    /// How often each room's admit step runs.
    std::chrono::milliseconds admit_interval{100};
    /// While a room's storage fails, holds on its event need no admission (counted).
    bool room_fail_open = false;
    /// The Redis the rooms are kept in, when not the seats' storage (--room-redis-url).
    std::optional<std::string> room_redis_url;
    /// The lowest level of the lines written, the access log's included (log.hpp).
    LogLevel log_level = LogLevel::info;
    /// The access log (access_log.hpp): "on" (stderr), "off", or a file to append to.
    std::string access_log = "on";
};

/// The process environment as NAME -> value; parse_options reads the variables named
/// SEATLOCK_TICKETING_* from it.
using Environment = std::map<std::string, std::string>;

/// This process's environment (environ), for parse_options.
Environment process_environment();

/// What main() should do instead of serving: print `text` (to stdout when exit_code is
/// 0, to stderr otherwise) and exit with `exit_code`.
struct EarlyExit {
    int exit_code = 0;
    std::string text;
};

/// Parses argv[1..] (`args`), the SEATLOCK_TICKETING_* variables of `environment` and the
/// file that --config names (in either), then reads --redis-password-file. Unknown
/// flags, variables or file keys, missing values, out-of-range numbers, an unreadable file
/// are an EarlyExit with code 2 and a message that names the flag and where it came from
/// (the variable's name, or the file and line); --help or -h is an EarlyExit with code 0
/// and usage(). Never prints, never exits.
std::variant<ServerOptions, EarlyExit> parse_options(const std::vector<std::string>& args,
                                                     const Environment& environment = {});

/// The --help text: every flag with its environment variable and its default.
std::string usage();

}  // namespace ticketing
