// SPDX-License-Identifier: MIT
// access_log.cpp: request ids and the JSON access lines.
#include "access_log.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <atomic>
#include <boost/json.hpp>
#include <cerrno>
#include <random>
#include <system_error>

namespace ticketing {
namespace {

// The random part of this process's request ids, chosen once.
std::uint64_t request_id_prefix() {
    static const std::uint64_t prefix = [] {
        std::random_device device;
        return (std::uint64_t{device()} << 32) ^ device();
    }();
    return prefix;
}

}  // namespace

bool valid_request_id(std::string_view id) {
    if (id.empty() || id.size() > max_request_id_length) return false;
    for (const char c : id)
        if (c <= ' ' || c > '~') return false;
    return true;
}

std::string new_request_id() {
    static std::atomic<std::uint64_t> counter{0};
    return fmt::format("{:016x}-{:x}", request_id_prefix(),
                       counter.fetch_add(1, std::memory_order_relaxed));
}

std::string request_id_for(std::optional<std::string_view> given) {
    if (given && valid_request_id(*given)) return std::string(*given);
    return new_request_id();
}

LogLevel access_level(std::string_view route, unsigned status) {
    if (route == "/healthz" || route == "/readyz" || route == "/metrics") return LogLevel::debug;
    return status >= 500 ? LogLevel::warn : LogLevel::info;
}

std::string access_line(const AccessEntry& entry, LogLevel level,
                        std::chrono::system_clock::time_point now) {
    boost::json::object line;
    line.reserve(11);
    line.emplace("time", utc_time(now));
    line.emplace("level", to_string(level));
    line.emplace("request_id", entry.request_id);
    line.emplace("method", entry.method);
    line.emplace("route", entry.route);
    // The target as sent: Boost.JSON escapes whatever bytes it holds.
    line.emplace("path", entry.path);
    line.emplace("status", entry.status);
    line.emplace("duration_us",
                 std::chrono::duration_cast<std::chrono::microseconds>(entry.took).count());
    line.emplace("bytes", entry.bytes);
    line.emplace("client", entry.client);
    if (!entry.buyer.empty()) line.emplace("buyer", entry.buyer);
    std::string text = boost::json::serialize(line);
    text += '\n';
    return text;
}

AccessLog::AccessLog(const std::string& where) {
    if (where == "on") return;
    if (where == "off") {
        file_ = nullptr;
        return;
    }
    file_ = std::fopen(where.c_str(), "a");
    if (!file_) {
        throw std::system_error(errno, std::generic_category(),
                                "cannot open the access log " + where);
    }
    owned_ = true;
}

AccessLog::~AccessLog() {
    if (owned_) std::fclose(file_);
}

void AccessLog::write(const AccessEntry& entry) {
    const LogLevel level = access_level(entry.route, entry.status);
    if (file_ == nullptr || !logs(level)) return;
    const std::string line = access_line(entry, level, std::chrono::system_clock::now());
    // One fwrite: stdio locks the stream for it, so lines of several threads never mix.
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
}

}  // namespace ticketing
