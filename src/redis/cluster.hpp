// SPDX-License-Identifier: MIT
// src/redis/cluster.hpp: routing on Redis Cluster: hash slots, the slot map learnt from
// the nodes (CLUSTER SLOTS), one connection pool per node, and the following of MOVED, ASK
// and TRYAGAIN answers. The blocking path (run) and the asynchronous one (a Route per call,
// driven by the backend's pipelines) follow the same rules, which live in Route.
//
// A call names its keys; they must share one hash slot (seatlock's keys of one event or
// lock group share a hash tag), and the call goes to the primary serving that slot.
// - MOVED: the slot has a new owner for good: the map is updated, then refreshed whole
//   (CLUSTER SLOTS, at most once per short interval however many callers saw it), and the
//   call is sent there.
// - ASK: the slot is migrating and the keys are already on the target: ASKING, then the
//   call, on the target; the map is not changed.
// - TRYAGAIN: a multi-key call during a migration whose keys are split between source and
//   target: sent again after a short pause, until the command timeout has passed.
// - A connection that cannot be made, or breaks before a call is sent, refreshes the map
//   (a failover may have promoted a replica) and the call goes to the new owner. A call
//   that was sent and lost its reply is outcome_unknown, as on one node: never resent here.
// The map is also refreshed when it is older than a minute, by the next call.
// The asynchronous path never refreshes on its I/O thread (CLUSTER SLOTS is a blocking
// round trip): MOVED updates the one slot at once, and the whole map is refreshed by the
// next call's start (prepare), on the caller's thread. A pause (TRYAGAIN) is a timer there.
#pragma once

#include "connection_pool.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace seatlock::redis_detail {

inline constexpr std::size_t cluster_slots = 16384;

/// The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag, the part between
/// the first '{' and the next '}' when that is not empty, else of the whole key; mod 16384.
std::uint16_t hash_slot(std::string_view key);

/// The slot shared by `keys`; invalid_argument naming two keys that differ. nullopt when
/// there are no keys (any node will do).
Result<std::optional<std::uint16_t>> common_slot(std::span<const std::string> keys);

class ClusterRouter {
public:
    /// `telemetry` (may be null): its nodes' pools' counters and events, and the map's
    /// (slots_refreshed, redirected). `tls`: with options.tls.enabled, the context of every
    /// node's pool (ConnectionPool's), whose connections, CLUSTER SLOTS's included, are
    /// then all TLS.
    explicit ClusterRouter(const RedisOptions& options,
                           std::shared_ptr<Telemetry> telemetry = nullptr,
                           std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
    ClusterRouter(const ClusterRouter&) = delete;
    ClusterRouter& operator=(const ClusterRouter&) = delete;

    /// Sends one call (every command `attempt` sends on the connection it is given) to
    /// the primary of `slot` (any primary when nullopt), and follows redirections. When
    /// `asking` is true, `attempt` must send ASKING before each of its commands (the
    /// server forgets it after one). Error replies other than redirections come back as
    /// replies, like from ConnectionPool::Lease::command.
    using Attempt = std::function<Result<ReplyPtr>(ConnectionPool::Lease&, bool asking)>;
    Result<ReplyPtr> run(std::optional<std::uint16_t> slot, std::string_view what,
                         const Attempt& attempt);

    /// One call's way through the cluster: where it goes next, and what each answer means
    /// (the reply, another node, a pause, or giving up). `may_block` is false on the
    /// asynchronous path: the map is then refreshed by a later prepare(), not here.
    class Route {
    public:
        enum class Verdict { answer, again, pause, give_up };
        struct Next {
            std::string host;
            int port = 0;
            std::shared_ptr<ConnectionPool> pool;
            bool asking = false;  // ASKING must precede the call on this node
        };

        Route(ClusterRouter& router, std::optional<std::uint16_t> slot, std::string what,
              bool may_block);
        /// Where the next attempt goes; nullopt when the call ends with failure().
        std::optional<Next> next();
        /// What the answer to the last attempt means; `answer` hands `reply` to the caller.
        Verdict after(const Result<ReplyPtr>& reply);
        [[nodiscard]] std::chrono::milliseconds pause() const { return pause_; }
        [[nodiscard]] const Failure& failure() const { return last_; }

    private:
        ClusterRouter& router_;
        const std::optional<std::uint16_t> slot_;
        const std::string what_;
        const bool may_block_;
        const std::chrono::steady_clock::time_point started_;
        std::optional<Next> ask_;  // the target of an ASK, for the next attempt only
        std::string asked_host_;   // the host of the last attempt
        std::string asked_address_;  // its host:port, for events
        Failure last_;
        int tries_ = 0;  // MOVED redirections and reconnections
        int waits_ = 0;  // TRYAGAIN and CLUSTERDOWN pauses
        std::chrono::milliseconds pause_{0};
    };

    /// Refreshes the map when it is older than a minute, or soon after an asynchronous
    /// call asked for it: blocking, for a caller's thread, before a Route starts.
    Result<void> prepare();

    /// Learns the slot map now (from the nodes already known, then the seeds), and runs
    /// `attempt` once on every primary, without redirections: PING at start-up.
    Result<void> on_every_primary(std::string_view what, const Attempt& attempt);

    struct Node {
        std::string host;
        int port = 0;
        std::shared_ptr<ConnectionPool> pool;
        [[nodiscard]] std::string address() const;
    };

private:
    Node node(const std::string& host, int port);
    std::optional<Node> owner(std::uint16_t slot);
    void learn(std::uint16_t slot, const Node& node);
    /// Refreshes the map unless it was refreshed less than `fresh_enough` ago.
    Result<void> refresh(std::chrono::milliseconds fresh_enough);
    Result<void> refresh_from(Node from);

    const RedisOptions options_;
    const std::shared_ptr<Telemetry> telemetry_;
    const std::shared_ptr<boost::asio::ssl::context> tls_;
    std::mutex mutex_;                                          // guards what follows
    std::map<std::string, std::shared_ptr<ConnectionPool>> pools_;  // by "host:port", kept
    std::vector<Node> primaries_;
    std::array<std::int16_t, cluster_slots> owners_{};  // index in primaries_, -1: unknown
    std::chrono::steady_clock::time_point refreshed_{};
    bool ever_refreshed_ = false;
    std::mutex refreshing_;  // one refresh at a time; the others wait and see it done
    std::atomic<bool> refresh_wanted_{false};  // by the asynchronous path, for prepare()
};

}  // namespace seatlock::redis_detail
