// SPDX-License-Identifier: MIT
// benchmarks/backend_kind.hpp: what a row of the table ran on — a seatlock backend or one
// of the peers it is compared with — and through which of seatlock's APIs, with the one
// spelling of each, shared by the command line, the table and the JSON.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace seatlock::bench {

enum class Kind {
    memory,         ///< seatlock's MemoryBackend
    redis,          ///< seatlock's RedisBackend on one redis-server
    redis_cluster,  ///< seatlock's RedisBackend on a Redis Cluster of 3 primaries
                    ///< (redis_cluster.hpp)
    by_hand,        ///< the hand-written flow users write on Redis
    raw,            ///< the raw Redis ceiling: the same round trips doing nothing
    floor,          ///< seatlock's Redis commands alone, without its Lua
    node_redlock,   ///< node-redlock v5 on ioredis, a peer program (peers/node-redlock)
};

inline constexpr std::array<Kind, 7> kinds{Kind::memory,      Kind::redis, Kind::redis_cluster,
                                           Kind::by_hand,     Kind::raw,   Kind::floor,
                                           Kind::node_redlock};

constexpr std::string_view kind_name(Kind k) {
    switch (k) {
        case Kind::memory:
            return "memory";
        case Kind::redis:
            return "redis";
        case Kind::redis_cluster:
            return "redis-cluster";
        case Kind::by_hand:
            return "by-hand";
        case Kind::raw:
            return "raw";
        case Kind::floor:
            return "floor";
        case Kind::node_redlock:
            return "node-redlock";
    }
    return "?";
}

constexpr std::optional<Kind> kind_named(std::string_view name) {
    for (Kind k : kinds) {
        if (kind_name(k) == name) return k;
    }
    return std::nullopt;
}

/// How seatlock was called: from one thread per caller, or with operations in flight on
/// one thread (the async_* calls on an io_context). Only seatlock's rows (memory, redis,
/// redis-cluster) have async twins; the others say blocking.
enum class Api {
    blocking,  ///< one caller thread per operation in flight
    async,     ///< all operations in flight on one thread
};

inline constexpr std::array<Api, 2> apis{Api::blocking, Api::async};

constexpr std::string_view api_name(Api a) {
    return a == Api::async ? "async" : "blocking";
}

constexpr std::optional<Api> api_named(std::string_view name) {
    for (Api a : apis) {
        if (api_name(a) == name) return a;
    }
    return std::nullopt;
}

}  // namespace seatlock::bench
