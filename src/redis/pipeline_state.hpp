// SPDX-License-Identifier: MIT
// src/redis/pipeline_state.hpp: Pipeline::State, what one pipelined connection holds (the
// inbox callers fill, the request queue, the connection and its phase), shared by
// pipeline.cpp (callers, hand-over of replies, losses) and pipeline_connection.cpp (connect,
// AUTH/SELECT, back-off, the read and write loops). Private to those two files.
#pragma once

#include <hiredis/hiredis.h>

#include <array>
#include <atomic>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pipeline.hpp"
#include "request_queue.hpp"
#include "telemetry.hpp"

namespace seatlock::redis_detail {

namespace pipeline_io {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
// A stream socket of either family: TCP, or a Unix domain socket (RedisOptions::unix_socket).
using stream = asio::generic::stream_protocol;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// Replies of many requests arrive together; one read takes what a busy server sent.
inline constexpr std::size_t read_buffer_size = 64 * 1024;

struct ReaderDeleter {
    void operator()(redisReader* reader) const noexcept { redisReaderFree(reader); }
};

}  // namespace pipeline_io

struct Pipeline::State : std::enable_shared_from_this<State> {
    using tcp = pipeline_io::tcp;
    using stream = pipeline_io::stream;
    using Clock = pipeline_io::Clock;
    using error_code = pipeline_io::error_code;
    using Strand = boost::asio::strand<boost::asio::any_io_executor>;
    using Request = RequestQueue::Request;
    using Kind = RequestQueue::Kind;

    // One connection attempt and, once connected, the connection. A new one replaces it
    // on every reconnect, so that a handler of an old connection (an aborted read, a timer)
    // sees it is stale, and so that the buffers an aborted operation was given stay alive
    // until its handler has run.
    struct Link {
        explicit Link(const Strand& strand)
            : socket(strand), resolver(strand), connect_timer(strand), reply_timer(strand) {}
        stream::socket socket;
        // Set for TLS once TCP is connected: a new one, and a new handshake, per connection.
        std::optional<boost::asio::ssl::stream<stream::socket&>> tls;
        tcp::resolver resolver;
        boost::asio::steady_timer connect_timer;
        boost::asio::steady_timer reply_timer;
        std::unique_ptr<redisReader, pipeline_io::ReaderDeleter> reader;
        std::string out;  // the write in flight: every request queued when it started
        std::array<char, pipeline_io::read_buffer_size> in{};
        bool writing = false;
        // A read is pending, or the replies it brought are still being handed. Only while
        // requests are written and unanswered: an idle connection has no operation pending,
        // so it is no work for the executor's io_context (io_context::run() can return).
        bool reading = false;
        bool timer_armed = false;
        unsigned timer_turn = 0;  // bumped when the wait is cancelled: its handler then ignores it
        bool answered = false;    // a reply came: the server is really there
        bool handing = false;     // replies read are left for hand_replies' next turn
    };

    // down: no connection; waiting: pausing before connecting again; handshaking: AUTH
    // and SELECT written, callers' requests held back until they are answered.
    enum class Phase { down, waiting, connecting, handshaking, up };

    State(boost::asio::any_io_executor executor, RedisOptions o,
          std::shared_ptr<boost::asio::ssl::context> tls, std::shared_ptr<Telemetry> t,
          std::shared_ptr<ConnectionCounters> shared_counters)
        : options(std::move(o)),
          tls_context(std::move(tls)),
          where(where_of(options)),
          telemetry(std::move(t)),
          observed(telemetry && telemetry->observed()),
          counters(shared_counters ? std::move(shared_counters)
                   : telemetry     ? telemetry->counters(RedisEvent::Connection::pipelined, where)
                                   : std::make_shared<ConnectionCounters>(
                                     RedisEvent::Connection::pipelined, where)),
          strand(boost::asio::make_strand(std::move(executor))),
          queue(options, where),
          retry_timer(strand) {}

    const RedisOptions options;
    // Set exactly when options.tls.enabled: every connection is then TLS.
    const std::shared_ptr<boost::asio::ssl::context> tls_context;
    const std::string where;  // host:port or unix:<path>, for messages
    // Events and counters (RedisBackend::stats()); null telemetry: counters of its own.
    const std::shared_ptr<Telemetry> telemetry;
    const bool observed;  // events are wanted: calls are timed, events made
    // Its events name its connection as these do (pipelined, or a pool's kind).
    const std::shared_ptr<ConnectionCounters> counters;
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
    RequestQueue queue;
    Phase phase = Phase::down;
    std::shared_ptr<Link> link;
    int failures = 0;  // connects in a row that brought no reply
    Clock::time_point last_failure{};
    boost::asio::steady_timer retry_timer;

    bool was_up = false;  // a connection of this pipeline was up: the next one is a reconnect

    bool current(const std::shared_ptr<Link>& l) const { return !closed && link == l; }

    enum class Handed { all, more, ended };

    // From callers' threads (pipeline.cpp).
    void submit(Request r);
    void shut_down(bool by_close);

    // On the strand, under `mutex`. pipeline.cpp: the queue driven, replies handed over,
    // what a loss or a failure means for callers.
    void pump();
    void on_reply(RequestQueue::Answer answer);
    void lost(const std::string& reason, bool timed_out);
    void unreadable(const std::string& reason);
    void fail_unwritten(const Failure& failure);
    Failure not_sent(const Request& r) const;
    void complete(Request& r, Result<ReplyPtr> result);
    void emit(RedisEvent::Kind kind, std::string reason = {}) const;
    void disconnected(std::error_code code, const std::string& why) const;

    // pipeline_connection.cpp: the connection's life, its writes, reads and reply timer.
    void start_connect();
    Millis backoff() const;
    void note_failure();
    void connect();
    void connect_failed(const std::string& reason);
    void connected();
    void start_tls();
    void ready();
    void close_link();
    bool write(bool handshake);
    void arm_reply_timer();
    void reply_timer_fired();
    void disarm_reply_timer();
    static const char* closed_by_peer(Link& l);
    static const char* tls_closed_by_peer(Link& l);
    void read(const std::shared_ptr<Link>& l);
    void on_read(const std::shared_ptr<Link>& l, error_code ec, std::size_t n);
    void hand_replies(const std::shared_ptr<Link>& l, error_code ec);
    Handed hand_parsed(const std::shared_ptr<Link>& l, std::size_t most);
};

}  // namespace seatlock::redis_detail
