// SPDX-License-Identifier: MIT
// benchmarks/main.cpp: seatlock-bench, every benchmark in one run, side by side with the
// hand-written flow users write, the raw Redis ceiling, the floor of seatlock's bare
// Redis commands and node-redlock (a peer program), against one private redis-server (and
// a private Redis Cluster for the redis-cluster rows), so that comparisons hold on a noisy
// machine.
//
//   seatlock-bench [--quick] [--out FILE] [--scenario NAME,...] [--backend NAME,...]
//                  [--api NAME,...] [--callers N,...] [--seconds S] [--rounds R]
//
// Prints a Markdown table as it goes (report.hpp), then the figures the project is judged
// by with their targets (figures.hpp, targets.hpp), and writes everything as JSON
// (json_writer.hpp). Exits 1 when a run failed or measured something that cannot be right
// (checks.hpp), 2 on a command line it cannot understand; speed itself is reported, never
// asserted.
#include <fmt/core.h>

#include <exception>
#include <optional>
#include <vector>

#include "checks.hpp"
#include "figures.hpp"
#include "json_writer.hpp"
#include "machine.hpp"
#include "options.hpp"
#include "report.hpp"
#include "run.hpp"
#include "seat_map_scenario.hpp"
#include "auth_scenario.hpp"
#include "tls_scenario.hpp"
#include "viewers.hpp"
#include "waiting_room_scenario.hpp"

namespace seatlock::bench {
namespace {

int bench(const Options& options) {
    const std::string load_at_start = load_average();
    std::vector<std::string> problems;
    std::vector<Row> rows;
    std::optional<NodeRedlock> peer;
    ViewersResult viewers;
    SeatMapRead seat_map;
    {
        Run run(options);
        if (!redis_backend_built &&
            (options.wanted(Kind::redis) || options.wanted(Kind::redis_cluster) ||
             options.wanted(Kind::floor)))
            print_without_redis_backend();
        print_banner(options, load_at_start);
        if (run.node_redlock()) print_peer(*run.node_redlock());
        print_table_header();
        rows = run.measure([&](const Row& row) {
            for (auto& p : check(row)) problems.push_back(std::move(p));
            print_table_row(row);
        });
        peer = run.node_redlock();
        viewers = run.viewers();
    }
    seat_map = run_seat_map_read(options);
    const TlsResult tls = run_tls(options);
    const WaitingRoomResult waiting_room = run_waiting_room(options);
    const AuthResult auth = run_auth(options);
    for (auto& p : check_viewers(viewers)) problems.push_back(std::move(p));
    for (auto& p : check_seat_map_read(seat_map)) problems.push_back(std::move(p));
    for (auto& p : check_tls(tls)) problems.push_back(std::move(p));
    for (auto& p : check_waiting_room(waiting_room)) problems.push_back(std::move(p));
    for (auto& p : check_auth(auth)) problems.push_back(std::move(p));
    print_script_times(rows);
    print_primary_times(rows);
    const std::vector<Figure> judged = figures(rows);
    print_figures(judged, options.quick);
    print_viewer_figures(viewers, options.quick);
    print_seat_map_read(seat_map, options.quick);
    print_tls(tls, options.quick);
    print_waiting_room(waiting_room, options.quick);
    print_auth(auth, options.quick);
    print_not_run(rows);
    write_json({options, rows, judged, problems, load_at_start, peer, &viewers, &seat_map, &tls, &waiting_room});
    print_problems(problems);
    return problems.empty() ? 0 : 1;
}

}  // namespace
}  // namespace seatlock::bench

int main(int argc, char** argv) {
    const auto options = seatlock::bench::parse(argc, argv);
    if (!options) {
        fmt::print(stderr, "{}", seatlock::bench::usage);
        return 2;
    }
    try {
        return seatlock::bench::bench(*options);
    } catch (const std::exception& e) {
        fmt::print(stderr, "seatlock-bench: {}\n", e.what());
        return 1;
    }
}
