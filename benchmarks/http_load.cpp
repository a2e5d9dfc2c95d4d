// SPDX-License-Identifier: MIT
// benchmarks/http_load.cpp: one connection's hold + release, as a chain of Beast handlers.
#include "http_load.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <vector>
#include <random>
#include <stdexcept>

namespace seatlock::bench {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr int buyers_per_connection = 1000;

// A session token of the server's form, v1.<expires>.<buyer>.<HMAC-SHA-256 in base64url>,
// valid for a day.
std::string session_token(const std::string& key, const std::string& buyer) {
    const auto expires = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() +
                         24 * 3600;
    const std::string payload = "v1." + std::to_string(expires) + "." + buyer;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
              reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), mac, &size))
        throw std::runtime_error("HMAC failed");
    std::string encoded(4 * ((size + 2) / 3) + 1, '\0');
    encoded.resize(static_cast<std::size_t>(
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()), mac, static_cast<int>(size))));
    while (!encoded.empty() && encoded.back() == '=') encoded.pop_back();
    for (char& c : encoded) c = c == '+' ? '-' : c == '/' ? '_' : c;
    return payload + "." + encoded;
}

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
        if (!target.session_key.empty()) {
            for (int i = 0; i < buyers_per_connection; ++i)
                tokens_.push_back("Bearer " + session_token(target.session_key,
                                                            buyer_prefix_ + std::to_string(i)));
        }
    }

    void start(Lap& lap, const Done& done) {
        lap_ = &lap;
        done_ = &done;
        std::uniform_int_distribution<int> buyer(0, buyers_per_connection - 1);
        const int drawn = buyer(random_);
        if (!tokens_.empty()) {
            hold_.set(http::field::authorization, tokens_[static_cast<std::size_t>(drawn)]);
            release_.set(http::field::authorization, tokens_[static_cast<std::size_t>(drawn)]);
        } else {
            const std::string user = buyer_prefix_ + std::to_string(drawn);
            hold_.set("X-User-Id", user);
            release_.set("X-User-Id", user);
        }
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
    std::vector<std::string> tokens_;  // "Bearer <token>" of each buyer, with a session key
    Lap* lap_ = nullptr;
    const Done* done_ = nullptr;
};

}  // namespace

AsyncOperation http_hold_release(asio::io_context& io, const HttpTarget& target, int index) {
    auto connection = std::make_shared<HttpConnection>(io, target, index);
    return [connection](Lap& lap, const Done& done) { connection->start(lap, done); };
}

}  // namespace seatlock::bench
