// SPDX-License-Identifier: MIT
// benchmarks/row.hpp: one line of the results — a scenario on one backend (or peer) at one
// number of callers — and the per-operation figures read from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend_kind.hpp"
#include "harness.hpp"
#include "redis_client.hpp"

namespace seatlock::bench {

/// What only the row of another program has (a peer, or the ticketing server over HTTP):
/// it may be missing here or fail, and its failed operations are counted rather than
/// stopping the run.
struct PeerOutcome {
    std::string not_run;  ///< why the row has no figures; empty when it ran
    /// not_run because it broke down (a problem), not because it could not start here.
    bool failed = false;
    std::uint64_t errors = 0;  ///< operations that failed other than by a busy refusal
    std::string first_error;
    double server_cpu_seconds = 0;  ///< HTTP rows: the ticketing server's CPU time, measured
};

/// What one primary of the Redis Cluster did during a redis-cluster row.
struct NodeLoad {
    int port = 0;
    CounterDelta redis;
};

struct Row {
    std::string scenario;
    Kind kind = Kind::memory;
    Api api = Api::blocking;  ///< async: m.callers operations in flight on one thread
    bool event_per_caller = false;
    Measurement m;
    std::optional<CounterDelta> redis;     ///< Redis runs: what the server did (a cluster's
                                           ///< primaries summed)
    std::optional<double> storage_bytes;   ///< hold3_kept: Redis used_memory or heap growth
    std::optional<double> resident_bytes;  ///< hold3_kept on memory: resident memory growth
    std::uint64_t seats_held = 0;          ///< hold3_kept: seats held by the measured ops
    /// Rows of another program: a peer (node-redlock), or the ticketing server over HTTP.
    std::optional<PeerOutcome> peer;
    std::vector<NodeLoad> nodes;  ///< redis-cluster rows: each primary, by port

    /// Adds another slice of the same run.
    void merge(const Row& other) {
        m.merge(other.m);
        if (redis && other.redis) *redis += *other.redis;
        if (!redis && other.redis) redis = other.redis;
        // The same primaries in the same order in every slice of a row.
        if (nodes.empty()) {
            nodes = other.nodes;
        } else if (nodes.size() == other.nodes.size()) {
            for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].redis += other.nodes[i].redis;
        }
        if (peer && other.peer) {
            if (peer->not_run.empty() && !other.peer->not_run.empty()) {
                peer->not_run = other.peer->not_run;
                peer->failed = other.peer->failed;
            }
            peer->errors += other.peer->errors;
            peer->server_cpu_seconds += other.peer->server_cpu_seconds;
            if (peer->first_error.empty()) peer->first_error = other.peer->first_error;
        }
    }

    /// Whether the row has figures: false for a peer that did not run.
    [[nodiscard]] bool measured() const { return !peer || peer->not_run.empty(); }

    [[nodiscard]] std::string label() const {
        return (api == Api::async ? "async " : "") + scenario +
               (event_per_caller ? " (event per caller)" : "");
    }
    template <typename T>
    [[nodiscard]] std::optional<double> per_op(T CounterDelta::*field) const {
        if (!redis || m.ops == 0) return std::nullopt;
        return static_cast<double>((*redis).*field) / static_cast<double>(m.ops);
    }
    /// Redis server CPU microseconds per operation.
    [[nodiscard]] std::optional<double> server_us_per_op() const {
        const auto seconds = per_op(&CounterDelta::cpu_seconds);
        return seconds ? std::optional<double>(*seconds * 1e6) : std::nullopt;
    }
    /// Redis CPU microseconds per operation of the cluster's primary number `i` (by port).
    [[nodiscard]] std::optional<double> node_us_per_op(std::size_t i) const {
        if (i >= nodes.size() || m.ops == 0) return std::nullopt;
        return nodes[i].redis.cpu_seconds * 1e6 / static_cast<double>(m.ops);
    }
    /// Requests the clients sent per operation.
    [[nodiscard]] std::optional<double> requests_per_op() const {
        if (!redis || m.ops == 0) return std::nullopt;
        return static_cast<double>(redis->requests()) / static_cast<double>(m.ops);
    }
    /// Client requests per socket read of the server: how many requests one read carried.
    [[nodiscard]] std::optional<double> requests_per_read() const {
        if (!redis || redis->reads == 0) return std::nullopt;
        return static_cast<double>(redis->requests()) / static_cast<double>(redis->reads);
    }
    /// Every command executed (scripts' own included) per socket read of the server.
    [[nodiscard]] std::optional<double> commands_per_read() const {
        if (!redis || redis->reads == 0) return std::nullopt;
        return static_cast<double>(redis->commands) / static_cast<double>(redis->reads);
    }
    /// INFO commandstats usec_per_call of script command `i` (of script_commands) over this
    /// row's run; nothing when the row made no such call.
    [[nodiscard]] std::optional<double> script_usec_per_call(std::size_t i) const {
        if (!redis || redis->scripts[i].calls == 0) return std::nullopt;
        return static_cast<double>(redis->scripts[i].usec) /
               static_cast<double>(redis->scripts[i].calls);
    }
    [[nodiscard]] std::optional<double> per_seat(const std::optional<double>& bytes) const {
        if (!bytes || seats_held == 0) return std::nullopt;
        return *bytes / static_cast<double>(seats_held);
    }
    /// HTTP rows: the ticketing server's CPU microseconds per operation.
    [[nodiscard]] std::optional<double> server_process_us_per_op() const {
        if (!peer || peer->server_cpu_seconds <= 0 || m.ops == 0) return std::nullopt;
        return peer->server_cpu_seconds * 1e6 / static_cast<double>(m.ops);
    }
    /// p99 of the first step (the hold of a hold+release), when the scenario has one.
    [[nodiscard]] std::optional<double> first_step_p99_us() const {
        if (m.first_step.count() == 0) return std::nullopt;
        return m.first_step.quantile_us(0.99);
    }
};

}  // namespace seatlock::bench
