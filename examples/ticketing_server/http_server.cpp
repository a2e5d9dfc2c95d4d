// SPDX-License-Identifier: MIT
// http_server.cpp: the listener and one Session per connection, each on its own strand, where
// its requests' handlers run as coroutines.
#include "http_server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/write.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <condition_variable>
#include <exception>
#include <iterator>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "log.hpp"
#include "seat_feed.hpp"
#include "wire_form.hpp"

namespace ticketing {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Why a request is answered without being handled: its status and JSON error.
struct Refusal {
    http::status status;
    std::string_view code;
    std::string message;
};

// The members of every `name` field line, in order; nullopt when one is not a valid list
// of tokens (Beast's lists stop quietly at the first bad character).
std::optional<std::vector<std::string_view>> field_tokens(const http::fields& fields,
                                                          http::field name) {
    std::vector<std::string_view> tokens;
    const auto [first, last] = fields.equal_range(name);
    for (auto line = first; line != last; ++line) {
        const http::opt_token_list list(line->value());
        if (!http::validate_list(list)) return std::nullopt;
        for (const auto token : list) tokens.emplace_back(token.data(), token.size());
    }
    return tokens;
}

// RFC 9112 section 6: the body of a request is framed by Content-Length or by the chunked
// coding, the last of its Transfer-Encoding (Beast decodes no other). Anything else
// cannot be framed safely, and the connection is closed after the answer.
std::optional<Refusal> framing_refusal(const http::request_header<>& header) {
    if (header.count(http::field::transfer_encoding) == 0) return std::nullopt;
    if (header.version() < 11) {
        return Refusal{http::status::bad_request, "bad_request",
                       "Transfer-Encoding is not allowed in an HTTP/1.0 request"};
    }
    if (header.count(http::field::content_length) != 0) {
        return Refusal{http::status::bad_request, "bad_request",
                       "a request may not have both Transfer-Encoding and Content-Length"};
    }
    const auto codings = field_tokens(header, http::field::transfer_encoding);
    if (!codings || codings->empty() || !beast::iequals(codings->back(), "chunked")) {
        return Refusal{http::status::bad_request, "bad_request",
                       "the final Transfer-Encoding of a request must be chunked"};
    }
    const auto first = codings->begin(), last = std::prev(codings->end());
    if (std::any_of(first, last, [](auto c) { return beast::iequals(c, "chunked"); })) {
        return Refusal{http::status::bad_request, "bad_request",
                       "a request may be chunked only once"};
    }
    if (first != last) {
        return Refusal{http::status::not_implemented, "not_implemented",
                       fmt::format("transfer coding '{}' is not supported, only chunked", *first)};
    }
    return std::nullopt;
}

// RFC 9112 section 3.2: exactly one Host in an HTTP/1.1 request, at most one in HTTP/1.0,
// and a host[:port] value.
std::optional<Refusal> host_refusal(const http::request_header<>& header) {
    const auto hosts = header.count(http::field::host);
    if (hosts == 0 && header.version() >= 11) {
        return Refusal{http::status::bad_request, "bad_request",
                       "an HTTP/1.1 request needs a Host header"};
    }
    if (hosts > 1) {
        return Refusal{http::status::bad_request, "bad_request",
                       "a request may have only one Host header"};
    }
    if (hosts == 1) {
        const auto value = header[http::field::host];
        const auto authority =
            boost::urls::parse_authority(std::string_view(value.data(), value.size()));
        if (!authority || authority->has_userinfo()) {
            return Refusal{http::status::bad_request, "bad_request",
                           "the Host header must be host[:port]"};
        }
    }
    return std::nullopt;
}

// RFC 9110 section 10.1.1: 100-continue is the only expectation there is.
enum class Expectation { none, continue_100, unknown };

Expectation expectation(const http::request_header<>& header) {
    if (header.count(http::field::expect) == 0) return Expectation::none;
    const auto members = field_tokens(header, http::field::expect);
    if (!members) return Expectation::unknown;
    bool asked = false;
    for (const auto member : *members) {
        if (!beast::iequals(member, "100-continue")) return Expectation::unknown;
        asked = true;
    }
    return asked ? Expectation::continue_100 : Expectation::none;
}

// Why a request whose header was just read is not handled; nullopt when it may be.
std::optional<Refusal> refusal(const http::request_header<>& header) {
    if (auto framing = framing_refusal(header)) return framing;
    if (auto host = host_refusal(header)) return host;
    if (expectation(header) == Expectation::unknown) {
        return Refusal{http::status::expectation_failed, "expectation_failed",
                       "the only expectation this server meets is 100-continue"};
    }
    return std::nullopt;
}

}  // namespace

// The live sessions, so that stop() can reach them. Shared with every session, because
// a session may outlive the server object when its handlers are abandoned at exit.
struct HttpServer::Connections {
    std::mutex mutex;
    std::condition_variable empty;
    bool stopping = false;
    std::unordered_map<const void*, std::weak_ptr<Session>> sessions;
};

class HttpServer::Session : public FeedListener, public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, std::shared_ptr<Connections> connections, Api& api,
            Metrics& metrics, const HttpLimits& limits)
        : stream_(std::move(socket)),
          connections_(std::move(connections)),
          api_(api),
          metrics_(metrics),
          limits_(limits),
          coalesce_timer_(stream_.get_executor()),
          heartbeat_timer_(stream_.get_executor()) {
        // The rate limiter's per-address key: the socket's peer (a proxy's, behind one).
        beast::error_code ec;
        const auto peer = stream_.socket().remote_endpoint(ec);
        if (!ec) peer_ = peer.address().to_string();
    }

    ~Session() override {
        if (streaming_ && !room_stream_) metrics_.stream_viewers(-1);
        std::lock_guard lock(connections_->mutex);
        connections_->sessions.erase(this);
        if (connections_->sessions.empty()) connections_->empty.notify_all();
    }

    void start() {
        asio::dispatch(stream_.get_executor(),
                       beast::bind_front_handler(&Session::read_request, shared_from_this()));
    }

    /// From any thread: finish what is in flight, then close.
    void stop() {
        asio::post(stream_.get_executor(), [self = shared_from_this()] { self->on_stop(); });
    }

    /// From any thread: close now. A request being handled still runs to its end, but its
    /// answer is not sent.
    void abort() {
        asio::post(stream_.get_executor(), [self = shared_from_this()] {
            self->stopping_ = true;
            self->close();
        });
    }

private:
    // A request is read in two steps: its header, checked before anything else is read
    // (a client that expects 100-continue sends its body only once told so), then its
    // body.
    void read_request() {
        if (stopping_) return close();
        parser_.emplace();
        parser_->body_limit(limits_.body_limit);
        parser_->header_limit(static_cast<std::uint32_t>(limits_.header_limit));
        stream_.expires_after(limits_.idle_timeout);
        reading_ = true;
        http::async_read_header(stream_, buffer_, *parser_,
                                beast::bind_front_handler(&Session::on_header, shared_from_this()));
    }

    void on_header(beast::error_code ec, std::size_t) {
        reading_ = false;
        if (ec) return read_failed(ec);
        const auto& header = parser_->get();
        if (auto refused = refusal(header)) {
            return reject(refused->status, refused->code, refused->message);
        }
        if (parser_->is_done()) return handle();
        // An HTTP/1.0 client cannot ask for 100 Continue (RFC 9110 section 10.1.1).
        if (expectation(header) != Expectation::continue_100 || header.version() < 11) {
            return read_body();
        }
        stream_.expires_after(limits_.idle_timeout);
        http::async_write(stream_, continue_,
                          [self = shared_from_this()](beast::error_code write_ec, std::size_t) {
                              if (write_ec) return self->close();
                              self->read_body();
                          });
    }

    void read_body() {
        if (stopping_) return close();
        stream_.expires_after(limits_.idle_timeout);
        reading_ = true;
        http::async_read(stream_, buffer_, *parser_,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             self->reading_ = false;
                             if (ec) return self->read_failed(ec);
                             self->handle();
                         });
    }

    void read_failed(beast::error_code ec) {
        if (ec == http::error::body_limit) {
            return reject(
                http::status::payload_too_large, "payload_too_large",
                fmt::format("request bodies are limited to {} bytes", limits_.body_limit));
        }
        if (ec == http::error::header_limit) {
            return reject(
                http::status::request_header_fields_too_large, "headers_too_large",
                fmt::format("request headers are limited to {} bytes", limits_.header_limit));
        }
        // Any other parse error is a malformed request; socket errors just end the connection.
        if (ec.category() == beast::http::make_error_code(http::error::bad_target).category() &&
            ec != http::error::end_of_stream && ec != http::error::partial_message) {
            return reject(http::status::bad_request, "bad_request",
                          "malformed HTTP request: " + ec.message());
        }
        close();
    }

    // The request's handler is a coroutine on this connection's strand; the connection
    // reads nothing more until it is answered (no pipelining of requests).
    void handle() {
        const auto started = std::chrono::steady_clock::now();
        HttpRequest request = parser_->release();
        // Read once: the rate limiter keys buyers by it, the handler acts for it.
        Identity identity = api_.identify(request);
        begin_request(request);
        if (limits_.rate_limiter) {
            std::optional<std::string_view> buyer;
            if (identity.kind == Identity::Kind::buyer) buyer = identity.buyer;
            if (auto refused =
                    rate_limit(*limits_.rate_limiter, metrics_, request, peer_, buyer)) {
                return answer(std::move(*refused), request.version(), request.keep_alive(),
                              started);
            }
        }
        if (auto room = api_.room_stream_request(request, identity)) {
            if (auto* start = std::get_if<RoomStreamStart>(&*room)) return start_room_stream(*start);
            return answer(std::move(std::get<HttpResponse>(*room)), request.version(),
                          request.keep_alive(), started);
        }
        if (auto stream = api_.stream_request(request)) {
            if (auto* start = std::get_if<StreamStart>(&*stream)) return start_stream(*start);
            return answer(std::move(std::get<HttpResponse>(*stream)), request.version(),
                          request.keep_alive(), started);
        }
        const unsigned version = request.version();
        const bool keep_alive = request.keep_alive();
        asio::co_spawn(stream_.get_executor(), api_.handle(std::move(request), std::move(identity), &note_),
                       [self = shared_from_this(), started, version, keep_alive](
                           std::exception_ptr failed, HttpResponse response) {
                           if (failed) {
                               response =
                                   error_response(http::status::internal_server_error,
                                                  "internal_error", "the request's handler failed");
                           }
                           self->answer(std::move(response), version, keep_alive, started);
                       });
    }

    // What the metrics and the access line of a request need of it, kept from its header
    // (the request itself goes to its handler).
    void begin_request(const http::request_header<>& header) {
        const auto given = header.find("X-Request-Id");
        request_id_ = request_id_for(given == header.end()
                                         ? std::nullopt
                                         : std::optional<std::string_view>(std::string_view(
                                               given->value().data(), given->value().size())));
        route_ = Api::route_label(header);
        method_ = Api::method_label(header);
        target_.assign(header.target().data(), header.target().size());
        note_ = RequestNote{};
    }

    // A request counted and logged: its answer's status, time and body size.
    void finish_request(unsigned status, std::chrono::steady_clock::duration took,
                        std::uint64_t bytes) {
        metrics_.request_done(route_, method_, status, took);
        if (limits_.access_log && limits_.access_log->wants(route_, status)) {
            limits_.access_log->write(AccessEntry{request_id_, method_, route_, target_, status,
                                                  took, bytes, peer_, note_.buyer});
        }
    }

    void answer(HttpResponse response, unsigned version, bool keep_alive,
                std::chrono::steady_clock::time_point started) {
        response.version(version);
        response.set(http::field::server, "seatlock-ticketing");
        response.set("X-Request-Id", request_id_);
        response.keep_alive(keep_alive && !stopping_);
        response.prepare_payload();
        finish_request(response.result_int(), std::chrono::steady_clock::now() - started,
                       response.body().size());
        write(std::move(response), false);
    }

    void write(HttpResponse response, bool then_discard) {
        response_.emplace(std::move(response));
        stream_.expires_after(limits_.idle_timeout);
        http::async_write(
            stream_, *response_,
            [self = shared_from_this(), then_discard](beast::error_code ec, std::size_t) {
                self->on_write(ec, then_discard);
            });
    }

    void on_write(beast::error_code ec, bool then_discard) {
        const bool keep_alive = response_ && response_->keep_alive();
        response_.reset();
        if (ec) return close();
        if (then_discard) return discard_rest();
        if (!keep_alive || stopping_) return close();
        read_request();
    }

    // Answers a request that cannot be read, then closes its connection.
    void reject(http::status status, std::string_view code, const std::string& message) {
        // The header, when it was read whole, names the request; otherwise it is "other".
        if (parser_ && parser_->is_header_done()) {
            begin_request(parser_->get().base());
        } else {
            begin_request(http::request_header<>{});
        }
        HttpResponse response = error_response(status, code, message);
        response.set(http::field::server, "seatlock-ticketing");
        response.set("X-Request-Id", request_id_);
        response.keep_alive(false);
        response.prepare_payload();
        finish_request(response.result_int(), std::chrono::steady_clock::duration{},
                       response.body().size());
        write(std::move(response), true);
    }

    // After a rejected request the client may still be sending its (large) body.
    // Closing now would reset the connection and could destroy the response before the
    // client reads it, so read and drop the rest for a while, then close.
    void discard_rest() {
        if (stopping_) return close();
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream_.expires_after(std::chrono::seconds(2));
        reading_ = true;
        stream_.async_read_some(asio::buffer(discard_),
                                [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                    self->reading_ = false;
                                    self->discarded_ += n;
                                    if (ec || self->discarded_ > max_discard) return self->close();
                                    self->discard_rest();
                                });
    }

    void on_stop() {
        stopping_ = true;
        // A stream has no end of its own: it ends now, frames unsent or not.
        if (streaming_) return end_stream();
        // A connection waiting for a request, or for the rest of one, closes now: nothing
        // was done for it yet, and a client that is slow or gone must not hold up the
        // exit. A request being handled or answered is finished first (answered with
        // "Connection: close"), then on_write closes the connection.
        if (reading_) beast::get_lowest_layer(stream_).cancel();
    }

    void close() {
        if (streaming_ && !stream_logged_) {
            // A stream's access line: how long the viewer stayed and all it was sent.
            stream_logged_ = true;
            if (limits_.access_log && limits_.access_log->wants(route_, 200)) {
                const auto stayed = std::chrono::steady_clock::now() - stream_started_;
                limits_.access_log->write(AccessEntry{request_id_, method_, route_, target_, 200,
                                                      stayed, stream_bytes_, peer_, ""});
            }
        }
        coalesce_timer_.cancel();
        heartbeat_timer_.cancel();
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_.close();
    }

    // ---- seat map streams (Server-Sent Events)

public:
    /// From the seat feed's reader: the event moved on. Only notes it; the frame is made
    /// on this connection's strand, at most once per `coalesce`. While the viewer waits
    /// for its next tick (coalescing) the note is all: the tick reads it, so a publish
    /// costs such a viewer no hand-over to its strand (a busy sale publishes far more
    /// often than a viewer gets frames).
    void wake() override {
        if (woken_.exchange(true)) return;
        if (coalescing_.load()) return;
        asio::post(stream_.get_executor(), [self = shared_from_this()] {
            if (self->woken_.exchange(false)) self->dirty_ = true;
            self->compose();
        });
    }

private:
    // The head of an event stream's answer, and the reconnection delay asked of the client.
    [[nodiscard]] std::string stream_head(std::string_view cache_control) const {
        return fmt::format(
            "HTTP/1.1 200 OK\r\nServer: seatlock-ticketing\r\nContent-Type: text/event-stream\r\n"
            "Cache-Control: {}\r\nX-Accel-Buffering: no\r\nConnection: close\r\nX-Request-Id: {}\r\n\r\n"
            "retry: 1000\n\n",
            cache_control, request_id_);
    }

    void start_stream(const StreamStart& start) {
        streaming_ = true;
        stream_event_ = start.event;
        stream_started_ = std::chrono::steady_clock::now();
        metrics_.stream_viewers(1);
        metrics_.request_done(route_, method_, 200, std::chrono::steady_clock::duration{});
        beast::error_code ignored;
        stream_.socket().set_option(asio::socket_base::send_buffer_size(limits_.send_buffer),
                                    ignored);
        stream_.socket().set_option(tcp::no_delay(true), ignored);
        pending_ = stream_head("no-cache");
        // The first frame: the changes after the viewer's version when this process still
        // has them, the whole map otherwise.
        SeatFeed& feed = api_.feed();
        if (start.last_event_id) {
            const ChangesSince found = feed.since(stream_event_, *start.last_event_id);
            if (found.outcome == ChangesSince::Outcome::ok) {
                if (!found.changes.empty() || found.snapshot->version != *start.last_event_id) {
                    pending_ += sse_frame(
                        found.snapshot->version, "changes",
                        encode_changes(*found.snapshot, *start.last_event_id, found.changes));
                    metrics_.stream_frame();
                }
                sent_ = found.snapshot->version;
                sent_history_ = found.snapshot->history;
                has_sent_ = true;
            }
        }
        if (!has_sent_) {
            const auto snapshot = feed.current(stream_event_);
            pending_ += snapshot->snapshot_frame();
            metrics_.stream_frame();
            sent_ = snapshot->version;
            sent_history_ = snapshot->history;
            has_sent_ = true;
        }
        last_frame_ = std::chrono::steady_clock::now();
        feed.listen(stream_event_, std::weak_ptr<FeedListener>(shared_from_this()));
        // A change published between the first frame and listen() is not missed.
        dirty_ = true;
        flush();
        arm_heartbeat();
        // Reads nothing more from the viewer but its going away.
        watch_close();
    }

    // ---- a buyer's position in a room's line (Server-Sent Events)

    // The stream's frames: the buyer's position, asked of the room again after the frame's
    // `next` (room_poll_after: 500 ms near the front, up to 20 s far back) and sent when it
    // changed; a heartbeat comment as on seat map streams; the stream ends after
    // the frame that carries the admission (or says the buyer no longer waits).
    void start_room_stream(const RoomStreamStart& start) {
        streaming_ = true;
        room_stream_ = true;
        stream_started_ = std::chrono::steady_clock::now();
        metrics_.request_done(route_, method_, 200, std::chrono::steady_clock::duration{});
        beast::error_code ignored;
        stream_.socket().set_option(tcp::no_delay(true), ignored);
        pending_ = stream_head("no-store");
        flush();
        arm_heartbeat();
        watch_close();
        asio::co_spawn(stream_.get_executor(), follow_room(shared_from_this(), start), asio::detached);
    }

    static asio::awaitable<void> follow_room(std::shared_ptr<Session> self, RoomStreamStart start) {
        std::string sent;
        while (!self->ended_) {
            RoomFrame frame = co_await self->api_.room_frame(*start.room, start.buyer);
            if (self->ended_) break;
            if (frame.text != sent) {
                self->pending_ += frame.text;
                sent = std::move(frame.text);
                self->flush();
            }
            if (frame.last) {
                self->end_after_flush_ = true;
                if (!self->writing_busy_) self->end_stream();
                break;
            }
            self->coalesce_timer_.expires_after(frame.next);
            beast::error_code cancelled;  // by close()
            co_await self->coalesce_timer_.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
        }
    }

    void watch_close() {
        stream_.socket().async_read_some(
            asio::buffer(discard_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
                if (ec) return self->end_stream();
                self->watch_close();
            });
    }

    // Queues the frame that brings the viewer from its version to the snapshot's.
    void compose() {
        if (!streaming_ || ended_ || !dirty_) return;
        const auto now = std::chrono::steady_clock::now();
        const auto period = coalesce_period();
        if (now - last_frame_ < period) return wait_until(tick_after(last_frame_ + period, period));
        dirty_ = false;
        const auto frame = api_.feed().frame_after(stream_event_, sent_, sent_history_, tick_of(now, period));
        if (frame.behind) {
            // The tick's frame leads to an older snapshot than the latest: the rest on the
            // next tick.
            dirty_ = true;
            if (!frame.text) return wait_until(tick_after(now + std::chrono::steady_clock::duration(1), period));
        }
        if (!frame.text) return;
        pending_ += *frame.text;
        metrics_.stream_frame();
        sent_ = frame.version;
        sent_history_ = frame.history;
        last_frame_ = now;
        // Frames pile up only while the socket has not taken the previous ones.
        if (writing_busy_ && pending_.size() > limits_.buffer_limit) {
            metrics_.stream_cut_off();
            log_warn("stream of {}: a viewer fell {} bytes behind: cut off", stream_event_,
                     pending_.size());
            return end_stream();
        }
        flush();
        if (dirty_) wait_until(tick_after(last_frame_ + period, period));
    }

    // Composes again at `tick`, a process-wide tick (tick_after): viewers that keep up
    // compose at the same moments, from the same version to the same (frame_after), and
    // share one frame.
    void wait_until(std::chrono::steady_clock::time_point tick) {
        if (coalescing_) return;
        coalescing_ = true;
        coalesce_timer_.expires_at(tick);
        coalesce_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
            // Before woken_ is read: a wake() that saw coalescing_ set left its note in
            // woken_ for this, and one after this posts as usual.
            self->coalescing_ = false;
            if (self->woken_.exchange(false)) self->dirty_ = true;
            if (!ec) self->compose();
        });
    }

    // The time between two frames of a viewer: `coalesce`, or longer when the viewers are
    // more than `frame_budget` frames a second at that pace (HttpLimits::frame_budget).
    std::chrono::steady_clock::duration coalesce_period() const {
        using std::chrono::steady_clock;
        const auto floor = std::chrono::duration_cast<steady_clock::duration>(limits_.coalesce);
        const auto viewers = std::max<std::int64_t>(metrics_.open_streams(), 1);
        const auto shared = std::chrono::duration_cast<steady_clock::duration>(std::chrono::seconds(1)) *
                            viewers / static_cast<std::int64_t>(std::max<std::size_t>(limits_.frame_budget, 1));
        return std::max(floor, shared);
    }

    // The number of the coalescing period (`period` long) `t` is in (frame_after's tick).
    static std::int64_t tick_of(std::chrono::steady_clock::time_point t,
                                std::chrono::steady_clock::duration period) {
        const auto since_epoch = t.time_since_epoch();
        return period.count() <= 0 ? since_epoch.count() : since_epoch / period;
    }

    // The first multiple of `period` (on the steady clock) at or after `t`.
    static std::chrono::steady_clock::time_point tick_after(std::chrono::steady_clock::time_point t,
                                                            std::chrono::steady_clock::duration period) {
        if (period.count() <= 0) return t;
        const auto since_epoch = t.time_since_epoch();
        const auto ticks = (since_epoch + period - std::chrono::steady_clock::duration(1)) / period;
        return std::chrono::steady_clock::time_point(ticks * period);
    }

    void flush() {
        if (writing_busy_ || pending_.empty() || ended_) return;
        writing_.swap(pending_);
        pending_.clear();
        writing_busy_ = true;
        stream_bytes_ += writing_.size();
        last_write_ = std::chrono::steady_clock::now();
        // A write is given as long as a silent connection is; then the viewer is gone.
        stream_.expires_after(limits_.idle_timeout);
        asio::async_write(stream_, asio::buffer(writing_),
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              self->writing_busy_ = false;
                              self->writing_.clear();
                              if (ec) return self->end_stream();
                              if (self->end_after_flush_ && self->pending_.empty())
                                  return self->end_stream();
                              self->flush();
                          });
    }

    void arm_heartbeat() {
        heartbeat_timer_.expires_after(limits_.heartbeat);
        heartbeat_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
            if (ec || self->ended_) return;
            const auto idle = std::chrono::steady_clock::now() - self->last_write_;
            if (idle >= self->limits_.heartbeat && !self->writing_busy_ &&
                self->pending_.empty()) {
                self->pending_ = ": heartbeat\n\n";
                self->metrics_.stream_heartbeat();
                self->flush();
            }
            self->arm_heartbeat();
        });
    }

    void end_stream() {
        if (ended_) return;
        ended_ = true;
        close();
    }

    static constexpr std::size_t max_discard = 8 * 1024 * 1024;
    // How often a room stream asks where its buyer stands (one storage read each).

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    std::optional<HttpResponse> response_;
    http::response<http::empty_body> continue_{http::status::continue_, 11};
    std::shared_ptr<Connections> connections_;
    Api& api_;
    Metrics& metrics_;
    HttpLimits limits_;
    bool reading_ = false;
    bool stopping_ = false;
    std::array<char, 16 * 1024> discard_{};
    std::size_t discarded_ = 0;
    // Seat map streams (strand only, but woken_ and coalescing_, which wake() reads).
    asio::steady_timer coalesce_timer_;
    asio::steady_timer heartbeat_timer_;
    bool streaming_ = false;
    bool room_stream_ = false;      // a room's position stream, not a seat map's
    bool end_after_flush_ = false;  // the stream's last frame is queued
    bool ended_ = false;
    std::string stream_event_;
    seatlock::EventVersion sent_ = 0;
    seatlock::EventHistory sent_history_ = 0;  // the history sent_ belongs to
    bool has_sent_ = false;
    bool dirty_ = false;
    std::atomic<bool> coalescing_{false};
    bool writing_busy_ = false;
    std::atomic<bool> woken_{false};
    std::string pending_;
    std::string writing_;
    std::chrono::steady_clock::time_point last_frame_{};
    std::chrono::steady_clock::time_point last_write_{};
    std::string peer_;  // the client's address, for the rate limiter and the access log
    // The request being answered (begin_request), for its metrics and access line.
    std::string request_id_;
    std::string_view route_ = "other";
    std::string_view method_ = "other";
    std::string target_;
    RequestNote note_;
    // A stream's access line (written once, when it ends).
    std::chrono::steady_clock::time_point stream_started_{};
    std::uint64_t stream_bytes_ = 0;
    bool stream_logged_ = false;
};

class HttpServer::Listener : public std::enable_shared_from_this<Listener> {
public:
    Listener(std::vector<asio::io_context*> contexts, const tcp::endpoint& endpoint,
             std::shared_ptr<Connections> connections, Api& api, Metrics& metrics,
             const HttpLimits& limits)
        : contexts_(std::move(contexts)),
          acceptor_(asio::make_strand(*contexts_.front())),
          retry_(acceptor_.get_executor()),
          connections_(std::move(connections)),
          api_(api),
          metrics_(metrics),
          limits_(limits) {
        acceptor_.open(endpoint.protocol());
        acceptor_.set_option(asio::socket_base::reuse_address(true));
        acceptor_.bind(endpoint);
        acceptor_.listen(asio::socket_base::max_listen_connections);
    }

    tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }

    void start() {
        asio::dispatch(acceptor_.get_executor(),
                       beast::bind_front_handler(&Listener::accept, shared_from_this()));
    }

    void stop() {
        asio::dispatch(acceptor_.get_executor(), [self = shared_from_this()] {
            beast::error_code ignored;
            self->acceptor_.close(ignored);
            self->retry_.cancel();
        });
    }

private:
    void accept() {
        if (!acceptor_.is_open()) return;
        // Each connection on the next io_context in turn (on the acceptor's strand).
        auto& ioc = *contexts_[next_context_++ % contexts_.size()];
        acceptor_.async_accept(asio::make_strand(ioc),
                               beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
    }

    void on_accept(beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (ec) {
            // Out of file descriptors and the like: pause instead of spinning.
            log_warn("accept failed: {}", ec.message());
            retry_.expires_after(std::chrono::milliseconds(100));
            retry_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
                if (!wait_ec) self->accept();
            });
            return;
        }
        auto session =
            std::make_shared<Session>(std::move(socket), connections_, api_, metrics_, limits_);
        {
            std::lock_guard lock(connections_->mutex);
            if (connections_->stopping) return;  // dropping `session` closes the socket
            connections_->sessions.emplace(session.get(), session);
        }
        session->start();
        accept();
    }

    std::vector<asio::io_context*> contexts_;
    std::size_t next_context_ = 0;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    std::shared_ptr<Connections> connections_;
    Api& api_;
    Metrics& metrics_;
    HttpLimits limits_;
};

HttpServer::HttpServer(std::vector<asio::io_context*> contexts, const tcp::endpoint& endpoint,
                       Api& api, Metrics& metrics, HttpLimits limits)
    : connections_(std::make_shared<Connections>()),
      listener_(std::make_shared<Listener>(std::move(contexts), endpoint, connections_, api,
                                           metrics, limits)) {}

HttpServer::~HttpServer() = default;

tcp::endpoint HttpServer::local_endpoint() const {
    return listener_->local_endpoint();
}

void HttpServer::start() {
    listener_->start();
}

void HttpServer::stop() {
    listener_->stop();
    std::vector<std::shared_ptr<Session>> sessions;
    {
        std::lock_guard lock(connections_->mutex);
        connections_->stopping = true;
        for (const auto& [key, weak] : connections_->sessions) {
            if (auto session = weak.lock()) sessions.push_back(std::move(session));
        }
    }
    for (const auto& session : sessions) session->stop();
}

void HttpServer::abort() {
    std::vector<std::shared_ptr<Session>> sessions;
    {
        std::lock_guard lock(connections_->mutex);
        connections_->stopping = true;
        for (const auto& [key, weak] : connections_->sessions) {
            if (auto session = weak.lock()) sessions.push_back(std::move(session));
        }
    }
    for (const auto& session : sessions) session->abort();
}

bool HttpServer::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(connections_->mutex);
    return connections_->empty.wait_for(lock, timeout,
                                        [&] { return connections_->sessions.empty(); });
}

}  // namespace ticketing
