// SPDX-License-Identifier: MIT
// benchmarks/report.cpp: the printed report's formats.
#include "report.hpp"

#include <fmt/core.h>

#include <cstdio>
#include <optional>
#include <string_view>
#include <thread>

#include "machine.hpp"
#include "targets.hpp"

namespace seatlock::bench {

std::string cell(const std::optional<double>& v, const char* format) {
    return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

namespace {

constexpr std::string_view row_format =
    "| {:<38} | {:<13} | {:>7} | {:>10} | {:>8} | {:>8} | {:>9} | {:>10} | {:>8} | {:>8} | "
    "{:>10} | {:>9} | {:>5} | {:>8} |\n";

std::string verdict(const Figure& f) {
    const auto target = target_of(f.key);
    if (!f.value || !target) return "";
    const std::string_view sign = target->comparison == Comparison::at_least ? ">=" : "<=";
    return fmt::format("  (target {} {}: {})", sign, target->bound,
                       target->met_by(*f.value) ? "met" : "MISSED");
}

}  // namespace

void print_without_redis_backend() {
    fmt::print(
        "note: built without the Redis backend (no seatlock_redis target): "
        "no seatlock-on-Redis or command floor rows\n");
}

void print_banner(const Options& o, const std::string& load_at_start) {
    fmt::print(
        "seatlock-bench: {} mode, {} s per timed run in {} interleaved slices, {} CPUs ({}), "
        "load {}\n\n",
        o.quick ? "quick" : "full", o.seconds, o.rounds_per_run(),
        std::thread::hardware_concurrency(), cpu_model(), load_at_start);
}

void print_peer(const NodeRedlock& peer) {
    fmt::print("{}\n\n", peer.describe());
}

void print_table_header() {
    fmt::print(fmt::runtime(row_format), "scenario", "backend", "callers", "ops/s", "p50 us",
               "p99 us", "p99.9 us", "step p99", "trips/op", "cmds/op", "srv us/op", "reqs/read",
               "cores", "RSS MiB");
    fmt::print(
        "|{:-<40}|{:-<15}|{:-<8}:|{:-<11}:|{:-<9}:|{:-<9}:|{:-<10}:|{:-<11}:|{:-<9}:|{:-<9}:|{:-"
        "<11}:|{:-<10}:|{:-<6}:|{:-<9}:|\n",
        "", "", "", "", "", "", "", "", "", "", "", "", "", "");
}

void print_table_row(const Row& r) {
    const auto& m = r.m;
    if (!r.measured()) {
        fmt::print("| {:<38} | {:<13} | {:>7} | not run: {} |\n", r.label(), kind_name(r.kind),
                   m.callers, r.peer->not_run);
        std::fflush(stdout);
        return;
    }
    fmt::print(fmt::runtime(row_format), r.label(), kind_name(r.kind), m.callers,
               fmt::format("{:.0f}", m.ops_per_second()),
               fmt::format("{:.1f}", m.latency.quantile_us(0.5)),
               fmt::format("{:.1f}", m.latency.quantile_us(0.99)),
               fmt::format("{:.1f}", m.latency.quantile_us(0.999)),
               cell(r.first_step_p99_us(), "{:.1f}"), cell(r.per_op(&CounterDelta::replies)),
               cell(r.per_op(&CounterDelta::commands)), cell(r.server_us_per_op(), "{:.1f}"),
               cell(r.requests_per_read()), fmt::format("{:.2f}", m.cores_used()),
               fmt::format("{:.1f}", static_cast<double>(m.peak_rss_kib) / 1024.0));
    std::fflush(stdout);
}

void print_script_times(const std::vector<Row>& rows) {
    bool any = false;
    for (const auto& r : rows) {
        if (!r.measured() || !r.redis) continue;
        std::string line;
        for (std::size_t i = 0; i < script_commands.size(); ++i) {
            const auto usec = r.script_usec_per_call(i);
            if (!usec) continue;
            line += fmt::format(
                "  {} {:.2f} us/call ({:.2f} calls/op)", script_commands[i], *usec,
                static_cast<double>(r.redis->scripts[i].calls) / static_cast<double>(r.m.ops));
        }
        if (line.empty()) continue;
        if (!any)
            fmt::print("\nscript time in Redis per call (INFO commandstats usec_per_call):\n");
        any = true;
        fmt::print("  {:<38} {:<13} {:>4}{}\n", r.label(), kind_name(r.kind), r.m.callers, line);
    }
}

void print_primary_times(const std::vector<Row>& rows) {
    bool any = false;
    for (const auto& r : rows) {
        if (r.nodes.empty() || r.m.ops == 0) continue;
        if (!any)
            fmt::print(
                "\nRedis CPU per operation on each cluster primary (INFO cpu, user + sys):\n");
        any = true;
        std::string line;
        for (std::size_t i = 0; i < r.nodes.size(); ++i)
            line += fmt::format("  :{} {:.1f} us", r.nodes[i].port, *r.node_us_per_op(i));
        fmt::print("  {:<38} {:<13} {:>4}{}  (sum {} us)\n", r.label(), kind_name(r.kind),
                   r.m.callers, line, cell(r.server_us_per_op(), "{:.1f}"));
    }
}

void print_figures(const std::vector<Figure>& figures, bool quick) {
    fmt::print("\nratios{}:\n", quick ? " (quick mode: too few operations to mean anything)" : "");
    for (const auto& f : figures) {
        fmt::print("  {:<68} {:>9}{}\n", f.text, cell(f.value, f.format), verdict(f));
    }
}

void print_not_run(const std::vector<Row>& rows) {
    for (const auto& r : rows) {
        if (r.measured() || r.peer->failed) continue;
        fmt::print("\nnot run: {} on {} with {} in flight: {}\n", r.label(), kind_name(r.kind),
                   r.m.callers, r.peer->not_run);
    }
}

void print_problems(const std::vector<std::string>& problems) {
    if (problems.empty()) return;
    fmt::print(stderr, "\n{} problem(s):\n", problems.size());
    for (const auto& p : problems) fmt::print(stderr, "  - {}\n", p);
}

}  // namespace seatlock::bench
