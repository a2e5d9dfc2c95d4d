// SPDX-License-Identifier: MIT
// seatlock/backends/redis.hpp: RedisBackend, the backend for many processes and machines
// sharing one Redis, or a Redis Cluster (compiled in src/redis, target seatlock::redis).
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
// Cluster slot; docs/redis.md's "Key layout" describes them. On a cluster
// (RedisOptions::cluster_nodes, or a redis+cluster:// URL) each call, blocking or
// asynchronous, goes to the primary of its slot, following MOVED and ASK; docs/redis.md,
// "Redis Cluster". Behind Redis Sentinel (RedisOptions::sentinels, or a redis+sentinel://
// URL) calls go to the primary the sentinels name, found again after a failover;
// docs/redis.md, "Redis Sentinel".
//
// Errors of the transport are distinct errc values: connection_failed (could not
// connect), timeout (no answer before the command was fully sent: not applied), io_error
// (the connection broke before sending: not applied), outcome_unknown (sent, reply lost:
// maybe applied; every operation is safe to retry), auth_failed, protocol_error and
// script_error (the server rejected the function call; its message).
//
// Thread-safe: calls share a pool of up to `pool_size` connections; a broken connection
// is reconnected on its next use, with the command timeout, AUTH and SELECT applied again.
// Blocking calls made while others are in flight share the pipelined connections below
// instead (RedisOptions::pipeline_blocking_calls). Over TLS to one server (RedisOptions::tls,
// rediss://) there is no pool: every blocking call is sent on a pipelined TLS connection and
// waits; on a Cluster or behind Sentinel each pooled connection is such a TLS connection.
//
// The asynchronous API (SeatHoldStore::async_*, LockManager::async_*) reaches Redis
// through async_run instead: the same function calls, sent on `async_connections`
// pipelined connections driven by one I/O thread of the backend's own (started by the
// first asynchronous call). Their replies are read there and handed to each caller's
// executor; no caller's thread waits. An idle pipelined connection (no call in flight) keeps no operation
// pending, so on a caller's io_context (the executor constructors) it does not keep
// io_context::run() from returning once the last call has completed.
//
// What the connections do (connected, lost, made again; a Sentinel failover, a Cluster
// redirection, the function library loaded, a slow call) is told to RedisOptions::on_event
// as RedisEvents, on a thread of the backend's own that calls never wait for; what they
// carry is counted, per connection, by RedisBackend::stats(). docs/redis.md, "Observing
// the connection".
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/async.hpp>
#include <seatlock/operations.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace seatlock {

/// Something that happened to the backend's connections, handed to RedisOptions::on_event
/// (docs/redis.md, "Observing the connection"). Fields that do not apply to an event's
/// kind are left empty (or 0).
struct RedisEvent {
    /// What happened.
    enum class Kind {
        /// A connection is up (connected; over TLS, its handshake done): the first one to
        /// a node, or one made again (after `reconnecting`).
        connected,
        /// A connection that was up is gone: `error` and `reason` say why (the server
        /// closed it, a read or write failed, no reply within command_timeout, a reply
        /// that could not be read, AUTH refused on a new connection). Not reported when
        /// the backend itself closes its connections (close(), the destructor).
        disconnected,
        /// A connection that was up before is being made again (one per attempt).
        reconnecting,
        /// Redis Sentinel: calls now go to another primary, `node`; `previous` is the one
        /// they went to before (empty for the first primary found).
        primary_changed,
        /// Redis Cluster: the slot map was learnt again (CLUSTER SLOTS) from `node`;
        /// `reason` tells how many primaries it names.
        slots_refreshed,
        /// Redis Cluster: a call was sent on to `node` as a MOVED or ASK answer from
        /// `previous` said (`reason` is "MOVED" or "ASK"; `slot` the hash slot).
        redirected,
        /// The function library (`reason`: its name) was loaded into `node`, which lacked
        /// it (a new server, a restart without persistence, FUNCTION FLUSH).
        library_loaded,
        /// A call took at least RedisOptions::slow_call_threshold (`took`), timed on the
        /// connection that sent it: on a pipelined one from being given to it (waiting for
        /// it to connect included) to its answer, on a pooled one from writing it to its
        /// reply; `reason` names it ("FCALL hold").
        slow_call,
    };
    /// Which of the backend's connections it concerns.
    enum class Connection {
        pooled,     ///< the blocking calls' pool (hiredis; over TLS, Asio), per node
        pipelined,  ///< a pipelined connection (Asio): the asynchronous API, shared
                    ///< blocking calls, everything over TLS to one server
        discovery,  ///< a connection that finds where calls go: to a sentinel, or the map
                    ///< of a Redis Cluster
    };

    Kind kind = Kind::connected;
    Connection connection = Connection::pooled;
    /// The node concerned: "host:port", or "unix:<path>" for a Unix socket.
    std::string node;
    /// primary_changed and redirected: the node before (see Kind).
    std::string previous;
    /// disconnected: why, in words; redirected: "MOVED" or "ASK"; library_loaded: the
    /// library's name; slow_call: the call; slots_refreshed: how many primaries.
    std::string reason;
    /// disconnected: the error the connection ended with (a seatlock::errc: io_error,
    /// timeout, protocol_error, auth_failed, connection_failed).
    std::error_code error;
    /// redirected: the hash slot; -1 otherwise.
    int slot = -1;
    /// slow_call: how long the call took.
    std::chrono::microseconds took{0};
    /// Events dropped because the queue to the callback was full, since the event
    /// delivered before this one: 0 when none was lost in between.
    std::uint64_t dropped = 0;
    /// When it happened (the callback runs a little later).
    std::chrono::system_clock::time_point at{};
};

/// "connected", "disconnected", "reconnecting", "primary_changed", "slots_refreshed",
/// "redirected", "library_loaded", "slow_call": for logs and metric labels.
const char* to_string(RedisEvent::Kind kind) noexcept;
/// "pooled", "pipelined", "discovery".
const char* to_string(RedisEvent::Connection connection) noexcept;

/// Counters of one connection or group of connections of a RedisBackend
/// (RedisBackend::stats()). Each counts since the connection (or pool) was first used.
struct RedisConnectionStats {
    /// Which kind: one entry per pool (its connections added up: one pool per node for
    /// pooled and discovery connections) and one per pipelined connection.
    RedisEvent::Connection connection = RedisEvent::Connection::pooled;
    std::string node;  ///< "host:port" or "unix:<path>"
    /// Calls not answered yet: on a pipelined connection, those given to it (queued,
    /// written, or waiting for it to connect); on a pool, commands written and waiting for
    /// their reply.
    std::uint64_t in_flight = 0;
    /// Commands written to the server, the connection's own (AUTH, SELECT, FUNCTION LOAD,
    /// ASKING, calls sent again) included.
    std::uint64_t sent = 0;
    /// Socket writes that carried them (a pipelined connection writes many commands at
    /// once; a pooled one writes each command on its own).
    std::uint64_t writes = 0;
    /// Reads from the server: socket reads that brought replies on a pipelined connection
    /// (each may bring many), replies read on a pooled one.
    std::uint64_t reads = 0;
    /// Connection attempts, made or failed, the first ones included.
    std::uint64_t connects = 0;
    /// Connections opened again after one that was up was lost.
    std::uint64_t reconnects = 0;
};

/// RedisBackend::stats(): every connection's counters, and what became of the events.
struct RedisStats {
    /// One entry per pool and per pipelined connection, in the order they were made (a pool
    /// at its first call, pipelined connections at the first call that needs them).
    std::vector<RedisConnectionStats> connections;
    /// Events handed to RedisOptions::on_event.
    std::uint64_t events_delivered = 0;
    /// Events dropped because the queue to the callback was full.
    std::uint64_t events_dropped = 0;
};

/// One Redis server's address.
struct RedisNode {
    std::string host;
    int port = 6379;
};

/// TLS to Redis (RedisOptions::tls; docs/redis.md, "TLS"). With `enabled`, every
/// connection of the backend, blocking and asynchronous calls alike, is TLS over Boost.Asio
/// and OpenSSL, with a fresh handshake per connection; nothing is ever sent in clear. For
/// one server, a Redis Cluster (every node, the slot map's CLUSTER SLOTS included) and
/// Sentinel (the sentinels too, which must serve tls-port): not with unix_socket.
struct RedisTls {
    /// Speak TLS (rediss://, rediss+cluster:// and rediss+sentinel:// URLs set it). false: plain TCP, and every other field must
    /// be left empty (a CA named without TLS is a mistake, not a wish for clear text).
    bool enabled = false;
    /// PEM file of the certificate authorities the server's certificate must chain to.
    /// With neither this nor ca_dir, the system's default trust store.
    std::string ca_file;
    /// Directory of CA certificates named by their hash (`openssl rehash`), as ca_file.
    std::string ca_dir;
    /// PEM file of the client's certificate (chain), for a server that asks for one
    /// (`tls-auth-clients yes`); empty: none. Given together with key_file.
    std::string cert_file;
    /// PEM file of cert_file's private key (not encrypted); empty: none.
    std::string key_file;
    /// The name sent as SNI and checked against the server's certificate (its DNS names,
    /// or its IP addresses for an address); empty: `host`.
    std::string server_name;
    /// Check the server's certificate: its chain to a trusted CA and its name. false only
    /// for tests and for servers reached through a channel already trusted: the connection
    /// is then encrypted but the server unauthenticated.
    bool verify = true;
};

/// Where and how RedisBackend connects.
struct RedisOptions {
    std::string host = "127.0.0.1";
    int port = 6379;
    /// Empty: TCP to host:port. Otherwise the path of the server's Unix domain socket
    /// (redis.conf's `unixsocket`), for a Redis on the same host: host and port are then
    /// not used, and every connection, pooled or pipelined, goes through the socket file:
    /// no TCP port to open, the file's permissions decide who connects (no faster than
    /// loopback TCP: docs/redis.md, "A Redis on the same host"). At most 107 bytes
    /// (the length a socket address holds); one server only: not with cluster_nodes or
    /// sentinels.
    std::string unix_socket;
    /// Empty: one server, at host:port. Otherwise a Redis Cluster, whose slot map is learnt
    /// from these seed nodes (any of its nodes; host and port are then not used). Both API
    /// paths route on it; async_connections is then not used (one per primary).
    std::vector<RedisNode> cluster_nodes;
    /// Empty: no Sentinel. Otherwise the sentinels of a Redis Sentinel setup (any number of
    /// them; host and port are then not used): calls go to the primary of
    /// `sentinel_service` they name and ROLE confirms, found again after a failover (a
    /// connection lost, READONLY, a timeout). Asynchronous calls share one pipelined
    /// connection to the primary (async_connections is then not used). docs/redis.md,
    /// "Redis Sentinel".
    std::vector<RedisNode> sentinels;
    std::string sentinel_service;   ///< the name the sentinels monitor the primary under
    std::string sentinel_user;      ///< ACL user of the sentinels; empty: the default user
    std::string sentinel_password;  ///< the sentinels' own password; empty: no AUTH to them
    /// Sentinel only: how long finding a primary may take (the sentinels asked in turn, again
    /// every 100 ms while a failover is under way) before the call fails, connection_failed.
    Millis discovery_timeout{5000};
    /// TLS to the server (rediss:// URLs): off by default. See RedisTls.
    RedisTls tls;
    std::string user;      ///< ACL user; empty for the default user (AUTH password)
    std::string password;  ///< empty: no AUTH
    int db = 0;            ///< SELECTed on every new connection when not 0
    Millis connect_timeout{1000};
    Millis command_timeout{1000};  ///< per command: a reply later than this is outcome_unknown
    std::size_t pool_size = 8;     ///< at most this many connections; callers wait for a free one
    /// Connections of the asynchronous API (async_* calls): each carries every caller's
    /// requests, pipelined, many per socket write and read. One is usually enough, and
    /// keeps calls in the order they were made. More let Redis run one connection's
    /// requests while the client reads another's replies (docs/performance.md,
    /// "Pipelining"); calls then take them in turn, so two calls in flight at once may run
    /// in either order.
    std::size_t async_connections = 1;
    /// Blocking calls made while another blocking call of this backend is in flight go on
    /// the asynchronous API's pipelined connections (async_connections) and wait there for
    /// their reply, instead of taking a pooled connection each: calls of many threads then
    /// share socket writes and reads, and Redis reads them together, which spends less of
    /// its CPU per call and so serves more calls a second (docs/performance.md, "Blocking
    /// calls on the pipelined connection"). A call alone in flight keeps the pool's direct
    /// round trip, the shortest. Results and errors are the asynchronous API's. false: every blocking call
    /// takes a pooled connection. Never with an executor given to the constructor (a call
    /// made on one of its threads would wait for that thread), nor for a call made on the
    /// backend's own I/O thread: the pool then. With tls.enabled to one server it does not
    /// apply: every blocking call waits on a pipelined TLS connection (the pool's hiredis
    /// has no TLS).
    bool pipeline_blocking_calls = true;
    /// The first part of every key: 1 to 128 printable characters, no space, no `{` or `}`.
    std::string prefix = "seatlock";
    /// How many steps' changes each event's change log keeps (SeatHoldStore::changes): 1
    /// to 1,000,000. Applied by every write of this backend (docs/redis.md, "The change
    /// log").
    std::size_t change_log_limit = default_change_log_limit;
    /// Replica-acknowledged writes. 0 (the default): a write is answered as soon as the
    /// primary applied it, and a sale can be lost if the primary dies before a replica got
    /// it. N > 0: every write a caller is told about (hold, confirm, release, extend,
    /// cancel, restore_order, create_event, end_recovery, and the locks' acquire, release,
    /// extend, raise_fencing) is followed, on the same connection, by `WAIT N
    /// replica_ack_timeout`; fewer than N acknowledgements fail the call with
    /// errc::not_replicated, though the write was applied on the primary (docs/redis.md,
    /// "Replica-acknowledged writes"). Blocking and asynchronous calls alike, on one
    /// server, a Cluster (the slot's primary) or behind Sentinel.
    int replicas_to_ack = 0;
    /// How long a write waits for its replicas when replicas_to_ack > 0; shorter than
    /// command_timeout. On the asynchronous path a WAIT holds up the requests pipelined
    /// behind it on its connection for up to this long when replicas lag.
    Millis replica_ack_timeout{500};

    /// Called for every RedisEvent (connected, disconnected, reconnecting, primary changed,
    /// slot map refreshed, MOVED/ASK followed, library loaded, slow call); empty (the
    /// default): no event is made at all. Calls never wait for it: events go through a
    /// queue of event_queue_limit, dropped when it is full (counted: RedisEvent::dropped,
    /// RedisStats::events_dropped), to one thread of the backend's own (started by the
    /// first event) that runs the callback, one event at a time, in the order they
    /// happened. The callback must not throw, and must not call this backend's operations
    /// (either API), close() or destructor (stats() is fine): log, count, hand the event on. The backend's
    /// destructor waits for the callback running, delivers nothing after it returns, and
    /// drops what is still queued.
    std::function<void(const RedisEvent&)> on_event;
    /// A call taking at least this long is a slow_call event (with on_event set; see
    /// RedisEvent::Kind::slow_call for what is timed). 0 reports every call; must not be
    /// negative.
    Millis slow_call_threshold{100};
    /// How many events wait for the callback at most before newer ones are dropped: 1 to
    /// 1,000,000.
    std::size_t event_queue_limit = 1024;

    /// redis://[user:password@]host:port[/db]. The port defaults to 6379; `user` may be
    /// empty ("redis://:password@host:port"); user and password may be percent-encoded.
    /// redis+cluster://[user:password@]host:port[,host:port...]: a Redis Cluster and its
    /// seed nodes (no /db: a cluster has only database 0).
    /// redis+sentinel://[user:password@]host[:port][,host[:port]...]/service[/db]: the
    /// sentinels (port 26379 by default) of the primary named `service`; user and password
    /// are the Redis servers' (the sentinels' own are sentinel_user and sentinel_password).
    /// unix://[user:password@]/path/to/redis.sock[?db=N]: a server's Unix domain socket
    /// (unix_socket), the path absolute; db, if any, in the query.
    /// Any of them may end with ?replicas_to_ack=N&replica_ack_timeout_ms=M (either or both).
    /// rediss://[user:password@]host:port[/db]: redis:// over TLS (tls.enabled), whose query
    /// may also hold tls_ca_file, tls_ca_dir, tls_cert_file, tls_key_file,
    /// tls_server_name (percent-encoded paths and names) and tls_verify=yes|no.
    /// rediss+cluster:// and rediss+sentinel:// are redis+cluster:// and redis+sentinel://
    /// over TLS, with the same query options.
    /// invalid_argument, naming what is wrong (never the password), for anything else.
    static Result<RedisOptions> from_url(std::string_view url);

    /// Whether these options can ever work: invalid_argument, naming the option, for an
    /// empty host, a bad port, pool_size or async_connections 0, non-positive timeouts, a
    /// replica_ack_timeout not below command_timeout, a prefix with braces or spaces, a
    /// unix_socket path too long or given with cluster_nodes or sentinels, tls with a Unix
    /// socket, tls fields set without tls.enabled, a client
    /// certificate without its key, a negative slow_call_threshold, an event_queue_limit
    /// of 0 or above 1,000,000, and the like.
    /// RedisBackend's constructor throws this failure as seatlock::Error. Never connects.
    [[nodiscard]] Result<void> validate() const;
};

/// The Redis backend: a Backend over one Redis server, a Redis Cluster, or the primary of
/// a Redis Sentinel service. Non-copyable, thread-safe.
class RedisBackend {
public:
    /// Never connects here, so it does not throw when the server is down; throws
    /// seatlock::Error (invalid_argument) for options that can never work (empty host,
    /// bad port, pool_size 0, non-positive timeouts, a prefix with braces or spaces, a
    /// unix_socket path too long or given with cluster_nodes or sentinels), and for TLS
    /// files that cannot be loaded (tls.ca_file, ca_dir, cert_file, key_file: OpenSSL's
    /// reason).
    explicit RedisBackend(RedisOptions options);
    /// The same, with the asynchronous API's I/O (its pipelined connections, their
    /// timers, the parsing of replies) run by `executor` instead of a thread of the
    /// backend's own: a service whose handlers already run on an io_context saves two
    /// thread hand-overs per call. `executor` must keep running while calls are in flight
    /// and its context must outlive the backend; completions still go to each handler's
    /// own executor. On a Redis Cluster or behind Sentinel the backend keeps a thread of its own.
    RedisBackend(RedisOptions options, boost::asio::any_io_executor executor);
    /// The same over several executors, each running its own async_connections pipelined
    /// connections: a call made on a thread that runs one of them (an io_context's executor,
    /// or a strand over one) goes on that executor's connections, so its reply is read and
    /// its handler resumed on the caller's own thread; calls from elsewhere take turns over
    /// all. For a service that runs one single-threaded io_context per core. Throws
    /// seatlock::Error (invalid_argument) for an empty list or an empty executor (one
    /// that runs nothing; the single-executor constructor refuses it too), besides the above.
    RedisBackend(RedisOptions options, std::vector<boost::asio::any_io_executor> executors);
    ~RedisBackend();
    RedisBackend(const RedisBackend&) = delete;
    RedisBackend& operator=(const RedisBackend&) = delete;

    /// One PING through the pool (over TLS to one server, a pipelined connection): a clear
    /// error when the server is unreachable, refuses the credentials or, over TLS, its
    /// certificate. On a cluster: learns the slot map and PINGs every primary.
    Result<void> ping();
    [[nodiscard]] const RedisOptions& options() const noexcept;

    /// Ends the backend's use of Redis: closes its pipelined connections and fails every
    /// asynchronous call still pending on them, at once: a call already sent with
    /// outcome_unknown (it may have run), any other with connection_failed ("the backend
    /// was closed": not applied). From then on every call, blocking or asynchronous, fails
    /// at once with connection_failed. Blocking calls already under way end as they would
    /// have. Idempotent; safe from any thread, including a completion handler. Not needed
    /// for io_context::run() to return (an idle connection is no work for it); for a
    /// service that stops while calls may still be in flight. The destructor still ends
    /// what is left.
    void close();

    /// The connections' counters now, and the events delivered and dropped. Cheap: relaxed
    /// atomic loads (and one short lock for the list of connections); safe from any thread,
    /// the on_event callback included. Counters are read one by one, not as one snapshot.
    [[nodiscard]] RedisStats stats() const;

    /// Runs one operation (seatlock/operations.hpp says what each does): one Redis
    /// function call, or for a few operations a short chain of commands (an event and its
    /// index entry; expired walking every event), through the connection pool or, when
    /// pipeline_blocking_calls (and always over TLS), a pipelined connection; waits for the
    /// reply.
    template <op::any_op O>
    op::result_of<O> run(const O& operation);

    /// The same, asynchronously: sends the same calls on a pipelined connection; `done`
    /// is called once, from the backend's I/O thread (or at once, for input refused
    /// before anything is sent).
    template <op::any_op O>
    void async_run(const O& operation, detail::Completion<typename O::result_type> done);

public:
    struct Impl;  ///< the connection state: private to the compiled backend

private:
    template <typename L>
    struct Instances;
    std::unique_ptr<Impl> impl_;
};

}  // namespace seatlock
