// SPDX-License-Identifier: MIT
// src/redis/connection_pool.hpp: a pool of blocking connections shared by the threads of
// one RedisBackend (hiredis, or over TLS a pipelined Asio connection each), and the mapping
// of transport failures to seatlock::errc.
//
// Over TLS (RedisOptions::tls) every connection of the pool is a Pipeline on an io_context
// of the connection's own, which the thread holding the lease runs while it waits for its
// reply: the same blocking call, with no thread of its own, and never a byte in clear
// (Debian 12's hiredis 0.14 has no TLS). The pipeline then connects, verifies, sends AUTH
// and SELECT, reconnects and counts as pipeline.hpp says; the hiredis notes below are for
// plain connections.
//
// A connection is (re)connected on the use after it broke, never in the background:
// `redisReconnect` keeps host, port and connect timeout, and the command timeout, AUTH
// and SELECT are applied again after every connect (hiredis 0.14 forgets the command
// timeout on reconnect). An idle connection the server closed (CLIENT KILL, restart,
// idle timeout) is noticed before a command is written to it, so such a command fails
// cleanly or goes out on a fresh connection instead of ending as outcome_unknown.
//
// Its counters (one ConnectionCounters for the pool) are listed by stats() from its first
// lease on; its connections' events (connected, disconnected, reconnecting, slow_call) go
// to the Telemetry it was given.
#pragma once

#include <seatlock/backends/redis.hpp>

#include "telemetry.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct redisReply;

namespace boost::asio::ssl {
class context;
}

namespace seatlock::redis_detail {

struct ReplyDeleter {
    void operator()(redisReply* reply) const noexcept;
};
/// A reply owned by the caller (plain replies and error replies alike).
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

/// The failure for an error reply ("-NOAUTH ...", "-ERR ..."): auth, busy/loading servers,
/// redirections and everything else (script_error), with the server's message.
Failure error_reply_failure(std::string_view message, std::string_view what);

/// The longest RedisOptions::unix_socket: sockaddr_un's path, less its terminating NUL.
inline constexpr std::size_t max_unix_socket_path = 107;

/// Where `options` connect, for messages: host:port, or unix:<path>.
std::string where_of(const RedisOptions& options);

class ConnectionPool {
    struct Connection;

public:
    /// `telemetry` null: no events, counters of its own (not listed anywhere).
    /// `kind`: how its counters and events name its connections.
    /// `tls`: with options.tls.enabled, the context its connections share (null: one made
    /// from options.tls, which throws as make_tls_context does); unused otherwise.
    explicit ConnectionPool(const RedisOptions& options,
                            std::shared_ptr<Telemetry> telemetry = nullptr,
                            RedisEvent::Connection kind = RedisEvent::Connection::pooled,
                            std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
    ~ConnectionPool();
    ConnectionPool(const ConnectionPool&) = delete;
    ConnectionPool& operator=(const ConnectionPool&) = delete;

    /// One connected connection, for one caller at a time; back to the pool when destroyed.
    class Lease {
    public:
        Lease(Lease&& other) noexcept;
        Lease& operator=(Lease&&) = delete;
        Lease(const Lease&) = delete;
        ~Lease();

        /// Sends one command and waits for its reply. Transport failures are a Failure
        /// (timeout or io_error when the command was not sent completely,
        /// outcome_unknown once it was; over TLS, as Pipeline tells them: connection_failed
        /// or auth_failed when no connection could be made); error replies are returned as
        /// replies.
        Result<ReplyPtr> command(std::span<const std::string_view> args);

        /// Reports that this connection's server was given the function library.
        void library_loaded() const;

    private:
        friend class ConnectionPool;
        Result<ReplyPtr> send_and_read(std::span<const std::string_view> args);
        Result<ReplyPtr> send_over_tls(std::span<const std::string_view> args);
        Lease(ConnectionPool& pool, std::unique_ptr<Connection> connection);
        ConnectionPool* pool_;
        std::unique_ptr<Connection> connection_;
    };

    /// A connection ready for commands: waits while every connection is in use, connects
    /// when needed. connection_failed or auth_failed when the server cannot be reached
    /// or refuses the credentials (over TLS the connection is made by the first command,
    /// which then fails so).
    Result<Lease> lease();

private:
    Result<void> connect(Connection& c);
    Result<void> handshake(Connection& c);
    void give_back(std::unique_ptr<Connection> connection);
    // Marks `c` broken (its socket shut at once) and, when it was up, reports why.
    void broke(Connection& c, errc code, const std::string& why);
    void emit(RedisEvent::Kind kind, std::string reason = {}) const;

    const RedisOptions options_;
    const std::string where_;
    const std::shared_ptr<Telemetry> telemetry_;
    const RedisEvent::Connection kind_;
    const std::shared_ptr<boost::asio::ssl::context> tls_;  // set exactly over TLS
    std::shared_ptr<ConnectionCounters> counters_;  // set by the first lease (under mutex_)
    std::mutex mutex_;
    std::condition_variable available_;
    std::vector<std::unique_ptr<Connection>> idle_;
    std::size_t open_ = 0;  // connections that exist, idle or leased
};

}  // namespace seatlock::redis_detail
