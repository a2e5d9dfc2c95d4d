// SPDX-License-Identifier: MIT
// rate_limit.hpp: token buckets per buyer and per client address, in two lanes.
//
// Writes (POST /events/{id}/holds, POST /holds/{t}/extend, POST /holds/{t}/confirm,
// DELETE /holds/{t}, POST /orders/{o}/cancel, POST and DELETE /session) and reads (GET
// /events, GET /events/{id}/seats, GET /me/holds, GET /me/orders, GET /session, opening
// GET /events/{id}/stream)
// draw on separate buckets, so a buyer's writes never take a viewer's read tokens, or the
// reverse. Every other request (/healthz, /readyz, /metrics, the page and its assets,
// /openapi.json, unknown paths) is not limited.
//
// A request is counted against two keys: its buyer (the authenticated one, session.hpp:
// a session, or X-User-Id behind a trusted gateway; without one, only the address
// applies) and the client address, the socket's peer. Behind a proxy
// every client has the proxy's address, so the per-address limit then limits everyone at
// once; no X-Forwarded-For is trusted. A request must pass both of its lane's buckets;
// a refused request takes no token from either.
//
// The buckets live in sharded hash maps, each shard behind its own mutex. A bucket that
// has refilled to full is the same as no bucket, so when a shard grows past its bound
// a sweep drops those; if it is still past the bound, the buckets touched longest ago go
// too (their keys get a fresh burst). The clock is injected, for tests.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "api.hpp"
#include "metrics.hpp"

namespace ticketing {

/// A token bucket's settings: `per_second` tokens refill each second, up to `burst`.
/// per_second 0: no limit.
struct RateLimit {
    double per_second = 0;
    double burst = 1;
};

/// The four limits (options.hpp's --rate-* flags).
struct RateLimits {
    RateLimit buyer_writes{5, 10};
    RateLimit buyer_reads{20, 40};
    RateLimit address_writes{0, 100};
    RateLimit address_reads{0, 400};
};

/// Which buckets a request draws on.
enum class RateLane { write, read };
/// Which key's bucket refused a request.
enum class RateKey { buyer, address };

std::string_view to_string(RateLane lane);
std::string_view to_string(RateKey key);

/// The outcome of RateLimiter::admit.
struct RateDecision {
    bool allowed = true;
    RateKey limited_by = RateKey::buyer;  ///< when refused
    /// When refused: how long until the refusing bucket has a token again.
    std::chrono::steady_clock::duration retry_after{};
};

/// The buckets of all keys in both lanes; thread-safe.
class RateLimiter {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    /// `max_keys_per_shard`: the bound past which a shard is swept. `clock`: the time
    /// (std::chrono::steady_clock::now when empty).
    explicit RateLimiter(RateLimits limits, Clock clock = {},
                         std::size_t max_keys_per_shard = 4096);

    /// Takes a token of `lane` from `buyer`'s bucket (when given) and from `address`'s,
    /// or none when either has none.
    RateDecision admit(RateLane lane, std::optional<std::string_view> buyer,
                       std::string_view address);

    /// The buckets kept now, over every shard of every table (for tests).
    [[nodiscard]] std::size_t buckets() const;

    /// The limits it was made with.
    [[nodiscard]] const RateLimits& limits() const { return limits_; }

private:
    struct Bucket {
        double tokens;
        std::chrono::steady_clock::time_point updated;
    };
    // Looks keys up by std::string_view, without a std::string for each request.
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view key) const noexcept {
            return std::hash<std::string_view>{}(key);
        }
    };
    struct Shard {
        mutable std::mutex mutex;
        std::unordered_map<std::string, Bucket, KeyHash, std::equal_to<>> buckets;
    };
    static constexpr std::size_t shard_count = 16;
    // One table per lane and key kind.
    struct Table {
        RateLimit limit;
        std::array<Shard, shard_count> shards;
    };

    // Takes a token from `key`'s bucket in `table` (nullopt), or how long until it has one.
    std::optional<std::chrono::steady_clock::duration> take(
        Table& table, std::string_view key, std::chrono::steady_clock::time_point now);
    // Gives back the token take() took (the other bucket refused the request).
    void refund(Table& table, std::string_view key);
    void sweep(const Table& table, Shard& shard, std::chrono::steady_clock::time_point now) const;

    RateLimits limits_;
    Clock clock_;
    std::size_t max_keys_per_shard_;
    std::unique_ptr<Table> buyer_write_, buyer_read_, address_write_, address_read_;
};

/// The lane of `request`, or nullopt when it is not limited.
std::optional<RateLane> rate_lane(const HttpRequest& request);

/// Checks `request` from `address`, by the authenticated `buyer` if any, against
/// `limiter`: nullopt when it may go on, or the 429 answer (Retry-After, the JSON error
/// body), counted in `metrics`.
std::optional<HttpResponse> rate_limit(RateLimiter& limiter, Metrics& metrics,
                                       const HttpRequest& request, std::string_view address,
                                       std::optional<std::string_view> buyer);

}  // namespace ticketing
