// src/redis/redis_options.cpp: RedisOptions::from_url, for redis://[user:password@]host:port[/db].
#include <seatlock/backends/redis.hpp>

#include <charconv>
#include <limits>
#include <optional>

namespace seatlock {

namespace {

Failure bad_url(std::string_view url, const std::string& why) {
    // Never echo the password back: show the URL only up to its credentials.
    const auto at = url.rfind('@');
    const std::string shown = at == std::string_view::npos
                                  ? std::string(url.substr(0, 80))
                                  : "redis://***@" + std::string(url.substr(at + 1, 80));
    return Failure(errc::invalid_argument,
                   "bad Redis URL '" + shown + "': " + why +
                       " (expected redis://[user:password@]host:port[/db])");
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

}  // namespace

Result<RedisOptions> RedisOptions::from_url(std::string_view url) {
    constexpr std::string_view scheme = "redis://";
    if (url.substr(0, scheme.size()) != scheme) return bad_url(url, "it must start with redis://");
    std::string_view rest = url.substr(scheme.size());
    if (rest.find_first_of("?#") != std::string_view::npos) {
        return bad_url(url, "query strings and fragments are not supported");
    }
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);

    RedisOptions options;
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        const std::string_view userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
        const auto colon = userinfo.find(':');
        if (colon == std::string_view::npos) {
            return bad_url(url, "credentials must be user:password or :password");
        }
        auto user = percent_decode(userinfo.substr(0, colon));
        auto password = percent_decode(userinfo.substr(colon + 1));
        if (!user || !password) return bad_url(url, "a bad %-escape in the credentials");
        if (password->empty()) return bad_url(url, "the password is empty");
        options.user = std::move(*user);
        options.password = std::move(*password);
    }

    std::string_view port_text;
    const bool bracketed = !authority.empty() && authority.front() == '[';
    if (bracketed) {  // [IPv6]:port
        const auto close = authority.find(']');
        if (close == std::string_view::npos) return bad_url(url, "an unclosed [IPv6 address]");
        options.host = std::string(authority.substr(1, close - 1));
        const std::string_view after = authority.substr(close + 1);
        if (!after.empty() && after.front() != ':')
            return bad_url(url, "junk after the IPv6 address");
        port_text = after.empty() ? "" : after.substr(1);
        if (after == ":") return bad_url(url, "an empty port");
    } else {
        const auto colon = authority.rfind(':');
        options.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port_text = authority.substr(colon + 1);
            if (port_text.empty()) return bad_url(url, "an empty port");
        }
    }
    if (options.host.empty()) return bad_url(url, "no host");
    if (options.host.find_first_of(bracketed ? " @[]" : " :@[]") != std::string::npos) {
        return bad_url(url, "a bad host");
    }
    if (!port_text.empty()) {
        const auto port = number(port_text, 65535);
        if (!port || *port == 0) return bad_url(url, "the port must be a number from 1 to 65535");
        options.port = static_cast<int>(*port);
    }
    if (!path.empty()) {
        const auto db = number(path, std::numeric_limits<int>::max());
        if (!db) return bad_url(url, "the database must be a number after the last /");
        options.db = static_cast<int>(*db);
    }
    return options;
}

}  // namespace seatlock
