// SPDX-License-Identifier: MIT
// tests/support/raw_connection.cpp: RawConnection over Boost.Beast, with Asio timeouts.
#include "raw_connection.hpp"

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace seatlock::testing {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct RawConnection::Connection {
    asio::io_context ioc;
    beast::tcp_stream stream{ioc};
    beast::flat_buffer buffer;

    // Runs the pending operation to its end (the stream's timeout bounds it).
    void run() {
        ioc.restart();
        ioc.run();
    }
};

RawConnection::RawConnection(int port) : connection_(std::make_unique<Connection>()) {
    connection_->stream.connect(
        {asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
}

RawConnection::~RawConnection() = default;

void RawConnection::send(std::string_view bytes) {
    asio::write(connection_->stream.socket(), asio::buffer(bytes.data(), bytes.size()));
}

std::optional<HttpReply> RawConnection::read_reply(std::chrono::milliseconds timeout) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    beast::error_code result;
    connection_->stream.expires_after(timeout);
    http::async_read(connection_->stream, connection_->buffer, parser,
                     [&](beast::error_code ec, std::size_t) { result = ec; });
    connection_->run();
    if (result) return std::nullopt;
    auto response = parser.release();
    HttpReply reply{static_cast<int>(response.result_int()), std::move(response.body()), {}};
    for (const auto& field : response) {
        reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    return reply;
}

bool RawConnection::closed_by_server(std::chrono::milliseconds timeout) {
    if (connection_->buffer.size() != 0) return false;  // more was sent after the reply
    std::array<char, 256> data{};
    beast::error_code result;
    std::size_t received = 0;
    connection_->stream.expires_after(timeout);
    connection_->stream.async_read_some(asio::buffer(data),
                                        [&](beast::error_code ec, std::size_t n) {
                                            result = ec;
                                            received = n;
                                        });
    connection_->run();
    return received == 0 &&
           (result == asio::error::eof || result == asio::error::connection_reset);
}

}  // namespace seatlock::testing
