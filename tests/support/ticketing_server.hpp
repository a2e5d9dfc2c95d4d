// SPDX-License-Identifier: MIT
// tests/support/ticketing_server.hpp: starts the built seatlock-ticketing binary for one
// test, on a free loopback port (--listen 127.0.0.1:0; the port is read from its log)
// with its database in a fresh temporary directory, and waits until /healthz answers.
// Unless told otherwise it trusts X-User-Id (Options::trust_user_header).
// Also reads that database (read-only, with the sqlite3 C API) so tests can check the
// rows the server wrote.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http_client.hpp"

namespace seatlock::testing {

/// How TicketingServer starts the server (TicketingServer::Options).
struct TicketingServerOptions {
    std::vector<std::string> args;     ///< extra flags (--backend, --hold-ttl, ...)
    std::optional<std::string> venue;  ///< JSON written to a file and passed as --venue
    /// The server takes the buyer from X-User-Id (--trust-user-header), as behind a
    /// gateway that authenticates buyers: the tests that are not about who a buyer is
    /// name them that way (HttpClient's `user`). False: buyers need sessions.
    bool trust_user_header = true;
};

class TicketingServer {
public:
    using Options = TicketingServerOptions;
    /// Variables (NAME, value) the server's environment has besides the test's own, or
    /// instead of the test's of the same name.
    using Environment = std::vector<std::pair<std::string, std::string>>;

    /// Starts the server; throws (with its log) when it exits or does not answer.
    explicit TicketingServer(Options options = {}, const Environment& environment = {});
    ~TicketingServer();
    TicketingServer(const TicketingServer&) = delete;
    TicketingServer& operator=(const TicketingServer&) = delete;

    [[nodiscard]] int port() const { return port_; }
    /// The server's process id while it runs (-1 once stopped).
    [[nodiscard]] pid_t pid() const { return pid_; }
    [[nodiscard]] std::string db_path() const { return dir_ + "/ticketing.db"; }
    /// What the server wrote to stdout and stderr so far.
    [[nodiscard]] std::string log() const;
    /// A new client with its own connection.
    [[nodiscard]] HttpClient client() const { return HttpClient(port_); }

    /// Sends `signal` and waits for the process to end: its exit code, 128 + the signal
    /// number when a signal ended it, or -1 when it did not end within `timeout` (it is
    /// then killed). Signal 0 sends none: waits for a process that is ending by itself.
    int stop(int signal, std::chrono::milliseconds timeout = std::chrono::seconds(20));

    /// One number from the database: the first column of the first row of `sql`, where
    /// every ? is bound to `params` in order (text).
    [[nodiscard]] std::int64_t db_count(const std::string& sql,
                                        const std::vector<std::string>& params = {}) const;
    /// One text value, or nullopt when the query has no row.
    [[nodiscard]] std::optional<std::string> db_text(
        const std::string& sql, const std::vector<std::string>& params = {}) const;

private:
    void start(std::vector<std::string> args, const Environment& environment);

    std::string dir_;
    pid_t pid_ = -1;
    int port_ = 0;
};

/// Runs `probe` every 20 ms until it returns true or `timeout` passes; its last answer.
template <typename Probe>
bool eventually(Probe&& probe, std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace seatlock::testing

#include <thread>

template <typename Probe>
bool seatlock::testing::eventually(Probe&& probe, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (probe()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}
