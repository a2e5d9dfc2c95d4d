// SPDX-License-Identifier: MIT
// tests/support/redis_setup.hpp: what the Redis integration tests set up alike: options
// for the private servers a test started, and a hold policy without the per-holder limit.
#pragma once

#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>

#include <chrono>
#include <string>

namespace seatlock::testing {

/// Options for `server`. The command timeout is generous (sanitizer builds on busy machines
/// are slow), except where a test about timeouts sets its own; connecting to a loopback
/// server that is down fails at once, so the connect timeout is short.
inline RedisOptions options_for(const RedisServer& server,
                                Millis command_timeout = std::chrono::seconds(10)) {
    RedisOptions o;
    o.port = server.port();
    o.connect_timeout = std::chrono::milliseconds(500);
    o.command_timeout = command_timeout;
    return o;
}

/// Options for the servers `url` names (a RedisCluster's or a RedisSentinel's url()), with
/// the keys under `prefix` and the given timeouts.
inline RedisOptions options_for(const std::string& url, const std::string& prefix,
                                Millis connect_timeout, Millis command_timeout) {
    auto o = RedisOptions::from_url(url).value();
    o.prefix = prefix;
    o.connect_timeout = connect_timeout;
    o.command_timeout = command_timeout;
    return o;
}

/// One `Setup` (a RedisServer, RedisCluster or RedisSentinel) for the whole program,
/// started on first use, stopped at exit: for test cases that may share one.
template <typename Setup>
Setup& shared() {
    static Setup setup;
    return setup;
}

/// The default policy without its seats-per-holder limit: tests hold as much as they like.
inline HoldPolicy no_limit() {
    HoldPolicy p;
    p.max_seats_per_holder = 0;
    return p;
}

}  // namespace seatlock::testing
