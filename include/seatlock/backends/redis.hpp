// seatlock/backends/redis.hpp: RedisBackend, the backend for many processes and machines
// sharing one Redis (compiled in src/redis, target seatlock::redis).
//
//     auto options = seatlock::RedisOptions::from_url("redis://app:pw@10.0.0.5:6379/2").value();
//     seatlock::RedisBackend backend(options);       // connects lazily, never throws when down
//     backend.ping().value();                        // fail fast at start-up, if wanted
//     seatlock::SeatHoldStore store(backend);
//
// Every operation is one call of a Lua function (FCALL) of seatlock's function library,
// which the backend loads by itself when the server lacks it (Redis 7.0 or later): one
// round trip, atomic on the server, timed by the server's clock. Keys of one event share
// the hash tag {event} and keys of one lock group the tag {group}, so each lives in one
// Cluster slot; the README's "Key layout" describes them.
//
// Errors of the transport are distinct errc values: connection_failed (could not
// connect), timeout (no answer before the command was fully sent: not applied), io_error
// (the connection broke before sending: not applied), outcome_unknown (sent, reply lost:
// maybe applied; every operation is safe to retry), auth_failed, protocol_error and
// script_error (the server rejected the function call; its message).
//
// Thread-safe: calls share a pool of up to `pool_size` connections; a broken connection
// is reconnected on its next use, with the command timeout, AUTH and SELECT applied again.
#pragma once

#include <seatlock/backend.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace seatlock {

/// Where and how RedisBackend connects.
struct RedisOptions {
    std::string host = "127.0.0.1";
    int port = 6379;
    std::string user;      ///< ACL user; empty for the default user (AUTH password)
    std::string password;  ///< empty: no AUTH
    int db = 0;            ///< SELECTed on every new connection when not 0
    Millis connect_timeout{1000};
    Millis command_timeout{1000};  ///< per command: a reply later than this is outcome_unknown
    std::size_t pool_size = 8;     ///< at most this many connections; callers wait for a free one
    /// The first part of every key: 1 to 128 printable characters, no space, no `{` or `}`.
    std::string prefix = "seatlock";

    /// redis://[user:password@]host:port[/db]. The port defaults to 6379; `user` may be
    /// empty ("redis://:password@host:port"); user and password may be percent-encoded.
    /// invalid_argument, naming what is wrong, for anything else.
    static Result<RedisOptions> from_url(std::string_view url);
};

/// The Redis backend: a Backend over one Redis server. Non-copyable, thread-safe.
class RedisBackend {
public:
    /// Never connects here, so it does not throw when the server is down; throws
    /// seatlock::Error (invalid_argument) for options that can never work (empty host,
    /// bad port, pool_size 0, non-positive timeouts, a prefix with braces or spaces).
    explicit RedisBackend(RedisOptions options);
    ~RedisBackend();
    RedisBackend(const RedisBackend&) = delete;
    RedisBackend& operator=(const RedisBackend&) = delete;

    /// One PING through the pool: a clear error when the server is unreachable or
    /// refuses the credentials.
    Result<void> ping();
    [[nodiscard]] const RedisOptions& options() const noexcept;

    // LockBackend (see seatlock/backend.hpp for the semantics).
    Result<std::uint64_t> acquire_locks(std::span<const std::string> keys, const std::string& owner,
                                        Millis lease);
    Result<bool> release_locks(std::span<const std::string> keys, const std::string& owner);
    Result<bool> extend_locks(std::span<const std::string> keys, const std::string& owner,
                              Millis lease);

    // HoldBackend (see seatlock/backend.hpp for the semantics).
    Result<void> create_event(const EventSpec& spec);
    Result<std::vector<EventSpec>> events();
    Result<Hold> hold(const HoldCommand& cmd);
    Result<Order> confirm(const ConfirmCommand& cmd);
    Result<void> release(const std::string& token);
    Result<Hold> extend(const std::string& token, Millis ttl, Millis max_lifetime);
    Result<Order> cancel(const std::string& event, const std::string& order_id,
                         const std::optional<std::string>& holder);
    Result<std::vector<ZoneState>> seats(const std::string& event,
                                         const std::optional<std::string>& zone);
    Result<std::vector<ExpiredHold>> expired(std::size_t limit, Millis redeliver_after);
    Result<void> ack_expired(std::span<const std::string> tokens);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace seatlock
