// SPDX-License-Identifier: MIT
// src/redis/driver.cpp: Driver: the one server, a Redis Cluster or Sentinel's primary;
// blocking on pooled connections or asynchronously on pipelined ones.
#include "driver.hpp"

#include <hiredis/hiredis.h>

#include "tls.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <future>

namespace seatlock::redis_detail {

namespace {

using redis_scripts::Script;

// Whether the calling thread is running `executor` (an io_context's, or a strand over one):
// what Driver(options, executors) routes calls by. False for other kinds.
bool runs_here(const boost::asio::any_io_executor& executor) {
    using Plain = boost::asio::io_context::executor_type;
    if (const auto* plain = executor.target<Plain>()) return plain->running_in_this_thread();
    if (const auto* strand = executor.target<boost::asio::strand<Plain>>())
        return strand->get_inner_executor().running_in_this_thread();
    return false;
}

// Whether `reply` is an error whose message starts with `prefix`.
bool is_error(const redisReply& reply, std::string_view prefix) {
    return reply.type == REDIS_REPLY_ERROR &&
           std::string_view(reply.str, reply.len).substr(0, prefix.size()) == prefix;
}

// A reply, or the failure an error reply stands for.
Result<ReplyPtr> mapped(Result<ReplyPtr> reply, std::string_view what) {
    if (reply && (*reply)->type == REDIS_REPLY_ERROR) {
        return error_reply_failure(std::string_view((*reply)->str, (*reply)->len), what);
    }
    return reply;
}

std::string script_what(const Script& script) {
    return "Redis script " + std::string(script.name);
}

// The same for a script's reply: its name is spelled out only for an error.
Result<ReplyPtr> mapped(Result<ReplyPtr> reply, const Script& script) {
    if (reply && (*reply)->type == REDIS_REPLY_ERROR)
        return mapped(std::move(reply), script_what(script));
    return reply;
}

// Replica-acknowledged writes (RedisOptions::replicas_to_ack): the scripts whose success a
// caller acts on, each followed by WAIT. Reads, the expiry sweep and its acknowledgements
// are not: losing them in a failover loses nothing a caller was told.
bool waits_for_replicas(const Script& script) {
    for (const Script* s :
         {&redis_scripts::hold, &redis_scripts::confirm, &redis_scripts::release,
          &redis_scripts::extend, &redis_scripts::cancel, &redis_scripts::restore_order,
          &redis_scripts::event_create, &redis_scripts::event_show, &redis_scripts::lock_acquire,
          &redis_scripts::lock_release, &redis_scripts::lock_extend, &redis_scripts::lock_fence}) {
        if (s == &script) return true;
    }
    return false;
}

// Whether `reply` is a script's success, worth a WAIT: {1, ...}, a positive bare integer
// (lock_acquire's fencing token, release's version, the 1 of lock_release and
// lock_extend), or the bulk string of a new hold of named seats ("<expires> <version>").
// Not a refusal ({0, ...}), a lock no longer held (0), nor lock_acquire's busy keys (an
// array of their indexes): those changed nothing.
bool applied(const Script& script, const Result<ReplyPtr>& reply) {
    if (!reply) return false;
    const redisReply& r = **reply;
    if (r.type == REDIS_REPLY_INTEGER) return r.integer > 0;
    if (r.type == REDIS_REPLY_STRING) return &script == &redis_scripts::hold;
    return &script != &redis_scripts::lock_acquire && r.type == REDIS_REPLY_ARRAY &&
           r.elements > 0 && r.element[0]->type == REDIS_REPLY_INTEGER &&
           r.element[0]->integer == 1;
}

// One command on `lease`, after ASKING when a Cluster's ASK redirection says so.
Result<ReplyPtr> send(ConnectionPool::Lease& lease, std::span<const std::string_view> argv,
                      bool asking) {
    if (asking) {
        const std::vector<std::string_view> ask{"ASKING"};
        auto ok = lease.command(ask);
        if (!ok) return ok;
        if ((*ok)->type == REDIS_REPLY_ERROR) return ok;
    }
    return lease.command(argv);
}

// FCALL of a library function on one connection. When the server lacks the library
// (a new server, a restart without persistence, FUNCTION FLUSH), FUNCTION LOAD on the
// same connection, then FCALL again: "Function not found" means nothing ran, so
// sending again is safe. A library another client loaded meanwhile is the same text.
Result<ReplyPtr> fcall_on(ConnectionPool::Lease& lease, std::span<const std::string_view> argv,
                          bool asking) {
    auto reply = send(lease, argv, asking);
    // Twice at most: a FUNCTION FLUSH may land between the load and the call.
    for (int tries = 0; tries < 2 && reply && is_error(**reply, "ERR Function not found");
         ++tries) {
        const std::vector<std::string_view> load{"FUNCTION", "LOAD", redis_scripts::library};
        auto loaded = lease.command(load);
        if (!loaded) return loaded;
        if ((*loaded)->type == REDIS_REPLY_ERROR && !is_error(**loaded, "ERR Library")) {
            return error_reply_failure(
                std::string_view((*loaded)->str, (*loaded)->len),
                "Redis FUNCTION LOAD " + std::string(redis_scripts::library_name));
        }
        if ((*loaded)->type != REDIS_REPLY_ERROR) lease.library_loaded();
        reply = send(lease, argv, asking);
    }
    return reply;
}

// `done`, called after WAIT on `p` (the write's own connection) when the reply is an
// applied write and there is a `wait` (null: none); WAIT's answer goes to `acks`.
Pipeline::Callback then_wait(Pipeline& p, const Script& script,
                             std::shared_ptr<const std::vector<std::string>> wait,
                             std::shared_ptr<Acks> acks, Pipeline::Callback done) {
    if (!wait) return done;
    return [&p, &script, wait, acks, done = std::move(done)](Result<ReplyPtr> reply) {
        if (!applied(script, reply)) return done(std::move(reply));
        auto kept = std::make_shared<Result<ReplyPtr>>(std::move(reply));
        p.exec(*wait, [acks, kept, done](Result<ReplyPtr> acked) {
            acks->read(acked);
            done(std::move(*kept));
        });
    };
}

}  // namespace

void Acks::read(const Result<ReplyPtr>& reply) {
    asked = true;
    if (!reply) {
        trouble = reply.error().message();
    } else if ((*reply)->type == REDIS_REPLY_INTEGER) {
        count = (*reply)->integer;
    } else if ((*reply)->type == REDIS_REPLY_ERROR) {
        trouble = "Redis answered " + std::string((*reply)->str, (*reply)->len);
    } else {
        trouble = "Redis answered WAIT with something else than a number";
    }
}

// One asynchronous call on a cluster, as the ClusterRouter's Route steers it: `send`
// puts it on a node's pipeline (ASKING first when asked), `done` gets the answer.
struct Driver::ClusterCall {
    ClusterCall(ClusterRouter& router, std::optional<std::uint16_t> slot, std::string what,
                boost::asio::io_context& io)
        : route(router, slot, std::move(what), false), timer(io) {}
    ClusterRouter::Route route;
    Send send;
    Pipeline::Callback done;
    boost::asio::steady_timer timer;  // TRYAGAIN pauses, off the I/O thread's back
};

Driver::Driver(RedisOptions options, std::vector<boost::asio::any_io_executor> executors)
    : options_(std::move(options)),
      telemetry_(std::make_shared<Telemetry>(options_)),
      tls_(options_.tls.enabled ? make_tls_context(options_.tls) : nullptr),
      pool_(options_, telemetry_, RedisEvent::Connection::pooled, tls_),
      external_io_(std::move(executors)) {
    if (!options_.cluster_nodes.empty())
        cluster_ = std::make_unique<ClusterRouter>(options_, telemetry_, tls_);
    if (!options_.sentinels.empty())
        sentinel_ = std::make_unique<SentinelRouter>(options_, telemetry_, tls_);
}

Driver::~Driver() {
    // The pipelines complete every pending call first; then the I/O thread ends.
    pipelines_.clear();
    blocking_pipelines_.clear();
    std::map<std::string, std::shared_ptr<Pipeline>> primaries;
    {
        std::lock_guard lock(primary_pipelines_mutex_);
        closing_ = true;  // a call sent again from here on fails instead
        primaries.swap(primary_pipelines_);
    }
    primaries.clear();
    if (io_thread_.joinable()) {
        work_.reset();
        // On a cluster, calls pausing on a timer (TRYAGAIN) still end, with io_error,
        // within that pause: the I/O thread runs until they have.
        if (!cluster_) io_.stop();
        io_thread_.join();
    }
    telemetry_->stop();
}

void Driver::start_io() {
    std::call_once(started_, [this] {
        if (!external_io_.empty() && !cluster_ && !sentinel_) {
            for (const auto& executor : external_io_) {
                for (std::size_t i = 0; i < options_.async_connections; ++i) {
                    pipelines_.push_back(
                        std::make_unique<Pipeline>(executor, options_, tls_, telemetry_));
                }
            }
            if (!tls_) return;
            for (std::size_t i = 0; i < options_.async_connections; ++i) {
                blocking_pipelines_.push_back(
                    std::make_unique<Pipeline>(io_.get_executor(), options_, tls_, telemetry_));
            }
        } else if (!cluster_ && !sentinel_) {
            for (std::size_t i = 0; i < options_.async_connections; ++i) {
                pipelines_.push_back(
                    std::make_unique<Pipeline>(io_.get_executor(), options_, tls_, telemetry_));
            }
        }
        work_.emplace(io_.get_executor());
        io_thread_ = std::thread([this] { io_.run(); });
    });
}

// The pipeline the next call goes on. Behind Sentinel: the primary's (found first when
// needed, on the caller's thread: never on the I/O thread, which only takes the one
// known), and `done` learns to have the primary found again when its answer is a sign
// of a failover. Null when there is none: `done` was then told why.
Pipeline* Driver::pipeline(Pipeline::Callback& done) {
    if (closed_.load(std::memory_order_acquire)) {
        done(closed_failure("the call"));
        return nullptr;
    }
    start_io();
    if (!sentinel_) {
        // The pipelines to choose from: all, or, for a caller on one of several
        // executors' threads, that executor's own.
        std::size_t first = 0;
        std::size_t count = pipelines_.size();
        if (external_io_.size() > 1) {
            for (std::size_t e = 0; e < external_io_.size(); ++e) {
                if (runs_here(external_io_[e])) {
                    count = options_.async_connections;
                    first = e * count;
                    break;
                }
            }
        }
        // Turns are taken only among several: one pipeline needs no shared counter.
        const auto turn = count == 1 ? 0 : next_pipeline_.fetch_add(1, std::memory_order_relaxed);
        return pipelines_[first + turn % count].get();
    }
    using Primary = SentinelRouter::Primary;
    Result<Primary> primary = Failure(errc::connection_failed, "no Redis primary known yet");
    if (!io_.get_executor().running_in_this_thread()) {
        primary = sentinel_->primary();
    } else if (auto known = sentinel_->known()) {
        primary = std::move(*known);
    }
    if (!primary) {
        done(std::move(primary).error());
        return nullptr;
    }
    auto p = pipeline_at(primary->host, primary->port);
    if (!p) {
        done(Failure(errc::io_error, "the backend was closed before the call was sent"));
        return nullptr;
    }
    done = [router = sentinel_.get(), generation = primary->generation,
            done = std::move(done)](Result<ReplyPtr> reply) {
        if (SentinelRouter::signals_failover(reply)) router->suspect(generation);
        done(std::move(reply));
    };
    return p.get();  // kept in primary_pipelines_ until the driver is destroyed
}

// The pipeline to a cluster node or Sentinel's primary; null once the driver is being
// destroyed.
std::shared_ptr<Pipeline> Driver::pipeline_at(const std::string& host, int port) {
    std::lock_guard lock(primary_pipelines_mutex_);
    if (closing_ || closed_.load(std::memory_order_relaxed)) return nullptr;
    auto& p = primary_pipelines_[host + ":" + std::to_string(port)];
    if (!p) {
        RedisOptions o = options_;
        o.host = host;
        o.port = port;
        p = std::make_shared<Pipeline>(io_.get_executor(), std::move(o), tls_, telemetry_);
    }
    return p;
}

void Driver::route(std::span<const std::string> keys, std::string what, Send send,
                   Pipeline::Callback done) {
    if (closed_.load(std::memory_order_acquire)) return done(closed_failure(what));
    auto slot = common_slot(keys);
    if (!slot) return done(std::move(slot).error());
    start_io();
    // The map is refreshed on callers' threads only: CLUSTER SLOTS blocks.
    if (!io_.get_executor().running_in_this_thread()) {
        if (auto fresh = cluster_->prepare(); !fresh) return done(std::move(fresh).error());
    }
    auto call = std::make_shared<ClusterCall>(*cluster_, *slot, std::move(what), io_);
    call->send = std::move(send);
    call->done = std::move(done);
    send_on_cluster(std::move(call));
}

void Driver::send_on_cluster(std::shared_ptr<ClusterCall> call) {
    auto next = call->route.next();
    if (!next) return call->done(call->route.failure());
    auto p = pipeline_at(next->host, next->port);
    if (!p && closed_.load(std::memory_order_acquire))
        return call->done(closed_failure(call->route.failure().detail));
    if (!p) {
        return call->done(
            Failure(errc::io_error,
                    call->route.failure().detail + ": the backend was closed before it was sent"));
    }
    call->send(*p, next->asking, [this, call](Result<ReplyPtr> reply) {
        using Verdict = ClusterRouter::Route::Verdict;
        switch (call->route.after(reply)) {
            case Verdict::answer:
                return call->done(std::move(reply));
            case Verdict::again:
                return send_on_cluster(call);
            case Verdict::pause:
                call->timer.expires_after(call->route.pause());
                call->timer.async_wait(
                    [this, call](boost::system::error_code) { send_on_cluster(call); });
                return;
            case Verdict::give_up:
                return call->done(call->route.failure());
        }
    });
}

// Sends `attempt` to the one server, or to the Cluster node serving `keys`.
Result<ReplyPtr> Driver::dispatch(std::span<const std::string> keys, std::string_view what,
                                  const ClusterRouter::Attempt& attempt) {
    if (closed_.load(std::memory_order_acquire)) return closed_failure(what);
    if (cluster_) {
        auto slot = common_slot(keys);
        if (!slot) return std::move(slot).error();
        return cluster_->run(*slot, what, attempt);
    }
    if (sentinel_) {
        return sentinel_->run(what,
                              [&](ConnectionPool::Lease& lease) { return attempt(lease, false); });
    }
    auto lease = pool_.lease();
    if (!lease) return std::move(lease).error();
    return attempt(*lease, false);
}

// WAIT's arguments, when `script`'s writes wait for replicas; empty otherwise.
std::vector<std::string> Driver::wait_argv(const Script& script) const {
    if (options_.replicas_to_ack <= 0 || !waits_for_replicas(script)) return {};
    return {"WAIT", std::to_string(options_.replicas_to_ack),
            std::to_string(options_.replica_ack_timeout.count())};
}

Result<ReplyPtr> Driver::fcall(const Script& script, const std::vector<std::string>& keys,
                               const std::vector<std::string>& args, Acks& acks) {
    struct InFlight {
        std::atomic<int>& count;
        ~InFlight() { count.fetch_sub(1, std::memory_order_relaxed); }
    };
    if (one_server_over_tls()) {
        auto shared_acks = std::make_shared<Acks>();
        auto reply = wait_over_tls(script_what(script), [&](Pipeline& p, Pipeline::Callback done) {
            std::shared_ptr<const std::vector<std::string>> wait;
            if (auto argv = wait_argv(script); !argv.empty())
                wait = std::make_shared<const std::vector<std::string>>(std::move(argv));
            p.fcall(script, keys, args,
                    then_wait(p, script, wait, shared_acks,
                              [&script, done = std::move(done)](Result<ReplyPtr> r) {
                                  done(mapped(std::move(r), script));
                              }));
        });
        acks = *shared_acks;
        return reply;
    }
    const bool others = blocking_in_flight_.fetch_add(1, std::memory_order_relaxed) > 0;
    const InFlight in_flight{blocking_in_flight_};
    if (others && options_.pipeline_blocking_calls && external_io_.empty() &&
        !io_.get_executor().running_in_this_thread()) {
        return fcall_on_pipelines(script, keys, args, acks);
    }
    const std::string key_count = std::to_string(keys.size());
    std::vector<std::string_view> argv{"FCALL", script.function, key_count};
    argv.reserve(3 + keys.size() + args.size());
    for (const auto& k : keys) argv.emplace_back(k);
    for (const auto& a : args) argv.emplace_back(a);
    const std::vector<std::string> wait = wait_argv(script);
    const std::vector<std::string_view> wait_view(wait.begin(), wait.end());
    const std::string what = script_what(script);
    auto reply = dispatch(keys, what, [&](ConnectionPool::Lease& lease, bool asking) {
        auto r = fcall_on(lease, argv, asking);
        if (!wait.empty() && applied(script, r)) acks.read(lease.command(wait_view));
        return r;
    });
    return mapped(std::move(reply), what);
}

// A blocking call made while others are in flight, on the pipelined connections: the
// calling thread waits for the answer.
Result<ReplyPtr> Driver::fcall_on_pipelines(const Script& script,
                                            const std::vector<std::string>& keys,
                                            const std::vector<std::string>& args, Acks& acks) {
    auto shared_acks = std::make_shared<Acks>();
    std::promise<Result<ReplyPtr>> answer;
    auto future = answer.get_future();
    async_fcall(script, keys, args, shared_acks,
                [&answer](Result<ReplyPtr> reply) { answer.set_value(std::move(reply)); });
    auto reply = future.get();
    acks = *shared_acks;
    return reply;
}

// Over TLS: one blocking call, sent by `send` on a pipelined TLS connection that the
// driver's own thread runs (with executors given, one of blocking_pipelines_: a call made
// on a given executor's thread must not wait for that thread), waited for here.
Result<ReplyPtr> Driver::wait_over_tls(
    std::string_view what, const std::function<void(Pipeline&, Pipeline::Callback)>& send) {
    if (closed_.load(std::memory_order_acquire)) return closed_failure(what);
    if (io_.get_executor().running_in_this_thread()) {
        return Failure(errc::invalid_argument,
                       std::string(what) +
                           " was not sent: a blocking call over TLS made on the backend's I/O "
                           "thread would wait for that thread (use the asynchronous API there)");
    }
    std::promise<Result<ReplyPtr>> answer;
    auto future = answer.get_future();
    Pipeline::Callback done = [&answer](Result<ReplyPtr> reply) {
        answer.set_value(std::move(reply));
    };
    start_io();
    if (blocking_pipelines_.empty()) {
        if (auto* p = pipeline(done)) send(*p, std::move(done));
    } else {
        const auto turn = next_blocking_pipeline_.fetch_add(1, std::memory_order_relaxed);
        send(*blocking_pipelines_[turn % blocking_pipelines_.size()], std::move(done));
    }
    return future.get();
}

void Driver::async_fcall(const Script& script, std::vector<std::string> keys,
                         std::vector<std::string> args, std::shared_ptr<Acks> acks,
                         Pipeline::Callback done) {
    Pipeline::Callback answer = [&script, done = std::move(done)](Result<ReplyPtr> reply) {
        done(mapped(std::move(reply), script));
    };
    std::shared_ptr<const std::vector<std::string>> wait;
    if (auto argv = wait_argv(script); !argv.empty())
        wait = std::make_shared<const std::vector<std::string>>(std::move(argv));
    if (cluster_) {
        // The keys are read for the slot before they move into the sender.
        auto keys_ = std::make_shared<std::vector<std::string>>(std::move(keys));
        auto args_ = std::make_shared<std::vector<std::string>>(std::move(args));
        return route(
            *keys_, script_what(script),
            [&script, keys_, args_, wait, acks](Pipeline& p, bool asking, Pipeline::Callback cb) {
                p.fcall(script, *keys_, *args_, then_wait(p, script, wait, acks, std::move(cb)),
                        asking);
            },
            std::move(answer));
    }
    auto* target = pipeline(answer);
    if (!target) return;  // answer was told why
    auto& p = *target;
    p.fcall(script, std::move(keys), std::move(args),
            then_wait(p, script, wait, std::move(acks), std::move(answer)));
}

Result<ReplyPtr> Driver::command(std::vector<std::string_view> argv, const std::string& key) {
    const std::string what = "Redis " + std::string(argv.front());
    if (one_server_over_tls()) {
        return wait_over_tls(what, [&](Pipeline& p, Pipeline::Callback done) {
            p.exec(std::vector<std::string>(argv.begin(), argv.end()),
                   [&what, done = std::move(done)](Result<ReplyPtr> r) {
                       done(mapped(std::move(r), what));
                   });
        });
    }
    const std::span<const std::string> keys(&key, 1);
    return mapped(dispatch(keys, what,
                           [&](ConnectionPool::Lease& lease, bool asking) {
                               return send(lease, argv, asking);
                           }),
                  what);
}

void Driver::async_command(std::vector<std::string> argv, Pipeline::Callback done) {
    std::string what = "Redis " + argv.front();
    Pipeline::Callback answer = [what, done = std::move(done)](Result<ReplyPtr> reply) {
        done(mapped(std::move(reply), what));
    };
    if (cluster_) {
        auto command = std::make_shared<std::vector<std::string>>(std::move(argv));
        return route(
            std::span<const std::string>(command->data() + 1, 1), std::move(what),
            [command](Pipeline& p, bool asking, Pipeline::Callback cb) {
                p.exec(*command, std::move(cb), asking);
            },
            std::move(answer));
    }
    if (auto* p = pipeline(answer)) p->exec(std::move(argv), std::move(answer));
}

void Driver::close() {
    // The pipelines exist from here on (start_io makes them once, whoever comes first), so
    // that a call racing with close() finds them, closed.
    start_io();
    std::vector<std::shared_ptr<Pipeline>> primaries;
    {
        std::lock_guard lock(primary_pipelines_mutex_);
        if (closed_.exchange(true, std::memory_order_acq_rel)) return;
        for (const auto& entry : primary_pipelines_) primaries.push_back(entry.second);
    }
    // Outside the lock: what a pipeline fails may be routed again (a cluster's call), which
    // takes it; it then finds the driver closed.
    for (const auto& p : pipelines_) p->close();
    for (const auto& p : blocking_pipelines_) p->close();
    for (const auto& p : primaries) p->close();
}

Failure Driver::closed_failure(std::string_view what) const {
    return Failure(errc::connection_failed,
                   std::string(what) + " was not sent to Redis: the backend was closed");
}

Result<void> Driver::ping() {
    const std::vector<std::string_view> argv{"PING"};
    auto pong = [&](ConnectionPool::Lease& lease, bool) -> Result<ReplyPtr> {
        auto reply = lease.command(argv);
        if (!reply || (*reply)->type == REDIS_REPLY_ERROR) return reply;
        if ((*reply)->type != REDIS_REPLY_STATUS ||
            std::string_view((*reply)->str, (*reply)->len) != "PONG") {
            return Failure(errc::protocol_error,
                           "Redis answered PING with something else than PONG");
        }
        return reply;
    };
    if (closed_.load(std::memory_order_acquire)) return closed_failure("Redis PING");
    if (one_server_over_tls()) {
        auto reply = wait_over_tls("Redis PING", [](Pipeline& p, Pipeline::Callback done) {
            p.exec({"PING"}, [done = std::move(done)](Result<ReplyPtr> r) {
                if (r && (*r)->type != REDIS_REPLY_ERROR &&
                    ((*r)->type != REDIS_REPLY_STATUS ||
                     std::string_view((*r)->str, (*r)->len) != "PONG")) {
                    return done(Failure(errc::protocol_error,
                                        "Redis answered PING with something else than PONG"));
                }
                done(mapped(std::move(r), "Redis PING"));
            });
        });
        if (!reply) return std::move(reply).error();
        return {};
    }
    if (cluster_) return cluster_->on_every_primary("Redis PING", pong);
    auto reply = mapped(dispatch({}, "Redis PING", pong), "Redis PING");
    if (!reply) return std::move(reply).error();
    return {};
}

}  // namespace seatlock::redis_detail
