// SPDX-License-Identifier: MIT
// benchmarks/http_server.hpp: the example ticketing server (seatlock-ticketing) as the
// http_hold+release scenario runs it: the binary built beside seatlock-bench, started on a
// free loopback port, on the memory backend or on the benchmark's redis-server, and stopped
// with SIGTERM as an operator would.
//
// Its database is in memory (--db :memory:, as ./dev demo runs it): the scenario measures
// what seatlock and the server cost, not the disk. A database file commits every hold and
// release to the file system, which bounds both backends alike (docs/performance.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"

namespace seatlock::bench {

/// Where the ticketing server was built, or nothing when this build has none
/// (SEATLOCK_BUILD_EXAMPLES=OFF).
[[nodiscard]] std::optional<std::string> ticketing_binary();

class TicketingProcess {
public:
    /// Starts `binary` with `args` (--backend, --redis-url, --threads) and waits until it
    /// listens; throws, with its last words, when it exits or does not listen in time. Its
    /// log goes to a temporary directory, removed with it.
    TicketingProcess(const std::string& binary, const std::vector<std::string>& args);
    /// Stops it (SIGTERM) if stop() did not, and removes its directory.
    ~TicketingProcess();
    TicketingProcess(const TicketingProcess&) = delete;
    TicketingProcess& operator=(const TicketingProcess&) = delete;

    [[nodiscard]] int port() const noexcept { return port_; }
    /// Its CPU time so far, every thread, user + system, in seconds.
    [[nodiscard]] double cpu_seconds() const { return process_->cpu_seconds(); }
    /// Its resident memory now, in KiB.
    [[nodiscard]] std::int64_t resident_kib() const { return process_->resident_kib(); }
    /// SIGTERM, then waits for it to end; throws unless it exits cleanly (status 0).
    void stop();

private:
    [[nodiscard]] std::string log_tail() const;

    std::string dir_;
    std::string log_;
    std::unique_ptr<ChildProcess> process_;
    int port_ = 0;
    bool stopped_ = false;
};

}  // namespace seatlock::bench
