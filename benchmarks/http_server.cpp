// SPDX-License-Identifier: MIT
// benchmarks/http_server.cpp: starting and stopping the ticketing server.
#include "http_server.hpp"

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

namespace seatlock::bench {

namespace {

constexpr auto start_timeout = std::chrono::seconds(30);
constexpr auto stop_timeout = std::chrono::seconds(20);

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The port of the server's "listening on http://host:port" line, or 0 while there is none.
int listening_port(const std::string& log) {
    const std::string mark = "listening on http://";
    const auto at = log.find(mark);
    if (at == std::string::npos) return 0;
    const auto colon = log.find(':', at + mark.size());
    if (colon == std::string::npos) return 0;
    return std::atoi(log.c_str() + colon + 1);
}

}  // namespace

std::optional<std::string> ticketing_binary() {
#ifdef SEATLOCK_BENCH_TICKETING_BINARY
    return std::string(SEATLOCK_BENCH_TICKETING_BINARY);
#else
    return std::nullopt;
#endif
}

TicketingProcess::TicketingProcess(const std::string& binary,
                                   const std::vector<std::string>& args) {
    char pattern[] = "/tmp/seatlock-bench-http-XXXXXX";
    if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    log_ = dir_ + "/server.log";
    std::vector<std::string> argv{binary, "--listen", "127.0.0.1:0", "--db", ":memory:"};
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = std::make_unique<ChildProcess>(argv, log_);
    const auto deadline = std::chrono::steady_clock::now() + start_timeout;
    while ((port_ = listening_port(read_text(log_))) == 0) {
        if (std::chrono::steady_clock::now() > deadline || ::kill(process_->pid(), 0) != 0 ||
            read_text(log_).find("cannot") != std::string::npos) {
            throw std::runtime_error("seatlock-ticketing did not start: " + log_tail());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

TicketingProcess::~TicketingProcess() {
    if (!stopped_) {
        ::kill(process_->pid(), SIGTERM);
        (void)process_->wait(stop_timeout);
    }
    process_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
}

void TicketingProcess::stop() {
    stopped_ = true;
    ::kill(process_->pid(), SIGTERM);
    const auto status = process_->wait(stop_timeout);
    if (status != 0)
        throw std::runtime_error("seatlock-ticketing did not stop cleanly: " + log_tail());
}

std::string TicketingProcess::log_tail() const {
    const std::string log = read_text(log_);
    return log.size() > 600 ? "..." + log.substr(log.size() - 600) : log;
}

}  // namespace seatlock::bench
