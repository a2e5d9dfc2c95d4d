// SPDX-License-Identifier: MIT
// benchmarks/viewer_load.cpp: buyers, stream viewers, pollers and full-map readers.
#include "viewer_load.hpp"

#include <fmt/core.h>
#include <sys/resource.h>

#include <array>
#include <charconv>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>

namespace seatlock::bench {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

tcp::endpoint loopback(int port) {
    return {asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)};
}

// ---------------------------------------------------------------------------------------
// Buyers and full-map readers: one request and its answer at a time on a keep-alive
// connection, as http_load.cpp's.

class Exchange : public std::enable_shared_from_this<Exchange> {
public:
    Exchange(asio::io_context& io, int port) : stream_(io) {
        stream_.socket().connect(loopback(port));
        stream_.socket().set_option(tcp::no_delay(true));
    }

protected:
    // Sends `request`, reads its answer into response_, then calls `next`.
    template <typename Next>
    void exchange(http::request<http::string_body>& request, Next next) {
        // What failed, should it: the request, not only the socket's error.
        const std::string what =
            std::string(request.method_string()) + " " + std::string(request.target());
        http::async_write(
            stream_, request, [self = shared_from_this(), next, what](beast::error_code ec, std::size_t) {
                if (ec) throw std::runtime_error(what + ": http write: " + ec.message());
                self->response_ = {};
                http::async_read(self->stream_, self->buffer_, self->response_,
                                 [self, next, what](beast::error_code read_ec, std::size_t) {
                                     if (read_ec) {
                                         throw std::runtime_error(what + ": http read: " +
                                                                  read_ec.message());
                                     }
                                     next(*self);
                                 });
            });
    }

    void expect(http::status status, const char* what) const {
        if (response_.result() != status) {
            throw std::runtime_error(std::string(what) + " answered " +
                                     std::to_string(response_.result_int()) + ": " +
                                     response_.body().substr(0, 300));
        }
    }

    static http::request<http::string_body> request(http::verb verb, const std::string& target) {
        http::request<http::string_body> r;
        r.method(verb);
        r.target(target);
        r.version(11);
        r.set(http::field::host, "127.0.0.1");
        return r;
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    http::response<http::string_body> response_;
};

class Buyer : public Exchange {
public:
    Buyer(asio::io_context& io, int port, const VenueShape& venue, int index,
          std::vector<StalenessBook*> books, BuyerCounters& counters)
        : Exchange(io, port), venue_(venue), books_(std::move(books)), counters_(counters) {
        // A row of its own: zone index % sections, row index / sections.
        zone_ = venue.zone(index % venue.sections);
        row_ = venue.row((index / venue.sections) % venue.rows);
        const std::string user = "viewer-bench-buyer-" + std::to_string(index);
        hold_ = request(http::verb::post, "/events/" + venue.event + "/holds");
        hold_.set(http::field::content_type, "application/json");
        hold_.set("X-User-Id", user);
        release_ = request(http::verb::delete_, "/");
        release_.set("X-User-Id", user);
    }

    void start(Lap& lap, const Done& done) {
        lap_ = &lap;
        done_ = &done;
        seat_ = seat_ % venue_.seats + 1;
        hold_.body() = fmt::format(R"({{"zone":"{}","seats":["{}-{}"]}})", zone_, row_, seat_);
        hold_.prepare_payload();
        exchange(hold_, [](Exchange& self) { static_cast<Buyer&>(self).on_held(); });
    }

private:
    void on_held() {
        const auto at = Clock::now();
        expect(http::status::created, "POST hold");
        lap_->first_step_done();
        const std::string& body = response_.body();
        ++counters_.holds;
        if (const auto version = json_number(body, "version")) {
            ++counters_.holds_with_version;
            for (auto* book : books_) book->hold_answered(*version, at);
        }
        const std::string mark = R"("token":")";
        const auto token = body.find(mark);
        const auto end = token == std::string::npos ? token : body.find('"', token + mark.size());
        if (end == std::string::npos) throw std::runtime_error("a hold without a token: " + body);
        release_.target("/holds/" + body.substr(token + mark.size(), end - token - mark.size()));
        exchange(release_, [](Exchange& self) { static_cast<Buyer&>(self).on_released(); });
    }

    void on_released() {
        expect(http::status::no_content, "DELETE hold");
        (*done_)(Outcome::done);
    }

    const VenueShape& venue_;
    std::vector<StalenessBook*> books_;
    BuyerCounters& counters_;
    std::string zone_;
    std::string row_;
    int seat_ = 0;
    http::request<http::string_body> hold_;
    http::request<http::string_body> release_;
    Lap* lap_ = nullptr;
    const Done* done_ = nullptr;
};

class MapReader : public Exchange {
public:
    MapReader(asio::io_context& io, int port, const std::string& event, bool gzip)
        : Exchange(io, port), gzip_(gzip), get_(request(http::verb::get, "/events/" + event + "/seats")) {
        if (gzip) get_.set(http::field::accept_encoding, "gzip");
    }

    void start(const Done& done) {
        done_ = &done;
        exchange(get_, [](Exchange& self) { static_cast<MapReader&>(self).on_answer(); });
    }

private:
    void on_answer() {
        expect(http::status::ok, "GET seats");
        const bool gzipped = response_[http::field::content_encoding] == "gzip";
        if (gzipped != gzip_ || response_.body().empty())
            throw std::runtime_error(fmt::format("GET seats (gzip asked: {}) answered {} bytes, "
                                                 "Content-Encoding '{}'",
                                                 gzip_, response_.body().size(),
                                                 std::string(response_[http::field::content_encoding])));
        (*done_)(Outcome::done);
    }

    bool gzip_;
    http::request<http::string_body> get_;
    const Done* done_ = nullptr;
};

}  // namespace

AsyncOperation viewer_buyer(asio::io_context& io, int port, const VenueShape& venue, int index,
                            std::vector<StalenessBook*> books, BuyerCounters& counters) {
    auto buyer = std::make_shared<Buyer>(io, port, venue, index, std::move(books), counters);
    return [buyer](Lap& lap, const Done& done) { buyer->start(lap, done); };
}

AsyncOperation full_map_get(asio::io_context& io, int port, const std::string& event, bool gzip,
                            int) {
    auto reader = std::make_shared<MapReader>(io, port, event, gzip);
    return [reader](Lap&, const Done& done) { reader->start(done); };
}

double server_counter(int port, const std::string& name) {
    asio::io_context io(1);
    tcp::socket socket(io);
    socket.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    http::request<http::empty_body> request{http::verb::get, "/metrics", 11};
    request.set(http::field::host, "127.0.0.1");
    http::write(socket, request);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(socket, buffer, response);
    if (response.result() != http::status::ok)
        throw std::runtime_error(fmt::format("GET /metrics answered {}", response.result_int()));
    // Prometheus' text form: a line "<name> <value>" (a labelled series has '{' after it).
    const std::string_view body = response.body();
    for (std::size_t at = 0; at < body.size();) {
        const std::size_t end = std::min(body.find('\n', at), body.size());
        const std::string_view line = body.substr(at, end - at);
        if (line.size() > name.size() + 1 && line.substr(0, name.size()) == name &&
            line[name.size()] == ' ')
            return std::stod(std::string(line.substr(name.size() + 1)));
        at = end + 1;
    }
    throw std::runtime_error("GET /metrics names no " + name);
}

// ---------------------------------------------------------------------------------------
// The viewer pool. Everything below runs on the pool's thread, but counters(), which
// takes the mutex.

struct ViewerPool::State {
    int port = 0;
    std::string event;
    StalenessBook* stream_book = nullptr;
    StalenessBook* poll_book = nullptr;
    std::atomic<bool> closing{false};
    mutable std::mutex mutex;
    ViewerCounters counters;
    // Every stream reads into this one buffer as soon as its socket has bytes: ten thousand
    // streams keep no buffer of their own.
    std::array<char, 64 * 1024> read_buffer{};
    std::vector<std::shared_ptr<tcp::socket>> sockets;  // closed when the pool ends

    template <typename F>
    void update(F f) {
        std::lock_guard lock(mutex);
        f(counters);
    }
};

namespace {

class StreamViewer : public std::enable_shared_from_this<StreamViewer> {
public:
    StreamViewer(asio::io_context& io, std::shared_ptr<ViewerPool::State> state)
        : state_(std::move(state)), socket_(std::make_shared<tcp::socket>(io)) {
        viewer_ = state_->stream_book->add_viewer();
        state_->sockets.push_back(socket_);
        request_ = fmt::format(
            "GET /events/{}/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
            state_->event);
    }

    // Connects, then calls `connected` (to open the next viewer) and follows the stream.
    void start(std::function<void()> connected) {
        socket_->async_connect(loopback(state_->port), [self = shared_from_this(),
                                                        connected](beast::error_code ec) {
            connected();
            if (ec) return self->failed();
            asio::async_write(*self->socket_, asio::buffer(self->request_),
                              [self](beast::error_code write_ec, std::size_t) {
                                  if (write_ec) return self->failed();
                                  self->read();
                              });
        });
    }

private:
    void read() {
        socket_->async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
            if (ec) return self->failed();
            self->on_readable();
        });
    }

    void on_readable() {
        auto& buffer = state_->read_buffer;
        beast::error_code ec;
        std::size_t total = 0;
        for (;;) {
            socket_->non_blocking(true);
            const std::size_t n = socket_->read_some(asio::buffer(buffer), ec);
            if (ec == asio::error::would_block) {
                ec = {};
                break;
            }
            if (ec) break;
            total += n;
            if (!consume(std::string_view(buffer.data(), n))) return failed();
            if (n < buffer.size()) break;
        }
        state_->update([&](ViewerCounters& c) { c.stream_bytes += total; });
        if (ec) return failed();
        read();
    }

    // Feeds bytes of the answer: its head first, then the stream. False when the head is
    // not a stream's.
    bool consume(std::string_view bytes) {
        if (!head_done_) {
            head_.append(bytes);
            const auto end = head_.find("\r\n\r\n");
            if (end == std::string::npos) return head_.size() < 8192;
            if (head_.rfind("HTTP/1.1 200", 0) != 0 ||
                head_.find("text/event-stream") == std::string::npos ||
                head_.find("chunked") < end) {
                return false;
            }
            head_done_ = true;
            bytes = std::string_view(head_).substr(end + 4);
            std::string rest(bytes);
            head_.clear();
            return feed(rest);
        }
        return feed(bytes);
    }

    bool feed(std::string_view bytes) {
        const auto now = Clock::now();
        std::uint64_t frames = 0, newly_open = 0;
        const auto comments_before = parser_.comments();
        parser_.feed(bytes, [&](const SseEvent& e) {
            if (e.id.empty()) return;  // the retry: line
            std::uint64_t version = 0;
            const auto [end, ec] = std::from_chars(e.id.data(), e.id.data() + e.id.size(), version);
            if (ec != std::errc{} || end != e.id.data() + e.id.size()) return;
            ++frames;
            if (!open_) {
                open_ = true;
                newly_open = 1;
            }
            state_->stream_book->received(viewer_, version, now);
        });
        const auto comments = parser_.comments() - comments_before;
        if (frames > 0 || comments > 0) {
            state_->update([&](ViewerCounters& c) {
                c.frames += frames;
                c.streams_open += newly_open;
                c.heartbeats += comments;
            });
        }
        return true;
    }

    void failed() {
        if (state_->closing) return;
        state_->update([](ViewerCounters& c) { ++c.dropped; });
        beast::error_code ignored;
        socket_->close(ignored);
    }

    std::shared_ptr<ViewerPool::State> state_;
    std::shared_ptr<tcp::socket> socket_;
    int viewer_ = 0;
    std::string request_;
    std::string head_;
    bool head_done_ = false;
    bool open_ = false;
    SseParser parser_;
};

class Poller : public std::enable_shared_from_this<Poller> {
public:
    Poller(asio::io_context& io, std::shared_ptr<ViewerPool::State> state,
           std::chrono::milliseconds period, std::chrono::milliseconds offset)
        : state_(std::move(state)), stream_(io), timer_(io), period_(period), offset_(offset) {
        viewer_ = state_->poll_book->add_viewer();
        get_.method(http::verb::get);
        get_.target("/events/" + state_->event + "/seats");
        get_.version(11);
        get_.set(http::field::host, "127.0.0.1");
        // As a browser asks.
        get_.set(http::field::accept_encoding, "gzip");
    }

    void start() {
        stream_.socket().async_connect(loopback(state_->port),
                                       [self = shared_from_this()](beast::error_code ec) {
                                           if (ec) return self->failed();
                                           self->state_->sockets.push_back(
                                               std::shared_ptr<tcp::socket>(self, &self->stream_.socket()));
                                           self->next_ = Clock::now() + self->offset_;
                                           self->wait();
                                       });
    }

private:
    void wait() {
        timer_.expires_at(next_);
        timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
            if (ec || self->state_->closing) return;
            self->poll();
        });
    }

    void poll() {
        if (!etag_.empty()) get_.set(http::field::if_none_match, etag_);
        http::async_write(stream_, get_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->failed();
            self->response_ = {};
            http::async_read(self->stream_, self->buffer_, self->response_,
                             [self](beast::error_code read_ec, std::size_t) {
                                 if (read_ec) return self->failed();
                                 self->on_answer();
                             });
        });
    }

    void on_answer() {
        const auto now = Clock::now();
        const auto status = response_.result();
        const auto tag = std::string(response_[http::field::etag]);
        const auto version = version_of_etag(tag);
        if ((status != http::status::ok && status != http::status::not_modified) || !version)
            return failed();
        etag_ = tag;
        state_->poll_book->received(viewer_, *version, now);
        const bool first = !answered_;
        answered_ = true;
        state_->update([&](ViewerCounters& c) {
            ++c.polls;
            if (status == http::status::ok) ++c.polls_changed;
            if (first) ++c.pollers_ready;
        });
        // At a fixed rate; a poll that came back late is not made up for.
        next_ += period_;
        if (next_ < now) next_ = now;
        wait();
    }

    void failed() {
        if (state_->closing) return;
        state_->update([](ViewerCounters& c) { ++c.poll_failures; });
        beast::error_code ignored;
        stream_.socket().close(ignored);
    }

    std::shared_ptr<ViewerPool::State> state_;
    beast::tcp_stream stream_;
    asio::steady_timer timer_;
    std::chrono::milliseconds period_;
    std::chrono::milliseconds offset_;
    Clock::time_point next_{};
    int viewer_ = 0;
    bool answered_ = false;
    std::string etag_;
    http::request<http::empty_body> get_;
    beast::flat_buffer buffer_;
    http::response<http::string_body> response_;
};

// Opens `left` stream viewers, at most `parallel` connecting at a time.
void open_streams(asio::io_context& io, const std::shared_ptr<ViewerPool::State>& state,
                  std::shared_ptr<int> left) {
    if (*left <= 0 || state->closing) return;
    --*left;
    auto viewer = std::make_shared<StreamViewer>(io, state);
    viewer->start([&io, state, left] { open_streams(io, state, left); });
}

}  // namespace

ViewerPool::ViewerPool(int port, std::string event, StalenessBook& stream_book,
                       StalenessBook& poll_book)
    : state_(std::make_shared<State>()), work_(asio::make_work_guard(io_)) {
    state_->port = port;
    state_->event = std::move(event);
    state_->stream_book = &stream_book;
    state_->poll_book = &poll_book;
    thread_ = std::thread([this] { io_.run(); });
}

ViewerPool::~ViewerPool() {
    state_->closing = true;
    std::promise<void> closed;
    asio::post(io_, [&] {
        for (auto& socket : state_->sockets) {
            beast::error_code ignored;
            socket->close(ignored);
        }
        state_->sockets.clear();
        closed.set_value();
    });
    closed.get_future().wait();
    work_.reset();
    io_.stop();
    thread_.join();
}

void ViewerPool::open(int streams, int pollers, std::chrono::milliseconds period,
                      std::chrono::seconds timeout) {
    const auto state = state_;
    asio::post(io_, [this, state, streams, pollers, period] {
        // Connections open a few hundred at a time: the server's listen backlog is not
        // flooded, and the first viewers read their snapshot while the others connect.
        constexpr int parallel = 256;
        auto left = std::make_shared<int>(streams);
        for (int i = 0; i < std::min(parallel, streams); ++i) open_streams(io_, state, left);
        std::minstd_rand random(7);
        std::uniform_int_distribution<std::int64_t> offset(0, period.count() - 1);
        for (int i = 0; i < pollers; ++i) {
            std::make_shared<Poller>(io_, state, period, std::chrono::milliseconds(offset(random)))
                ->start();
        }
    });
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const ViewerCounters c = counters();
        const auto streams_done = c.streams_open + c.dropped;
        const auto pollers_done = c.pollers_ready + c.poll_failures;
        if (streams_done >= static_cast<std::uint64_t>(streams) &&
            pollers_done >= static_cast<std::uint64_t>(pollers)) {
            if (c.dropped > 0 || c.poll_failures > 0)
                throw std::runtime_error(fmt::format(
                    "{} of {} stream viewers and {} of {} pollers failed to start", c.dropped,
                    streams, c.poll_failures, pollers));
            return;
        }
        if (Clock::now() > deadline)
            throw std::runtime_error(fmt::format(
                "after {} s, {} of {} stream viewers had their first frame and {} of {} pollers "
                "their first answer",
                timeout.count(), c.streams_open, streams, c.pollers_ready, pollers));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

ViewerCounters ViewerPool::counters() const {
    std::lock_guard lock(state_->mutex);
    return state_->counters;
}

std::uint64_t raise_open_files() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        (void)::setrlimit(RLIMIT_NOFILE, &limit);
        (void)::getrlimit(RLIMIT_NOFILE, &limit);
    }
    return static_cast<std::uint64_t>(limit.rlim_cur);
}

}  // namespace seatlock::bench
