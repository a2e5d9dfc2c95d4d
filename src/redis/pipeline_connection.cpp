// SPDX-License-Identifier: MIT
// src/redis/pipeline_connection.cpp: the life of a Pipeline's connection: connect (TCP,
// a Unix socket, or TLS over TCP) with a timeout, AUTH/SELECT before callers' requests, a
// back-off after failed connects, an idle connection checked before it is written to; and
// the loops that move bytes: one socket write of everything the queue has, reads parsed
// by hiredis's reader and handed in two turns, the reply timer. What each reply or timeout
// means is the RequestQueue's (request_queue.hpp) to say.
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <new>

#include "pipeline_state.hpp"
#include "tls.hpp"

namespace seatlock::redis_detail {

namespace asio = boost::asio;
using pipeline_io::Clock;
using pipeline_io::error_code;
using pipeline_io::stream;
using pipeline_io::tcp;

namespace {

// hiredis frees its parse buffer when it is empty and larger than this: large enough that
// steady traffic reuses it, small enough that one huge reply does not pin memory.
constexpr std::size_t reader_max_idle = 2 * pipeline_io::read_buffer_size;
// The pause before connecting again after a failed connect (doubling, at most 800 ms):
// a dead server costs one attempt per pause, not one per request.
constexpr Millis first_backoff{25};
constexpr int max_backoff_doublings = 5;
// Replies handed to their callers in one turn of the strand, at the least (hand_replies).
constexpr std::size_t min_replies_per_turn = 8;

}  // namespace

void Pipeline::State::start_connect() {
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

Millis Pipeline::State::backoff() const {
    return first_backoff * (1 << std::min(failures - 1, max_backoff_doublings));
}

void Pipeline::State::note_failure() {
    ++failures;
    last_failure = Clock::now();
}

void Pipeline::State::connect() {
    phase = Phase::connecting;
    link = std::make_shared<Link>(strand);
    counters->add(counters->connects);
    if (was_up) emit(RedisEvent::Kind::reconnecting);
    auto self = shared_from_this();
    link->connect_timer.expires_after(options.connect_timeout);
    link->connect_timer.async_wait([self, l = link](error_code ec) {
        std::lock_guard guard(self->mutex);
        // A timer that expired just as the connect succeeded still reports success.
        if (ec || !self->current(l) || self->phase != Phase::connecting) return;
        self->connect_failed(std::string(l->tls ? "no TLS handshake" : "no connection") +
                             " within " + std::to_string(self->options.connect_timeout.count()) +
                             " ms");
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

void Pipeline::State::connect_failed(const std::string& reason) {
    close_link();
    note_failure();
    fail_unwritten(
        Failure(errc::connection_failed, "cannot connect to Redis at " + where + ": " + reason));
    if (!closed) pump();  // what arrived meanwhile gets its own attempt, after the pause
}

void Pipeline::State::connected() {
    error_code ignored;
    // The pipeline gathers its writes itself; Nagle's delay would only add latency.
    if (options.unix_socket.empty()) {
        link->socket.set_option(tcp::no_delay(true), ignored);
        link->socket.set_option(asio::socket_base::keep_alive(true), ignored);
    }
    if (tls_context) {
        start_tls();
        return;
    }
    ready();
}

// The TLS handshake, still within connect_timeout (the phase stays `connecting`). A
// handshake that fails, a certificate that does not verify among its reasons, fails the
// callers' requests with connection_failed: nothing was written.
void Pipeline::State::start_tls() {
    auto l = link;
    l->tls.emplace(l->socket, *tls_context);
    prepare_tls_connection(l->tls->native_handle(), options.tls, options.host);
    l->tls->async_handshake(asio::ssl::stream_base::client,
                            [self = shared_from_this(), l](error_code ec) {
                                std::lock_guard guard(self->mutex);
                                if (!self->current(l)) return;
                                if (ec) {
                                    self->connect_failed(
                                        tls_handshake_failure(l->tls->native_handle(), ec));
                                    return;
                                }
                                self->ready();
                            });
}

// Connected (and over TLS, the handshake done): AUTH/SELECT, then callers' requests.
void Pipeline::State::ready() {
    link->connect_timer.cancel();
    if (was_up) counters->add(counters->reconnects);
    was_up = true;
    emit(RedisEvent::Kind::connected);
    link->reader.reset(redisReaderCreate());
    if (!link->reader) throw std::bad_alloc();
    link->reader->maxbuf = reader_max_idle;
    // Callers' requests wait for the answers to AUTH and SELECT: behind a refused AUTH
    // they could still run (a server without a password runs them), and behind a
    // refused SELECT they would run in database 0.
    phase = Phase::handshaking;
    if (write(true)) return;
    phase = Phase::up;
    pump();
}

// One socket write of the handshake, or of every unwritten request; false when there is
// nothing to write.
bool Pipeline::State::write(bool handshake) {
    auto l = link;
    l->out.clear();
    const std::size_t count =
        handshake ? queue.write_handshake(l->out, Clock::now()) : queue.write(l->out, Clock::now());
    if (count == 0) return false;
    counters->add(counters->sent, count);
    counters->add(counters->writes);
    l->writing = true;
    arm_reply_timer();
    auto on_written = [self = shared_from_this(), l](error_code ec, std::size_t) {
        std::lock_guard guard(self->mutex);
        if (!self->current(l)) return;
        l->writing = false;
        if (ec) {
            self->lost("the write failed: " + ec.message(), false);
            return;
        }
        self->pump();
    };
    if (l->tls)
        asio::async_write(*l->tls, asio::buffer(l->out), std::move(on_written));
    else
        asio::async_write(l->socket, asio::buffer(l->out), std::move(on_written));
    if (!l->reading) read(l);
    return true;
}

// One timer per connection, set for the oldest written request. Requests are written
// in order with the same timeout, so the oldest has the earliest deadline; the timer
// is not moved on every reply, only looked at again when it fires.
void Pipeline::State::arm_reply_timer() {
    if (link->timer_armed || !queue.has_written()) return;
    link->timer_armed = true;
    link->reply_timer.expires_at(queue.oldest_deadline());
    link->reply_timer.async_wait(
        [self = shared_from_this(), l = link, turn = link->timer_turn](error_code) {
            std::lock_guard guard(self->mutex);
            if (!self->current(l) || l->timer_turn != turn) return;
            l->timer_armed = false;
            self->reply_timer_fired();
        });
}

void Pipeline::State::reply_timer_fired() {
    // Bytes already waiting in the socket, or replies read and not yet handed, are the
    // oldest request's reply: the strand was busy, the server was not late.
    auto reply_waiting = [this] {
        error_code ec;
        return link->handing || (link->socket.available(ec) > 0 && !ec);
    };
    switch (queue.on_timer(Clock::now(), reply_waiting)) {
        case RequestQueue::Deadline::none:
            return;
        case RequestQueue::Deadline::later:
            arm_reply_timer();
            return;
        case RequestQueue::Deadline::overdue:
            lost("", true);
            return;
    }
}

// Nothing written waits for a reply: the timer no longer waits either.
void Pipeline::State::disarm_reply_timer() {
    if (!link->timer_armed) return;
    link->timer_armed = false;
    ++link->timer_turn;
    link->reply_timer.cancel();
}

// Why an idle connection cannot carry a request (the server closed it, or sent bytes
// nobody asked for, which leaves the stream out of step); null when it can.
const char* Pipeline::State::closed_by_peer(Link& l) {
    char byte = 0;
    const ssize_t n = ::recv(l.socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return "the server closed the connection";
    if (n > 0) return l.tls ? tls_closed_by_peer(l) : "Redis sent a reply nobody asked for";
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return nullptr;
    return "the connection broke while it was idle";
}

// Bytes on an idle TLS connection are records, not necessarily data: a TLS 1.3 server
// sends session tickets after the handshake, which nobody has read yet. One read that
// does not wait (the socket non-blocking for it; no other operation is pending on an idle
// connection) lets OpenSSL take what is there and says which it was.
const char* Pipeline::State::tls_closed_by_peer(Link& l) {
    error_code ec;
    l.socket.non_blocking(true, ec);
    if (ec) return "the connection broke while it was idle";
    const std::size_t n = l.tls->read_some(asio::buffer(l.in), ec);
    error_code ignored;
    l.socket.non_blocking(false, ignored);
    if (n > 0) return "Redis sent a reply nobody asked for";
    if (ec == asio::error::would_block || ec == asio::error::try_again) return nullptr;
    if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated)
        return "the server closed the connection";
    return "the connection broke while it was idle";
}

void Pipeline::State::read(const std::shared_ptr<Link>& l) {
    l->reading = true;
    auto on_read = [self = shared_from_this(), l](error_code ec, std::size_t n) {
        std::lock_guard guard(self->mutex);
        if (self->current(l)) self->on_read(l, ec, n);
    };
    if (l->tls)
        l->tls->async_read_some(asio::buffer(l->in), std::move(on_read));
    else
        l->socket.async_read_some(asio::buffer(l->in), std::move(on_read));
}

void Pipeline::State::on_read(const std::shared_ptr<Link>& l, error_code ec, std::size_t n) {
    if (n > 0) {
        counters->add(counters->reads);
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
// waits for the other.
void Pipeline::State::hand_replies(const std::shared_ptr<Link>& l, error_code ec) {
    l->handing = false;
    switch (hand_parsed(l, std::max(min_replies_per_turn, queue.written() / 2))) {
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
        // A TLS server that closes without close_notify (Redis on CLIENT KILL) ends the
        // stream "truncated": the same end for a client whose requests are all answered.
        const bool closed_by_server =
            ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
        lost(closed_by_server ? "the server closed the connection" : ec.message(), false);
        return;
    }
    if (queue.has_written()) {
        read(l);
    } else {
        l->reading = false;  // idle: the next write reads again
    }
    pump();
    if (current(l) && !queue.has_written()) disarm_reply_timer();
}

// Hands at most `most` of the complete replies the reader holds. `ended`: a reply or
// a callback ended the connection or the pipeline; `more`: `most` were handed.
Pipeline::State::Handed Pipeline::State::hand_parsed(const std::shared_ptr<Link>& l,
                                                     std::size_t most) {
    redisReader* reader = l->reader.get();
    for (std::size_t handed = 0; handed < most; ++handed) {
        void* raw = nullptr;
        if (redisReaderGetReply(reader, &raw) != REDIS_OK) {
            unreadable(reader->errstr);
            return Handed::ended;
        }
        if (!raw) return Handed::all;  // the rest of the reply is still on its way
        ReplyPtr reply(static_cast<redisReply*>(raw));
        if (!queue.has_written()) {
            lost("Redis sent a reply nobody asked for", false);
            return Handed::ended;
        }
        l->answered = true;
        failures = 0;
        on_reply(queue.on_reply(std::move(reply)));
        if (!current(l)) return Handed::ended;
    }
    return Handed::more;
}

void Pipeline::State::close_link() {
    if (!link) return;
    error_code ignored;
    link->connect_timer.cancel();
    link->reply_timer.cancel();
    link->resolver.cancel();
    link->socket.close(ignored);
    link.reset();
    phase = Phase::down;
    queue.disconnected();
}

}  // namespace seatlock::redis_detail
