// src/redis/redis_backend.cpp: RedisBackend: each operation is one Lua script call whose
// arguments are built and whose reply is read here; the rules live in lua/*.lua.
//
// Each operation is described once, as a Call: the function, its keys and arguments,
// and how its reply reads. The blocking API sends a Call on a pooled hiredis connection
// and waits; the asynchronous one (async_run) sends the same Call on a pipelined Asio
// connection and reads the reply when it comes. The few operations of more than one
// command (an event and its index; expired() walking every event) chain their Calls
// the same way on both paths.
#include <seatlock/backends/redis.hpp>
#include <seatlock/detail/text.hpp>
#include <seatlock/redis/key_layout.hpp>

#include "cluster.hpp"
#include "connection_pool.hpp"
#include "pipeline.hpp"
#include "sentinel.hpp"
#include "seatlock_redis_scripts.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace seatlock {

static_assert(Backend<RedisBackend>);

namespace {

using redis_detail::ReplyPtr;
using redis_scripts::Script;

// Durations the scripts accept: positive and at most 10^15 ms, which any real lease or
// hold fits; larger values (e.g. Millis::max() as "forever") are clamped to that.
constexpr std::int64_t max_script_ms = 1'000'000'000'000'000;

std::string ms(Millis d) {
    return std::to_string(std::clamp<std::int64_t>(d.count(), 0, max_script_ms));
}

WallTime wall(std::int64_t server_ms) {
    return WallTime(Millis(server_ms));
}

// Whether the calling thread is running `executor` (an io_context's, or a strand over one):
// what RedisBackend(options, executors) routes calls by. False for other kinds.
bool runs_here(const boost::asio::any_io_executor& executor) {
    using Plain = boost::asio::io_context::executor_type;
    if (const auto* plain = executor.target<Plain>()) return plain->running_in_this_thread();
    if (const auto* strand = executor.target<boost::asio::strand<Plain>>())
        return strand->get_inner_executor().running_in_this_thread();
    return false;
}

// A reply that does not have the shape a script promises; turned into protocol_error.
struct BadReply : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Typed access to the elements of a script's reply; throws BadReply on any mismatch.
class Reader {
public:
    explicit Reader(const redisReply* reply) : reply_(reply) {
        if (!reply_ || reply_->type != REDIS_REPLY_ARRAY) throw BadReply("not an array");
    }
    [[nodiscard]] std::size_t size() const { return reply_->elements; }
    [[nodiscard]] const redisReply* at(std::size_t i) const {
        if (i >= reply_->elements) throw BadReply("missing element " + std::to_string(i));
        return reply_->element[i];
    }
    [[nodiscard]] std::string text(std::size_t i) const {
        const redisReply* r = at(i);
        if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
            throw BadReply("element " + std::to_string(i) + " is not a string");
        }
        return {r->str, r->len};
    }
    [[nodiscard]] std::int64_t integer(std::size_t i) const {
        const redisReply* r = at(i);
        if (r->type != REDIS_REPLY_INTEGER)
            throw BadReply("element " + std::to_string(i) + " is not an integer");
        return static_cast<std::int64_t>(r->integer);
    }
    [[nodiscard]] Reader array(std::size_t i) const { return Reader(at(i)); }
    [[nodiscard]] std::vector<std::string> texts(std::size_t i) const {
        const Reader list = array(i);
        std::vector<std::string> out;
        out.reserve(list.size());
        for (std::size_t k = 0; k < list.size(); ++k) out.push_back(list.text(k));
        return out;
    }

private:
    const redisReply* reply_;
};

errc errc_named(const std::string& name) {
    static const std::map<std::string, errc> names = [] {
        std::map<std::string, errc> m;
        for (errc e : all_errcs) m.emplace(to_string(e), e);
        return m;
    }();
    auto it = names.find(name);
    if (it == names.end()) throw BadReply("unknown refusal code " + name);
    return it->second;
}

// {0, code, detail, items, limit, current}: a refusal, as the in-process backends build it.
Failure refusal(const Reader& r) {
    Failure f(errc_named(r.text(1)), r.text(2), r.texts(3));
    f.limit = r.integer(4);
    f.current = r.integer(5);
    return f;
}

Order read_order(const Reader& r, const std::string& event) {
    // {1, id, holder, zone, {seats}, token, paid_at, cancelled}
    return Order{r.text(1),  event,     r.text(2),          r.text(3),
                 r.texts(4), r.text(5), wall(r.integer(6)), r.integer(7) != 0};
}

// Whether `reply` is an error whose message starts with `prefix`.
bool is_error(const redisReply& reply, std::string_view prefix) {
    return reply.type == REDIS_REPLY_ERROR &&
           std::string_view(reply.str, reply.len).substr(0, prefix.size()) == prefix;
}

// What event_create.lua answers: {1, spec_json, created, shown}.
struct Stored {
    std::string spec_json;
    bool created = false;
    bool shown = false;
};

// One FCALL, and how its reply reads (error replies are mapped before `read` sees one).
template <typename T>
struct Call {
    const Script* script = nullptr;
    std::vector<std::string> keys;
    std::vector<std::string> args;
    std::function<Result<T>(const redisReply*)> read;
};

// The usual reading: {1, ...} read by `read`, or a refusal {0, code, ...}.
template <typename T, typename F>
std::function<Result<T>(const redisReply*)> standard(const Script& script, F read) {
    return [name = script.name, read = std::move(read)](const redisReply* reply) -> Result<T> {
        try {
            const Reader r(reply);
            if (r.integer(0) == 0) return refusal(r);
            if constexpr (std::is_void_v<T>) {
                read(r);
                return {};
            } else {
                return read(r);
            }
        } catch (const BadReply& e) {
            return Failure(errc::protocol_error, "unexpected reply from Redis script " +
                                                     std::string(name) + ": " + e.what());
        }
    };
}

// The reading of a call that answers a bare 1 when done (release), or a refusal.
std::function<Result<void>(const redisReply*)> done_or_refusal(const Script& script) {
    return [read = standard<void>(script, [](const Reader&) {})](const redisReply* reply) {
        if (reply && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1) return Result<void>{};
        return read(reply);
    };
}

// The reading of lock_release and lock_extend: 1 or 0.
std::function<Result<bool>(const redisReply*)> flag(const Script& script) {
    return [name = script.name](const redisReply* reply) -> Result<bool> {
        if (reply && reply->type == REDIS_REPLY_INTEGER && (reply->integer == 0 || reply->integer == 1))
            return reply->integer == 1;
        return Failure(errc::protocol_error, "unexpected reply from Redis script " +
                                                 std::string(name) + ": not 0 or 1");
    };
}

template <typename T>
Call<T> make_call(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                  std::function<Result<T>(const redisReply*)> read) {
    return Call<T>{&script, std::move(keys), std::move(args), std::move(read)};
}

// A reply, or the failure an error reply stands for.
Result<ReplyPtr> mapped(Result<ReplyPtr> reply, std::string_view what) {
    if (reply && (*reply)->type == REDIS_REPLY_ERROR) {
        return redis_detail::error_reply_failure(std::string_view((*reply)->str, (*reply)->len),
                                                 what);
    }
    return reply;
}

template <typename T>
using Done = std::shared_ptr<detail::Completion<T>>;

template <typename T>
Done<T> shared(detail::Completion<T> done) {
    return std::make_shared<detail::Completion<T>>(std::move(done));
}

// Replica-acknowledged writes (RedisOptions::replicas_to_ack): the scripts whose success a
// caller acts on, each followed by WAIT. Reads, the expiry sweep and its acknowledgements
// are not: losing them in a failover loses nothing a caller was told.
bool waits_for_replicas(const Script& script) {
    for (const Script* s : {&redis_scripts::hold, &redis_scripts::confirm, &redis_scripts::release,
                            &redis_scripts::extend, &redis_scripts::cancel,
                            &redis_scripts::restore_order, &redis_scripts::event_create,
                            &redis_scripts::event_show, &redis_scripts::lock_acquire,
                            &redis_scripts::lock_release, &redis_scripts::lock_extend,
                            &redis_scripts::lock_fence}) {
        if (s == &script) return true;
    }
    return false;
}

// Whether `reply` is a script's success, worth a WAIT: {1, ...}, or a positive bare
// integer (lock_acquire's fencing token, the expiry of a new hold of named seats, the 1 of
// release, lock_release and lock_extend). Not a refusal ({0, ...}), a lock no longer held
// (0), nor lock_acquire's busy keys (an array of their indexes): those changed nothing.
bool applied(const Script& script, const Result<ReplyPtr>& reply) {
    if (!reply) return false;
    const redisReply& r = **reply;
    if (r.type == REDIS_REPLY_INTEGER) return r.integer > 0;
    return &script != &redis_scripts::lock_acquire && r.type == REDIS_REPLY_ARRAY &&
           r.elements > 0 && r.element[0]->type == REDIS_REPLY_INTEGER && r.element[0]->integer == 1;
}

// What WAIT said after one applied write.
struct Acks {
    bool asked = false;
    long long count = 0;  // replicas that acknowledged
    std::string trouble;  // why WAIT gave no count (no reply, or an error reply)

    void read(const Result<ReplyPtr>& reply) {
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
};

// What the applied write was, for the not_replicated failure: the caller learns what it
// holds or owns even though the call failed.
void describe(const Hold& h, Failure& f) {
    f.detail += " (hold " + h.token + " of " + detail::join(h.seats) + " in zone " + h.zone + ")";
    f.items = h.seats;
}
void describe(const Order& o, Failure& f) {
    f.detail += std::string(" (order ") + o.id + (o.cancelled ? ", cancelled," : "") + " of " +
                detail::join(o.seats) + " in zone " + o.zone + ")";
    f.items = o.seats;
}
void describe(std::uint64_t fencing_token, Failure& f) {
    f.detail += " (fencing token " + std::to_string(fencing_token) + ")";
}
template <typename T>
void describe(const T&, Failure&) {}

// `result` as the caller gets it: unchanged unless its write was applied and fewer than
// `wanted` replicas acknowledged it in time; then not_replicated, which says so.
template <typename T>
Result<T> replicated(Result<T> result, const Acks& acks, int wanted, Millis timeout,
                     std::string_view what) {
    if (!result || !acks.asked || (acks.trouble.empty() && acks.count >= wanted)) return result;
    Failure f(errc::not_replicated, std::string(what));
    if constexpr (!std::is_void_v<T>) describe(*result, f);
    f.detail += " was applied on the Redis primary, but ";
    f.detail += acks.trouble.empty()
                    ? std::to_string(acks.count) + " of " + std::to_string(wanted) +
                          " replicas acknowledged it within " + std::to_string(timeout.count()) +
                          " ms"
                    : "whether " + std::to_string(wanted) +
                          " replicas have it is unknown (WAIT: " + acks.trouble + ")";
    f.detail +=
        ": it may be lost if the primary fails before its replicas catch up. It is not undone: "
        "treat it as done, keep your own record of it to restore after a failover, and check "
        "the replicas; sending the call again is safe but does not prove replication";
    f.limit = wanted;
    f.current = acks.trouble.empty() ? acks.count : -1;
    return f;
}

}  // namespace

struct RedisBackend::Impl {
    Impl(RedisOptions o, std::vector<boost::asio::any_io_executor> executors)
        : options(std::move(o)),
          keys(options.prefix),
          pool(options),
          external_io(std::move(executors)) {
        if (!options.cluster_nodes.empty())
            cluster = std::make_unique<redis_detail::ClusterRouter>(options);
        if (!options.sentinels.empty())
            sentinel = std::make_unique<redis_detail::SentinelRouter>(options);
    }

    ~Impl() {
        // The pipelines complete every pending call first; then the I/O thread ends.
        pipelines.clear();
        std::map<std::string, std::shared_ptr<redis_detail::Pipeline>> primaries;
        {
            std::lock_guard lock(primary_pipelines_mutex);
            closing = true;  // a call sent again from here on fails instead
            primaries.swap(primary_pipelines);
        }
        primaries.clear();
        if (io_thread.joinable()) {
            work.reset();
            // On a cluster, calls pausing on a timer (TRYAGAIN) still end, with io_error,
            // within that pause: the I/O thread runs until they have.
            if (!cluster) io.stop();
            io_thread.join();
        }
    }

    RedisOptions options;
    redis_detail::KeyLayout keys;
    redis_detail::ConnectionPool pool;  // one server (unused on a cluster)
    std::unique_ptr<redis_detail::ClusterRouter> cluster;  // set on a Redis Cluster
    std::unique_ptr<redis_detail::SentinelRouter> sentinel;  // set behind Redis Sentinel

    // The asynchronous path: pipelined connections on an I/O thread of the backend's own,
    // started by the first asynchronous call. Callers' handlers run on their own
    // executors; this thread only writes, reads and parses.
    boost::asio::io_context io{1};
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
    std::thread io_thread;
    // Given by the caller (one server, not behind Sentinel): the pipelines run there, and no
    // thread is started. With several, each runs async_connections pipelines of its own.
    std::vector<boost::asio::any_io_executor> external_io;
    std::once_flag started;
    std::vector<std::unique_ptr<redis_detail::Pipeline>> pipelines;  // one server
    std::atomic<std::size_t> next_pipeline{0};
    // On a cluster: one pipeline per primary, by "host:port", made by the first call there.
    std::mutex primary_pipelines_mutex;  // guards what follows
    std::map<std::string, std::shared_ptr<redis_detail::Pipeline>> primary_pipelines;
    bool closing = false;

    void start_io() {
        std::call_once(started, [this] {
            if (!external_io.empty() && !cluster && !sentinel) {
                for (const auto& executor : external_io) {
                    for (std::size_t i = 0; i < options.async_connections; ++i) {
                        pipelines.push_back(
                            std::make_unique<redis_detail::Pipeline>(executor, options));
                    }
                }
                return;
            }
            if (!cluster && !sentinel) {
                for (std::size_t i = 0; i < options.async_connections; ++i) {
                    pipelines.push_back(
                        std::make_unique<redis_detail::Pipeline>(io.get_executor(), options));
                }
            }
            work.emplace(io.get_executor());
            io_thread = std::thread([this] { io.run(); });
        });
    }

    // The pipeline the next call goes on. Behind Sentinel: the primary's (found first when
    // needed, on the caller's thread: never on the I/O thread, which only takes the one
    // known), and `done` learns to have the primary found again when its answer is a sign
    // of a failover. Null when there is none: `done` was then told why.
    redis_detail::Pipeline* pipeline(redis_detail::Pipeline::Callback& done) {
        start_io();
        if (!sentinel) {
            // The pipelines to choose from: all, or, for a caller on one of several
            // executors' threads, that executor's own.
            std::size_t first = 0;
            std::size_t count = pipelines.size();
            if (external_io.size() > 1) {
                for (std::size_t e = 0; e < external_io.size(); ++e) {
                    if (runs_here(external_io[e])) {
                        count = options.async_connections;
                        first = e * count;
                        break;
                    }
                }
            }
            // Turns are taken only among several: one pipeline needs no shared counter.
            const auto turn =
                count == 1 ? 0 : next_pipeline.fetch_add(1, std::memory_order_relaxed);
            return pipelines[first + turn % count].get();
        }
        using Primary = redis_detail::SentinelRouter::Primary;
        Result<Primary> primary = Failure(errc::connection_failed, "no Redis primary known yet");
        if (!io.get_executor().running_in_this_thread()) {
            primary = sentinel->primary();
        } else if (auto known = sentinel->known()) {
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
        done = [router = sentinel.get(), generation = primary->generation,
                done = std::move(done)](Result<ReplyPtr> reply) {
            if (redis_detail::SentinelRouter::signals_failover(reply)) router->suspect(generation);
            done(std::move(reply));
        };
        return p.get();  // kept in primary_pipelines until the backend is destroyed
    }

    // The pipeline to a cluster node; null once the backend is being destroyed.
    std::shared_ptr<redis_detail::Pipeline> pipeline_at(const std::string& host, int port) {
        std::lock_guard lock(primary_pipelines_mutex);
        if (closing) return nullptr;
        auto& p = primary_pipelines[host + ":" + std::to_string(port)];
        if (!p) {
            RedisOptions o = options;
            o.host = host;
            o.port = port;
            p = std::make_shared<redis_detail::Pipeline>(io.get_executor(), std::move(o));
        }
        return p;
    }

    // One asynchronous call on a cluster, as the ClusterRouter's Route steers it: `send`
    // puts it on a node's pipeline (ASKING first when asked), `done` gets the answer.
    struct ClusterCall {
        ClusterCall(redis_detail::ClusterRouter& router, std::optional<std::uint16_t> slot,
                    std::string what, boost::asio::io_context& io)
            : route(router, slot, std::move(what), false), timer(io) {}
        redis_detail::ClusterRouter::Route route;
        std::function<void(redis_detail::Pipeline&, bool asking, redis_detail::Pipeline::Callback)> send;
        redis_detail::Pipeline::Callback done;
        boost::asio::steady_timer timer;  // TRYAGAIN pauses, off the I/O thread's back
    };

    void route(std::span<const std::string> keys_, std::string what,
               std::function<void(redis_detail::Pipeline&, bool, redis_detail::Pipeline::Callback)> send,
               redis_detail::Pipeline::Callback done) {
        auto slot = redis_detail::common_slot(keys_);
        if (!slot) return done(std::move(slot).error());
        start_io();
        // The map is refreshed on callers' threads only: CLUSTER SLOTS blocks.
        if (!io.get_executor().running_in_this_thread()) {
            if (auto fresh = cluster->prepare(); !fresh) return done(std::move(fresh).error());
        }
        auto call = std::make_shared<ClusterCall>(*cluster, *slot, std::move(what), io);
        call->send = std::move(send);
        call->done = std::move(done);
        send_on_cluster(std::move(call));
    }

    void send_on_cluster(std::shared_ptr<ClusterCall> call) {
        auto next = call->route.next();
        if (!next) return call->done(call->route.failure());
        auto p = pipeline_at(next->host, next->port);
        if (!p) {
            return call->done(Failure(errc::io_error, call->route.failure().detail +
                                                          ": the backend was closed before it was sent"));
        }
        call->send(*p, next->asking, [this, call](Result<ReplyPtr> reply) {
            using Verdict = redis_detail::ClusterRouter::Route::Verdict;
            switch (call->route.after(reply)) {
                case Verdict::answer:
                    return call->done(std::move(reply));
                case Verdict::again:
                    return send_on_cluster(call);
                case Verdict::pause:
                    call->timer.expires_after(call->route.pause());
                    call->timer.async_wait([this, call](boost::system::error_code) {
                        send_on_cluster(call);
                    });
                    return;
                case Verdict::give_up:
                    return call->done(call->route.failure());
            }
        });
    }

    // The four keys every hold script receives first (lua/common.lua, check_keys).
    std::vector<std::string> event_keys(const std::string& event) const {
        std::vector<std::string> out;
        for (const char* kind : {"event", "paid", "deadlines", "expired"}) {
            out.push_back(keys.event_key(kind, event));
        }
        return out;
    }

    // One command on `lease`, after ASKING when a Cluster's ASK redirection says so.
    static Result<ReplyPtr> send(redis_detail::ConnectionPool::Lease& lease,
                                 std::span<const std::string_view> argv, bool asking) {
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
    static Result<ReplyPtr> fcall(redis_detail::ConnectionPool::Lease& lease,
                                  std::span<const std::string_view> argv, bool asking) {
        auto reply = send(lease, argv, asking);
        // Twice at most: a FUNCTION FLUSH may land between the load and the call.
        for (int tries = 0; tries < 2 && reply && is_error(**reply, "ERR Function not found");
             ++tries) {
            const std::vector<std::string_view> load{"FUNCTION", "LOAD", redis_scripts::library};
            auto loaded = lease.command(load);
            if (!loaded) return loaded;
            if ((*loaded)->type == REDIS_REPLY_ERROR && !is_error(**loaded, "ERR Library")) {
                return redis_detail::error_reply_failure(
                    std::string_view((*loaded)->str, (*loaded)->len),
                    "Redis FUNCTION LOAD " + std::string(redis_scripts::library_name));
            }
            reply = send(lease, argv, asking);
        }
        return reply;
    }

    // Sends `attempt` to the one server, or to the Cluster node serving `keys_`.
    Result<ReplyPtr> dispatch(std::span<const std::string> keys_, std::string_view what,
                              const redis_detail::ClusterRouter::Attempt& attempt) {
        if (cluster) {
            auto slot = redis_detail::common_slot(keys_);
            if (!slot) return std::move(slot).error();
            return cluster->run(*slot, what, attempt);
        }
        if (sentinel) {
            return sentinel->run(
                what, [&](redis_detail::ConnectionPool::Lease& lease) { return attempt(lease, false); });
        }
        auto lease = pool.lease();
        if (!lease) return std::move(lease).error();
        return attempt(*lease, false);
    }

    // WAIT's arguments, when `script`'s writes wait for replicas; empty otherwise.
    std::vector<std::string> wait_argv(const Script& script) const {
        if (options.replicas_to_ack <= 0 || !waits_for_replicas(script)) return {};
        return {"WAIT", std::to_string(options.replicas_to_ack),
                std::to_string(options.replica_ack_timeout.count())};
    }

    // Runs one operation: FCALL of its library function (loaded when missing); then, when
    // it applied a write that waits for replicas, WAIT on the same connection into `acks`.
    Result<ReplyPtr> run(const Script& script, const std::vector<std::string>& keys_,
                         const std::vector<std::string>& args, Acks& acks) {
        const std::string key_count = std::to_string(keys_.size());
        std::vector<std::string_view> argv{"FCALL", script.function, key_count};
        argv.reserve(3 + keys_.size() + args.size());
        for (const auto& k : keys_) argv.emplace_back(k);
        for (const auto& a : args) argv.emplace_back(a);
        const std::vector<std::string> wait = wait_argv(script);
        const std::vector<std::string_view> wait_view(wait.begin(), wait.end());
        const std::string what = "Redis script " + std::string(script.name);
        auto reply = dispatch(keys_, what, [&](redis_detail::ConnectionPool::Lease& lease,
                                               bool asking) {
            auto r = fcall(lease, argv, asking);
            if (!wait.empty() && applied(script, r)) acks.read(lease.command(wait_view));
            return r;
        });
        return mapped(std::move(reply), what);
    }

    // Blocking calls in flight, on either path (perform).
    std::atomic<int> blocking_in_flight{0};

    // A Call, the blocking way: on a pooled connection when it is the only blocking call
    // in flight, else (RedisOptions::pipeline_blocking_calls) on the pipelined
    // connections, waiting for their answer, so that the calls of many threads share
    // writes and reads.
    template <typename T>
    Result<T> perform(const Call<T>& call) {
        struct InFlight {
            std::atomic<int>& count;
            ~InFlight() { count.fetch_sub(1, std::memory_order_relaxed); }
        };
        const bool others = blocking_in_flight.fetch_add(1, std::memory_order_relaxed) > 0;
        const InFlight in_flight{blocking_in_flight};
        if (others && options.pipeline_blocking_calls && external_io.empty() &&
            !io.get_executor().running_in_this_thread()) {
            std::promise<Result<T>> answer;
            auto future = answer.get_future();
            start(Call<T>(call), [&answer](Result<T> r) { answer.set_value(std::move(r)); });
            return future.get();
        }
        Acks acks;
        auto reply = run(*call.script, call.keys, call.args, acks);
        if (!reply) return std::move(reply).error();
        return replicated(call.read(reply->get()), acks, options.replicas_to_ack,
                          options.replica_ack_timeout, call.script->name);
    }
    template <typename T>
    Result<T> perform(Result<Call<T>> call) {
        if (!call) return std::move(call).error();
        return perform(*call);
    }

    // A Call, the asynchronous way: `then` gets its result on the I/O thread (on a
    // cluster, a call refused before it is sent gets it on the caller's thread).
    template <typename T, typename Then>
    void start(Call<T> call, Then then) {
        const Script& script = *call.script;
        auto read = std::move(call.read);
        auto acks = std::make_shared<Acks>();
        redis_detail::Pipeline::Callback done =
            [name = script.name, read = std::move(read), acks, wanted = options.replicas_to_ack,
             timeout = options.replica_ack_timeout,
             then = std::make_shared<Then>(std::move(then))](Result<ReplyPtr> reply) {
                auto r = mapped(std::move(reply), "Redis script " + std::string(name));
                if (!r) return (*then)(Result<T>(std::move(r).error()));
                (*then)(replicated(read(r->get()), *acks, wanted, timeout, name));
            };
        auto wait = std::make_shared<const std::vector<std::string>>(wait_argv(script));
        if (cluster) {
            // The keys are read for the slot before they move into the sender.
            auto keys_ = std::make_shared<std::vector<std::string>>(std::move(call.keys));
            auto args = std::make_shared<std::vector<std::string>>(std::move(call.args));
            return route(*keys_, "Redis script " + std::string(script.name),
                         [&script, keys_, args, wait, acks](redis_detail::Pipeline& p, bool asking,
                                                             redis_detail::Pipeline::Callback cb) {
                             p.fcall(script, *keys_, *args,
                                     then_wait(p, script, wait, acks, std::move(cb)), asking);
                         },
                         std::move(done));
        }
        auto* target = pipeline(done);
        if (!target) return;  // done was told why
        auto& p = *target;
        p.fcall(script, std::move(call.keys), std::move(call.args),
                then_wait(p, script, wait, acks, std::move(done)));
    }

    // `done`, called after WAIT on `p` (the write's own connection) when the reply is an
    // applied write and `wait` is not empty; WAIT's answer goes to `acks`.
    static redis_detail::Pipeline::Callback then_wait(
        redis_detail::Pipeline& p, const Script& script,
        std::shared_ptr<const std::vector<std::string>> wait, std::shared_ptr<Acks> acks,
        redis_detail::Pipeline::Callback done) {
        if (wait->empty()) return done;
        return [&p, &script, wait, acks, done = std::move(done)](Result<ReplyPtr> reply) {
            if (!applied(script, reply)) return done(std::move(reply));
            auto kept = std::make_shared<Result<ReplyPtr>>(std::move(reply));
            p.exec(*wait, [acks, kept, done](Result<ReplyPtr> acked) {
                acks->read(acked);
                done(std::move(*kept));
            });
        };
    }
    template <typename T>
    void start(Result<Call<T>> call, detail::Completion<T> done) {
        if (!call) return done(std::move(call).error());
        start(std::move(*call), std::move(done));
    }

    // One plain command (not a script) on `key` (the command's only key), with its error
    // reply mapped.
    Result<ReplyPtr> plain(std::vector<std::string_view> argv, const std::string& key) {
        const std::string what = "Redis " + std::string(argv.front());
        const std::span<const std::string> keys_(&key, 1);
        return mapped(dispatch(keys_, what,
                               [&](redis_detail::ConnectionPool::Lease& lease, bool asking) {
                                   return send(lease, argv, asking);
                               }),
                      what);
    }
    // The asynchronous plain command: argv[1] is its only key.
    template <typename Then>
    void start_plain(std::vector<std::string> argv, Then then) {
        std::string what = "Redis " + argv.front();
        redis_detail::Pipeline::Callback done =
            [what, then = std::make_shared<Then>(std::move(then))](Result<ReplyPtr> reply) {
                (*then)(mapped(std::move(reply), what));
            };
        if (cluster) {
            auto command = std::make_shared<std::vector<std::string>>(std::move(argv));
            return route(std::span<const std::string>(command->data() + 1, 1), std::move(what),
                         [command](redis_detail::Pipeline& p, bool asking,
                                   redis_detail::Pipeline::Callback cb) {
                             p.exec(*command, std::move(cb), asking);
                         },
                         std::move(done));
        }
        if (auto* p = pipeline(done)) p->exec(std::move(argv), std::move(done));
    }

    // ------------------------------------------------------------------------------
    // The Calls.

    // On a Redis Cluster each lock group is one hash slot, and one call cannot span two:
    // a lock over keys of different groups is refused before anything is sent (even when
    // two groups happen to share a slot, so that the answer never depends on hashing).
    Result<void> one_group(std::span<const std::string> ks) const {
        if (!cluster || ks.empty()) return {};
        const std::string first = redis_detail::KeyLayout::lock_tag(ks.front());
        for (const auto& key : ks) {
            if (redis_detail::KeyLayout::lock_tag(key) != first) {
                return Failure(errc::invalid_argument,
                               "lock keys " + ks.front() + " and " + key +
                                   " are in different groups, which a Redis Cluster keeps in "
                                   "different hash slots: lock together only keys of one group");
            }
        }
        return {};
    }

    std::vector<std::string> lock_keys(std::span<const std::string> ks) const {
        std::vector<std::string> out;
        out.reserve(ks.size());
        for (const auto& key : ks) out.push_back(keys.lock_key(key));
        return out;
    }

    Result<Call<std::uint64_t>> acquire_call(std::span<const std::string> ks, const std::string& owner,
                                             Millis lease) const {
        if (ks.empty()) return Failure(errc::invalid_argument, "no key to lock");
        std::vector<std::string> redis_keys = lock_keys(ks);
        std::vector<std::string> fences;
        for (const auto& key : ks) {
            std::string fence = keys.fence_key(key);
            if (std::find(fences.begin(), fences.end(), fence) == fences.end())
                fences.push_back(std::move(fence));
        }
        redis_keys.insert(redis_keys.end(), fences.begin(), fences.end());
        std::vector<std::string> names(ks.begin(), ks.end());
        return make_call<std::uint64_t>(
            redis_scripts::lock_acquire, std::move(redis_keys),
            {owner, ms(std::max(lease, Millis(1))), std::to_string(ks.size())},
            [names = std::move(names)](const redisReply* reply) -> Result<std::uint64_t> {
                try {
                    // The fencing token, or the indexes of the keys held by others.
                    if (reply && reply->type == REDIS_REPLY_INTEGER) {
                        if (reply->integer < 1) throw BadReply("fencing token below 1");
                        return static_cast<std::uint64_t>(reply->integer);
                    }
                    const Reader busy(reply);
                    if (busy.size() == 0) throw BadReply("no busy key");
                    std::vector<std::string> held;
                    for (std::size_t i = 0; i < busy.size(); ++i) {
                        const auto index = busy.integer(i);
                        if (index < 1 || static_cast<std::size_t>(index) > names.size())
                            throw BadReply("bad key index");
                        held.push_back(names[static_cast<std::size_t>(index - 1)]);
                    }
                    return detail::keys_busy(std::move(held));
                } catch (const BadReply& e) {
                    return Failure(errc::protocol_error,
                                   std::string("unexpected reply from Redis script lock_acquire: ") +
                                       e.what());
                }
            });
    }

    Call<bool> release_call(std::span<const std::string> ks, const std::string& owner) const {
        return make_call<bool>(redis_scripts::lock_release, lock_keys(ks), {owner},
                               flag(redis_scripts::lock_release));
    }

    Call<bool> extend_locks_call(std::span<const std::string> ks, const std::string& owner,
                                 Millis lease) const {
        return make_call<bool>(redis_scripts::lock_extend, lock_keys(ks),
                               {owner, ms(std::max(lease, Millis(1)))},
                               flag(redis_scripts::lock_extend));
    }

    Result<Call<void>> fence_call(std::string_view key, std::uint64_t at_least) const {
        if (!is_valid_lock_key(key)) return Failure(errc::invalid_argument, "invalid lock key");
        return make_call<void>(redis_scripts::lock_fence, {keys.fence_key(key)},
                               {std::to_string(at_least)},
                               standard<void>(redis_scripts::lock_fence, [](const Reader&) {}));
    }

    Call<Stored> store_call(const EventSpec& spec, bool hidden) const;
    Result<Call<std::string>> show_call(const std::string& event) const;
    Call<Order> restore_call(const RestoreCommand& cmd) const;
    Call<std::vector<EventSpec>> events_call() const;
    Call<Hold> hold_call(const HoldCommand& cmd) const;
    Result<Call<Order>> confirm_call(const ConfirmCommand& cmd) const;
    Result<Call<void>> release_hold_call(const std::string& token) const;
    Result<Call<Hold>> extend_call(const std::string& token, Millis ttl, Millis max_lifetime) const;
    Result<Call<Order>> cancel_call(const std::string& event, const std::string& order_id,
                                    const std::optional<std::string>& holder) const;
    Result<Call<std::vector<ZoneState>>> seats_call(const std::string& event,
                                                    const std::optional<std::string>& zone) const;
    Call<std::vector<ExpiredHold>> expired_call(const std::string& event, std::size_t limit,
                                                Millis redeliver_after) const;
    Call<void> ack_call(const std::string& event, const std::vector<std::string>& tokens) const;

    // ------------------------------------------------------------------------------
    // Operations of more than one command, both ways.

    // An event, then its index entry when it is shown (the index is what events() and
    // expired() walk; creating the same spec again repairs it if this step was lost).
    Result<bool> store_event(const EventSpec& spec, bool hidden) {
        auto stored = perform(store_call(spec, hidden));
        if (!stored) return std::move(stored).error();
        if (stored->shown) {
            auto indexed = plain({"HSET", keys.events_index(), spec.id, stored->spec_json},
                                 keys.events_index());
            if (!indexed) return std::move(indexed).error();
        }
        return stored->created;
    }
    void start_store_event(const EventSpec& spec, bool hidden, detail::Completion<bool> done) {
        start(store_call(spec, hidden),
              [this, id = spec.id, done = shared(std::move(done))](Result<Stored> stored) {
                  if (!stored) return (*done)(std::move(stored).error());
                  if (!stored->shown) return (*done)(stored->created);
                  start_plain({"HSET", keys.events_index(), id, stored->spec_json},
                              [done, created = stored->created](Result<ReplyPtr> indexed) {
                                  if (!indexed) return (*done)(std::move(indexed).error());
                                  (*done)(created);
                              });
              });
    }

    Result<void> show_event(const std::string& event) {
        auto spec_json = perform(show_call(event));
        if (!spec_json) return std::move(spec_json).error();
        auto indexed = plain({"HSET", keys.events_index(), event, *spec_json}, keys.events_index());
        if (!indexed) return std::move(indexed).error();
        return {};
    }
    void start_show_event(const std::string& event, detail::Completion<void> done) {
        auto call = show_call(event);
        if (!call) return done(std::move(call).error());
        start(std::move(*call), [this, event, done = shared(std::move(done))](Result<std::string> json) {
            if (!json) return (*done)(std::move(json).error());
            start_plain({"HSET", keys.events_index(), event, *json}, [done](Result<ReplyPtr> indexed) {
                if (!indexed) return (*done)(std::move(indexed).error());
                (*done)({});
            });
        });
    }

    static Result<std::vector<std::string>> event_ids(const Result<ReplyPtr>& ids) {
        if (!ids) return ids.error();
        std::vector<std::string> events;
        try {
            const Reader list(ids->get());
            for (std::size_t i = 0; i < list.size(); ++i) events.push_back(list.text(i));
        } catch (const BadReply& e) {
            return Failure(errc::protocol_error, std::string("unexpected reply to HKEYS: ") + e.what());
        }
        std::sort(events.begin(), events.end());
        return events;
    }

    // Every event is swept in its own script (its own Cluster slot), until `limit` is met.
    Result<std::vector<ExpiredHold>> expired(std::size_t limit, Millis redeliver_after) {
        std::vector<ExpiredHold> out;
        if (limit == 0) return out;
        auto events = event_ids(plain({"HKEYS", keys.events_index()}, keys.events_index()));
        if (!events) return std::move(events).error();
        for (const auto& event : *events) {
            if (out.size() >= limit) break;
            auto batch = perform(expired_call(event, limit - out.size(), redeliver_after));
            if (!batch) return std::move(batch).error();
            for (auto& e : *batch) out.push_back(std::move(e));
        }
        return out;
    }

    struct ExpiredWalk {
        std::vector<std::string> events;
        std::size_t next = 0;
        std::size_t limit = 0;
        Millis redeliver_after{};
        std::vector<ExpiredHold> out;
        detail::Completion<std::vector<ExpiredHold>> done;
    };
    void start_expired(std::size_t limit, Millis redeliver_after,
                       detail::Completion<std::vector<ExpiredHold>> done) {
        if (limit == 0) return done(std::vector<ExpiredHold>{});
        auto walk = std::make_shared<ExpiredWalk>();
        walk->limit = limit;
        walk->redeliver_after = redeliver_after;
        walk->done = std::move(done);
        start_plain({"HKEYS", keys.events_index()}, [this, walk](Result<ReplyPtr> ids) {
            auto events = event_ids(ids);
            if (!events) return walk->done(std::move(events).error());
            walk->events = std::move(*events);
            step_expired(walk);
        });
    }
    void step_expired(const std::shared_ptr<ExpiredWalk>& walk) {
        if (walk->next >= walk->events.size() || walk->out.size() >= walk->limit) {
            return walk->done(std::move(walk->out));
        }
        const std::string& event = walk->events[walk->next++];
        start(expired_call(event, walk->limit - walk->out.size(), walk->redeliver_after),
              [this, walk](Result<std::vector<ExpiredHold>> batch) {
                  if (!batch) return walk->done(std::move(batch).error());
                  for (auto& e : *batch) walk->out.push_back(std::move(e));
                  step_expired(walk);
              });
    }

    // One script per event; malformed tokens name no hold and are as acknowledged as they
    // can be, like in the in-process backends.
    static std::vector<std::pair<std::string, std::vector<std::string>>> by_event(
        std::span<const std::string> tokens) {
        std::map<std::string, std::vector<std::string>> grouped;
        for (const auto& token : tokens) {
            const std::string_view event = token_event(token);
            if (!event.empty()) grouped[std::string(event)].push_back(token);
        }
        return {grouped.begin(), grouped.end()};
    }
    Result<void> ack_expired(std::span<const std::string> tokens) {
        for (const auto& [event, list] : by_event(tokens)) {
            if (auto done = perform(ack_call(event, list)); !done) return done;
        }
        return {};
    }
    void start_ack(std::shared_ptr<std::vector<std::pair<std::string, std::vector<std::string>>>> groups,
                   std::size_t next, Done<void> done) {
        if (next >= groups->size()) return (*done)({});
        const auto& [event, list] = (*groups)[next];
        start(ack_call(event, list), [this, groups, next, done](Result<void> acked) {
            if (!acked) return (*done)(std::move(acked));
            start_ack(groups, next + 1, done);
        });
    }
};

namespace {

Result<void> check_options(const RedisOptions& o) {
    auto bad = [](const std::string& why) {
        return Failure(errc::invalid_argument, "RedisOptions: " + why);
    };
    if (!o.unix_socket.empty()) {
        // sockaddr_un's path holds 108 bytes, the terminating NUL included.
        if (o.unix_socket.size() > redis_detail::max_unix_socket_path ||
            o.unix_socket.find('\0') != std::string::npos) {
            return bad("unix_socket must be a path of at most " +
                       std::to_string(redis_detail::max_unix_socket_path) + " bytes, without NUL");
        }
        if (!o.cluster_nodes.empty() || !o.sentinels.empty()) {
            return bad("unix_socket names one server: not with cluster_nodes or sentinels");
        }
    } else {
        if (o.host.empty()) return bad("host is empty");
        if (o.port <= 0 || o.port > 65535) return bad("port must be 1 to 65535");
    }
    if (o.db < 0) return bad("db must not be negative");
    if (o.pool_size == 0) return bad("pool_size must be at least 1");
    if (o.async_connections == 0) return bad("async_connections must be at least 1");
    for (const auto& node : o.cluster_nodes) {
        if (node.host.empty()) return bad("a cluster node's host is empty");
        if (node.port <= 0 || node.port > 65535) return bad("cluster node ports must be 1 to 65535");
    }
    if (!o.cluster_nodes.empty() && o.db != 0) return bad("a Redis Cluster has only db 0");
    for (const auto& node : o.sentinels) {
        if (node.host.empty()) return bad("a sentinel's host is empty");
        if (node.port <= 0 || node.port > 65535) return bad("sentinel ports must be 1 to 65535");
    }
    if (!o.sentinels.empty()) {
        if (!o.cluster_nodes.empty()) return bad("cluster_nodes and sentinels exclude each other");
        const bool word = std::all_of(o.sentinel_service.begin(), o.sentinel_service.end(),
                                      [](char c) { return c > ' ' && c != '\x7f'; });
        if (o.sentinel_service.empty() || !word)
            return bad("sentinel_service must name the service, without spaces");
        if (o.discovery_timeout <= Millis(0)) return bad("discovery_timeout must be positive");
    }
    if (o.connect_timeout <= Millis(0) || o.command_timeout <= Millis(0)) {
        return bad("connect_timeout and command_timeout must be positive");
    }
    if (o.replicas_to_ack < 0) return bad("replicas_to_ack must not be negative");
    if (o.replicas_to_ack > 0 &&
        (o.replica_ack_timeout <= Millis(0) || o.replica_ack_timeout >= o.command_timeout)) {
        return bad("replica_ack_timeout must be positive and shorter than command_timeout "
                   "(WAIT 0 would wait for ever)");
    }
    const bool printable = std::all_of(o.prefix.begin(), o.prefix.end(), is_key_char);
    if (o.prefix.empty() || o.prefix.size() > 128 || !printable) {
        return bad("prefix must be 1 to 128 printable characters without space, { or }");
    }
    return {};
}

// Zone kinds as the scripts store and report them: their to_string names.
ZoneKind kind_of(std::string_view text) {
    return text == to_string(ZoneKind::general_admission) ? ZoneKind::general_admission
                                                          : ZoneKind::named;
}

HoldStatus status_named(const std::string& text) {
    if (text == "held") return HoldStatus::held;
    if (text == "confirmed") return HoldStatus::confirmed;
    if (text == "released") return HoldStatus::released;
    if (text == "expired") return HoldStatus::expired;
    throw BadReply("unknown hold status " + text);
}

// The event of a hold token; the same refusal as the in-process backends when malformed.
Result<std::string> event_of(const std::string& token) {
    const std::string_view event = token_event(token);
    if (event.empty()) return Failure(errc::unknown_hold, "malformed hold token");
    return std::string(event);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The Calls of the inventory, holds and orders.

Call<Stored> RedisBackend::Impl::store_call(const EventSpec& spec, bool hidden) const {
    std::vector<std::string> ks{keys.event_key("event", spec.id)};
    std::vector<std::string> args{keys.prefix(), spec.id, spec.name, std::to_string(spec.zones.size())};
    for (const auto& zone : spec.zones) {
        ks.push_back(keys.event_key("free", spec.id, zone.id));
        ks.push_back(keys.event_key("seats", spec.id, zone.id));
        args.push_back(zone.id);
        args.push_back(to_string(zone.kind));
        if (zone.kind == ZoneKind::general_admission) {
            args.push_back(std::to_string(zone.capacity));
            continue;
        }
        args.push_back(std::to_string(zone.seats.size()));
        for (const auto& seat : zone.seats) {
            args.push_back(seat.id);
            args.push_back(seat.row);
        }
    }
    if (hidden) args.emplace_back("hidden");
    return make_call<Stored>(redis_scripts::event_create, std::move(ks), std::move(args),
                             standard<Stored>(redis_scripts::event_create, [](const Reader& r) {
                                 return Stored{r.text(1), r.integer(2) == 1, r.integer(3) == 1};
                             }));
}

Result<Call<std::string>> RedisBackend::Impl::show_call(const std::string& event) const {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    return make_call<std::string>(redis_scripts::event_show, {keys.event_key("event", event)},
                                  {keys.prefix(), event},
                                  standard<std::string>(redis_scripts::event_show,
                                                        [](const Reader& r) { return r.text(1); }));
}

Call<Order> RedisBackend::Impl::restore_call(const RestoreCommand& cmd) const {
    auto ks = event_keys(cmd.event);
    ks.push_back(keys.event_key("free", cmd.event, cmd.zone));
    ks.push_back(keys.event_key("seats", cmd.event, cmd.zone));
    const auto paid_at = std::chrono::duration_cast<Millis>(cmd.paid_at.time_since_epoch());
    std::vector<std::string> args{keys.prefix(), cmd.event,   cmd.order_id,
                                  cmd.holder,    cmd.zone,    cmd.hold_token,
                                  ms(paid_at),   std::to_string(cmd.seats.size())};
    args.insert(args.end(), cmd.seats.begin(), cmd.seats.end());
    return make_call<Order>(
        redis_scripts::restore_order, std::move(ks), std::move(args),
        standard<Order>(redis_scripts::restore_order,
                        [event = cmd.event](const Reader& r) { return read_order(r, event); }));
}

Call<std::vector<EventSpec>> RedisBackend::Impl::events_call() const {
    using Out = std::vector<EventSpec>;
    return make_call<Out>(
        redis_scripts::events, {keys.events_index()}, {keys.prefix()},
        standard<Out>(redis_scripts::events, [](const Reader& r) {
            Out out;
            const Reader list = r.array(1);
            for (std::size_t i = 0; i < list.size(); ++i) {
                // {id, name, {{zone, kind, capacity, {seat ids}, {rows}}, ...}}
                const Reader e = list.array(i);
                EventSpec spec{e.text(0), e.text(1), {}};
                const Reader zones = e.array(2);
                for (std::size_t z = 0; z < zones.size(); ++z) {
                    const Reader zr = zones.array(z);
                    ZoneSpec zone;
                    zone.id = zr.text(0);
                    zone.kind = kind_of(zr.text(1));
                    zone.capacity = zr.integer(2);
                    const auto ids = zr.texts(3);
                    const auto rows = zr.texts(4);
                    if (ids.size() != rows.size()) throw BadReply("seats and rows differ in length");
                    for (std::size_t s = 0; s < ids.size(); ++s) zone.seats.push_back({ids[s], rows[s]});
                    spec.zones.push_back(std::move(zone));
                }
                out.push_back(std::move(spec));
            }
            std::sort(out.begin(), out.end(),
                      [](const EventSpec& a, const EventSpec& b) { return a.id < b.id; });
            return out;
        }));
}

Call<Hold> RedisBackend::Impl::hold_call(const HoldCommand& cmd) const {
    const auto& req = cmd.request;
    auto ks = event_keys(cmd.event);
    ks.push_back(keys.event_key("free", cmd.event, req.zone));
    ks.push_back(keys.event_key("seats", cmd.event, req.zone));
    const auto n =
        req.kind == HoldKind::seats ? static_cast<std::int64_t>(req.seats.size()) : req.quantity;
    std::vector<std::string> args{
        keys.prefix(),
        cmd.event,
        cmd.holder,
        cmd.token,
        req.zone,
        to_string(req.kind),
        std::to_string(n),
        ms(cmd.ttl),
        std::to_string(std::clamp<std::int64_t>(cmd.limits.max_seats_per_holder, 0, max_script_ms)),
        cmd.limits.one_active_hold_per_holder ? "1" : "0",
        cmd.idempotency_key};
    if (req.kind == HoldKind::seats) args.insert(args.end(), req.seats.begin(), req.seats.end());
    // The hold as made. A new hold of named seats is answered by its expiry alone (a bare
    // integer): its seats are the ones asked for.
    Hold made{cmd.token, cmd.event, cmd.holder, req.zone,
              req.kind == HoldKind::seats ? req.seats : std::vector<std::string>{},
              {}, HoldStatus::held, {}, false};
    auto read = standard<Hold>(redis_scripts::hold, [made](const Reader& r) {
        Hold hold = made;
        // {1, expires_ms, seats...} for a new hold of a quantity or the best available.
        if (r.at(1)->type == REDIS_REPLY_INTEGER) {
            hold.seats.clear();
            for (std::size_t i = 2; i < r.size(); ++i) hold.seats.push_back(r.text(i));
            if (hold.seats.empty()) throw BadReply("a hold of no seat");
            hold.expires_at = wall(r.integer(1));
            return hold;
        }
        // {1, zone, {seats}, expires_ms, status, order, replayed[, token]} for a remembered
        // one (its token, when replayed by its idempotency key).
        hold.zone = r.text(1);
        hold.seats = r.texts(2);
        hold.expires_at = wall(r.integer(3));
        if (r.size() > 4) {
            hold.status = status_named(r.text(4));
            hold.order_id = r.text(5);
            hold.replayed = r.integer(6) == 1;
            if (hold.replayed) hold.token = r.text(7);
        }
        return hold;
    });
    return make_call<Hold>(
        redis_scripts::hold, std::move(ks), std::move(args),
        [made = std::move(made), read = std::move(read)](const redisReply* reply) -> Result<Hold> {
            if (reply && reply->type == REDIS_REPLY_INTEGER && !made.seats.empty()) {
                Hold hold = made;
                hold.expires_at = wall(reply->integer);
                return hold;
            }
            return read(reply);
        });
}

Result<Call<Order>> RedisBackend::Impl::confirm_call(const ConfirmCommand& cmd) const {
    auto event = event_of(cmd.token);
    if (!event) return std::move(event).error();
    return make_call<Order>(
        redis_scripts::confirm, event_keys(*event),
        {keys.prefix(), *event, cmd.token, cmd.order_id, cmd.late ? "1" : "0",
         std::to_string(std::clamp<std::int64_t>(cmd.limits.max_seats_per_holder, 0, max_script_ms))},
        standard<Order>(redis_scripts::confirm,
                        [event = *event](const Reader& r) { return read_order(r, event); }));
}

Result<Call<void>> RedisBackend::Impl::release_hold_call(const std::string& token) const {
    auto event = event_of(token);
    if (!event) return std::move(event).error();
    return make_call<void>(redis_scripts::release, event_keys(*event), {keys.prefix(), *event, token},
                           done_or_refusal(redis_scripts::release));
}

Result<Call<Hold>> RedisBackend::Impl::extend_call(const std::string& token, Millis ttl,
                                                   Millis max_lifetime) const {
    auto event = event_of(token);
    if (!event) return std::move(event).error();
    if (ttl <= Millis(0) || max_lifetime <= Millis(0)) {
        return Failure(errc::invalid_argument, "extend needs a positive ttl and max_lifetime");
    }
    return make_call<Hold>(
        redis_scripts::extend, event_keys(*event),
        {keys.prefix(), *event, token, ms(ttl), ms(max_lifetime)},
        standard<Hold>(redis_scripts::extend, [token, event = *event](const Reader& r) {
            // {1, holder, zone, {seats}, expires_ms}
            return Hold{token, event, r.text(1), r.text(2), r.texts(3), wall(r.integer(4)),
                        HoldStatus::held, {}, false};
        }));
}

Result<Call<Order>> RedisBackend::Impl::cancel_call(const std::string& event,
                                                    const std::string& order_id,
                                                    const std::optional<std::string>& holder) const {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    if (!is_valid_id(order_id))
        return Failure(errc::unknown_order, "no order " + order_id + " in event " + event);
    if (holder && !is_valid_id(*holder)) {
        return Failure(errc::not_owner,
                       "order " + order_id + " belongs to another holder than " + *holder);
    }
    return make_call<Order>(
        redis_scripts::cancel, event_keys(event),
        {keys.prefix(), event, order_id, holder ? "1" : "0", holder.value_or("")},
        standard<Order>(redis_scripts::cancel,
                        [event](const Reader& r) { return read_order(r, event); }));
}

Result<Call<std::vector<ZoneState>>> RedisBackend::Impl::seats_call(
    const std::string& event, const std::optional<std::string>& zone) const {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    if (zone && !is_valid_id(*zone)) {
        return Failure(errc::unknown_zone, "event " + event + " has no zone " + *zone, {*zone});
    }
    using Out = std::vector<ZoneState>;
    return make_call<Out>(
        redis_scripts::seats, event_keys(event), {keys.prefix(), event, zone.value_or("")},
        standard<Out>(redis_scripts::seats, [](const Reader& r) {
            Out out;
            const Reader zones = r.array(1);
            for (std::size_t i = 0; i < zones.size(); ++i) {
                // {zone, kind, capacity, free, held, paid, {id, row, state, ...}}
                const Reader z = zones.array(i);
                ZoneState st;
                st.zone = z.text(0);
                st.kind = kind_of(z.text(1));
                st.capacity = z.integer(2);
                st.free = z.integer(3);
                st.held = z.integer(4);
                st.paid = z.integer(5);
                const Reader listed = z.array(6);
                if (listed.size() % 3 != 0) throw BadReply("seat list is not id, row, state triples");
                for (std::size_t s = 0; s < listed.size(); s += 3) {
                    const auto state = listed.integer(s + 2);
                    if (state < 0 || state > 2) throw BadReply("bad seat state");
                    st.seats.push_back({listed.text(s), listed.text(s + 1), static_cast<SeatState>(state)});
                }
                out.push_back(std::move(st));
            }
            return out;
        }));
}

Call<std::vector<ExpiredHold>> RedisBackend::Impl::expired_call(const std::string& event,
                                                                std::size_t limit,
                                                                Millis redeliver_after) const {
    using Out = std::vector<ExpiredHold>;
    return make_call<Out>(
        redis_scripts::expired, event_keys(event),
        {keys.prefix(), event, std::to_string(limit), ms(redeliver_after)},
        standard<Out>(redis_scripts::expired, [event](const Reader& r) {
            Out found;
            const Reader list = r.array(1);
            for (std::size_t i = 0; i < list.size(); ++i) {
                // {token, holder, zone, {seats}, expired_at_ms}
                const Reader e = list.array(i);
                found.push_back({e.text(0), event, e.text(1), e.text(2), e.texts(3), wall(e.integer(4))});
            }
            return found;
        }));
}

Call<void> RedisBackend::Impl::ack_call(const std::string& event,
                                        const std::vector<std::string>& tokens) const {
    std::vector<std::string> args{keys.prefix(), event};
    args.insert(args.end(), tokens.begin(), tokens.end());
    return make_call<void>(redis_scripts::ack_expired, event_keys(event), std::move(args),
                           standard<void>(redis_scripts::ack_expired, [](const Reader&) {}));
}

// ---------------------------------------------------------------------------------------
// The backend: each operation, both ways.

RedisBackend::RedisBackend(RedisOptions options) {
    if (auto ok = check_options(options); !ok) throw Error(ok.error().code, ok.error().detail);
    impl_ = std::make_unique<Impl>(std::move(options), std::vector<boost::asio::any_io_executor>{});
}

RedisBackend::RedisBackend(RedisOptions options, boost::asio::any_io_executor executor)
    : RedisBackend(std::move(options), std::vector{std::move(executor)}) {}

RedisBackend::RedisBackend(RedisOptions options,
                           std::vector<boost::asio::any_io_executor> executors) {
    if (auto ok = check_options(options); !ok) throw Error(ok.error().code, ok.error().detail);
    if (executors.empty()) throw Error(errc::invalid_argument, "no executor given");
    if (std::ranges::any_of(executors, [](const auto& executor) { return !executor; }))
        throw Error(errc::invalid_argument, "an empty executor given (one that runs nothing)");
    impl_ = std::make_unique<Impl>(std::move(options), std::move(executors));
}

RedisBackend::~RedisBackend() = default;

const RedisOptions& RedisBackend::options() const noexcept {
    return impl_->options;
}

Result<void> RedisBackend::ping() {
    const std::vector<std::string_view> argv{"PING"};
    auto pong = [&](redis_detail::ConnectionPool::Lease& lease, bool) -> Result<ReplyPtr> {
        auto reply = lease.command(argv);
        if (!reply || (*reply)->type == REDIS_REPLY_ERROR) return reply;
        if ((*reply)->type != REDIS_REPLY_STATUS ||
            std::string_view((*reply)->str, (*reply)->len) != "PONG") {
            return Failure(errc::protocol_error, "Redis answered PING with something else than PONG");
        }
        return reply;
    };
    if (impl_->cluster) return impl_->cluster->on_every_primary("Redis PING", pong);
    auto reply = mapped(impl_->dispatch({}, "Redis PING", pong), "Redis PING");
    if (!reply) return std::move(reply).error();
    return {};
}

Result<std::uint64_t> RedisBackend::acquire_locks(std::span<const std::string> keys,
                                                  const std::string& owner, Millis lease) {
    if (auto ok = impl_->one_group(keys); !ok) return std::move(ok).error();
    return impl_->perform(impl_->acquire_call(keys, owner, lease));
}
void RedisBackend::async_run(const op::acquire_locks& o, detail::Completion<std::uint64_t> done) {
    if (auto ok = impl_->one_group(o.keys); !ok) return done(std::move(ok).error());
    impl_->start(impl_->acquire_call(o.keys, o.owner, o.lease), std::move(done));
}

Result<bool> RedisBackend::release_locks(std::span<const std::string> keys, const std::string& owner) {
    if (keys.empty()) return true;
    if (auto ok = impl_->one_group(keys); !ok) return std::move(ok).error();
    return impl_->perform(impl_->release_call(keys, owner));
}
void RedisBackend::async_run(const op::release_locks& o, detail::Completion<bool> done) {
    if (o.keys.empty()) return done(true);
    if (auto ok = impl_->one_group(o.keys); !ok) return done(std::move(ok).error());
    impl_->start(impl_->release_call(o.keys, o.owner), std::move(done));
}

Result<bool> RedisBackend::extend_locks(std::span<const std::string> keys, const std::string& owner,
                                        Millis lease) {
    if (keys.empty()) return true;
    if (auto ok = impl_->one_group(keys); !ok) return std::move(ok).error();
    return impl_->perform(impl_->extend_locks_call(keys, owner, lease));
}
void RedisBackend::async_run(const op::extend_locks& o, detail::Completion<bool> done) {
    if (o.keys.empty()) return done(true);
    if (auto ok = impl_->one_group(o.keys); !ok) return done(std::move(ok).error());
    impl_->start(impl_->extend_locks_call(o.keys, o.owner, o.lease), std::move(done));
}

Result<void> RedisBackend::raise_fencing(std::string_view key, std::uint64_t at_least) {
    return impl_->perform(impl_->fence_call(key, at_least));
}
void RedisBackend::async_run(const op::raise_fencing& o, detail::Completion<void> done) {
    impl_->start(impl_->fence_call(o.key, o.at_least), std::move(done));
}

Result<void> RedisBackend::create_event(const EventSpec& spec) {
    auto stored = impl_->store_event(spec, false);
    if (!stored) return std::move(stored).error();
    return {};
}
void RedisBackend::async_run(const op::create_event& o, detail::Completion<void> done) {
    impl_->start_store_event(o.spec, false, [done = shared(std::move(done))](Result<bool> stored) {
        if (!stored) return (*done)(std::move(stored).error());
        (*done)({});
    });
}

Result<Recovery> RedisBackend::begin_recovery(const EventSpec& spec) {
    auto stored = impl_->store_event(spec, true);
    if (!stored) return std::move(stored).error();
    return *stored ? Recovery::created : Recovery::existed;
}
void RedisBackend::async_run(const op::begin_recovery& o, detail::Completion<Recovery> done) {
    impl_->start_store_event(o.spec, true, [done = shared(std::move(done))](Result<bool> stored) {
        if (!stored) return (*done)(std::move(stored).error());
        (*done)(*stored ? Recovery::created : Recovery::existed);
    });
}

Result<void> RedisBackend::end_recovery(const std::string& event) {
    return impl_->show_event(event);
}
void RedisBackend::async_run(const op::end_recovery& o, detail::Completion<void> done) {
    impl_->start_show_event(o.event, std::move(done));
}

Result<Order> RedisBackend::restore_order(const RestoreCommand& cmd) {
    return impl_->perform(impl_->restore_call(cmd));
}
void RedisBackend::async_run(const op::restore_order& o, detail::Completion<Order> done) {
    impl_->start(impl_->restore_call(o.cmd), std::move(done));
}

Result<std::vector<EventSpec>> RedisBackend::events() {
    return impl_->perform(impl_->events_call());
}
void RedisBackend::async_run(const op::events&, detail::Completion<std::vector<EventSpec>> done) {
    impl_->start(impl_->events_call(), std::move(done));
}

Result<Hold> RedisBackend::hold(const HoldCommand& cmd) {
    return impl_->perform(impl_->hold_call(cmd));
}
void RedisBackend::async_run(const op::hold& o, detail::Completion<Hold> done) {
    impl_->start(impl_->hold_call(o.cmd), std::move(done));
}

Result<Order> RedisBackend::confirm(const ConfirmCommand& cmd) {
    return impl_->perform(impl_->confirm_call(cmd));
}
void RedisBackend::async_run(const op::confirm& o, detail::Completion<Order> done) {
    impl_->start(impl_->confirm_call(o.cmd), std::move(done));
}

Result<void> RedisBackend::release(const std::string& token) {
    return impl_->perform(impl_->release_hold_call(token));
}
void RedisBackend::async_run(const op::release& o, detail::Completion<void> done) {
    impl_->start(impl_->release_hold_call(o.token), std::move(done));
}

Result<Hold> RedisBackend::extend(const std::string& token, Millis ttl, Millis max_lifetime) {
    return impl_->perform(impl_->extend_call(token, ttl, max_lifetime));
}
void RedisBackend::async_run(const op::extend& o, detail::Completion<Hold> done) {
    impl_->start(impl_->extend_call(o.token, o.ttl, o.max_lifetime), std::move(done));
}

Result<Order> RedisBackend::cancel(const std::string& event, const std::string& order_id,
                                   const std::optional<std::string>& holder) {
    return impl_->perform(impl_->cancel_call(event, order_id, holder));
}
void RedisBackend::async_run(const op::cancel& o, detail::Completion<Order> done) {
    impl_->start(impl_->cancel_call(o.event, o.order_id, o.holder), std::move(done));
}

Result<std::vector<ZoneState>> RedisBackend::seats(const std::string& event,
                                                   const std::optional<std::string>& zone) {
    return impl_->perform(impl_->seats_call(event, zone));
}
void RedisBackend::async_run(const op::seats& o, detail::Completion<std::vector<ZoneState>> done) {
    impl_->start(impl_->seats_call(o.event, o.zone), std::move(done));
}

Result<std::vector<ExpiredHold>> RedisBackend::expired(std::size_t limit, Millis redeliver_after) {
    return impl_->expired(limit, redeliver_after);
}
void RedisBackend::async_run(const op::expired& o, detail::Completion<std::vector<ExpiredHold>> done) {
    impl_->start_expired(o.limit, o.redeliver_after, std::move(done));
}

Result<void> RedisBackend::ack_expired(std::span<const std::string> tokens) {
    return impl_->ack_expired(tokens);
}
void RedisBackend::async_run(const op::ack_expired& o, detail::Completion<void> done) {
    auto groups = std::make_shared<std::vector<std::pair<std::string, std::vector<std::string>>>>(
        Impl::by_event(o.tokens));
    impl_->start_ack(std::move(groups), 0, shared(std::move(done)));
}

}  // namespace seatlock
