// src/redis/pipeline.cpp: Pipeline: its queues of requests, the life of its connection
// (connect, AUTH/SELECT, loss, reconnect), the reload of a missing function library and
// the deadlines that turn a silent server into outcome_unknown.
//
// A request moves through: inbox (any thread, under inbox_mutex) -> queued (waiting for a
// connection or for the write in flight) -> sent (written, waiting for its reply, first
// in first out). An FCALL answered "Function not found" waits in load_waiters for the
// FUNCTION LOAD, then goes back to the front of queued. Everything but the inbox belongs
// to the strand.
#include "pipeline.hpp"

#include <hiredis/hiredis.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <deque>
#include <iterator>
#include <mutex>
#include <new>
#include <span>
#include <string_view>

namespace seatlock::redis_detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
// A stream socket of either family: TCP, or a Unix domain socket (RedisOptions::unix_socket).
using stream = asio::generic::stream_protocol;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

namespace {

// Replies of many requests arrive together; one read takes what a busy server sent.
constexpr std::size_t read_buffer_size = 64 * 1024;
// hiredis frees its parse buffer when it is empty and larger than this: large enough that
// steady traffic reuses it, small enough that one huge reply does not pin memory.
constexpr std::size_t reader_max_idle = 2 * read_buffer_size;
// The pause before connecting again after a failed connect (doubling, at most 800 ms):
// a dead server costs one attempt per pause, not one per request.
constexpr Millis first_backoff{25};
constexpr int max_backoff_doublings = 5;
// An FCALL waits for at most this many FUNCTION LOADs: a FUNCTION FLUSH may land
// between the load and the call again.
constexpr int max_loads = 2;
// Replies handed to their callers in one turn of the strand, at the least (hand_replies).
constexpr std::size_t min_replies_per_turn = 8;

}  // namespace

// One command in RESP, as hiredis's redisFormatCommandArgv writes it: "*<argc>\r\n", then
// "$<length>\r\n<bytes>\r\n" for each argument. Written here with std::to_chars into one
// string sized beforehand, because hiredis prints every length with sprintf and allocates
// twice more per call: about a seventh of the client's CPU time in the asynchronous lock
// benchmark (docs/performance.md). tests/integration/pipeline_test.cpp compares the bytes
// with hiredis's for many commands.
namespace {

// The RESP of a command whose arguments are the elements of `parts`, in order.
template <typename... Parts>
std::string format_parts(const Parts&... parts) {
    constexpr std::size_t max_digits = 20;  // of a std::size_t
    std::size_t size = 1 + max_digits + 2;
    std::size_t count = 0;
    auto measure = [&](const auto& part) {
        for (const auto& arg : part) size += 1 + max_digits + 2 + arg.size() + 2;
        count += std::size(part);
    };
    (measure(parts), ...);
    std::string out(size, '\0');
    char* at = out.data();
    char* const end = at + size;
    auto header = [&](char kind, std::size_t n) {
        *at++ = kind;
        at = std::to_chars(at, end, n).ptr;
        *at++ = '\r';
        *at++ = '\n';
    };
    header('*', count);
    auto write = [&](const auto& part) {
        for (const auto& arg : part) {
            header('$', arg.size());
            at = std::copy(arg.begin(), arg.end(), at);
            *at++ = '\r';
            *at++ = '\n';
        }
    };
    (write(parts), ...);
    out.resize(static_cast<std::size_t>(at - out.data()));
    return out;
}

}  // namespace

std::string format_command(std::span<const std::string_view> argv) { return format_parts(argv); }

namespace {

struct ReaderDeleter {
    void operator()(redisReader* reader) const noexcept { redisReaderFree(reader); }
};

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

std::string_view error_text(const redisReply& reply) {
    return reply.type == REDIS_REPLY_ERROR ? std::string_view(reply.str, reply.len)
                                           : std::string_view();
}

}  // namespace

struct Pipeline::State : std::enable_shared_from_this<State> {
    using Strand = asio::strand<asio::any_io_executor>;

    // The pipeline's own requests (AUTH, SELECT, FUNCTION LOAD) have no callback: their
    // replies steer the connection instead.
    // `asking` is the ASKING written just before a request that a Cluster's ASK sent here.
    enum class Kind { command, fcall, auth, select, load, asking };

    struct Request {
        Kind kind = Kind::command;
        std::string command;  // kept after writing only for an FCALL, which may go again
        std::string what;  // the command ("INCR") or, for an FCALL, the function ("hold")
        // How messages name the request: "INCR", "FCALL hold".
        [[nodiscard]] std::string named() const { return kind == Kind::fcall ? "FCALL " + what : what; }
        Callback done;
        int loads = 0;  // FUNCTION LOADs this FCALL waited for
        Clock::time_point deadline{};
        bool asking = false;  // ASKING goes just before it, every time it is written
    };

    // One connection attempt and, once connected, the connection. A new one replaces it
    // on every reconnect, so that a handler of an old connection (an aborted read, a timer)
    // sees it is stale, and so that the buffers an aborted operation was given stay alive
    // until its handler has run.
    struct Link {
        explicit Link(const Strand& strand)
            : socket(strand), resolver(strand), connect_timer(strand), reply_timer(strand) {}
        stream::socket socket;
        tcp::resolver resolver;
        asio::steady_timer connect_timer;
        asio::steady_timer reply_timer;
        std::unique_ptr<redisReader, ReaderDeleter> reader;
        std::string out;  // the write in flight: every request queued when it started
        std::array<char, read_buffer_size> in{};
        bool writing = false;
        // A read is pending, or the replies it brought are still being handed. Only while
        // requests are written and unanswered: an idle connection has no operation pending,
        // so it is no work for the executor's io_context (io_context::run() can return).
        bool reading = false;
        bool timer_armed = false;
        unsigned timer_turn = 0;  // bumped when the wait is cancelled: its handler then ignores it
        bool answered = false;  // a reply came: the server is really there
        bool handing = false;   // replies read are left for hand_replies' next turn
    };

    // down: no connection; waiting: pausing before connecting again; handshaking: AUTH
    // and SELECT written, callers' requests held back until they are answered.
    enum class Phase { down, waiting, connecting, handshaking, up };

    State(asio::any_io_executor executor, RedisOptions o)
        : options(std::move(o)),
          where(where_of(options)),
          strand(asio::make_strand(std::move(executor))),
          retry_timer(strand) {}

    const RedisOptions options;
    const std::string where;  // host:port or unix:<path>, for messages
    const Strand strand;

    // Held by every handler while it runs, and by the destructor: the destructor can fail
    // what is pending at once, from any thread, instead of waiting for the executor (which
    // may no longer run) to do it on the strand. The strand still orders the handlers,
    // so this lock is almost never contended.
    std::mutex mutex;
    // Set once, by the destructor or close(), holding both mutexes; read under either.
    bool closed = false;
    bool closed_by_close = false;  // close() came first: later requests are connection_failed

    // Requests from callers' threads, picked up by the strand.
    std::mutex inbox_mutex;
    std::vector<Request> inbox;
    bool drain_posted = false;

    // The strand's own state (under `mutex`).
    Phase phase = Phase::down;
    std::shared_ptr<Link> link;
    std::deque<Request> queued;
    std::deque<Request> sent;
    std::deque<Request> load_waiters;
    bool load_pending = false;  // a FUNCTION LOAD is queued or sent
    std::size_t handshake_pending = 0;
    std::string handshake_first;  // "AUTH" or "SELECT", for messages
    int failures = 0;             // connects in a row that brought no reply
    Clock::time_point last_failure{};
    asio::steady_timer retry_timer;

    std::atomic<std::uint64_t> requests{0}, writes{0}, reads{0}, connects{0};

    // ---------------------------------------------------------------------------------
    // From callers' threads

    void submit(Request r) {
        {
            std::unique_lock lock(inbox_mutex);
            if (!closed) {
                inbox.push_back(std::move(r));
                if (drain_posted) return;  // one pending drain takes everything
                drain_posted = true;
                lock.unlock();
                asio::post(strand, [self = shared_from_this()] {
                    std::lock_guard guard(self->mutex);
                    if (!self->closed) self->pump();
                });
                return;
            }
        }
        // After close(), or a callback of this pipeline calling it while it is destroyed.
        complete(r, not_sent(r));
    }

    // The work of the destructor (`by_close` false) and of close(): fail everything
    // pending, now. The first of them decides how later requests fail.
    void shut_down(bool by_close) {
        std::vector<Request> arrived;
        {
            std::lock_guard lock(inbox_mutex);
            if (!closed) closed_by_close = by_close;
            closed = true;
            arrived.swap(inbox);
        }
        for (auto& r : arrived) queued.push_back(std::move(r));
        retry_timer.cancel();
        close_link();
        while (!sent.empty()) {
            Request r = pop(sent);
            if (r.kind == Kind::command || r.kind == Kind::fcall) {
                complete(r, Failure(errc::outcome_unknown,
                                    r.named() + " was sent to Redis at " + where + " but the " +
                                        (closed_by_close ? "backend" : "pipeline") +
                                        " was closed before the reply: it may or may not have "
                                        "been applied"));
            }
        }
        while (!load_waiters.empty()) {
            Request r = pop(load_waiters);
            complete(r, not_sent(r));
        }
        while (!queued.empty()) {
            Request r = pop(queued);
            if (r.kind != Kind::load) complete(r, not_sent(r));
        }
    }

    // ---------------------------------------------------------------------------------
    // On the strand, under `mutex`

    bool current(const std::shared_ptr<Link>& l) const { return !closed && link == l; }

    // Moves what arrived into the queue and sends it, connecting first when needed.
    void pump() {
        std::vector<Request> arrived;
        {
            std::lock_guard lock(inbox_mutex);
            arrived.swap(inbox);
            drain_posted = false;
        }
        for (auto& r : arrived) queued.push_back(std::move(r));
        if (queued.empty()) return;
        switch (phase) {
            case Phase::down:
                start_connect();
                return;
            case Phase::up:
                if (link->writing) return;
                // An idle connection has no read pending: one the server closed meanwhile
                // (restart, CLIENT KILL, idle timeout) is noticed here, before a request is
                // written to it and lost with it.
                if (!link->reading) {
                    if (const char* why = closed_by_peer(*link)) {
                        lost(why, false);
                        return;
                    }
                }
                write(queued);
                return;
            case Phase::waiting:
            case Phase::connecting:
            case Phase::handshaking:
                return;  // the queue goes out once the connection is up
        }
    }

    void start_connect() {
        const auto now = Clock::now();
        if (failures == 0 || last_failure + backoff() <= now) {
            connect();
            return;
        }
        phase = Phase::waiting;
        retry_timer.expires_at(last_failure + backoff());
        retry_timer.async_wait([self = shared_from_this()](error_code ec) {
            std::lock_guard guard(self->mutex);
            if (!ec && !self->closed && self->phase == Phase::waiting) self->connect();
        });
    }

    Millis backoff() const {
        return first_backoff * (1 << std::min(failures - 1, max_backoff_doublings));
    }

    void note_failure() {
        ++failures;
        last_failure = Clock::now();
    }

    void connect() {
        phase = Phase::connecting;
        link = std::make_shared<Link>(strand);
        ++connects;
        auto self = shared_from_this();
        link->connect_timer.expires_after(options.connect_timeout);
        link->connect_timer.async_wait([self, l = link](error_code ec) {
            std::lock_guard guard(self->mutex);
            // A timer that expired just as the connect succeeded still reports success.
            if (ec || !self->current(l) || self->phase != Phase::connecting) return;
            self->connect_failed("no connection within " +
                                 std::to_string(self->options.connect_timeout.count()) + " ms");
        });
        auto on_connect = [self, l = link](error_code ec) {
            std::lock_guard guard(self->mutex);
            if (!self->current(l)) return;
            if (ec)
                self->connect_failed(ec.message());
            else
                self->connected();
        };
        if (!options.unix_socket.empty()) {
            // The path's length was checked with the options: this cannot throw.
            link->socket.async_connect(asio::local::stream_protocol::endpoint(options.unix_socket),
                                       std::move(on_connect));
            return;
        }
        link->resolver.async_resolve(
            options.host, std::to_string(options.port),
            [self, l = link, on_connect](error_code ec, const tcp::resolver::results_type& found) {
                std::lock_guard guard(self->mutex);
                if (!self->current(l)) return;
                if (ec) {
                    self->connect_failed(ec.message());
                    return;
                }
                std::vector<stream::endpoint> endpoints;
                for (const auto& entry : found) endpoints.emplace_back(entry.endpoint());
                asio::async_connect(l->socket, endpoints,
                                    [on_connect](error_code connect_ec, const stream::endpoint&) {
                                        on_connect(connect_ec);
                                    });
            });
    }

    void connect_failed(const std::string& reason) {
        close_link();
        note_failure();
        fail_queued(Failure(errc::connection_failed,
                            "cannot connect to Redis at " + where + ": " + reason));
        if (!closed) pump();  // what arrived meanwhile gets its own attempt, after the pause
    }

    void connected() {
        error_code ignored;
        link->connect_timer.cancel();
        // The pipeline gathers its writes itself; Nagle's delay would only add latency.
        if (options.unix_socket.empty()) {
            link->socket.set_option(tcp::no_delay(true), ignored);
            link->socket.set_option(asio::socket_base::keep_alive(true), ignored);
        }
        link->reader.reset(redisReaderCreate());
        if (!link->reader) throw std::bad_alloc();
        link->reader->maxbuf = reader_max_idle;
        std::deque<Request> handshake = handshake_requests();
        if (handshake.empty()) {
            phase = Phase::up;
            pump();
            return;
        }
        // Callers' requests wait for the answers: behind a refused AUTH they could still
        // run (a server without a password runs them), and behind a refused SELECT they
        // would run in database 0.
        phase = Phase::handshaking;
        handshake_pending = handshake.size();
        handshake_first = handshake.front().what;
        write(handshake);
    }

    std::deque<Request> handshake_requests() const {
        std::deque<Request> out;
        if (!options.password.empty()) {
            Request auth{Kind::auth, {}, "AUTH", {}, 0, {}};
            if (options.user.empty()) {
                const std::string_view argv[] = {"AUTH", options.password};
                auth.command = format_command(argv);
            } else {
                const std::string_view argv[] = {"AUTH", options.user, options.password};
                auth.command = format_command(argv);
            }
            out.push_back(std::move(auth));
        }
        if (options.db != 0) {
            const std::string db = std::to_string(options.db);
            const std::string_view argv[] = {"SELECT", db};
            out.push_back(Request{Kind::select, format_command(argv), "SELECT", {}, 0, {}});
        }
        return out;
    }

    // Everything in `batch` goes out in one write.
    void write(std::deque<Request>& batch) {
        auto l = link;
        l->out.clear();
        const auto deadline = Clock::now() + options.command_timeout;
        requests += batch.size();
        for (auto& r : batch) {
            if (r.asking) {
                // Redis forgets ASKING after one command: it is written again with each
                // send of the request (after a FUNCTION LOAD too), right before it.
                static const std::string_view asking_argv[] = {"ASKING"};
                static const std::string asking_command = format_command(asking_argv);
                l->out.append(asking_command);
                ++requests;
                sent.push_back(Request{Kind::asking, {}, "ASKING", {}, 0, deadline});
            }
            l->out.append(r.command);
            if (r.kind != Kind::fcall) r.command = {};
            r.deadline = deadline;
            sent.push_back(std::move(r));
        }
        batch.clear();
        ++writes;
        l->writing = true;
        arm_reply_timer();
        if (!l->reading) read(l);
        asio::async_write(l->socket, asio::buffer(l->out),
                          [self = shared_from_this(), l](error_code ec, std::size_t) {
                              std::lock_guard guard(self->mutex);
                              if (!self->current(l)) return;
                              l->writing = false;
                              if (ec) {
                                  self->lost("the write failed: " + ec.message(), false);
                                  return;
                              }
                              self->pump();
                          });
    }

    // One timer per connection, set for the oldest written request. Requests are written
    // in order with the same timeout, so the oldest has the earliest deadline; the timer
    // is not moved on every reply, only looked at again when it fires.
    void arm_reply_timer() {
        if (link->timer_armed || sent.empty()) return;
        link->timer_armed = true;
        link->reply_timer.expires_at(sent.front().deadline);
        link->reply_timer.async_wait([self = shared_from_this(), l = link,
                                      turn = link->timer_turn](error_code) {
            std::lock_guard guard(self->mutex);
            if (!self->current(l) || l->timer_turn != turn) return;
            l->timer_armed = false;
            self->reply_timer_fired();
        });
    }

    void reply_timer_fired() {
        if (sent.empty()) return;
        const auto now = Clock::now();
        if (sent.front().deadline > now) {
            arm_reply_timer();
            return;
        }
        // Bytes already waiting in the socket, or replies read and not yet handed, are the
        // oldest request's reply: the strand was busy, the server was not late. Look again
        // once they are handed.
        error_code ec;
        if (link->handing || (link->socket.available(ec) > 0 && !ec)) {
            sent.front().deadline = now + std::min<Clock::duration>(options.command_timeout,
                                                                    std::chrono::milliseconds(10));
            arm_reply_timer();
            return;
        }
        lost("", true);
    }

    // Nothing written waits for a reply: the timer no longer waits either.
    void disarm_reply_timer() {
        if (!link->timer_armed) return;
        link->timer_armed = false;
        ++link->timer_turn;
        link->reply_timer.cancel();
    }

    // Why an idle connection cannot carry a request (the server closed it, or sent bytes
    // nobody asked for, which leaves the stream out of step); null when it can.
    static const char* closed_by_peer(Link& l) {
        char byte = 0;
        const ssize_t n = ::recv(l.socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return "the server closed the connection";
        if (n > 0) return "Redis sent a reply nobody asked for";
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return nullptr;
        return "the connection broke while it was idle";
    }

    void read(const std::shared_ptr<Link>& l) {
        l->reading = true;
        l->socket.async_read_some(asio::buffer(l->in),
                                  [self = shared_from_this(), l](error_code ec, std::size_t n) {
                                      std::lock_guard guard(self->mutex);
                                      if (self->current(l)) self->on_read(l, ec, n);
                                  });
    }

    void on_read(const std::shared_ptr<Link>& l, error_code ec, std::size_t n) {
        if (n > 0) {
            ++reads;
            if (redisReaderFeed(l->reader.get(), l->in.data(), n) != REDIS_OK) {
                unreadable(l->reader->errstr);
                return;
            }
        }
        hand_replies(l, ec);
    }

    // Hands the parsed replies to their requests, at most half of those in flight (and at
    // least min_replies_per_turn) in one handler; the rest in a handler posted after what
    // those callbacks posted. Requests the first half's callers send meanwhile go out
    // before the second half is handed, and Redis runs them while this thread hands it:
    // two batches in flight instead of one, so that neither the server nor this thread
    // waits for the other. With the connection on the callers' own thread, this doubled
    // the lock pairs per second at 64 in flight (docs/performance.md).
    void hand_replies(const std::shared_ptr<Link>& l, error_code ec) {
        l->handing = false;
        switch (hand_parsed(l, std::max(min_replies_per_turn, sent.size() / 2))) {
            case Handed::ended:
                return;
            case Handed::more:
                l->handing = true;
                asio::post(strand, [self = shared_from_this(), l, ec] {
                    std::lock_guard guard(self->mutex);
                    if (self->current(l)) self->hand_replies(l, ec);
                });
                pump();
                return;
            case Handed::all:
                break;
        }
        if (ec) {
            lost(ec == asio::error::eof ? "the server closed the connection" : ec.message(), false);
            return;
        }
        if (sent.empty()) {
            l->reading = false;  // idle: pump() reads again when it writes
        } else {
            read(l);
        }
        pump();
        if (current(l) && sent.empty()) disarm_reply_timer();
    }

    enum class Handed { all, more, ended };

    // Hands at most `most` of the complete replies the reader holds. `ended`: a reply or
    // a callback ended the connection or the pipeline; `more`: `most` were handed.
    Handed hand_parsed(const std::shared_ptr<Link>& l, std::size_t most) {
        redisReader* reader = l->reader.get();
        for (std::size_t handed = 0; handed < most; ++handed) {
            void* raw = nullptr;
            if (redisReaderGetReply(reader, &raw) != REDIS_OK) {
                unreadable(reader->errstr);
                return Handed::ended;
            }
            if (!raw) return Handed::all;  // the rest of the reply is still on its way
            ReplyPtr reply(static_cast<redisReply*>(raw));
            if (sent.empty()) {
                lost("Redis sent a reply nobody asked for", false);
                return Handed::ended;
            }
            l->answered = true;
            failures = 0;
            on_reply(pop(sent), std::move(reply));
            if (!current(l)) return Handed::ended;
        }
        return Handed::more;
    }

    void on_reply(Request r, ReplyPtr reply) {
        const std::string_view error = error_text(*reply);
        switch (r.kind) {
            case Kind::command:
                complete(r, std::move(reply));
                return;
            case Kind::fcall:
                // Nothing ran: the call may go again once the library is loaded.
                if (starts_with(error, "ERR Function not found") && r.loads < max_loads) {
                    ++r.loads;
                    load_waiters.push_back(std::move(r));
                    request_load();
                    return;
                }
                complete(r, std::move(reply));
                return;
            case Kind::load:
                load_pending = false;
                // "ERR Library ... already exists": another client loaded the same text.
                if (error.empty() || starts_with(error, "ERR Library")) {
                    queued.insert(queued.begin(), std::make_move_iterator(load_waiters.begin()),
                                  std::make_move_iterator(load_waiters.end()));
                    load_waiters.clear();
                    return;
                }
                fail_load_waiters(error_reply_failure(
                    error, "Redis FUNCTION LOAD " + std::string(redis_scripts::library_name)));
                return;
            case Kind::asking:
                return;  // a refusal shows in the reply of the request it precedes
            case Kind::auth:
            case Kind::select:
                if (!error.empty()) {
                    handshake_failed(r.kind, error);
                    return;
                }
                if (--handshake_pending == 0) phase = Phase::up;  // on_read's pump sends
                return;
        }
    }

    // One FUNCTION LOAD at a time, ahead of everything queued: FCALLs already queued would
    // only meet "Function not found" too.
    void request_load() {
        if (load_pending) return;
        load_pending = true;
        const std::string_view argv[] = {"FUNCTION", "LOAD", redis_scripts::library};
        queued.push_front(Request{Kind::load, format_command(argv), "FUNCTION LOAD", {}, 0, {}});
    }

    void handshake_failed(Kind kind, std::string_view message) {
        const std::string text(message);
        Failure failure;
        if (kind == Kind::auth) {
            failure = Failure(errc::auth_failed,
                              "Redis at " + where + " refused AUTH" +
                                  (options.user.empty() ? "" : " for user " + options.user) + ": " +
                                  text);
        } else {
            const bool denied = starts_with(text, "NOAUTH") || starts_with(text, "NOPERM");
            failure = Failure(denied ? errc::auth_failed : errc::connection_failed,
                              "Redis at " + where + " refused SELECT " +
                                  std::to_string(options.db) + ": " + text);
        }
        close_link();
        note_failure();  // wrong credentials must not make the pipeline spin either
        sent.clear();    // only the handshake's own requests are written while it runs
        fail_queued(failure);
    }

    // The connection is gone. What was written may have run: outcome_unknown. What was
    // not stays queued for the next connection.
    void lost(const std::string& reason, bool timed_out) {
        // Replies already read are answers, not losses: hand those a turn left for later.
        if (link->handing) {
            link->handing = false;
            const auto l = link;  // a copy: a reply or callback may end `link` meanwhile
            if (hand_parsed(l, sent.size()) == Handed::ended) return;
        }
        const bool handshaking = phase == Phase::handshaking;
        if (!link->answered) note_failure();
        close_link();
        const std::string why =
            timed_out
                ? "no reply came within " + std::to_string(options.command_timeout.count()) + " ms"
                : "the connection broke before the reply (" + reason + ")";
        while (!sent.empty()) {
            Request r = pop(sent);
            switch (r.kind) {
                case Kind::command:
                case Kind::fcall:
                    complete(r, Failure(errc::outcome_unknown,
                                        r.named() + " was sent to Redis at " + where + " but " + why +
                                            ": it may or may not have been applied"));
                    break;
                case Kind::load:
                    // Its FCALLs did not run ("Function not found"): they go again.
                    load_pending = false;
                    queued.insert(queued.begin(), std::make_move_iterator(load_waiters.begin()),
                                  std::make_move_iterator(load_waiters.end()));
                    load_waiters.clear();
                    break;
                case Kind::auth:
                case Kind::select:
                case Kind::asking:
                    break;
            }
            if (closed) return;
        }
        if (handshaking) {
            fail_queued(Failure(errc::connection_failed, "Redis at " + where + " did not answer " +
                                                             handshake_first + ": " + why));
            if (closed) return;
        }
        pump();
    }

    // The stream is out of step: the oldest request gets protocol_error, and no later
    // reply on this connection can be matched to its request.
    void unreadable(const std::string& reason) {
        if (!sent.empty() &&
            (sent.front().kind == Kind::command || sent.front().kind == Kind::fcall)) {
            Request r = pop(sent);
            complete(r, Failure(errc::protocol_error, r.named() + ": unreadable reply from Redis at " +
                                                          where + ": " + reason));
            if (closed) return;
        }
        lost("unreadable reply: " + reason, false);
    }

    void fail_queued(const Failure& failure) {
        while (!queued.empty()) {
            Request r = pop(queued);
            if (r.kind == Kind::load)
                fail_load_waiters(failure);
            else
                complete(r, failure);
            if (closed) return;
        }
    }

    void fail_load_waiters(const Failure& failure) {
        load_pending = false;
        while (!load_waiters.empty()) {
            Request r = pop(load_waiters);
            complete(r, failure);
            if (closed) return;
        }
    }

    void close_link() {
        if (!link) return;
        error_code ignored;
        link->connect_timer.cancel();
        link->reply_timer.cancel();
        link->resolver.cancel();
        link->socket.close(ignored);
        link.reset();
        phase = Phase::down;
        handshake_pending = 0;
    }

    // ---------------------------------------------------------------------------------

    // A request failed by shut_down, or made after it.
    Failure not_sent(const Request& r) const {
        if (closed_by_close) {
            return Failure(errc::connection_failed, r.named() + " was not sent to Redis at " + where +
                                                        ": the backend was closed");
        }
        return Failure(errc::io_error,
                       r.named() + " was not sent to Redis at " + where + ": the pipeline was closed");
    }

    static Request pop(std::deque<Request>& from) {
        Request r = std::move(from.front());
        from.pop_front();
        return r;
    }

    static void complete(Request& r, Result<ReplyPtr> result) {
        if (!r.done) return;
        auto done = std::move(r.done);
        done(std::move(result));
    }
};

Pipeline::Pipeline(asio::any_io_executor executor, RedisOptions options)
    : state_(std::make_shared<State>(std::move(executor), std::move(options))) {}

Pipeline::~Pipeline() { close_as(false); }

void Pipeline::close() { close_as(true); }

void Pipeline::close_as(bool by_close) {
    // Inside one of this pipeline's callbacks the running handler already holds the mutex.
    if (state_->strand.running_in_this_thread()) {
        state_->shut_down(by_close);
        return;
    }
    std::lock_guard lock(state_->mutex);
    state_->shut_down(by_close);
}

void Pipeline::exec(std::vector<std::string> argv, Callback done, bool asking) {
    if (argv.empty())
        throw Error(make_error_code(errc::invalid_argument), "Pipeline::exec: no command");
    const std::vector<std::string_view> views(argv.begin(), argv.end());
    state_->submit(
        State::Request{State::Kind::command, format_command(views), argv.front(), std::move(done), 0, {}, asking});
}

void Pipeline::fcall(const redis_scripts::Script& script, std::vector<std::string> keys,
                     std::vector<std::string> args, Callback done, bool asking) {
    // Written from the three parts: no argument list is gathered first.
    std::array<char, 20> digits{};
    const auto count = std::to_chars(digits.data(), digits.data() + digits.size(), keys.size()).ptr;
    const std::array<std::string_view, 3> head{
        "FCALL", script.function, std::string_view(digits.data(), static_cast<std::size_t>(count - digits.data()))};
    state_->submit(State::Request{State::Kind::fcall, format_parts(head, keys, args), std::string(script.name),
                                  std::move(done), 0, {}, asking});
}

Pipeline::Stats Pipeline::stats() const {
    return {state_->requests.load(std::memory_order_relaxed),
            state_->writes.load(std::memory_order_relaxed),
            state_->reads.load(std::memory_order_relaxed),
            state_->connects.load(std::memory_order_relaxed)};
}

}  // namespace seatlock::redis_detail
