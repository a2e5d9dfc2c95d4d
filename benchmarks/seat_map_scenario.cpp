// SPDX-License-Identifier: MIT
// benchmarks/seat_map_scenario.cpp: see seat_map_scenario.hpp.
#include "seat_map_scenario.hpp"

#include "child_process.hpp"

#include <boost/json/parse.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace seatlock::bench {

SeatMapRead run_seat_map_read(const Options& options) {
    SeatMapRead result;
    result.wanted = options.scenarios.empty() ||
                    std::find(options.scenarios.begin(), options.scenarios.end(),
                              seat_map_scenario) != options.scenarios.end();
    if (!result.wanted) return result;
#ifndef SEATLOCK_BENCH_SEAT_MAP_BINARY
    result.not_run = "this build has no Redis backend (seatlock-seat-map-bench is not built)";
    return result;
#else
    const auto dir = std::filesystem::temp_directory_path() /
                     fmt::format("seatlock-seat-map-{}", ::getpid());
    std::filesystem::create_directories(dir);
    const std::string json = (dir / "seat_map_read.json").string();
    const std::string log = (dir / "seat_map_read.log").string();
    std::vector<std::string> argv{SEATLOCK_BENCH_SEAT_MAP_BINARY, "--json", json};
    if (options.quick) argv.insert(argv.end(), {"--seats", "10000", "--reads", "4"});
    fmt::print("\n## seat_map_read: the longest Redis call while a venue's seat map is read\n\n");
    std::fflush(stdout);
    const auto code = run_to_end(argv, log, std::chrono::seconds(600));
    {
        std::ifstream text(log);
        fmt::print("{}", std::string(std::istreambuf_iterator<char>(text), {}));
    }
    std::ifstream in(json);
    std::stringstream bytes;
    bytes << in.rdbuf();
    boost::system::error_code ec;
    auto value = boost::json::parse(bytes.str(), ec);
    // Exit 1 is its verdict (a call of 1 ms or more), with its figures written.
    if (!code || (*code != 0 && *code != 1) || ec || !value.is_object()) {
        result.not_run = code ? fmt::format("seatlock-seat-map-bench exited with {}: {}", *code,
                                            last_line_of(log))
                              : "seatlock-seat-map-bench did not finish within 600 s";
    } else {
        result.figures = std::move(value.as_object());
    }
    std::filesystem::remove_all(dir);
    return result;
#endif
}

void print_seat_map_read(const SeatMapRead& result, bool quick) {
    if (!result.wanted) return;
    fmt::print("\n### seat_map_read: target{}\n\n",
               quick ? " (quick run: a small venue, the verdict means nothing)" : "");
    if (!result.not_run.empty()) {
        fmt::print("- not run: {}\n", result.not_run);
        return;
    }
    const auto* longest = result.figures.if_contains("longest_redis_call_us");
    const auto* seats = result.figures.if_contains("seats");
    if (!longest || !seats) {
        fmt::print("- its JSON names no longest call\n");
        return;
    }
    const double us = longest->to_number<double>();
    fmt::print("- longest Redis call while a {}-seat map is read: {:.0f} us (target < 1000 us): {}\n",
               seats->to_number<std::int64_t>(), us, us < 1000 ? "pass" : "FAIL");
}

std::vector<std::string> check_seat_map_read(const SeatMapRead& result) {
    if (!result.wanted || result.not_run.empty()) return {};
    return {"seat_map_read: " + result.not_run};
}

}  // namespace seatlock::bench
