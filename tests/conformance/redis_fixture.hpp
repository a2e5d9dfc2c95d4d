// SPDX-License-Identifier: MIT
// tests/conformance/redis_fixture.hpp: what the conformance fixtures on real Redis servers
// (conformance_redis.cpp, on one server or a Cluster) share.
#pragma once

#include <seatlock/backends/redis.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace seatlock::testing {

/// A RedisBackend with a key prefix of its own, so every test starts from empty storage.
/// The servers run on this machine: their TIME is this wall clock, and time passes for real.
struct RedisFixtureBase {
    using backend_type = RedisBackend;
    static constexpr bool manual_clock = false;
    /// The randomized model test's steps per thread (model_test.hpp): on Redis every step is
    /// a real round trip and its pauses real time; the interleavings it looks for come from
    /// the 8 threads, and the in-process suites run the longer default.
    static constexpr int model_steps = 1500;

    /// A backend on `servers`, with the next prefix of this program.
    explicit RedisFixtureBase(RedisOptions servers) : backend_(with_own_prefix(std::move(servers))) {}

    RedisBackend& backend() { return backend_; }
    void advance(Millis d) { std::this_thread::sleep_for(d); }
    WallTime now() const { return std::chrono::system_clock::now(); }
    /// Another backend on the same servers and prefix, whose writes keep n steps per log.
    std::unique_ptr<RedisBackend> backend_with_log_limit(std::size_t n) {
        RedisOptions o = backend_.options();
        o.change_log_limit = n;
        return std::make_unique<RedisBackend>(o);
    }

protected:
    static RedisOptions with_own_prefix(RedisOptions o) {
        static std::atomic<int> fixtures{0};
        o.prefix = "conformance-" + std::to_string(++fixtures);
        o.command_timeout = std::chrono::seconds(10);  // sanitizer builds on busy machines are slow
        return o;
    }

    RedisBackend backend_;
};

}  // namespace seatlock::testing
