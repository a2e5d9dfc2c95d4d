// SPDX-License-Identifier: MIT
// tests/system/http_protocol_test.cpp: the server follows HTTP/1.1's rules for reading a
// request (RFC 9112 sections 3.2 and 6, RFC 9110 section 10.1.1): how a body is framed,
// the Host header, and Expect. Requests are written byte by byte on a raw connection.
#include <sstream>

#include "support/raw_connection.hpp"
#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace http_protocol_test {

using namespace seatlock::testing;

namespace {

const std::string hold_body = R"({"zone":"lower-1","seats":["A-1"]})";

// A hold request for A-1 of lower-1 with `headers` (each ending in CRLF) and `body`
// sent as they are.
std::string hold_request(const std::string& headers, const std::string& body,
                         const std::string& version = "HTTP/1.1") {
    return "POST /events/demo-game/holds " + version + "\r\nX-User-Id: alice\r\n" + headers +
           "\r\n" + body;
}

std::string host_and_length(const std::string& body) {
    return "Host: test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
}

// The chunked coding of `body` in one chunk.
std::string chunked(const std::string& body) {
    std::ostringstream out;
    out << std::hex << body.size() << "\r\n" << body << "\r\n0\r\n\r\n";
    return out.str();
}

// Checks `reply` is `status` with the JSON error `error`, and that the server closes
// the connection after it.
void refused_and_closed(RawConnection& connection, const std::optional<HttpReply>& reply,
                        int status, const std::string& error) {
    REQUIRE_MESSAGE(reply.has_value(), "no reply");
    INFO(reply->body);
    CHECK(reply->status == status);
    CHECK(reply->error() == error);
    CHECK(reply->header("Connection") == "close");
    CHECK(connection.closed_by_server());
}

std::string seat_a1(const TicketingServer& server) {
    auto client = server.client();
    return seat_states(client, "demo-game", "lower-1").at("A-1");
}

TicketingServer memory_server() {
    return TicketingServer(TicketingServer::Options{{"--backend", "memory"}, std::nullopt});
}

}  // namespace

TEST_CASE("a request whose last transfer coding is not chunked is refused with 400") {
    auto server = memory_server();
    INFO(server.log());
    for (const std::string coding : {"gzip", "identity", "chunked, gzip"}) {
        CAPTURE(coding);
        RawConnection connection(server.port());
        connection.send(hold_request("Host: test\r\nTransfer-Encoding: " + coding + "\r\n",
                                     hold_body));
        refused_and_closed(connection, connection.read_reply(), 400, "bad_request");
    }
    CHECK(seat_a1(server) == "free");
}

TEST_CASE("a request with both Transfer-Encoding and Content-Length is refused with 400") {
    auto server = memory_server();
    INFO(server.log());
    for (const std::string coding : {"identity", "gzip", "chunked"}) {
        const std::string body = coding == "chunked" ? chunked(hold_body) : hold_body;
        const std::string transfer_encoding = "Transfer-Encoding: " + coding + "\r\n";
        for (const bool length_first : {true, false}) {
            CAPTURE(coding);
            CAPTURE(length_first);
            RawConnection connection(server.port());
            connection.send(hold_request(length_first
                                             ? host_and_length(body) + transfer_encoding
                                             : transfer_encoding + host_and_length(body),
                                         body));
            refused_and_closed(connection, connection.read_reply(), 400, "bad_request");
        }
    }
    CHECK(seat_a1(server) == "free");
}

TEST_CASE("a transfer coding other than chunked before chunked is refused with 501") {
    auto server = memory_server();
    INFO(server.log());
    RawConnection connection(server.port());
    connection.send(
        hold_request("Host: test\r\nTransfer-Encoding: gzip, chunked\r\n", chunked(hold_body)));
    refused_and_closed(connection, connection.read_reply(), 501, "not_implemented");
    CHECK(seat_a1(server) == "free");
}

TEST_CASE("Transfer-Encoding in an HTTP/1.0 request is refused with 400") {
    auto server = memory_server();
    INFO(server.log());
    RawConnection connection(server.port());
    connection.send(hold_request("Transfer-Encoding: chunked\r\n", chunked(hold_body), "HTTP/1.0"));
    refused_and_closed(connection, connection.read_reply(), 400, "bad_request");
    CHECK(seat_a1(server) == "free");
}

TEST_CASE("a chunked request body is read") {
    auto server = memory_server();
    INFO(server.log());
    RawConnection connection(server.port());
    connection.send(
        hold_request("Host: test\r\nTransfer-Encoding: chunked\r\n", chunked(hold_body)));
    const auto reply = connection.read_reply();
    REQUIRE(reply.has_value());
    CHECK_MESSAGE(reply->status == 201, reply->body);
    CHECK(seat_a1(server) == "held");
}

TEST_CASE("an HTTP/1.1 request without Host is refused with 400") {
    auto server = memory_server();
    INFO(server.log());
    RawConnection connection(server.port());
    connection.send("GET /healthz HTTP/1.1\r\n\r\n");
    refused_and_closed(connection, connection.read_reply(), 400, "bad_request");

    RawConnection hold(server.port());
    hold.send(hold_request("Content-Length: " + std::to_string(hold_body.size()) + "\r\n",
                           hold_body));
    refused_and_closed(hold, hold.read_reply(), 400, "bad_request");
    CHECK(seat_a1(server) == "free");
}

TEST_CASE("a request with two Host headers or a malformed one is refused with 400") {
    auto server = memory_server();
    INFO(server.log());
    for (const std::string hosts :
         {"Host: test\r\nHost: test\r\n", "Host: a\r\nHost: b\r\n", "Host: alice@test\r\n",
          "Host: te st\r\n"}) {
        CAPTURE(hosts);
        RawConnection connection(server.port());
        connection.send("GET /healthz HTTP/1.1\r\n" + hosts + "\r\n");
        refused_and_closed(connection, connection.read_reply(), 400, "bad_request");
    }
}

TEST_CASE("Host may be left out of an HTTP/1.0 request, and be host:port or empty") {
    auto server = memory_server();
    INFO(server.log());
    for (const std::string request :
         {"GET /healthz HTTP/1.0\r\n\r\n", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
          "GET /healthz HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", "GET /healthz HTTP/1.1\r\nHost:\r\n\r\n"}) {
        CAPTURE(request);
        RawConnection connection(server.port());
        connection.send(request);
        const auto reply = connection.read_reply();
        REQUIRE(reply.has_value());
        CHECK(reply->status == 200);
    }
}

TEST_CASE("Expect: 100-continue is answered 100 Continue before the body is sent") {
    auto server = memory_server();
    INFO(server.log());
    RawConnection connection(server.port());
    connection.send(hold_request(host_and_length(hold_body) + "Expect: 100-continue\r\n", ""));
    const auto interim = connection.read_reply(std::chrono::seconds(2));
    REQUIRE_MESSAGE(interim.has_value(), "no 100 Continue");
    CHECK(interim->status == 100);

    connection.send(hold_body);
    const auto reply = connection.read_reply();
    REQUIRE(reply.has_value());
    CHECK_MESSAGE(reply->status == 201, reply->body);
    CHECK(seat_a1(server) == "held");
}

TEST_CASE("Expect: 100-continue on a request refused by its header gets no 100 Continue") {
    auto server = memory_server();
    INFO(server.log());
    // Over the 64 KiB body limit: 413 at once, and the client never sends its body.
    RawConnection large(server.port());
    large.send(hold_request("Host: test\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n", ""));
    refused_and_closed(large, large.read_reply(), 413, "payload_too_large");

    RawConnection no_host(server.port());
    no_host.send(hold_request(
        "Content-Length: " + std::to_string(hold_body.size()) + "\r\nExpect: 100-continue\r\n", ""));
    refused_and_closed(no_host, no_host.read_reply(), 400, "bad_request");
}

TEST_CASE("an expectation other than 100-continue is refused with 417") {
    auto server = memory_server();
    INFO(server.log());
    for (const std::string expect : {"200-ok", "100-continue, 200-ok", "x=\"y\""}) {
        CAPTURE(expect);
        RawConnection connection(server.port());
        connection.send(
            hold_request(host_and_length(hold_body) + "Expect: " + expect + "\r\n", hold_body));
        refused_and_closed(connection, connection.read_reply(), 417, "expectation_failed");
    }
    CHECK(seat_a1(server) == "free");
}

}  // namespace http_protocol_test
