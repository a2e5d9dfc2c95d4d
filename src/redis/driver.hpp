// SPDX-License-Identifier: MIT
// src/redis/driver.hpp: the Redis backend's driver: where a command goes and how it gets
// there. It knows servers and connections, never seats: RedisBackend builds each
// operation's FCALL and reads its reply; the driver sends it, blocking or asynchronously,
// to the one server (pooled hiredis connections and pipelined Asio connections), to the
// Redis Cluster node serving its keys (ClusterRouter), or to the primary Sentinel names
// (SentinelRouter). It loads the function library when a server lacks it, and after a
// write that a caller acts on sends WAIT when replicas must acknowledge it
// (RedisOptions::replicas_to_ack).
#pragma once

#include "cluster.hpp"
#include "connection_pool.hpp"
#include "pipeline.hpp"
#include "sentinel.hpp"
#include "seatlock_redis_scripts.hpp"

#include <seatlock/backends/redis.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace boost::asio::ssl {
class context;
}

namespace seatlock::redis_detail {

/// What WAIT said after one applied write.
struct Acks {
    bool asked = false;
    long long count = 0;  // replicas that acknowledged
    std::string trouble;  // why WAIT gave no count (no reply, or an error reply)

    void read(const Result<ReplyPtr>& reply);
};

class Driver {
public:
    /// `executors` empty, or on a Redis Cluster or behind Sentinel: asynchronous calls run
    /// on an I/O thread of the driver's own, started by the first one. Otherwise each
    /// executor runs RedisOptions::async_connections pipelines of its own and no thread is
    /// started (over TLS, the driver's thread still runs the pipelines of blocking calls).
    /// Throws seatlock::Error (invalid_argument) when RedisOptions::tls names files that
    /// cannot be loaded.
    Driver(RedisOptions options, std::vector<boost::asio::any_io_executor> executors);
    /// Every pending asynchronous call ends first (with its reply, outcome_unknown or
    /// io_error); then the I/O thread, if any, is joined; then the events' notifier thread,
    /// if any (after the callback it runs, if any, has returned).
    ~Driver();
    Driver(const Driver&) = delete;
    Driver& operator=(const Driver&) = delete;

    [[nodiscard]] const RedisOptions& options() const noexcept { return options_; }
    [[nodiscard]] bool on_cluster() const noexcept { return cluster_ != nullptr; }
    /// Every connection's counters, and the events delivered and dropped.
    [[nodiscard]] RedisStats stats() const { return telemetry_->stats(); }

    /// FCALL of `script` on the server that serves `keys`, waiting for its reply; then,
    /// when it applied a write that waits for replicas, WAIT on the same connection, whose
    /// answer goes to `acks`. An error reply comes back as the failure it stands for. With
    /// other blocking calls in flight (RedisOptions::pipeline_blocking_calls) it goes on
    /// the pipelined connections, so that the calls of many threads share writes and reads.
    /// Over TLS to one server every blocking call (this, command(), ping()) goes on a
    /// pipelined TLS connection run by the driver's own thread, and waits; made on that
    /// thread it would wait for itself: it fails (invalid_argument) instead. Over TLS on a
    /// cluster or behind Sentinel they go through the routers' pools, whose connections are
    /// then TLS too (ConnectionPool), as CLUSTER SLOTS, SENTINEL and ROLE are.
    Result<ReplyPtr> fcall(const redis_scripts::Script& script,
                           const std::vector<std::string>& keys,
                           const std::vector<std::string>& args, Acks& acks);

    /// The same, asynchronously: `done` gets the reply (after WAIT's answer has gone to
    /// `acks`) where the pipeline runs (the driver's I/O thread or a given executor); a
    /// call refused before it is sent (no Cluster slot, no primary known) gets it on the
    /// caller's thread.
    void async_fcall(const redis_scripts::Script& script, std::vector<std::string> keys,
                     std::vector<std::string> args, std::shared_ptr<Acks> acks,
                     Pipeline::Callback done);

    /// One plain command (not a script) whose only key is `key`, with its error reply
    /// mapped to a failure.
    Result<ReplyPtr> command(std::vector<std::string_view> argv, const std::string& key);
    /// The same, asynchronously: argv[1] is the command's only key.
    void async_command(std::vector<std::string> argv, Pipeline::Callback done);

    /// PING on the server, or on every primary of a cluster.
    Result<void> ping();

    /// Closes the pipelined connections and fails what is pending on them (sent:
    /// outcome_unknown; not sent: connection_failed); every later call, blocking or
    /// asynchronous, fails at once with connection_failed. Idempotent, safe from any
    /// thread. Blocking calls already under way end as they would have.
    void close();

private:
    struct ClusterCall;
    using Send = std::function<void(Pipeline&, bool asking, Pipeline::Callback)>;

    void start_io();
    Pipeline* pipeline(Pipeline::Callback& done);
    std::shared_ptr<Pipeline> pipeline_at(const std::string& host, int port);
    void route(std::span<const std::string> keys, std::string what, Send send,
               Pipeline::Callback done);
    void send_on_cluster(std::shared_ptr<ClusterCall> call);
    Result<ReplyPtr> dispatch(std::span<const std::string> keys, std::string_view what,
                              const ClusterRouter::Attempt& attempt);
    std::vector<std::string> wait_argv(const redis_scripts::Script& script) const;
    [[nodiscard]] Failure closed_failure(std::string_view what) const;
    Result<ReplyPtr> fcall_on_pipelines(const redis_scripts::Script& script,
                                        const std::vector<std::string>& keys,
                                        const std::vector<std::string>& args, Acks& acks);
    Result<ReplyPtr> wait_over_tls(std::string_view what,
                                   const std::function<void(Pipeline&, Pipeline::Callback)>& send);
    // Over TLS to one server (not a cluster, not Sentinel): blocking calls wait_over_tls.
    [[nodiscard]] bool one_server_over_tls() const noexcept {
        return tls_ && !cluster_ && !sentinel_;
    }

    RedisOptions options_;
    // Events and counters, shared by every connection (which may outlive the driver by a
    // handler still pending: stopped by the destructor, so that no event is delivered
    // after it).
    std::shared_ptr<Telemetry> telemetry_;
    // Over TLS (RedisOptions::tls): the context every connection shares, the pools' (the
    // routers' and pool_, which one server over TLS never uses) and the pipelines'.
    std::shared_ptr<boost::asio::ssl::context> tls_;
    ConnectionPool pool_;                       // one server (unused on a cluster)
    std::unique_ptr<ClusterRouter> cluster_;    // set on a Redis Cluster
    std::unique_ptr<SentinelRouter> sentinel_;  // set behind Redis Sentinel

    // The asynchronous path: pipelined connections on an I/O thread of the driver's own,
    // started by the first asynchronous call. Callers' handlers run on their own
    // executors; this thread only writes, reads and parses.
    boost::asio::io_context io_{1};
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    std::thread io_thread_;
    // Given by the caller (one server, not behind Sentinel): the pipelines run there, and no
    // thread is started. With several, each runs async_connections pipelines of its own.
    std::vector<boost::asio::any_io_executor> external_io_;
    std::once_flag started_;
    std::vector<std::unique_ptr<Pipeline>> pipelines_;  // one server
    // Over TLS with executors given: the blocking calls' pipelines, on the driver's thread
    // (a blocking call made on a given executor's thread must not wait for that thread).
    std::vector<std::unique_ptr<Pipeline>> blocking_pipelines_;
    std::atomic<std::size_t> next_blocking_pipeline_{0};
    std::atomic<std::size_t> next_pipeline_{0};
    // On a cluster or behind Sentinel: one pipeline per primary, by "host:port", made by the
    // first call there.
    std::mutex primary_pipelines_mutex_;  // guards what follows
    std::map<std::string, std::shared_ptr<Pipeline>> primary_pipelines_;
    bool closing_ = false;
    std::atomic<bool> closed_{false};  // close() was called

    // Blocking calls in flight, on either path.
    std::atomic<int> blocking_in_flight_{0};
};

}  // namespace seatlock::redis_detail
