// SPDX-License-Identifier: MIT
// src/redis/redis_options.cpp: RedisOptions::from_url, for redis://[user:password@]host:port[/db]
// (rediss:// the same over TLS),
// redis+cluster://[user:password@]host:port[,host:port...] (rediss+cluster:// over TLS),
// redis+sentinel://[user:password@]host[:port][,host[:port]...]/service[/db]
// (rediss+sentinel:// over TLS) and unix://[user:password@]/path[?db=N].
#include <seatlock/backends/redis.hpp>
#include <seatlock/keys.hpp>

#include "connection_pool.hpp"

#include <algorithm>

#include <charconv>
#include <limits>
#include <optional>

namespace seatlock {

namespace {

Failure bad_url(std::string_view url, const std::string& why) {
    // Never echo the password back: show the URL only up to its credentials.
    const auto at = url.rfind('@');
    const auto scheme_end = url.find("://");
    const std::string scheme =
        scheme_end == std::string_view::npos ? "redis://" : std::string(url.substr(0, scheme_end + 3));
    const std::string shown = at == std::string_view::npos
                                  ? std::string(url.substr(0, 80))
                                  : scheme + "***@" + std::string(url.substr(at + 1, 80));
    return Failure(errc::invalid_argument,
                   "bad Redis URL '" + shown + "': " + why +
                       " (expected redis://[user:password@]host:port[/db], "
                       "redis+cluster://[user:password@]host:port[,host:port...] or "
                       "redis+sentinel://[user:password@]host:port[,host:port...]/service[/db], "
                       "rediss for TLS in each, or unix://[user:password@]/path[?db=N])");
}

// A non-negative decimal number no larger than `max`; nullopt otherwise.
std::optional<long long> number(std::string_view text, long long max) {
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < 0 ||
        value > max) {
        return std::nullopt;
    }
    return value;
}

// %XX escapes, so that passwords may hold '@', ':' or '/'.
std::optional<std::string> percent_decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        unsigned value = 0;
        if (i + 2 >= text.size()) return std::nullopt;
        const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
        if (ec != std::errc{} || end != text.data() + i + 3) return std::nullopt;
        out += static_cast<char>(value);
        i += 2;
    }
    return out;
}

// host[:port] or [IPv6][:port] into `node`; the reason when it is not one.
std::optional<std::string> parse_node(std::string_view authority, RedisNode& node) {
    std::string_view port_text;
    const bool bracketed = !authority.empty() && authority.front() == '[';
    if (bracketed) {  // [IPv6]:port
        const auto close = authority.find(']');
        if (close == std::string_view::npos) return "an unclosed [IPv6 address]";
        node.host = std::string(authority.substr(1, close - 1));
        const std::string_view after = authority.substr(close + 1);
        if (!after.empty() && after.front() != ':') return "junk after the IPv6 address";
        if (after == ":") return "an empty port";
        port_text = after.empty() ? "" : after.substr(1);
    } else {
        const auto colon = authority.rfind(':');
        node.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port_text = authority.substr(colon + 1);
            if (port_text.empty()) return "an empty port";
        }
    }
    if (node.host.empty()) return "no host";
    if (node.host.find_first_of(bracketed ? " @[]," : " :@[],") != std::string::npos) {
        return "a bad host";
    }
    if (!port_text.empty()) {
        const auto port = number(port_text, 65535);
        if (!port || *port == 0) return "the port must be a number from 1 to 65535";
        node.port = static_cast<int>(*port);
    }
    return std::nullopt;
}

// The query string's options, `name=value` joined by '&', into `options`; the reason
// when one is unknown or its value bad. `with_db`: db=N is one of them (unix:// URLs,
// whose path is the socket's).
std::optional<std::string> apply_query(std::string_view query, RedisOptions& options,
                                       bool with_db = false) {
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
        const auto eq = pair.find('=');
        const std::string_view name = pair.substr(0, eq);
        const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
        if (name == "replicas_to_ack") {
            const auto n = number(value, 1000);
            if (!n) return "replicas_to_ack must be a number from 0 to 1000";
            options.replicas_to_ack = static_cast<int>(*n);
        } else if (name == "replica_ack_timeout_ms") {
            const auto ms = number(value, 86'400'000);
            if (!ms || *ms == 0) return "replica_ack_timeout_ms must be a number of milliseconds above 0";
            options.replica_ack_timeout = Millis(*ms);
        } else if (name.substr(0, 4) == "tls_") {
            // Appended to, not prefixed: g++ 12 at -O3 warns (-Wrestrict) on a literal
            // prefixed to a temporary string here.
            std::string shown(name.substr(0, 40));
            if (!options.tls.enabled) return shown.append(" needs a rediss URL (TLS)");
            auto text = percent_decode(value);
            if (!text) return shown.append(": a bad %-escape");
            if (name == "tls_verify") {
                if (*text != "yes" && *text != "no") return "tls_verify must be yes or no";
                options.tls.verify = *text == "yes";
            } else if (text->empty()) {
                return shown.append(" is empty");
            } else if (name == "tls_ca_file") {
                options.tls.ca_file = std::move(*text);
            } else if (name == "tls_ca_dir") {
                options.tls.ca_dir = std::move(*text);
            } else if (name == "tls_cert_file") {
                options.tls.cert_file = std::move(*text);
            } else if (name == "tls_key_file") {
                options.tls.key_file = std::move(*text);
            } else if (name == "tls_server_name") {
                options.tls.server_name = std::move(*text);
            } else {
                return std::string("unknown option '")
                    .append(shown)
                    .append("' (known TLS options: tls_ca_file, tls_ca_dir, tls_cert_file, "
                            "tls_key_file, tls_server_name, tls_verify)");
            }
        } else if (with_db && name == "db") {
            const auto db = number(value, std::numeric_limits<int>::max());
            if (!db) return "db must be a number";
            options.db = static_cast<int>(*db);
        } else {
            return "unknown option '" + std::string(name.substr(0, 40)) +
                   "' (known: " + (with_db ? "db, " : "") +
                   "replicas_to_ack, replica_ack_timeout_ms" +
                   (options.tls.enabled ? ", tls_*)" : ")");
        }
    }
    return std::nullopt;
}

// user:password or :password into `options`; the reason when it is neither.
std::optional<std::string> apply_credentials(std::string_view userinfo, RedisOptions& options) {
    const auto colon = userinfo.find(':');
    if (colon == std::string_view::npos) return "credentials must be user:password or :password";
    auto user = percent_decode(userinfo.substr(0, colon));
    auto password = percent_decode(userinfo.substr(colon + 1));
    if (!user || !password) return "a bad %-escape in the credentials";
    if (password->empty()) return "the password is empty";
    options.user = std::move(*user);
    options.password = std::move(*password);
    return std::nullopt;
}

// unix://[user:password@]/path[?db=N&...], `rest` what follows unix://. The path runs from
// the first '/' to the '?' that starts the query, if any.
Result<RedisOptions> from_unix_url(std::string_view url, std::string_view rest) {
    RedisOptions options;
    const auto path_start = rest.find('/');
    if (path_start == std::string_view::npos) {
        return bad_url(url,
                       "no socket path: unix:// takes an absolute path, unix:///run/redis.sock");
    }
    if (path_start > 0) {
        // Credentials end with the '@' just before the path.
        if (rest[path_start - 1] != '@') {
            return bad_url(url, "unix:// takes a path, not a host: unix:///run/redis.sock");
        }
        if (auto why = apply_credentials(rest.substr(0, path_start - 1), options)) {
            return bad_url(url, *why);
        }
    }
    std::string_view path = rest.substr(path_start);
    const auto question = path.find('?');
    if (question != std::string_view::npos) {
        if (auto why = apply_query(path.substr(question + 1), options, true)) {
            return bad_url(url, *why);
        }
        path = path.substr(0, question);
    }
    if (path.find('#') != std::string_view::npos)
        return bad_url(url, "fragments are not supported");
    options.unix_socket = std::string(path);
    return options;
}

}  // namespace

Result<RedisOptions> RedisOptions::from_url(std::string_view url) {
    constexpr std::string_view unix_scheme = "unix://";
    if (url.substr(0, unix_scheme.size()) == unix_scheme) {
        return from_unix_url(url, url.substr(unix_scheme.size()));
    }
    // rediss, rediss+cluster and rediss+sentinel: the same over TLS, every connection of
    // the backend (the Cluster's slot map and Sentinel's discovery included).
    const auto scheme_end = url.find("://");
    std::string_view scheme =
        scheme_end == std::string_view::npos ? std::string_view() : url.substr(0, scheme_end);
    const bool tls = scheme.substr(0, 6) == "rediss";
    if (tls) {
        scheme.remove_prefix(6);
    } else if (scheme.substr(0, 5) == "redis") {
        scheme.remove_prefix(5);
    } else {
        scheme = "?";  // none of them
    }
    const bool cluster = scheme == "+cluster";
    const bool sentinel = scheme == "+sentinel";
    if (!cluster && !sentinel && !scheme.empty()) {
        return bad_url(url, "it must start with redis://, redis+cluster://, redis+sentinel:// "
                            "(rediss for TLS) or unix://");
    }
    std::string_view rest = url.substr(scheme_end + 3);
    if (rest.find('#') != std::string_view::npos) return bad_url(url, "fragments are not supported");
    // The query follows the credentials: a '?' of a password is not its start.
    const auto credentials_end = rest.rfind('@');
    const auto question =
        rest.find('?', credentials_end == std::string_view::npos ? 0 : credentials_end);
    const std::string_view query =
        question == std::string_view::npos ? "" : rest.substr(question + 1);
    rest = rest.substr(0, question);
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);

    RedisOptions options;
    options.tls.enabled = tls;
    if (auto why = apply_query(query, options)) return bad_url(url, *why);
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        if (auto why = apply_credentials(authority.substr(0, at), options))
            return bad_url(url, *why);
        authority = authority.substr(at + 1);
    }

    if (cluster) {
        // Seed nodes, comma-separated, as Lettuce and redis-py's cluster URLs list them.
        if (slash != std::string_view::npos) {
            return bad_url(url, "a cluster has only database 0: no /db after its nodes");
        }
        while (true) {
            const auto comma = authority.find(',');
            RedisNode node;
            if (auto why = parse_node(authority.substr(0, comma), node)) return bad_url(url, *why);
            options.cluster_nodes.push_back(std::move(node));
            if (comma == std::string_view::npos) break;
            authority = authority.substr(comma + 1);
        }
        options.host = options.cluster_nodes.front().host;
        options.port = options.cluster_nodes.front().port;
        return options;
    }

    std::string_view db_text = path;
    if (sentinel) {
        // Sentinels, comma-separated, then the service they monitor, as redis-py's
        // redis+sentinel:// URLs (Redis-Sentinel-Url) write them.
        while (true) {
            const auto comma = authority.find(',');
            RedisNode node{"", 26379};  // Sentinel's own default port
            if (auto why = parse_node(authority.substr(0, comma), node)) return bad_url(url, *why);
            options.sentinels.push_back(std::move(node));
            if (comma == std::string_view::npos) break;
            authority = authority.substr(comma + 1);
        }
        const auto service_end = path.find('/');
        options.sentinel_service = std::string(path.substr(0, service_end));
        if (options.sentinel_service.empty()) {
            return bad_url(url, "the name of the service the sentinels monitor must follow them "
                                "(host:port,.../service)");
        }
        db_text = service_end == std::string_view::npos ? "" : path.substr(service_end + 1);
    } else {
        RedisNode node{options.host, options.port};
        if (auto why = parse_node(authority, node)) return bad_url(url, *why);
        options.host = std::move(node.host);
        options.port = node.port;
    }
    if (!db_text.empty()) {
        const auto db = number(db_text, std::numeric_limits<int>::max());
        if (!db) return bad_url(url, "the database must be a number after the last /");
        options.db = static_cast<int>(*db);
    }
    return options;
}

Result<void> RedisOptions::validate() const {
    const RedisOptions& o = *this;
    auto bad = [](const std::string& why) {
        return Failure(errc::invalid_argument, "RedisOptions: " + why);
    };
    if (!o.unix_socket.empty()) {
        // sockaddr_un's path holds 108 bytes, the terminating NUL included.
        if (o.unix_socket.size() > redis_detail::max_unix_socket_path ||
            o.unix_socket.find('\0') != std::string::npos) {
            return bad("unix_socket must be a path of at most " +
                       std::to_string(redis_detail::max_unix_socket_path) + " bytes, without NUL");
        }
        if (!o.cluster_nodes.empty() || !o.sentinels.empty()) {
            return bad("unix_socket names one server: not with cluster_nodes or sentinels");
        }
    } else {
        if (o.host.empty()) return bad("host is empty");
        if (o.port <= 0 || o.port > 65535) return bad("port must be 1 to 65535");
    }
    const RedisTls& tls = o.tls;
    if (tls.enabled) {
        if (!o.unix_socket.empty()) return bad("tls is for TCP: not with unix_socket");
        if (tls.cert_file.empty() != tls.key_file.empty()) {
            return bad("tls.cert_file and tls.key_file go together: give both or neither");
        }
    } else if (!tls.ca_file.empty() || !tls.ca_dir.empty() || !tls.cert_file.empty() ||
               !tls.key_file.empty() || !tls.server_name.empty()) {
        return bad("tls fields are set but tls.enabled is false: set it, or clear them");
    }
    if (o.db < 0) return bad("db must not be negative");
    if (o.change_log_limit == 0 || o.change_log_limit > 1'000'000) {
        return bad("change_log_limit must be 1 to 1,000,000");
    }
    if (o.pool_size == 0) return bad("pool_size must be at least 1");
    if (o.async_connections == 0) return bad("async_connections must be at least 1");
    for (const auto& node : o.cluster_nodes) {
        if (node.host.empty()) return bad("a cluster node's host is empty");
        if (node.port <= 0 || node.port > 65535) return bad("cluster node ports must be 1 to 65535");
    }
    if (!o.cluster_nodes.empty() && o.db != 0) return bad("a Redis Cluster has only db 0");
    for (const auto& node : o.sentinels) {
        if (node.host.empty()) return bad("a sentinel's host is empty");
        if (node.port <= 0 || node.port > 65535) return bad("sentinel ports must be 1 to 65535");
    }
    if (!o.sentinels.empty()) {
        if (!o.cluster_nodes.empty()) return bad("cluster_nodes and sentinels exclude each other");
        const bool word = std::all_of(o.sentinel_service.begin(), o.sentinel_service.end(),
                                      [](char c) { return c > ' ' && c != '\x7f'; });
        if (o.sentinel_service.empty() || !word)
            return bad("sentinel_service must name the service, without spaces");
        if (o.discovery_timeout <= Millis(0)) return bad("discovery_timeout must be positive");
    }
    if (o.connect_timeout <= Millis(0) || o.command_timeout <= Millis(0)) {
        return bad("connect_timeout and command_timeout must be positive");
    }
    if (o.replicas_to_ack < 0) return bad("replicas_to_ack must not be negative");
    if (o.replicas_to_ack > 0 &&
        (o.replica_ack_timeout <= Millis(0) || o.replica_ack_timeout >= o.command_timeout)) {
        return bad("replica_ack_timeout must be positive and shorter than command_timeout "
                   "(WAIT 0 would wait for ever)");
    }
    if (o.slow_call_threshold < Millis(0)) {
        return bad("slow_call_threshold must not be negative (0 reports every call as slow)");
    }
    if (o.event_queue_limit == 0 || o.event_queue_limit > 1'000'000) {
        return bad("event_queue_limit must be 1 to 1,000,000");
    }
    const bool printable = std::all_of(o.prefix.begin(), o.prefix.end(), is_key_char);
    if (o.prefix.empty() || o.prefix.size() > 128 || !printable) {
        return bad("prefix must be 1 to 128 printable characters without space, { or }");
    }
    return {};
}

}  // namespace seatlock
