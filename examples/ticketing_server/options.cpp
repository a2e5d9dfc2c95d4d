// SPDX-License-Identifier: MIT
// options.cpp: the settings of seatlock-ticketing. Boost.Program_options reads the
// command line and the config file, and formats --help; one table of flags (flags())
// checks every value, wherever it came from, so that a bound is written once.
#include "options.hpp"

#include <fmt/format.h>

#include <boost/asio/ip/address.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string_view>

extern char** environ;  // POSIX: the process environment

namespace ticketing {
namespace {

namespace po = boost::program_options;

constexpr std::string_view env_prefix = "SEATLOCK_TICKETING_";
constexpr std::int64_t max_lifetime_s = 24 * 3600;  // the longest --max-hold-lifetime
constexpr std::int64_t max_threads = 256;
constexpr std::int64_t max_rate = 1000000;  // the highest --rate-* value

// A setting refused; parse_options turns it into EarlyExit{2, ...}. Thrown so that the
// sources read as the happy path.
struct Refusal {
    std::string text;
};

// Reads one value into the options; what is wrong with it otherwise ("expects ...").
using Apply = std::function<std::optional<std::string>(std::string_view, ServerOptions&)>;

// One setting: its long flag name, which is also its config file key; the placeholder
// its value is shown as; what it does; its default as --help shows it (empty: none).
struct Flag {
    std::string name;
    std::string value_name;
    std::string help;
    std::string default_text;
    Apply apply;
};

// The value name of a switch: a flag that takes true or false, and means true given alone
// on the command line (--trust-user-header).
constexpr std::string_view switch_value = "true|false";

// --stream-frame-budget -> SEATLOCK_TICKETING_STREAM_FRAME_BUDGET.
std::string env_name(std::string_view name) {
    std::string env(env_prefix);
    for (const char c : name) env += c == '-' ? '_' : static_cast<char>(std::toupper(c));
    return env;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// A whole number from `low` to `high`, handed to `set`; "expects <what> from low to high"
// otherwise.
template <typename Set>
Apply integer(std::string what, std::int64_t low, std::int64_t high, Set set) {
    return [=](std::string_view v, ServerOptions& o) -> std::optional<std::string> {
        const auto n = parse_integer(v);
        if (!n || *n < low || *n > high)
            return fmt::format("expects {} from {} to {}", what, low, high);
        set(o, *n);
        return std::nullopt;
    };
}

// A value that must not be empty, handed to `set`; "expects <what>" otherwise.
template <typename Set>
Apply text(std::string what, Set set) {
    return [=](std::string_view v, ServerOptions& o) -> std::optional<std::string> {
        if (v.empty()) return "expects " + what;
        set(o, std::string(v));
        return std::nullopt;
    };
}

// true or false, handed to `set`; a switch given alone on the command line is true.
template <typename Set>
Apply boolean(Set set) {
    return [=](std::string_view v, ServerOptions& o) -> std::optional<std::string> {
        if (v != "true" && v != "false") return "expects true or false";
        set(o, v == "true");
        return std::nullopt;
    };
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

// Whether a Redis URL carries credentials, which RedisOptions::from_url requires to name
// a password ("user:password@" or ":password@"). A unix:// URL without them starts its
// path at once ("unix:///run/redis.sock"); the others have an '@' only in them.
bool url_has_password(std::string_view url) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos) return false;
    const auto rest = url.substr(scheme_end + 3);
    if (url.starts_with("unix://") && rest.starts_with('/')) return false;
    return rest.find('@') != std::string_view::npos;
}

// Every setting, in the order --help lists them.
std::vector<Flag> flags() {
    const ServerOptions d;  // the defaults --help shows
    const auto n = [](auto value) { return fmt::format("{}", value); };
    return {
        {"config", "FILE",
         "read settings from FILE: one `name = value` a line, names as the flags without "
         "their dashes (`threads = 8`), # starts a comment. Not in the file itself",
         "", text("a file", [](ServerOptions& o, std::string v) { o.config_file = std::move(v); })},
        {"backend", "memory|redis", "where seats are held (memory: one process only)", "memory",
         [](std::string_view v, ServerOptions& o) -> std::optional<std::string> {
             if (v == "memory")
                 o.backend = BackendKind::memory;
             else if (v == "redis")
                 o.backend = BackendKind::redis;
             else
                 return "expects memory or redis";
             return std::nullopt;
         }},
        {"redis-url", "URL",
         "redis://[user:password@]host:port[/db]: one Redis\n"
         "unix://[user:password@]/path/redis.sock[?db=N]: one on this host, by its Unix socket\n"
         "redis+cluster://[user:password@]host:port,...: a Redis Cluster, by seed nodes (the "
         "others are learnt from them)\n"
         "redis+sentinel://[user:password@]host:port,.../service[/db]: behind Redis Sentinel, "
         "the sentinels and the name they monitor the primary under",
         d.redis_url,
         [](std::string_view v, ServerOptions& o) -> std::optional<std::string> {
             // The backend reads the rest, and says what is wrong with it at start-up.
             if (!v.starts_with("redis://") && !v.starts_with("redis+cluster://") &&
                 !v.starts_with("redis+sentinel://") && !v.starts_with("unix://"))
                 return "expects a redis://, redis+cluster://, redis+sentinel:// or unix:// URL";
             o.redis_url = std::string(v);
             return std::nullopt;
         }},
        {"redis-password-file", "FILE",
         "the Redis password: the first line of FILE (so that it shows in no command line); "
         "the URL then names no password",
         "",
         text("a file",
              [](ServerOptions& o, std::string v) { o.redis_password_file = std::move(v); })},
        {"db", "PATH",
         "SQLite file for orders and pending reservations, in the working directory unless a "
         "path is given; :memory: keeps nothing",
         d.db_path,
         text("a file path or :memory:",
              [](ServerOptions& o, std::string v) { o.db_path = std::move(v); })},
        {"listen", "HOST:PORT", "address to serve on; port 0 picks one (logged at start)",
         fmt::format("{}:{}", d.listen_host, d.listen_port), parse_listen},
        {"hold-ttl", "SECONDS", "how long a hold keeps its seats, at most --max-hold-lifetime",
         n(d.hold_ttl.count()),
         integer("whole seconds", 1, max_lifetime_s,
                 [](ServerOptions& o, std::int64_t v) { o.hold_ttl = std::chrono::seconds(v); })},
        {"max-hold-lifetime", "SECONDS",
         "the longest a hold lives from its creation, however it is extended: a longer extend "
         "is cut to it",
         n(d.max_hold_lifetime.count()),
         integer("whole seconds", 1, max_lifetime_s,
                 [](ServerOptions& o, std::int64_t v) {
                     o.max_hold_lifetime = std::chrono::seconds(v);
                 })},
        {"max-seats-per-buyer", "N",
         "seats one buyer may hold and have paid in one event; 0: no limit",
         n(d.max_seats_per_buyer),
         integer("a number", 0, 1000,
                 [](ServerOptions& o, std::int64_t v) { o.max_seats_per_buyer = v; })},
        {"threads", "N", "HTTP worker threads", n(d.threads),
         integer("a number", 1, max_threads,
                 [](ServerOptions& o, std::int64_t v) { o.threads = static_cast<unsigned>(v); })},
        {"venue", "FILE", "events to sell, as JSON", "the built-in demo stadium, event demo-game",
         text("a JSON file", [](ServerOptions& o, std::string v) { o.venue_file = std::move(v); })},
        {"shutdown-grace", "SECONDS",
         "on SIGINT or SIGTERM, how long requests in flight have to be answered before their "
         "connections are closed",
         n(d.shutdown_grace.count()),
         integer(
             "whole seconds", 1, 3600,
             [](ServerOptions& o, std::int64_t v) { o.shutdown_grace = std::chrono::seconds(v); })},
        {"drain-seconds", "SECONDS",
         "on SIGINT or SIGTERM, how long GET /readyz answers 503 while requests are still "
         "served, before the listener closes (a second signal cuts it short)",
         n(d.drain.count()),
         integer("whole seconds", 0, 3600,
                 [](ServerOptions& o, std::int64_t v) { o.drain = std::chrono::seconds(v); })},
        {"rate-buyer-writes", "N",
         "writes (hold, extend, confirm, release, cancel) a second one buyer may send; 0: no "
         "limit",
         n(d.rate_buyer_writes),
         integer("requests a second", 0, max_rate,
                 [](ServerOptions& o, std::int64_t v) { o.rate_buyer_writes = v; })},
        {"rate-buyer-write-burst", "N", "writes one buyer may send at once, before --rate-buyer-writes applies",
         n(d.rate_buyer_write_burst),
         integer("requests", 1, max_rate,
                 [](ServerOptions& o, std::int64_t v) { o.rate_buyer_write_burst = v; })},
        {"rate-buyer-reads", "N",
         "reads (events, seat map, streams opened, the buyer's holds and orders) a second one "
         "buyer may send; 0: no limit",
         n(d.rate_buyer_reads),
         integer("requests a second", 0, max_rate,
                 [](ServerOptions& o, std::int64_t v) { o.rate_buyer_reads = v; })},
        {"rate-buyer-read-burst", "N", "reads one buyer may send at once, before --rate-buyer-reads applies",
         n(d.rate_buyer_read_burst),
         integer("requests", 1, max_rate,
                 [](ServerOptions& o, std::int64_t v) { o.rate_buyer_read_burst = v; })},
        {"rate-address-writes", "N",
         "writes a second one client address may send, all its buyers together; 0: no limit "
         "(behind a proxy every client has the proxy's address)",
         n(d.rate_address_writes),
         integer("requests a second", 0, max_rate,
                 [](ServerOptions& o, std::int64_t v) { o.rate_address_writes = v; })},
        {"rate-address-write-burst", "N",
         "writes one client address may send at once, before --rate-address-writes applies",
         n(d.rate_address_write_burst),
         integer("requests", 1, max_rate,
                 [](ServerOptions& o, std::int64_t v) { o.rate_address_write_burst = v; })},
        {"rate-address-reads", "N",
         "reads a second one client address may send, all its buyers and viewers together; 0: "
         "no limit",
         n(d.rate_address_reads),
         integer("requests a second", 0, max_rate,
                 [](ServerOptions& o, std::int64_t v) { o.rate_address_reads = v; })},
        {"rate-address-read-burst", "N",
         "reads one client address may send at once, before --rate-address-reads applies",
         n(d.rate_address_read_burst),
         integer("requests", 1, max_rate,
                 [](ServerOptions& o, std::int64_t v) { o.rate_address_read_burst = v; })},
        {"http-body-limit", "BYTES", "a request body larger than this is refused with 413",
         n(d.http_body_limit),
         integer("bytes", 1024, std::int64_t{1} << 26,
                 [](ServerOptions& o, std::int64_t v) {
                     o.http_body_limit = static_cast<std::size_t>(v);
                 })},
        {"http-header-limit", "BYTES", "request headers larger than this are refused with 431",
         n(d.http_header_limit),
         integer("bytes", 1024, std::int64_t{1} << 20,
                 [](ServerOptions& o, std::int64_t v) {
                     o.http_header_limit = static_cast<std::size_t>(v);
                 })},
        {"http-idle-timeout", "SECONDS",
         "a connection silent this long (no request, or one sent too slowly) is closed",
         n(d.http_idle_timeout.count()),
         integer("whole seconds", 1, 3600,
                 [](ServerOptions& o, std::int64_t v) {
                     o.http_idle_timeout = std::chrono::seconds(v);
                 })},
        {"log-level", "debug|info|warn|error",
         "the lowest level of the lines written, the access log's included (its probes and "
         "scrapes are debug, its 5xx answers warn, its other answers info)",
         std::string(to_string(d.log_level)),
         [](std::string_view v, ServerOptions& o) -> std::optional<std::string> {
             const auto level = parse_log_level(v);
             if (!level) return "expects debug, info, warn or error";
             o.log_level = *level;
             return std::nullopt;
         }},
        {"access-log", "on|off|FILE",
         "one JSON line per answered request: on, with the other lines on stderr; off; or "
         "appended to FILE",
         d.access_log,
         text("on, off or a file",
              [](ServerOptions& o, std::string v) { o.access_log = std::move(v); })},
        {"feed-interval-ms", "MS",
         "how often the seat feed asks the storage for each event's changes (this process's "
         "own writes wake it sooner)",
         n(d.feed_interval.count()),
         integer("milliseconds", 1, 60000,
                 [](ServerOptions& o, std::int64_t v) {
                     o.feed_interval = std::chrono::milliseconds(v);
                 })},
        {"feed-retained", "N",
         "the recent changes kept per event for ?since= and stream resumes; older versions get "
         "the whole map",
         n(d.feed_retained),
         integer("a number", 1, 10000000,
                 [](ServerOptions& o, std::int64_t v) {
                     o.feed_retained = static_cast<std::size_t>(v);
                 })},
        {"stream-coalesce-ms", "MS",
         "seat map streams: a viewer gets a frame at most this often; the changes in between "
         "come together",
         n(d.stream_coalesce.count()),
         integer("milliseconds", 10, 60000,
                 [](ServerOptions& o, std::int64_t v) {
                     o.stream_coalesce = std::chrono::milliseconds(v);
                 })},
        {"stream-heartbeat-ms", "MS", "seat map streams: a comment after this long without a frame",
         n(d.stream_heartbeat.count()),
         integer("milliseconds", 10, 3600000,
                 [](ServerOptions& o, std::int64_t v) {
                     o.stream_heartbeat = std::chrono::milliseconds(v);
                 })},
        {"stream-buffer", "BYTES",
         "seat map streams: a viewer more than this many bytes behind is cut off",
         n(d.stream_buffer),
         integer("bytes", 1024, std::int64_t{1} << 30,
                 [](ServerOptions& o, std::int64_t v) {
                     o.stream_buffer = static_cast<std::size_t>(v);
                 })},
        {"stream-send-buffer", "BYTES",
         "seat map streams: each socket's kernel send buffer, which a stalled viewer fills "
         "before it falls behind",
         n(d.stream_send_buffer),
         integer(
             "bytes", 4096, std::int64_t{1} << 24,
             [](ServerOptions& o, std::int64_t v) { o.stream_send_buffer = static_cast<int>(v); })},
        {"stream-frame-budget", "N",
         "seat map streams: frames a second all viewers take together; past it each viewer's "
         "frames come less often",
         n(d.stream_frame_budget),
         integer("frames a second", 10, 10000000,
                 [](ServerOptions& o, std::int64_t v) {
                     o.stream_frame_budget = static_cast<std::size_t>(v);
                 })},
        {"session-key-file", "FILE",
         "the keys that sign buyers' sessions: one a line (at least 32 characters, e.g. "
         "`openssl rand -hex 32`), the first signs, a second is accepted too (rotation). "
         "Servers behind one load balancer share it",
         "a key generated at start: sessions end with the process",
         text("a file", [](ServerOptions& o, std::string v) { o.session_key_file = std::move(v); })},
        {"session-ttl", "SECONDS", "how long a session from POST /session lasts",
         n(d.session_ttl.count()),
         integer("whole seconds", 60, 30 * 24 * 3600,
                 [](ServerOptions& o, std::int64_t v) { o.session_ttl = std::chrono::seconds(v); })},
        {"sign-in", "open|operator",
         "who may get a session from POST /session: anyone who names themselves (open, the "
         "demo), or only a client with the operator key, a login service (operator)",
         "open",
         [](std::string_view v, ServerOptions& o) -> std::optional<std::string> {
             if (v != "open" && v != "operator") return "expects open or operator";
             o.open_sign_in = v == "open";
             return std::nullopt;
         }},
        {"trust-user-header", std::string(switch_value),
         "take the buyer from the X-User-Id header: only behind a gateway that authenticates "
         "buyers and sets it itself (anyone can send it). Otherwise the header is refused (401)",
         "false",
         boolean([](ServerOptions& o, bool v) { o.trust_user_header = v; })},
        {"behind-tls-proxy", std::string(switch_value),
         "a proxy in front serves the server over TLS: the session cookie is Secure and the "
         "page's own origin is https://",
         "false", boolean([](ServerOptions& o, bool v) { o.behind_tls_proxy = v; })},
        {"admin-key-file", "FILE",
         "the operator key (its first line, at least 16 characters): sent as Authorization: "
         "Bearer, it cancels any order (each logged) and may ask sessions for any buyer",
         "", text("a file", [](ServerOptions& o, std::string v) { o.admin_key_file = std::move(v); })},
        {"admission-key-file", "FILE",
         "the key that signs waiting-room admissions (its first line, at least 32 characters, "
         "e.g. `openssl rand -hex 32`). Servers behind one load balancer share it",
         "a key generated at start: admissions are accepted by this process only",
         text("a file", [](ServerOptions& o, std::string v) { o.admission_key_file = std::move(v); })},
        {"admit-interval-ms", "MS", "how often each waiting room's admit step runs",
         n(d.admit_interval.count()),
         integer("milliseconds", 10, 60000,
                 [](ServerOptions& o, std::int64_t v) {
                     o.admit_interval = std::chrono::milliseconds(v);
                 })},
        {"room-fail-open", std::string(switch_value),
         "while a waiting room's storage fails, holds on its event need no admission (counted "
         "in /metrics); otherwise they are refused with 503",
         "false", boolean([](ServerOptions& o, bool v) { o.room_fail_open = v; })},
        {"room-redis-url", "URL",
         "the Redis the waiting rooms are kept in (redis://host:port), apart from the seats",
         "the seats' storage",
         text("a URL", [](ServerOptions& o, std::string v) { o.room_redis_url = std::move(v); })},
    };
}

// The flags as Boost.Program_options knows them: each takes one value. With --help
// when `with_help` (the command line's; a file has no --help).
po::options_description describe(const std::vector<Flag>& table, bool with_help, bool for_usage) {
    po::options_description description(
        for_usage ? 100 : po::options_description::m_default_line_length,
        for_usage ? 60 : po::options_description::m_default_line_length / 2);
    for (const auto& flag : table) {
        std::string help = flag.help;
        if (for_usage) {
            // The variable first, at the start of its line: never split.
            help += "\nenv " + env_name(flag.name);
            if (!flag.default_text.empty()) help += "; default " + flag.default_text;
        }
        auto* value = po::value<std::string>()->value_name(flag.value_name);
        if (flag.value_name == switch_value) value->implicit_value("true");
        description.add_options()(flag.name.c_str(), value, help.c_str());
    }
    if (with_help) description.add_options()("help,h", "this text");
    return description;
}

const Flag* find_flag(const std::vector<Flag>& table, std::string_view name) {
    for (const auto& flag : table)
        if (flag.name == name) return &flag;
    return nullptr;
}

// One value given somewhere: its flag, the value, and where it came from as a message
// names it ("--threads", "SEATLOCK_TICKETING_THREADS (--threads)", "FILE:3: threads
// (--threads)").
struct Setting {
    const Flag* flag;
    std::string value;
    std::string origin;
};

std::vector<Setting> from_command_line(const std::vector<Flag>& table,
                                       const std::vector<std::string>& args) {
    namespace style = po::command_line_style;
    // Long flags only, never abbreviated: "-1" is a value (of a flag whose bound it
    // misses), not a flag.
    const int long_only = style::allow_long | style::long_allow_adjacent | style::long_allow_next;
    po::parsed_options parsed(nullptr);
    try {
        parsed = po::command_line_parser(args)
                     .options(describe(table, true, false))
                     .style(long_only)
                     .run();
    } catch (const po::unknown_option& e) {
        throw Refusal{fmt::format("{} is not a flag", e.get_option_name())};
    } catch (const po::invalid_command_line_syntax& e) {
        if (e.kind() == po::invalid_syntax::missing_parameter ||
            e.kind() == po::invalid_syntax::empty_adjacent_parameter)
            throw Refusal{fmt::format("{} needs a value", e.get_option_name())};
        throw Refusal{e.what()};
    } catch (const po::error& e) {
        throw Refusal{e.what()};
    }
    std::vector<Setting> settings;
    for (const auto& option : parsed.options) {
        const Flag* flag = find_flag(table, option.string_key);
        // parse_options answered --help before; a token of no flag's is not a flag.
        if (!flag) throw Refusal{fmt::format("{} is not a flag", option.original_tokens.front())};
        // A switch given alone has no value here (its implicit one is for a variables_map).
        settings.push_back({flag, option.value.empty() ? std::string("true") : option.value.front(),
                            "--" + option.string_key});
    }
    return settings;
}

// The SEATLOCK_TICKETING_* variables. Boost.Program_options' parse_environment reads the
// process's environ; this maps names the same way on the environment it is given.
std::vector<Setting> from_environment(const std::vector<Flag>& table,
                                      const Environment& environment) {
    std::vector<Setting> settings;
    for (const auto& [name, value] : environment) {
        if (!name.starts_with(env_prefix)) continue;
        const Flag* flag = nullptr;
        for (const auto& candidate : table)
            if (env_name(candidate.name) == name) flag = &candidate;
        if (!flag) throw Refusal{fmt::format("{} (environment) is not a setting", name)};
        settings.push_back({flag, value, fmt::format("{} (--{})", name, flag->name)});
    }
    return settings;
}

// The config file's `name = value` lines, read one at a time by Boost.Program_options
// so that a mistake names its line.
std::vector<Setting> from_file(const std::vector<Flag>& table, const std::string& path,
                               const std::string& origin) {
    std::ifstream in(path);
    if (!in)
        throw Refusal{
            fmt::format("{} {}: cannot read it ({})", origin, path, std::strerror(errno))};
    const auto description = describe(table, false, false);
    std::vector<Setting> settings;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        const std::string where = fmt::format("{}:{}", path, number);
        if (const auto first = line.find_first_not_of(" \t");
            first != std::string::npos && line[first] == '[') {
            throw Refusal{where + ": sections are not used; the names are the flags'"};
        }
        std::istringstream one(line);
        po::parsed_options parsed(nullptr);
        try {
            parsed = po::parse_config_file(one, description, true);
        } catch (const po::error&) {
            // Not echoed: the line may hold a secret.
            throw Refusal{where + ": expects name = value"};
        }
        for (const auto& option : parsed.options) {
            if (option.unregistered || option.string_key == "config") {
                throw Refusal{
                    fmt::format("{}: {} is not a setting of the file", where, option.string_key)};
            }
            settings.push_back(
                {find_flag(table, option.string_key), option.value.front(),
                 fmt::format("{}: {} (--{})", where, option.string_key, option.string_key)});
        }
    }
    if (in.bad())
        throw Refusal{
            fmt::format("{} {}: cannot read it ({})", origin, path, std::strerror(errno))};
    return settings;
}

// The session keys: the lines of the file that are neither empty nor comments (#), one
// or two, each at least 32 characters.
std::vector<std::string> read_session_keys(const std::string& path, const std::string& origin) {
    std::ifstream in(path);
    if (!in)
        throw Refusal{
            fmt::format("{} {}: cannot read it ({})", origin, path, std::strerror(errno))};
    std::vector<std::string> keys;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        if (line.ends_with('\r')) line.pop_back();
        if (line.empty() || line.front() == '#') continue;
        // The key is not echoed.
        if (line.size() < 32)
            throw Refusal{fmt::format("{} {}:{}: a key must be at least 32 characters, this "
                                      "one has {}",
                                      origin, path, number, line.size())};
        if (keys.size() == 2)
            throw Refusal{fmt::format("{} {}:{}: at most two keys (the one that signs, and the "
                                      "previous one)",
                                      origin, path, number)};
        keys.push_back(line);
    }
    if (in.bad())
        throw Refusal{
            fmt::format("{} {}: cannot read it ({})", origin, path, std::strerror(errno))};
    if (keys.empty()) throw Refusal{fmt::format("{} {}: it holds no key", origin, path)};
    return keys;
}

// The first line of the password file, without its line end.
std::string read_password(const std::string& path, const std::string& origin) {
    std::ifstream in(path);
    if (!in)
        throw Refusal{
            fmt::format("{} {}: cannot read it ({})", origin, path, std::strerror(errno))};
    std::string password;
    if (!std::getline(in, password)) {
        throw Refusal{
            in.bad() ? fmt::format("{} {}: cannot read it ({})", origin, path, std::strerror(errno))
                     : fmt::format("{} {}: it is empty", origin, path)};
    }
    if (password.ends_with('\r')) password.pop_back();
    if (password.empty())
        throw Refusal{fmt::format("{} {}: its first line is empty", origin, path)};
    return password;
}

ServerOptions parse(const std::vector<std::string>& args, const Environment& environment) {
    const auto table = flags();
    const auto command_line = from_command_line(table, args);
    const auto from_env = from_environment(table, environment);

    // --config from the command line, else from the environment.
    const Setting* config = nullptr;
    for (const auto* source : {&from_env, &command_line})
        for (const auto& setting : *source)
            if (setting.flag->name == "config") config = &setting;
    if (config && config->value.empty()) throw Refusal{config->origin + " expects a file"};
    const auto in_file =
        config ? from_file(table, config->value, config->origin) : std::vector<Setting>{};

    // Lowest first: each source overrides the one before, and every value is checked.
    ServerOptions options;
    std::map<std::string, std::string> origin_of;  // flag -> where its value came from
    for (const auto* source : {&in_file, &from_env, &command_line}) {
        for (const auto& setting : *source) {
            if (auto why = setting.flag->apply(setting.value, options))
                throw Refusal{setting.origin + " " + *why};
            origin_of[setting.flag->name] = setting.origin;
        }
    }
    const auto origin = [&](const std::string& flag) {
        const auto found = origin_of.find(flag);
        return found != origin_of.end() ? found->second : "--" + flag + " (default)";
    };

    if (options.hold_ttl > options.max_hold_lifetime) {
        throw Refusal{fmt::format("{} {} s is longer than {} {} s", origin("hold-ttl"),
                                  options.hold_ttl.count(), origin("max-hold-lifetime"),
                                  options.max_hold_lifetime.count())};
    }
    if (options.redis_password_file) {
        // The URL is not shown: it carries a password.
        if (url_has_password(options.redis_url)) {
            throw Refusal{fmt::format("{} and a password in {}: give the password in one place",
                                      origin("redis-password-file"), origin("redis-url"))};
        }
        options.redis_password =
            read_password(*options.redis_password_file, origin("redis-password-file"));
    }
    if (options.session_key_file) {
        options.session_keys =
            read_session_keys(*options.session_key_file, origin("session-key-file"));
    }
    if (options.admin_key_file) {
        options.admin_key = read_password(*options.admin_key_file, origin("admin-key-file"));
        if (options.admin_key->size() < 16) {
            throw Refusal{fmt::format("{} {}: the key must be at least 16 characters",
                                      origin("admin-key-file"), *options.admin_key_file)};
        }
    }
    if (options.admission_key_file) {
        options.admission_key =
            read_password(*options.admission_key_file, origin("admission-key-file"));
        if (options.admission_key->size() < 32) {
            throw Refusal{fmt::format("{} {}: the key must be at least 32 characters",
                                      origin("admission-key-file"), *options.admission_key_file)};
        }
    }
    if (!options.open_sign_in && !options.admin_key) {
        throw Refusal{fmt::format("{} operator needs --admin-key-file: nobody could sign in",
                                  origin("sign-in"))};
    }
    return options;
}

}  // namespace

Environment process_environment() {
    Environment environment;
    for (char** entry = environ; entry && *entry; ++entry) {
        const std::string_view text(*entry);
        const auto eq = text.find('=');
        if (eq == std::string_view::npos) continue;
        environment.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
    }
    return environment;
}

std::string usage() {
    std::ostringstream flags_text;
    flags_text << describe(flags(), true, true);
    return fmt::format(
        R"(seatlock-ticketing: the seatlock example ticketing server (HTTP/1.1 + JSON).

usage: seatlock-ticketing [flags]

Every flag can also be set in the environment (env NAME below) or in the file --config
names. The command line wins over the environment, the environment over the file, the
file over the defaults.

{}
Stops cleanly on SIGINT or SIGTERM: in-flight requests are answered first.
)",
        flags_text.str());
}

std::variant<ServerOptions, EarlyExit> parse_options(const std::vector<std::string>& args,
                                                     const Environment& environment) {
    for (const auto& arg : args)
        if (arg == "--help" || arg == "-h") return EarlyExit{0, usage()};
    try {
        return parse(args, environment);
    } catch (const Refusal& refusal) {
        return EarlyExit{2, fmt::format("seatlock-ticketing: {}\nTry --help.\n", refusal.text)};
    }
}

}  // namespace ticketing
