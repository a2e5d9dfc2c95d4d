// SPDX-License-Identifier: MIT
// src/redis/sentinel.hpp: finding the primary of a Redis Sentinel service, and finding it
// again after a failover. Both API paths of the backend ask it where to send a call.
//
// Discovery asks the sentinels in turn SENTINEL GET-MASTER-ADDR-BY-NAME <service>,
// connects to the address named, and accepts it only when ROLE says "master" there: a
// sentinel that has not yet seen a failover names the old primary, which is either gone or
// a replica by now. While no sentinel names a primary that says so (a failover under way),
// rounds are repeated every 100 ms, until RedisOptions::discovery_timeout has passed since
// the discovery began (the node being asked then answers or times out first): then the
// call fails with connection_failed (auth_failed, at once, for refused credentials). One
// discovery at a time: callers that waited for another's take its result.
//
// The primary found is kept until a call sent to it meets a sign of a failover (see
// signals_failover), or a sentinel names another one (the first call a recheck_period
// after the last look asks a sentinel: one round trip); the next call then discovers
// again. On the blocking path (run) a call that was not applied (connection refused or
// broken before sending, READONLY) is sent again to the primary found anew; one that was
// sent and lost its reply is returned as is (outcome_unknown: retrying is the caller's
// choice). The asynchronous path never discovers on the backend's I/O thread (it blocks):
// its calls in flight end with their retryable errors, and the next call's start, on its
// caller's thread, discovers.
#pragma once

#include "connection_pool.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace seatlock::redis_detail {

class SentinelRouter {
public:
    /// `telemetry` (may be null): the pools' counters and events (the sentinels' as
    /// discovery connections), and primary_changed. `tls`: with options.tls.enabled, the
    /// context of every pool (ConnectionPool's): the sentinels', asked over TLS as the
    /// data nodes are (a sentinel serves `tls-port` too), and the primaries'.
    explicit SentinelRouter(const RedisOptions& options,
                            std::shared_ptr<Telemetry> telemetry = nullptr,
                            std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
    SentinelRouter(const SentinelRouter&) = delete;
    SentinelRouter& operator=(const SentinelRouter&) = delete;

    /// The primary calls go to now. `generation` names this finding: suspect() with it
    /// asks for a new discovery only if no other caller has already found another primary.
    struct Primary {
        std::string host;
        int port = 0;
        std::shared_ptr<ConnectionPool> pool;
        std::uint64_t generation = 0;
    };

    /// The primary known, or one discovered now (blocking, up to discovery_timeout) when
    /// none is known or the known one is suspected.
    Result<Primary> primary();
    /// The primary known, suspected or not, without blocking; nullopt when none was ever
    /// found (for the asynchronous path's I/O thread).
    std::optional<Primary> known();
    /// After a sign of a failover on a call sent to `generation`'s primary: the next
    /// primary() discovers again.
    void suspect(std::uint64_t generation);

    /// Whether an answer from the primary is a sign that it may no longer be one: the
    /// connection could not be made or broke, no reply in time, or READONLY (a replica).
    static bool signals_failover(const Result<ReplyPtr>& reply);

    /// How often the sentinels are asked again whether the primary known is still the one
    /// they name: a failover they ordered leaves the old primary taking writes (lost when it
    /// is made a replica) for seconds, without a sign a call could see.
    static constexpr std::chrono::milliseconds recheck_period{1000};

    /// Sends one call (every command `attempt` sends on the connection it is given) to
    /// the primary, discovering it again and resending while the call was not applied.
    /// Error replies come back as replies, like from ConnectionPool::Lease::command.
    using Attempt = std::function<Result<ReplyPtr>(ConnectionPool::Lease&)>;
    Result<ReplyPtr> run(std::string_view what, const Attempt& attempt);

private:
    Result<Primary> discover();
    // The primary's address as the `index`th sentinel names it.
    Result<RedisNode> name(std::size_t index);
    // That address, checked with ROLE there.
    Result<Primary> ask(std::size_t index);
    std::shared_ptr<ConnectionPool> pool_at(const std::string& host, int port);

    const RedisOptions options_;
    const std::shared_ptr<Telemetry> telemetry_;
    const std::shared_ptr<boost::asio::ssl::context> tls_;
    std::vector<std::shared_ptr<ConnectionPool>> sentinel_pools_;   // one connection each
    std::mutex mutex_;                                              // guards what follows
    std::map<std::string, std::shared_ptr<ConnectionPool>> pools_;  // by "host:port", kept
    std::optional<Primary> primary_;
    bool suspected_ = false;
    std::chrono::steady_clock::time_point checked_{};  // when a sentinel last named it
    std::uint64_t discoveries_ = 0;                    // ended, successful or not
    std::optional<Failure> last_failure_;              // of the last discovery, when it failed
    std::mutex discovering_;                           // one discovery at a time
};

}  // namespace seatlock::redis_detail
