// SPDX-License-Identifier: MIT
// src/redis/pipeline.hpp: one pipelined Redis connection on Boost.Asio, for the Redis
// backend's asynchronous API. Many callers share it: their commands go out together in
// one socket write, and one socket read answers many of them, so the server spends its
// time running commands rather than waking up for each one.
//
// Replies are parsed by hiredis, requests written as hiredis writes them (format_command);
// the socket (TCP, a Unix socket, or TLS over TCP: RedisOptions::tls), the timers and the
// order of events are Asio's. Replies are matched to
// requests first in, first out, as Redis answers a connection's commands in the order it
// received them.
//
// What a caller is told, and what it may do next:
//   - a reply (error replies included: they are the server's answer, not a transport
//     failure), exactly once per request, on the pipeline's strand;
//   - outcome_unknown: the request was written, no reply came (connection lost, or no
//     reply within command_timeout): it may have run; seatlock's operations are safe to
//     send again;
//   - connection_failed / auth_failed: no connection could be made or the server refused
//     the credentials; nothing ran;
//   - io_error: the pipeline was destroyed before the request was written; nothing ran;
//   - connection_failed also once close() was called, for a request it found unwritten and
//     for every later one (at once, on the caller's thread); nothing ran.
//
// An idle connection (nothing written and unanswered, nothing queued) has no operation
// pending on the executor: it does not keep an io_context::run() from returning. A
// request in flight does (its write, its read, its reply timer, its connect).
#pragma once

#include "connection_pool.hpp"
#include "resp_writer.hpp"
#include "telemetry.hpp"
#include "seatlock_redis_scripts.hpp"

#include <seatlock/backends/redis.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio::ssl {
class context;
}

namespace seatlock::redis_detail {

class Pipeline {
public:
    /// Called once per request, on the pipeline's strand, never inside exec() or fcall().
    /// It must not throw; it may call exec(), fcall() and stats(), and may destroy the
    /// pipeline.
    using Callback = std::function<void(Result<ReplyPtr>)>;

    /// Connects lazily, on the first request: constructing never fails for a server that
    /// is down. `executor` runs the I/O; it must outlive the pipeline's pending work.
    /// With options.tls.enabled every connection is TLS, with `tls` as its context (the
    /// backend's connections share one), or one made from options.tls when it is null
    /// (which throws as make_tls_context does). A TLS connection's first request is PING
    /// (or AUTH/SELECT), answered before callers' requests are written: TLS 1.3 tells a
    /// client that its certificate was refused only after the handshake, and such a
    /// refusal must be connection_failed, not outcome_unknown for calls already written.
    /// `telemetry`: where its events go and its counters are listed (RedisBackend::stats());
    /// null: no events, counters of its own (stats()). `counters`: the counters it adds to
    /// instead of a `pipelined` entry of its own (a ConnectionPool's, over TLS: its events
    /// then name that pool's kind of connection).
    Pipeline(boost::asio::any_io_executor executor, RedisOptions options,
             std::shared_ptr<boost::asio::ssl::context> tls = nullptr,
             std::shared_ptr<Telemetry> telemetry = nullptr,
             std::shared_ptr<ConnectionCounters> counters = nullptr);

    /// Safe from any thread, including from inside a callback. Every pending callback is
    /// called before the destructor returns, on the destructor's thread (written requests:
    /// outcome_unknown; others: io_error), none after, whether or not the executor still
    /// runs.
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;

    /// Closes the connection and fails what is pending now, as the destructor does, but
    /// unwritten requests with connection_failed ("the backend was closed"); every later
    /// request fails the same way at once. Idempotent, safe from any thread, including
    /// from inside a callback; the pipeline stays usable as an object (stats(), exec()).
    void close();
    Pipeline& operator=(const Pipeline&) = delete;

    /// Sends one command (argv[0] is its name). Thread-safe. Throws seatlock::Error
    /// (invalid_argument) for an empty argv: Redis would answer nothing, and every later
    /// reply would be handed to the wrong request. `asking`: ASKING is written right before
    /// the command (a Redis Cluster's ASK redirection), its own reply not handed back.
    void exec(std::vector<std::string> argv, Callback done, bool asking = false);

    /// FCALL of `script`'s library function. When the server lacks the library (a new
    /// server, a restart without persistence, FUNCTION FLUSH) it loads it and calls again:
    /// "Function not found" means nothing ran. At most two loads per call; a load the
    /// server refuses fails the call with that refusal (error_reply_failure).
    void fcall(const redis_scripts::Script& script, std::vector<std::string> keys,
               std::vector<std::string> args, Callback done, bool asking = false);

    /// Counters since construction, for tests and benchmarks. `requests` counts commands
    /// written to the server, the pipeline's own AUTH, SELECT and FUNCTION LOAD and resent
    /// FCALLs included; `writes` the socket writes that carried them; `reads` the socket
    /// reads that brought replies; `connects` the connections attempted. The same counters
    /// RedisBackend::stats() lists (ConnectionCounters), with calls in flight and reconnects.
    struct Stats {
        std::uint64_t requests = 0;
        std::uint64_t writes = 0;
        std::uint64_t reads = 0;
        std::uint64_t connects = 0;
    };
    [[nodiscard]] Stats stats() const;

private:
    void close_as(bool by_close);

    struct State;
    std::shared_ptr<State> state_;  // shared with the I/O handlers still pending
};

}  // namespace seatlock::redis_detail
