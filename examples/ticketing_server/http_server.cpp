// http_server.cpp: the listener and one Session per connection, each on its own strand.
#include "http_server.hpp"

#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "log.hpp"

namespace ticketing {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// The live sessions, so that stop() can reach them. Shared with every session, because
// a session may outlive the server object when its handlers are abandoned at exit.
struct HttpServer::Connections {
    std::mutex mutex;
    std::condition_variable empty;
    bool stopping = false;
    std::unordered_map<const void*, std::weak_ptr<Session>> sessions;
};

class HttpServer::Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, std::shared_ptr<Connections> connections, Api& api,
            Metrics& metrics, const HttpLimits& limits)
        : stream_(std::move(socket)),
          connections_(std::move(connections)),
          api_(api),
          metrics_(metrics),
          limits_(limits) {}

    ~Session() {
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

private:
    void read_request() {
        if (stopping_) return close();
        parser_.emplace();
        parser_->body_limit(limits_.body_limit);
        parser_->header_limit(static_cast<std::uint32_t>(limits_.header_limit));
        stream_.expires_after(limits_.idle_timeout);
        reading_ = true;
        http::async_read(stream_, buffer_, *parser_,
                         beast::bind_front_handler(&Session::on_read, shared_from_this()));
    }

    void on_read(beast::error_code ec, std::size_t) {
        reading_ = false;
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
        if (ec &&
            ec.category() == beast::http::make_error_code(http::error::bad_target).category() &&
            ec != http::error::end_of_stream && ec != http::error::partial_message) {
            return reject(http::status::bad_request, "bad_request",
                          "malformed HTTP request: " + ec.message());
        }
        if (ec) return close();

        const auto started = std::chrono::steady_clock::now();
        const HttpRequest request = parser_->release();
        HttpResponse response = api_.handle(request);
        response.version(request.version());
        response.set(http::field::server, "seatlock-ticketing");
        response.keep_alive(request.keep_alive() && !stopping_);
        response.prepare_payload();
        metrics_.request_done(response.result_int(), std::chrono::steady_clock::now() - started);
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
        HttpResponse response = error_response(status, code, message);
        response.set(http::field::server, "seatlock-ticketing");
        response.keep_alive(false);
        response.prepare_payload();
        metrics_.request_done(response.result_int(), std::chrono::steady_clock::duration{});
        write(std::move(response), true);
    }

    // After a rejected request the client may still be sending its (large) body.
    // Closing now would reset the connection and could destroy the response before the
    // client reads it, so read and drop the rest for a while, then close.
    void discard_rest() {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream_.expires_after(std::chrono::seconds(2));
        stream_.async_read_some(asio::buffer(discard_),
                                [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                    self->discarded_ += n;
                                    if (ec || self->discarded_ > max_discard) return self->close();
                                    self->discard_rest();
                                });
    }

    void on_stop() {
        stopping_ = true;
        // Idle between requests: nothing is in flight, so the connection closes now. A
        // request partly received, being handled or being answered is finished first
        // (answered with "Connection: close"), then on_write closes the connection.
        if (reading_ && !parser_->got_some()) beast::get_lowest_layer(stream_).cancel();
    }

    void close() {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_.close();
    }

    static constexpr std::size_t max_discard = 8 * 1024 * 1024;

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    std::optional<HttpResponse> response_;
    std::shared_ptr<Connections> connections_;
    Api& api_;
    Metrics& metrics_;
    HttpLimits limits_;
    bool reading_ = false;
    bool stopping_ = false;
    std::array<char, 16 * 1024> discard_{};
    std::size_t discarded_ = 0;
};

class HttpServer::Listener : public std::enable_shared_from_this<Listener> {
public:
    Listener(asio::io_context& ioc, const tcp::endpoint& endpoint,
             std::shared_ptr<Connections> connections, Api& api, Metrics& metrics,
             const HttpLimits& limits)
        : ioc_(ioc),
          acceptor_(asio::make_strand(ioc)),
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
        acceptor_.async_accept(asio::make_strand(ioc_),
                               beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
    }

    void on_accept(beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (ec) {
            // Out of file descriptors and the like: pause instead of spinning.
            log("accept failed: {}", ec.message());
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

    asio::io_context& ioc_;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    std::shared_ptr<Connections> connections_;
    Api& api_;
    Metrics& metrics_;
    HttpLimits limits_;
};

HttpServer::HttpServer(asio::io_context& ioc, const tcp::endpoint& endpoint, Api& api,
                       Metrics& metrics, HttpLimits limits)
    : connections_(std::make_shared<Connections>()),
      listener_(std::make_shared<Listener>(ioc, endpoint, connections_, api, metrics, limits)) {}

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

bool HttpServer::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(connections_->mutex);
    return connections_->empty.wait_for(lock, timeout,
                                        [&] { return connections_->sessions.empty(); });
}

}  // namespace ticketing
