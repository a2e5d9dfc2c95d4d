// SPDX-License-Identifier: MIT
// benchmarks/report.hpp: what seatlock-bench prints — a banner, the Markdown table row by
// row as the runs finish, the scripts' server time, the figures with their targets'
// verdicts, the peer rows that did not run, and the problems.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "figures.hpp"
#include "node_redlock.hpp"
#include "options.hpp"
#include "row.hpp"

namespace seatlock::bench {

/// A table cell: `v` in `format`, or "-" when there is no figure.
std::string cell(const std::optional<double>& v, const char* format = "{:.2f}");
/// Says that the seatlock-on-Redis and command floor rows were asked for but not built.
void print_without_redis_backend();
/// The mode, the time budget and the machine the figures come from.
void print_banner(const Options& options, const std::string& load_at_start);
/// The node-redlock peer's versions, or why it will not run.
void print_peer(const NodeRedlock& peer);
void print_table_header();
/// A row's figures, or why a peer's row has none.
void print_table_row(const Row& row);
/// The server time of each script call (FCALL, EVALSHA, EVAL) of every Redis row.
void print_script_times(const std::vector<Row>& rows);
/// Each cluster primary's CPU time per operation, for the redis-cluster rows.
void print_primary_times(const std::vector<Row>& rows);
/// Every figure with its target, when it has one, and whether the target was met.
void print_figures(const std::vector<Figure>& figures, bool quick);
/// Every row a peer could not run, and why, so that none is missed silently.
void print_not_run(const std::vector<Row>& rows);
/// On stderr.
void print_problems(const std::vector<std::string>& problems);

}  // namespace seatlock::bench
