// SPDX-License-Identifier: MIT
// options.cpp: hand-rolled flag parsing; the flags are few and flat, so a table of
// "--flag VALUE" handlers reads better than a dependency.
#include "options.hpp"

#include <fmt/format.h>

#include <boost/asio/ip/address.hpp>
#include <charconv>
#include <functional>
#include <map>
#include <string_view>

namespace ticketing {
namespace {

constexpr std::int64_t max_hold_ttl_s = 2 * 3600;  // HoldPolicy::max_hold_lifetime
constexpr unsigned max_threads = 256;

std::optional<std::int64_t> parse_integer(std::string_view text) {
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// "host:port", "[v6]:port". The host must be a literal address: the server binds, it
// does not resolve names.
std::optional<std::string> parse_listen(std::string_view text, ServerOptions& out) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return "expects HOST:PORT, e.g. 127.0.0.1:8080";
    std::string_view host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    boost::system::error_code ec;
    boost::asio::ip::make_address(std::string(host), ec);
    if (ec) return fmt::format("'{}' is not an IP address", host);
    const auto port = parse_integer(text.substr(colon + 1));
    if (!port || *port < 0 || *port > 65535) return "port must be a number from 0 to 65535";
    out.listen_host = std::string(host);
    out.listen_port = static_cast<std::uint16_t>(*port);
    return std::nullopt;
}

}  // namespace

std::string usage() {
    return R"(seatlock-ticketing: the seatlock example ticketing server (HTTP/1.1 + JSON).

usage: seatlock-ticketing [flags]

  --backend memory|redis  where seats are held (default memory: one process only)
  --redis-url URL         redis://[user:password@]host:port[/db] (default redis://127.0.0.1:6379),
                          or, on the same host, its Unix socket:
                          unix://[user:password@]/path/redis.sock[?db=N]
                          or, on a Redis Cluster, redis+cluster://[user:password@]host:port,...
                          (seed nodes; the others are learnt from them)
                          or, behind Redis Sentinel,
                          redis+sentinel://[user:password@]host:port,.../service[/db]
                          (the sentinels and the name they monitor the primary under)
  --db PATH               SQLite file for orders and pending reservations
                          (default seatlock-ticketing.db in the working directory;
                          :memory: keeps nothing)
  --listen HOST:PORT      address to serve on (default 127.0.0.1:8080; port 0 picks one)
  --hold-ttl SECONDS      how long a hold keeps its seats (default 600, at most 7200)
  --threads N             HTTP worker threads (default 4)
  --venue FILE            events to sell, as JSON (default: the built-in demo stadium,
                          event demo-game)
  --feed-interval-ms MS   how often the seat feed asks the storage for each event's
                          changes (default 50; this process's own writes wake it sooner)
  --feed-retained N       the recent changes kept per event for ?since= and stream
                          resumes (default 20000); older versions get the whole map
  --stream-heartbeat-ms MS  seat map streams: a comment after this long without a frame
                          (default 15000)
  --stream-buffer BYTES   seat map streams: a viewer more than this many bytes behind is
                          cut off (default 262144)
  --stream-send-buffer BYTES  seat map streams: each socket's kernel send buffer, which
                          a stalled viewer fills before it falls behind (default 65536)
  --stream-frame-budget N  seat map streams: frames a second all viewers take together;
                          past it each viewer's frames come less often (default 25000)
  --help                  this text

Stops cleanly on SIGINT or SIGTERM: in-flight requests are answered first.
)";
}

std::variant<ServerOptions, EarlyExit> parse_options(const std::vector<std::string>& args) {
    ServerOptions options;
    using Handler = std::function<std::optional<std::string>(std::string_view)>;
    const std::map<std::string_view, Handler> flags = {
        {"--backend",
         [&](std::string_view v) -> std::optional<std::string> {
             if (v == "memory")
                 options.backend = BackendKind::memory;
             else if (v == "redis")
                 options.backend = BackendKind::redis;
             else
                 return "expects memory or redis";
             return std::nullopt;
         }},
        {"--redis-url",
         [&](std::string_view v) -> std::optional<std::string> {
             // The backend reads the rest, and says what is wrong with it at start-up.
             if (!v.starts_with("redis://") && !v.starts_with("redis+cluster://") &&
                 !v.starts_with("redis+sentinel://") && !v.starts_with("unix://"))
                 return "expects a redis://, redis+cluster://, redis+sentinel:// or unix:// URL";
             options.redis_url = std::string(v);
             return std::nullopt;
         }},
        {"--db",
         [&](std::string_view v) -> std::optional<std::string> {
             if (v.empty()) return "expects a file path or :memory:";
             options.db_path = std::string(v);
             return std::nullopt;
         }},
        {"--listen", [&](std::string_view v) { return parse_listen(v, options); }},
        {"--hold-ttl",
         [&](std::string_view v) -> std::optional<std::string> {
             const auto s = parse_integer(v);
             if (!s || *s < 1 || *s > max_hold_ttl_s) {
                 return fmt::format("expects whole seconds from 1 to {}", max_hold_ttl_s);
             }
             options.hold_ttl = std::chrono::seconds(*s);
             return std::nullopt;
         }},
        {"--threads",
         [&](std::string_view v) -> std::optional<std::string> {
             const auto n = parse_integer(v);
             if (!n || *n < 1 || *n > max_threads) {
                 return fmt::format("expects a number from 1 to {}", max_threads);
             }
             options.threads = static_cast<unsigned>(*n);
             return std::nullopt;
         }},
        {"--venue",
         [&](std::string_view v) -> std::optional<std::string> {
             if (v.empty()) return "expects a JSON file";
             options.venue_file = std::string(v);
             return std::nullopt;
         }},
        {"--feed-interval-ms",
         [&](std::string_view v) -> std::optional<std::string> {
             const auto n = parse_integer(v);
             if (!n || *n < 1 || *n > 60000) return "expects milliseconds from 1 to 60000";
             options.feed_interval = std::chrono::milliseconds(*n);
             return std::nullopt;
         }},
        {"--feed-retained",
         [&](std::string_view v) -> std::optional<std::string> {
             const auto n = parse_integer(v);
             if (!n || *n < 1 || *n > 10000000) return "expects a number from 1 to 10000000";
             options.feed_retained = static_cast<std::size_t>(*n);
             return std::nullopt;
         }},
        {"--stream-heartbeat-ms",
         [&](std::string_view v) -> std::optional<std::string> {
             const auto n = parse_integer(v);
             if (!n || *n < 10 || *n > 3600000) return "expects milliseconds from 10 to 3600000";
             options.stream_heartbeat = std::chrono::milliseconds(*n);
             return std::nullopt;
         }},
        {"--stream-buffer",
         [&](std::string_view v) -> std::optional<std::string> {
             const auto n = parse_integer(v);
             if (!n || *n < 1024 || *n > (std::int64_t{1} << 30))
                 return "expects bytes from 1024 to 1073741824";
             options.stream_buffer = static_cast<std::size_t>(*n);
             return std::nullopt;
         }},
        {"--stream-send-buffer",
         [&](std::string_view v) -> std::optional<std::string> {
             const auto n = parse_integer(v);
             if (!n || *n < 4096 || *n > (std::int64_t{1} << 24))
                 return "expects bytes from 4096 to 16777216";
             options.stream_send_buffer = static_cast<int>(*n);
             return std::nullopt;
         }},
        {"--stream-frame-budget",
         [&](std::string_view v) -> std::optional<std::string> {
             const auto n = parse_integer(v);
             if (!n || *n < 10 || *n > 10000000) return "expects frames a second from 10 to 10000000";
             options.stream_frame_budget = static_cast<std::size_t>(*n);
             return std::nullopt;
         }},
    };

    const auto bad = [](std::string_view flag, std::string_view why) {
        return EarlyExit{2, fmt::format("seatlock-ticketing: {} {}\nTry --help.\n", flag, why)};
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string_view arg = args[i];
        if (arg == "--help" || arg == "-h") return EarlyExit{0, usage()};
        // Both "--flag value" and "--flag=value".
        std::optional<std::string_view> value;
        if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        }
        const auto flag = flags.find(arg);
        if (flag == flags.end()) return bad(arg, "is not a flag");
        if (!value) {
            if (i + 1 >= args.size()) return bad(arg, "needs a value");
            value = args[++i];
        }
        if (auto error = flag->second(*value)) return bad(arg, *error);
    }
    return options;
}

}  // namespace ticketing
