// SPDX-License-Identifier: MIT
// rate_limit.cpp: the token buckets, the lanes of the routes and the 429 answer.
#include "rate_limit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <cmath>
#include <seatlock/keys.hpp>
#include <vector>

namespace ticketing {
namespace http = boost::beast::http;
using SteadyTime = std::chrono::steady_clock::time_point;

std::string_view to_string(RateLane lane) {
    return lane == RateLane::write ? "write" : "read";
}

std::string_view to_string(RateKey key) {
    return key == RateKey::buyer ? "buyer" : "address";
}

RateLimiter::RateLimiter(RateLimits limits, Clock clock, std::size_t max_keys_per_shard)
    : limits_(limits),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })),
      max_keys_per_shard_(std::max<std::size_t>(max_keys_per_shard, 1)),
      buyer_write_(std::make_unique<Table>()),
      buyer_read_(std::make_unique<Table>()),
      address_write_(std::make_unique<Table>()),
      address_read_(std::make_unique<Table>()) {
    buyer_write_->limit = limits.buyer_writes;
    buyer_read_->limit = limits.buyer_reads;
    address_write_->limit = limits.address_writes;
    address_read_->limit = limits.address_reads;
}

RateDecision RateLimiter::admit(RateLane lane, std::optional<std::string_view> buyer,
                                std::string_view address) {
    Table& by_buyer = lane == RateLane::write ? *buyer_write_ : *buyer_read_;
    Table& by_address = lane == RateLane::write ? *address_write_ : *address_read_;
    const bool buyer_limited = buyer && by_buyer.limit.per_second > 0;
    const bool address_limited = by_address.limit.per_second > 0;
    if (!buyer_limited && !address_limited) return {};
    const SteadyTime now = clock_();
    if (buyer_limited) {
        if (auto wait = take(by_buyer, *buyer, now)) return {false, RateKey::buyer, *wait};
    }
    if (address_limited) {
        if (auto wait = take(by_address, address, now)) {
            if (buyer_limited) refund(by_buyer, *buyer);
            return {false, RateKey::address, *wait};
        }
    }
    return {};
}

std::optional<std::chrono::steady_clock::duration> RateLimiter::take(Table& table,
                                                                     std::string_view key,
                                                                     SteadyTime now) {
    const RateLimit limit = table.limit;
    Shard& shard = table.shards[std::hash<std::string_view>{}(key) % shard_count];
    std::lock_guard lock(shard.mutex);
    auto found = shard.buckets.find(key);
    if (found == shard.buckets.end()) {
        if (shard.buckets.size() >= max_keys_per_shard_) sweep(table, shard, now);
        found = shard.buckets.emplace(std::string(key), Bucket{limit.burst, now}).first;
    }
    Bucket& bucket = found->second;
    if (now > bucket.updated) {
        const double elapsed = std::chrono::duration<double>(now - bucket.updated).count();
        bucket.tokens = std::min(limit.burst, bucket.tokens + elapsed * limit.per_second);
        bucket.updated = now;
    }
    if (bucket.tokens >= 1.0) {
        bucket.tokens -= 1.0;
        return std::nullopt;
    }
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>((1.0 - bucket.tokens) / limit.per_second));
}

void RateLimiter::refund(Table& table, std::string_view key) {
    Shard& shard = table.shards[std::hash<std::string_view>{}(key) % shard_count];
    std::lock_guard lock(shard.mutex);
    const auto found = shard.buckets.find(key);
    if (found != shard.buckets.end())
        found->second.tokens = std::min(table.limit.burst, found->second.tokens + 1.0);
}

void RateLimiter::sweep(const Table& table, Shard& shard, SteadyTime now) const {
    // A bucket that would be full by now is the same as none.
    const auto full_since = [&](const Bucket& b) {
        const double missing = table.limit.burst - b.tokens;
        return now - b.updated >= std::chrono::duration<double>(missing / table.limit.per_second);
    };
    std::erase_if(shard.buckets, [&](const auto& entry) { return full_since(entry.second); });
    // Still past three quarters of the bound: the buckets touched longest ago go, down to
    // half of it, so that the next sweep is some insertions away.
    if (shard.buckets.size() * 4 <= max_keys_per_shard_ * 3) return;
    std::vector<SteadyTime> times;
    times.reserve(shard.buckets.size());
    for (const auto& entry : shard.buckets) times.push_back(entry.second.updated);
    const std::size_t keep = max_keys_per_shard_ / 2;
    const auto cut = times.end() - static_cast<std::ptrdiff_t>(keep);
    std::nth_element(times.begin(), cut, times.end());
    const SteadyTime oldest_kept = *cut;
    std::erase_if(shard.buckets,
                  [&](const auto& entry) { return entry.second.updated < oldest_kept; });
}

std::size_t RateLimiter::buckets() const {
    std::size_t n = 0;
    for (const Table* table :
         {buyer_write_.get(), buyer_read_.get(), address_write_.get(), address_read_.get()}) {
        for (const Shard& shard : table->shards) {
            std::lock_guard lock(shard.mutex);
            n += shard.buckets.size();
        }
    }
    return n;
}

std::optional<RateLane> rate_lane(const HttpRequest& request) {
    const std::string_view target(request.target().data(), request.target().size());
    const auto url = boost::urls::parse_origin_form(target);
    if (!url) return std::nullopt;
    std::vector<std::string> path;
    for (auto segment : url->segments()) {
        if (path.size() == 3) return std::nullopt;  // no limited route is longer
        path.emplace_back(segment);
    }
    const auto is = [&](std::initializer_list<std::string_view> pattern) {
        if (pattern.size() != path.size()) return false;
        std::size_t i = 0;
        for (const auto part : pattern) {
            if (part != "*" && part != path[i]) return false;
            ++i;
        }
        return true;
    };
    switch (request.method()) {
        case http::verb::post:
            if (is({"session"}) || is({"events", "*", "holds"}) || is({"holds", "*", "extend"}) ||
                is({"holds", "*", "confirm"}) || is({"orders", "*", "cancel"}))
                return RateLane::write;
            return std::nullopt;
        case http::verb::delete_:
            if (is({"holds", "*"}) || is({"session"})) return RateLane::write;
            return std::nullopt;
        case http::verb::get:
            if (is({"events"}) || is({"session"}) || is({"events", "*", "seats"}) || is({"events", "*", "stream"}) ||
                is({"me", "holds"}) || is({"me", "orders"}))
                return RateLane::read;
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

std::optional<HttpResponse> rate_limit(RateLimiter& limiter, Metrics& metrics,
                                       const HttpRequest& request, std::string_view address,
                                       std::optional<std::string_view> buyer) {
    const auto lane = rate_lane(request);
    if (!lane) return std::nullopt;
    const RateDecision decision = limiter.admit(*lane, buyer, address);
    if (decision.allowed) return std::nullopt;
    metrics.rate_limited(to_string(*lane), to_string(decision.limited_by));

    // Whole seconds, rounded up, at least 1.
    const double wait = std::chrono::duration<double>(decision.retry_after).count();
    const auto seconds = std::max<long long>(1, static_cast<long long>(std::ceil(wait)));
    const RateLimits& limits = limiter.limits();
    const RateLimit& limit =
        decision.limited_by == RateKey::buyer
            ? (*lane == RateLane::write ? limits.buyer_writes : limits.buyer_reads)
            : (*lane == RateLane::write ? limits.address_writes : limits.address_reads);
    boost::json::object body{
        {"error", "rate_limited"},
        {"message", fmt::format("too many {} requests from this {}: {} a second (bursts of {}); "
                                "try again in {} s",
                                to_string(*lane), to_string(decision.limited_by), limit.per_second,
                                limit.burst, seconds)},
        {"retry_safe", true},
        {"lane", to_string(*lane)},
        {"limited_by", to_string(decision.limited_by)}};
    HttpResponse response(http::status::too_many_requests, request.version());
    response.set(http::field::content_type, "application/json");
    response.set(http::field::retry_after, std::to_string(seconds));
    response.body() = boost::json::serialize(body) + "\n";
    return response;
}

}  // namespace ticketing
