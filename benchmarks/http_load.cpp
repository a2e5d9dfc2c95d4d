// SPDX-License-Identifier: MIT
// benchmarks/http_load.cpp: one connection's hold + release, as a chain of Beast handlers.
#include "http_load.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <random>
#include <stdexcept>

namespace seatlock::bench {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr int buyers_per_connection = 1000;

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
public:
    HttpConnection(asio::io_context& io, const HttpTarget& target, int index)
        : stream_(io),
          random_(static_cast<std::uint_fast32_t>(index) + 1),
          buyer_prefix_("fan-" + std::to_string(index) + "-") {
        stream_.socket().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                               static_cast<unsigned short>(target.port)));
        stream_.socket().set_option(tcp::no_delay(true));
        hold_.method(http::verb::post);
        hold_.target("/events/" + target.event + "/holds");
        hold_.version(11);
        hold_.set(http::field::host, "127.0.0.1");
        hold_.set(http::field::content_type, "application/json");
        hold_.body() = R"({"zone":")" + target.zone + R"(","quantity":1})";
        hold_.prepare_payload();
        release_.method(http::verb::delete_);
        release_.version(11);
        release_.set(http::field::host, "127.0.0.1");
    }

    void start(Lap& lap, const Done& done) {
        lap_ = &lap;
        done_ = &done;
        std::uniform_int_distribution<int> buyer(0, buyers_per_connection - 1);
        const std::string user = buyer_prefix_ + std::to_string(buyer(random_));
        hold_.set("X-User-Id", user);
        release_.set("X-User-Id", user);
        exchange(hold_, [](HttpConnection& self) { self.on_held(); });
    }

private:
    // Sends `request`, reads its answer into response_, then calls `next`.
    template <typename Next>
    void exchange(http::request<http::string_body>& request, Next next) {
        http::async_write(
            stream_, request, [self = shared_from_this(), next](beast::error_code ec, std::size_t) {
                if (ec) throw std::runtime_error("http write: " + ec.message());
                self->response_ = {};
                http::async_read(
                    self->stream_, self->buffer_, self->response_,
                    [self, next](beast::error_code read_ec, std::size_t) {
                        if (read_ec) {
                            throw std::runtime_error("http read: " + read_ec.message());
                        }
                        next(*self);
                    });
            });
    }

    void on_held() {
        expect(http::status::created, "POST hold");
        lap_->first_step_done();
        const std::string& body = response_.body();
        const std::string mark = R"("token":")";
        const auto at = body.find(mark);
        const auto end = at == std::string::npos ? at : body.find('"', at + mark.size());
        if (end == std::string::npos) throw std::runtime_error("a hold without a token: " + body);
        release_.target("/holds/" + body.substr(at + mark.size(), end - at - mark.size()));
        exchange(release_, [](HttpConnection& self) { self.on_released(); });
    }

    void on_released() {
        expect(http::status::no_content, "DELETE hold");
        (*done_)(Outcome::done);
    }

    void expect(http::status status, const char* what) const {
        if (response_.result() != status) {
            throw std::runtime_error(std::string(what) + " answered " +
                                     std::to_string(response_.result_int()) + ": " +
                                     response_.body());
        }
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> hold_;
    http::request<http::string_body> release_;
    http::response<http::string_body> response_;
    std::minstd_rand random_;
    std::string buyer_prefix_;
    Lap* lap_ = nullptr;
    const Done* done_ = nullptr;
};

}  // namespace

AsyncOperation http_hold_release(asio::io_context& io, const HttpTarget& target, int index) {
    auto connection = std::make_shared<HttpConnection>(io, target, index);
    return [connection](Lap& lap, const Done& done) { connection->start(lap, done); };
}

}  // namespace seatlock::bench
