// SPDX-License-Identifier: MIT
// tests/support/http_client.cpp: HttpClient over Boost.Beast.
#include "http_client.hpp"

#include <strings.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
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

namespace {

std::string base64(std::string_view bytes) {
    static constexpr char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const auto n = std::uint32_t(std::uint8_t(bytes[i])) << 16 |
                       std::uint32_t(std::uint8_t(bytes[i + 1])) << 8 | std::uint8_t(bytes[i + 2]);
        for (const int shift : {18, 12, 6, 0}) out += digits[(n >> shift) & 63];
    }
    if (i < bytes.size()) {
        std::uint32_t n = std::uint32_t(std::uint8_t(bytes[i])) << 16;
        if (i + 1 < bytes.size()) n |= std::uint32_t(std::uint8_t(bytes[i + 1])) << 8;
        out += digits[(n >> 18) & 63];
        out += digits[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? digits[(n >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// With SEATLOCK_HTTP_RECORD set (a directory; tests/system/CMakeLists.txt sets it), every
// answer is appended to <directory>/<pid>.jsonl as one JSON line: {"method", "target",
// "status", "headers": [[name, value]...], "body_base64"}. One file per process, so test
// programs running at the same time never share one; tests/support/openapi_check.py
// validates them against docs/openapi.yaml.
void record(const std::string& method, const std::string& target, const HttpReply& reply) {
    static const char* const directory = std::getenv("SEATLOCK_HTTP_RECORD");
    if (directory == nullptr || *directory == '\0') return;
    boost::json::array headers;
    for (const auto& [name, value] : reply.headers) {
        headers.push_back(
            boost::json::array{boost::json::string(name), boost::json::string(value)});
    }
    boost::json::object line;
    line["method"] = method;
    line["target"] = target;
    line["status"] = reply.status;
    line["headers"] = std::move(headers);
    line["body_base64"] = base64(reply.body);
    static std::mutex mutex;
    const std::lock_guard lock(mutex);
    std::filesystem::create_directories(directory);
    std::ofstream file(std::string(directory) + "/" + std::to_string(::getpid()) + ".jsonl",
                       std::ios::app);
    file << boost::json::serialize(line) << '\n';
    if (!file) {
        throw std::runtime_error("cannot append to the HTTP record in " + std::string(directory));
    }
}

}  // namespace

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
    record(method, target, reply);
    return reply;
}

}  // namespace seatlock::testing
