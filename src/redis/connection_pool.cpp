// SPDX-License-Identifier: MIT
// src/redis/connection_pool.cpp: hiredis connections, their (re)connection and the
// classification of every way a command can fail; over TLS, pipelined connections waited on.
#include "connection_pool.hpp"

#include <hiredis/hiredis.h>

#include "pipeline.hpp"
#include "tls.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include "seatlock_redis_scripts.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <optional>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>

namespace seatlock::redis_detail {

void ReplyDeleter::operator()(redisReply* reply) const noexcept {
    freeReplyObject(reply);
}

namespace {

bool starts_with(std::string_view text, std::string_view word) {
    return text.substr(0, word.size()) == word;
}

timeval to_timeval(Millis d) {
    timeval tv{};
    tv.tv_sec = static_cast<decltype(tv.tv_sec)>(d.count() / 1000);
    tv.tv_usec = static_cast<decltype(tv.tv_usec)>((d.count() % 1000) * 1000);
    return tv;
}

// True when a blocking socket operation gave up because of SO_RCVTIMEO / SO_SNDTIMEO.
bool timed_out(const redisContext* ctx, int error_number) {
#if HIREDIS_MAJOR >= 1
    if (ctx->err == REDIS_ERR_TIMEOUT) return true;
#endif
    return ctx->err == REDIS_ERR_IO && (error_number == EAGAIN || error_number == EWOULDBLOCK);
}

// True when the server closed an idle connection (or sent bytes nobody asked for, which
// leaves the stream out of step): such a connection must not carry a command.
bool closed_by_peer(int fd) {
    char byte = 0;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n >= 0) return true;
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

// hiredis writes with write(2): a server that closed the connection would raise SIGPIPE
// and kill the process. The signal is blocked in this thread while writing and a
// SIGPIPE raised meanwhile is consumed, leaving the application's signal setup alone.
class SigpipeGuard {
public:
    SigpipeGuard() {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
        sigset_t pending;
        sigpending(&pending);
        was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    }
    ~SigpipeGuard() {
        if (!was_pending_) {
            sigset_t pending;
            sigpending(&pending);
            if (sigismember(&pending, SIGPIPE) == 1) {
                const timespec no_wait{0, 0};
                while (sigtimedwait(&pipe_, nullptr, &no_wait) == -1 && errno == EINTR) {
                }
            }
        }
        pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    }
    SigpipeGuard(const SigpipeGuard&) = delete;
    SigpipeGuard& operator=(const SigpipeGuard&) = delete;

private:
    sigset_t pipe_{};
    sigset_t previous_{};
    bool was_pending_ = false;
};

}  // namespace

Failure error_reply_failure(std::string_view message, std::string_view what) {
    const std::string text = std::string(what) + ": " + std::string(message);
    if (starts_with(message, "NOAUTH") || starts_with(message, "WRONGPASS") ||
        starts_with(message, "NOPERM")) {
        return Failure(errc::auth_failed, text);
    }
    // The server refused the command without running it: safe to retry later.
    for (std::string_view transient :
         {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "READONLY", "CLUSTERDOWN"}) {
        if (starts_with(message, transient))
            return Failure(errc::io_error, text + " (not applied)");
    }
    if (starts_with(message, "MOVED") || starts_with(message, "ASK ")) {
        return Failure(errc::protocol_error,
                       text + " (Redis Cluster redirections are not followed)");
    }
    return Failure(errc::script_error, text);
}

struct ConnectionPool::Connection {
    redisContext* ctx = nullptr;
    bool broken = false;  // must be reconnected before its next command
    bool up = false;      // connected, handshake done, and not broken since
    // Over TLS instead of ctx: a pipelined connection whose handlers run on `io`, which
    // only the thread holding the lease runs, while it waits for a reply.
    std::unique_ptr<boost::asio::io_context> io;
    std::unique_ptr<Pipeline> pipeline;

    ~Connection() {
        pipeline.reset();  // before the io_context its pending handlers are on
        io.reset();
        if (ctx) redisFree(ctx);
    }
    // Closes the socket at once, so that the server drops a half-sent command, while the
    // context keeps what redisReconnect needs.
    void mark_broken() {
        broken = true;
        up = false;
        if (ctx && ctx->fd >= 0) ::shutdown(ctx->fd, SHUT_RDWR);
    }
};

ConnectionPool::ConnectionPool(const RedisOptions& options, std::shared_ptr<Telemetry> telemetry,
                               RedisEvent::Connection kind,
                               std::shared_ptr<boost::asio::ssl::context> tls)
    : options_(options),
      where_(where_of(options)),
      telemetry_(std::move(telemetry)),
      kind_(kind),
      tls_(!options.tls.enabled ? nullptr
           : tls                ? std::move(tls)
                                : make_tls_context(options.tls)) {}

void ConnectionPool::emit(RedisEvent::Kind kind, std::string reason) const {
    if (telemetry_ && telemetry_->observed()) telemetry_->emit(kind, kind_, where_, std::move(reason));
}

void ConnectionPool::broke(Connection& c, errc code, const std::string& why) {
    const bool was_up = c.up;
    c.mark_broken();
    if (!was_up || !telemetry_ || !telemetry_->observed()) return;
    RedisEvent event;
    event.kind = RedisEvent::Kind::disconnected;
    event.connection = kind_;
    event.node = where_;
    event.reason = why;
    event.error = make_error_code(code);
    telemetry_->emit(std::move(event));
}

void ConnectionPool::Lease::library_loaded() const {
    pool_->emit(RedisEvent::Kind::library_loaded, std::string(redis_scripts::library_name));
}

ConnectionPool::~ConnectionPool() = default;

ConnectionPool::Lease::Lease(ConnectionPool& pool, std::unique_ptr<Connection> connection)
    : pool_(&pool), connection_(std::move(connection)) {}

ConnectionPool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_), connection_(std::move(other.connection_)) {}

ConnectionPool::Lease::~Lease() {
    if (connection_) pool_->give_back(std::move(connection_));
}

Result<ConnectionPool::Lease> ConnectionPool::lease() {
    std::unique_ptr<Connection> connection;
    {
        std::unique_lock lock(mutex_);
        // A caller keeps a connection for at most a connect, a handshake and two commands.
        const auto patience = 2 * (options_.connect_timeout + 2 * options_.command_timeout);
        const bool ready = available_.wait_for(
            lock, patience, [&] { return !idle_.empty() || open_ < options_.pool_size; });
        if (!ready) {
            return Failure(errc::timeout, "all " + std::to_string(options_.pool_size) +
                                              " Redis connections stayed busy for " +
                                              std::to_string(patience.count()) + " ms");
        }
        if (!counters_) {
            counters_ = telemetry_ ? telemetry_->counters(kind_, where_)
                                   : std::make_shared<ConnectionCounters>(kind_, where_);
        }
        if (!idle_.empty()) {
            connection = std::move(idle_.back());  // the most recently used: likely alive
            idle_.pop_back();
        } else {
            connection = std::make_unique<Connection>();
            ++open_;
        }
    }
    Lease lease(*this, std::move(connection));
    if (auto ok = connect(*lease.connection_); !ok) return std::move(ok).error();
    return Result<Lease>(std::move(lease));
}

void ConnectionPool::give_back(std::unique_ptr<Connection> connection) {
    {
        std::lock_guard lock(mutex_);
        idle_.push_back(std::move(connection));
    }
    available_.notify_one();
}

std::string where_of(const RedisOptions& options) {
    if (!options.unix_socket.empty()) return "unix:" + options.unix_socket;
    return options.host + ":" + std::to_string(options.port);
}

Result<void> ConnectionPool::connect(Connection& c) {
    if (tls_) {
        // The pipeline connects (and reconnects) on its first request; it shares the pool's
        // counters, and its events name the pool's kind of connection.
        if (!c.pipeline) {
            c.io = std::make_unique<boost::asio::io_context>(1);
            c.pipeline = std::make_unique<Pipeline>(c.io->get_executor(), options_, tls_,
                                                    telemetry_, counters_);
        }
        return {};
    }
    if (c.ctx && !c.broken) {
        if (!closed_by_peer(c.ctx->fd)) return {};
        broke(c, errc::io_error, "the server closed the connection while it was idle");
    }
    const std::string& where = where_;
    const bool again = c.ctx != nullptr;
    if (again) emit(RedisEvent::Kind::reconnecting);
    counters_->add(counters_->connects);
    if (c.ctx && redisReconnect(c.ctx) != REDIS_OK) {
        const std::string reason = c.ctx->errstr;
        c.broken = true;
        return Failure(errc::connection_failed,
                       "cannot reconnect to Redis at " + where + ": " + reason);
    }
    if (!c.ctx) {
        c.ctx = options_.unix_socket.empty()
                    ? redisConnectWithTimeout(options_.host.c_str(), options_.port,
                                              to_timeval(options_.connect_timeout))
                    : redisConnectUnixWithTimeout(options_.unix_socket.c_str(),
                                                  to_timeval(options_.connect_timeout));
        if (!c.ctx || c.ctx->err) {
            const std::string reason = c.ctx ? c.ctx->errstr : "out of memory";
            if (c.ctx) redisFree(c.ctx);
            c.ctx = nullptr;
            return Failure(errc::connection_failed,
                           "cannot connect to Redis at " + where + ": " + reason);
        }
    }
    // After every (re)connect: redisReconnect of hiredis 0.14 drops the command timeout.
    if (redisSetTimeout(c.ctx, to_timeval(options_.command_timeout)) != REDIS_OK) {
        c.mark_broken();
        return Failure(errc::connection_failed, "cannot set the command timeout on " + where);
    }
    // TCP only: hiredis 0.14 sets TCP_KEEPIDLE too, which a Unix socket refuses
    // (EOPNOTSUPP), and that leaves the context in error: its next command fails.
    if (options_.unix_socket.empty()) redisEnableKeepAlive(c.ctx);
    c.broken = false;
    if (auto ok = handshake(c); !ok) return ok;
    c.up = true;
    if (again) counters_->add(counters_->reconnects);
    emit(RedisEvent::Kind::connected);
    return {};
}

Result<void> ConnectionPool::handshake(Connection& c) {
    std::vector<std::vector<std::string_view>> commands;
    if (!options_.password.empty()) {
        if (options_.user.empty())
            commands.push_back({"AUTH", options_.password});
        else
            commands.push_back({"AUTH", options_.user, options_.password});
    }
    const std::string db = std::to_string(options_.db);
    if (options_.db != 0) commands.push_back({"SELECT", db});
    if (commands.empty()) return {};
    // Pipelined: one round trip whatever the number of steps.
    for (const auto& command : commands) {
        std::vector<const char*> argv;
        std::vector<std::size_t> lengths;
        for (auto arg : command) {
            argv.push_back(arg.data());
            lengths.push_back(arg.size());
        }
        redisAppendCommandArgv(c.ctx, static_cast<int>(argv.size()), argv.data(), lengths.data());
    }
    const std::string& where = where_;
    counters_->add(counters_->sent, commands.size());
    counters_->add(counters_->writes);
    SigpipeGuard guard;
    for (const auto& command : commands) {
        void* raw = nullptr;
        if (redisGetReply(c.ctx, &raw) != REDIS_OK || !raw) {
            const std::string reason = c.ctx->errstr;
            c.mark_broken();
            return Failure(errc::connection_failed, "Redis at " + where + " did not answer " +
                                                        std::string(command[0]) + ": " + reason);
        }
        counters_->add(counters_->reads);
        ReplyPtr reply(static_cast<redisReply*>(raw));
        if (reply->type != REDIS_REPLY_ERROR) continue;
        const std::string message(reply->str, reply->len);
        c.mark_broken();
        if (command[0] == "AUTH") {
            return Failure(errc::auth_failed,
                           "Redis at " + where + " refused AUTH" +
                               (options_.user.empty() ? "" : " for user " + options_.user) + ": " +
                               message);
        }
        if (starts_with(message, "NOAUTH") || starts_with(message, "NOPERM")) {
            return Failure(errc::auth_failed,
                           "Redis at " + where + " refused SELECT " + db + ": " + message);
        }
        return Failure(errc::connection_failed,
                       "Redis at " + where + " refused SELECT " + db + ": " + message);
    }
    return {};
}

Result<ReplyPtr> ConnectionPool::Lease::command(std::span<const std::string_view> args) {
    // The pipeline counts, times and reports its own calls.
    if (connection_->pipeline) return send_over_tls(args);
    ConnectionCounters& counters = *pool_->counters_;
    counters.add(counters.in_flight);
    struct InFlight {
        ConnectionCounters& counters;
        ~InFlight() { counters.remove_in_flight(); }
    } const in_flight{counters};
    const Telemetry* telemetry = pool_->telemetry_.get();
    const bool timed = telemetry && telemetry->observed();
    const auto started = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    auto result = send_and_read(args);
    if (timed) {
        const auto took = std::chrono::steady_clock::now() - started;
        if (telemetry->slow(took)) {
            RedisEvent event;
            event.kind = RedisEvent::Kind::slow_call;
            event.connection = pool_->kind_;
            event.node = pool_->where_;
            event.reason = std::string(args.empty() ? std::string_view("command") : args.front());
            if (args.size() > 1 && event.reason == "FCALL") {
                // Named as the pipelined connections name it: "FCALL hold", without the
                // library's prefix.
                std::string_view function = args[1];
                const std::string prefix = std::string(redis_scripts::library_name) + "_";
                if (function.substr(0, prefix.size()) == prefix) function.remove_prefix(prefix.size());
                event.reason.append(" ").append(function);
            }
            event.took = std::chrono::duration_cast<std::chrono::microseconds>(took);
            pool_->telemetry_->emit(std::move(event));
        }
    }
    return result;
}

Result<ReplyPtr> ConnectionPool::Lease::send_and_read(std::span<const std::string_view> args) {
    Connection& c = *connection_;
    ConnectionCounters& counters = *pool_->counters_;
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    argv.reserve(args.size());
    lengths.reserve(args.size());
    for (auto arg : args) {
        argv.push_back(arg.data());
        lengths.push_back(arg.size());
    }
    const std::string what(args.empty() ? std::string_view("command") : args.front());
    if (redisAppendCommandArgv(c.ctx, static_cast<int>(argv.size()), argv.data(), lengths.data()) !=
        REDIS_OK) {
        const std::string reason = c.ctx->errstr;
        pool_->broke(c, errc::io_error, reason);
        return Failure(errc::io_error, what + " not sent: " + reason);
    }
    counters.add(counters.sent);
    counters.add(counters.writes);
    SigpipeGuard guard;
    for (int done = 0; !done;) {
        if (redisBufferWrite(c.ctx, &done) != REDIS_OK) {
            const int error_number = errno;
            const std::string reason = c.ctx->errstr;
            const bool slow = timed_out(c.ctx, error_number);
            pool_->broke(c, slow ? errc::timeout : errc::io_error,
                         slow ? "not sent within the command timeout" : reason);
            // Not sent completely: the server never runs a partial command.
            if (slow) {
                return Failure(errc::timeout,
                               what + " not sent within " +
                                   std::to_string(pool_->options_.command_timeout.count()) +
                                   " ms: " + reason);
            }
            return Failure(errc::io_error, what + " not sent, the connection broke: " + reason);
        }
    }
    void* raw = nullptr;
    if (redisGetReply(c.ctx, &raw) != REDIS_OK || !raw) {
        const int error_number = errno;
        const std::string reason = c.ctx->errstr;
        const bool slow = timed_out(c.ctx, error_number);
        const bool unreadable = c.ctx->err == REDIS_ERR_PROTOCOL;
        pool_->broke(c, unreadable ? errc::protocol_error : slow ? errc::timeout : errc::io_error,
                     unreadable ? "unreadable reply: " + reason
                     : slow     ? "no reply within the command timeout"
                                : reason);
        if (unreadable)
            return Failure(errc::protocol_error, what + ": unreadable reply: " + reason);
        return Failure(
            errc::outcome_unknown,
            what + " was sent but " +
                (slow ? "no reply came within " +
                            std::to_string(pool_->options_.command_timeout.count()) + " ms"
                      : "the connection broke before the reply (" + reason + ")") +
                ": it may or may not have been applied");
    }
    counters.add(counters.reads);
    return ReplyPtr(static_cast<redisReply*>(raw));
}

// The command on the connection's pipeline, whose io_context this thread runs until the
// answer (a reply or a failure) has been handed over; what is left pending (nothing, once
// the connection is idle) runs on the next command's turn.
Result<ReplyPtr> ConnectionPool::Lease::send_over_tls(std::span<const std::string_view> args) {
    Connection& c = *connection_;
    std::optional<Result<ReplyPtr>> answer;
    c.pipeline->exec(std::vector<std::string>(args.begin(), args.end()),
                     [&answer](Result<ReplyPtr> reply) { answer.emplace(std::move(reply)); });
    c.io->restart();
    while (!answer && c.io->run_one() > 0) {
    }
    if (answer) return std::move(*answer);
    // Not reached: a request keeps its pipeline's io_context busy until it is answered.
    return Failure(errc::io_error, std::string(args.front()) + " was not answered by Redis at " +
                                       pool_->where_ + ": its connection stopped");
}

}  // namespace seatlock::redis_detail
