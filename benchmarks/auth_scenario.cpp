// SPDX-License-Identifier: MIT
// benchmarks/auth_scenario.cpp: the http_auth scenario (auth_scenario.hpp).
#include "auth_scenario.hpp"

#include <fmt/core.h>
#include <stdlib.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>

#include "async_runner.hpp"
#include "cpu_layout.hpp"
#include "http_load.hpp"
#include "http_server.hpp"

namespace seatlock::bench {

namespace {

bool auth_asked_for(const Options& o) {
    return (o.scenarios.empty() ||
            std::find(o.scenarios.begin(), o.scenarios.end(), auth_scenario) != o.scenarios.end()) &&
           o.wanted(Kind::memory);
}

// As run.cpp's budgets for the http rows: a slice of --seconds per round, or a few
// operations in --quick.
Budget auth_budget(const Options& o) {
    Budget b;
    if (o.quick) {
        b.ops_per_caller = 2;
        b.warmup_ops = 1;
        return b;
    }
    b.duration =
        std::chrono::milliseconds(static_cast<std::int64_t>(o.seconds * 1000 / o.rounds_per_run()));
    b.warmup_ops = 4;
    return b;
}

// A directory with the session key file, removed at the end.
struct KeyFile {
    KeyFile() {
        char pattern[] = "/tmp/seatlock-bench-auth-XXXXXX";
        if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
        dir = pattern;
        std::random_device random;
        for (int i = 0; i < 64; ++i) key += "0123456789abcdef"[random() % 16];
        std::ofstream(dir + "/session-keys") << key << "\n";
    }
    ~KeyFile() {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
    KeyFile(const KeyFile&) = delete;
    KeyFile& operator=(const KeyFile&) = delete;
    std::string dir;
    std::string key;
};

}  // namespace

AuthResult run_auth(const Options& options) {
    AuthResult result;
    result.wanted = auth_asked_for(options);
    if (!result.wanted) return result;
    const auto binary = ticketing_binary();
    if (!binary) {
        result.not_run = "this build has no ticketing server (SEATLOCK_BUILD_EXAMPLES=OFF)";
        return result;
    }
    try {
        const KeyFile keys;
        const std::string threads = std::to_string(allowed_cpus().size());
        TicketingProcess open(*binary, {"--backend", "memory", "--threads", threads,
                                        "--trust-user-header", "--rate-buyer-writes", "0",
                                        "--rate-buyer-reads", "0"});
        TicketingProcess secured(*binary, {"--backend", "memory", "--threads", threads,
                                           "--session-key-file", keys.dir + "/session-keys"});
        const Budget b = auth_budget(options);
        // The server's CPU time is read around the measured part, as run.cpp's http rows.
        const auto measure = [&](const HttpTarget& target, TicketingProcess& server, double& cpu) {
            boost::asio::io_context io(1);
            double started = 0;
            return AsyncRunner::run(
                io, result.connections, b, [&](int i) { return http_hold_release(io, target, i); },
                [&] { started = server.cpu_seconds(); },
                [&] { cpu += server.cpu_seconds() - started; });
        };
        HttpTarget open_target{open.port()};
        HttpTarget secured_target{secured.port()};
        secured_target.session_key = keys.key;
        // Interleaved slices: open, secured, open, secured, ...
        for (int round = 0; round < options.rounds_per_run(); ++round) {
            auto without = measure(open_target, open, result.open_cpu_seconds);
            auto with = measure(secured_target, secured, result.secured_cpu_seconds);
            if (round == 0) {
                result.open = std::move(without);
                result.secured = std::move(with);
            } else {
                result.open.merge(without);
                result.secured.merge(with);
            }
        }
        open.stop();
        secured.stop();
        fmt::print("http_auth: {:.0f} hold+release pairs/s without sessions and rate limits, "
                   "{:.0f} with them ({:.3f})\n",
                   result.open.ops_per_second(), result.secured.ops_per_second(), result.ratio());
    } catch (const std::exception& e) {
        result.not_run = e.what();
    }
    return result;
}

void print_auth(const AuthResult& result, bool quick) {
    if (!result.wanted) return;
    fmt::print("\n### http_auth: the hold over HTTP with sessions and rate limits, against "
               "without, {} connections{}\n\n",
               result.connections, quick ? " (quick run: a few operations, the ratio means nothing)" : "");
    if (!result.not_run.empty()) {
        fmt::print("- not run: {}\n", result.not_run);
        return;
    }
    const double open_cpu = AuthResult::cpu_us_per_pair(result.open_cpu_seconds, result.open);
    const double secured_cpu =
        AuthResult::cpu_us_per_pair(result.secured_cpu_seconds, result.secured);
    fmt::print("| server | hold+release pairs/s | server CPU us a pair |\n|---|---:|---:|\n");
    fmt::print("| X-User-Id as given, no rate limits | {:.0f} | {:.1f} |\n",
               result.open.ops_per_second(), open_cpu);
    fmt::print("| Bearer sessions, default rate limits | {:.0f} | {:.1f} |\n",
               result.secured.ops_per_second(), secured_cpu);
    fmt::print("| with / without | {:.3f} | {:.3f} |\n", result.ratio(),
               open_cpu > 0 ? secured_cpu / open_cpu : 0);
}

std::vector<std::string> check_auth(const AuthResult& result) {
    if (!result.wanted) return {};
    if (!result.not_run.empty()) return {"http_auth: " + result.not_run};
    if (result.open.ops == 0 || result.secured.ops == 0)
        return {"http_auth: measured no operations"};
    return {};
}

}  // namespace seatlock::bench
