// SPDX-License-Identifier: MIT
// tests/support/http_client.cpp: HttpClient over Boost.Beast.
#include "http_client.hpp"

#include <strings.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <stdexcept>

namespace seatlock::testing {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

boost::json::value HttpReply::json() const {
    return boost::json::parse(body);
}

std::string HttpReply::error() const {
    boost::system::error_code ec;
    const auto value = boost::json::parse(body, ec);
    if (ec || !value.is_object()) return "";
    const auto* error = value.get_object().if_contains("error");
    return error && error->is_string() ? std::string(error->get_string()) : "";
}

std::string HttpReply::header(const std::string& name) const {
    for (const auto& [key, value] : headers) {
        if (::strcasecmp(key.c_str(), name.c_str()) == 0) return value;
    }
    return "";
}

struct HttpClient::Connection {
    asio::io_context ioc;
    beast::tcp_stream stream{ioc};
    beast::flat_buffer buffer;
};

HttpClient::HttpClient(int port) : port_(port) {}
HttpClient::~HttpClient() = default;
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;

HttpReply HttpClient::get(const std::string& target) {
    return send("GET", target, "", {});
}

HttpReply HttpClient::post(const std::string& target, const std::string& body,
                           const std::optional<std::string>& user) {
    std::vector<std::pair<std::string, std::string>> headers = {
        {"Content-Type", "application/json"}};
    if (user) headers.emplace_back("X-User-Id", *user);
    return send("POST", target, body, headers);
}

HttpReply HttpClient::del(const std::string& target, const std::optional<std::string>& user) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (user) headers.emplace_back("X-User-Id", *user);
    return send("DELETE", target, "", headers);
}

HttpReply HttpClient::send(const std::string& method, const std::string& target,
                           const std::string& body,
                           const std::vector<std::pair<std::string, std::string>>& headers) {
    if (!connection_) {
        connection_ = std::make_unique<Connection>();
        const asio::ip::tcp::endpoint server(asio::ip::make_address("127.0.0.1"),
                                             static_cast<unsigned short>(port_));
        connection_->stream.connect(server);
    }
    http::request<http::string_body> request;
    request.method_string(method);
    request.target(target);
    request.version(11);
    request.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = body;
    request.keep_alive(true);
    request.prepare_payload();

    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    try {
        connection_->stream.expires_after(std::chrono::seconds(30));
        http::write(connection_->stream, request);
        http::read(connection_->stream, connection_->buffer, parser);
    } catch (...) {
        connection_.reset();
        throw;
    }
    auto response = parser.release();
    HttpReply reply{static_cast<int>(response.result_int()), std::move(response.body()), {}};
    for (const auto& field : response) {
        reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    if (!response.keep_alive()) connection_.reset();
    return reply;
}

}  // namespace seatlock::testing
