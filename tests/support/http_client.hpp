// SPDX-License-Identifier: MIT
// tests/support/http_client.hpp: a small synchronous HTTP/1.1 client (Boost.Beast) for
// the system tests. One keep-alive connection, opened on first use and again after the
// server answered "Connection: close". Never retries: a failed request is an exception.
// With SEATLOCK_HTTP_RECORD set to a directory, every answer is recorded there (one JSON
// line each, one file per process) for the OpenAPI check (tests/support/openapi_check.py).
#pragma once

#include <boost/json/value.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace seatlock::testing {

struct HttpReply {
    int status = 0;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;

    /// The body parsed as JSON; throws when it is not.
    [[nodiscard]] boost::json::value json() const;
    /// The "error" field of a JSON error body ("" when there is none).
    [[nodiscard]] std::string error() const;
    /// A header's value ("" when absent); names compare case-insensitively.
    [[nodiscard]] std::string header(const std::string& name) const;
};

class HttpClient {
public:
    explicit HttpClient(int port);
    ~HttpClient();
    HttpClient(HttpClient&&) noexcept;
    HttpClient& operator=(HttpClient&&) noexcept;

    HttpReply get(const std::string& target);
    /// POST with `user` as X-User-Id (none: the header is left out).
    HttpReply post(const std::string& target, const std::string& body,
                   const std::optional<std::string>& user);
    HttpReply del(const std::string& target, const std::optional<std::string>& user);
    /// Any request; `headers` are added as given.
    HttpReply send(const std::string& method, const std::string& target, const std::string& body,
                   const std::vector<std::pair<std::string, std::string>>& headers);

private:
    struct Connection;
    int port_;
    std::unique_ptr<Connection> connection_;
};

}  // namespace seatlock::testing
