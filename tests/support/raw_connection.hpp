// SPDX-License-Identifier: MIT
// tests/support/raw_connection.hpp: one TCP connection to the server driven byte by byte,
// for what HttpClient cannot send: malformed or unusual framing, half a request, a body
// held back until "100 Continue". Replies are read with Beast's parser, one at a time.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>

#include "http_client.hpp"

namespace seatlock::testing {

class RawConnection {
public:
    /// Connects to 127.0.0.1:`port`; throws when it cannot.
    explicit RawConnection(int port);
    ~RawConnection();
    RawConnection(const RawConnection&) = delete;
    RawConnection& operator=(const RawConnection&) = delete;

    /// Sends `bytes` as they are; throws when the connection is broken.
    void send(std::string_view bytes);
    /// The next response (an interim one such as 100 Continue too), or nullopt when none
    /// came within `timeout` or the connection ended first.
    std::optional<HttpReply> read_reply(
        std::chrono::milliseconds timeout = std::chrono::seconds(5));
    /// True when the server closes the connection within `timeout` without sending
    /// anything more.
    bool closed_by_server(std::chrono::milliseconds timeout = std::chrono::seconds(5));

private:
    struct Connection;
    std::unique_ptr<Connection> connection_;
};

}  // namespace seatlock::testing
