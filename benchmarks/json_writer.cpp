// SPDX-License-Identifier: MIT
// benchmarks/json_writer.cpp: the results' JSON document, built with Boost.JSON.
#include "json_writer.hpp"

#include <fmt/core.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "machine.hpp"
#include "run.hpp"

namespace seatlock::bench {

namespace {

boost::json::object latency_us(const LatencyHistogram& h) {
    return {
        {"p50", h.quantile_us(0.5)}, {"p99", h.quantile_us(0.99)}, {"p999", h.quantile_us(0.999)}};
}

boost::json::object to_json(const Row& r) {
    boost::json::object j;
    j["scenario"] = r.scenario;
    j["backend"] = kind_name(r.kind);
    // seatlock's rows: which API; async rows' "callers" are operations in flight on one thread.
    if (r.kind == Kind::memory || r.kind == Kind::redis || r.kind == Kind::redis_cluster)
        j["api"] = api_name(r.api);
    j["layout"] = r.event_per_caller ? "event per caller" : "one event";
    j["callers"] = r.m.callers;
    j["ops"] = r.m.ops;
    j["refused"] = r.m.refused;
    j["seconds"] = r.m.seconds;
    j["ops_per_second"] = r.m.ops_per_second();
    if (r.peer) {
        if (!r.measured()) {
            j["not_run"] = r.peer->not_run;
            j["failed"] = r.peer->failed;
            return j;
        }
        j["errors"] = r.peer->errors;
        if (!r.peer->first_error.empty()) j["first_error"] = r.peer->first_error;
    }
    j["latency_us"] = latency_us(r.m.latency);
    if (r.m.first_step.count() > 0) j["first_step_latency_us"] = latency_us(r.m.first_step);
    if (r.redis && r.m.ops > 0) {
        // Writes per operation: round trips for clients that wait for each reply.
        j["round_trips_per_op"] = *r.per_op(&CounterDelta::replies);
        j["redis_commands_per_op"] = *r.per_op(&CounterDelta::commands);
        j["redis_cpu_us_per_op"] = *r.server_us_per_op();
        j["redis_requests_per_op"] = *r.requests_per_op();
        j["redis_reads_per_op"] = *r.per_op(&CounterDelta::reads);
        if (auto v = r.requests_per_read()) j["redis_requests_per_read"] = *v;
        if (auto v = r.commands_per_read()) j["redis_commands_per_read"] = *v;
        boost::json::object scripts;
        for (std::size_t i = 0; i < script_commands.size(); ++i) {
            if (auto usec = r.script_usec_per_call(i)) {
                scripts[script_commands[i]] = {
                    {"calls_per_op",
                     static_cast<double>(r.redis->scripts[i].calls) / static_cast<double>(r.m.ops)},
                    {"usec_per_call", *usec}};
            }
        }
        if (!scripts.empty()) j["redis_scripts"] = std::move(scripts);
    }
    if (!r.nodes.empty() && r.m.ops > 0) {
        // A cluster's primaries one by one; the redis_* figures above are their sum.
        boost::json::array nodes;
        for (std::size_t i = 0; i < r.nodes.size(); ++i) {
            // Function calls, not requests: a primary's writes include its replica's stream.
            std::uint64_t calls = 0;
            for (const auto& script : r.nodes[i].redis.scripts) calls += script.calls;
            nodes.push_back({{"port", r.nodes[i].port},
                             {"redis_cpu_us_per_op", *r.node_us_per_op(i)},
                             {"function_calls_per_op",
                              static_cast<double>(calls) / static_cast<double>(r.m.ops)}});
        }
        j["redis_primaries"] = std::move(nodes);
    }
    if (r.seats_held > 0) {
        j["seats_held"] = r.seats_held;
        if (auto b = r.per_seat(r.storage_bytes)) j["storage_bytes_per_seat"] = *b;
        if (auto b = r.per_seat(r.resident_bytes)) j["resident_bytes_per_seat"] = *b;
    }
    j["peak_rss_kib"] = r.m.peak_rss_kib;
    j["client_cores_used"] = r.m.cores_used();
    return j;
}

boost::json::object machine(const std::string& load_at_start) {
    boost::json::object m;
    m["cpu"] = cpu_model();
    m["nproc"] = std::thread::hardware_concurrency();
    m["kernel"] = kernel();
    m["compiler"] = __VERSION__;
    m["build_type"] = SEATLOCK_BENCH_BUILD_TYPE;
    m["load_average_at_start"] = load_at_start;
    m["load_average_at_end"] = load_average();
    return m;
}

}  // namespace

void write_json(const Results& results) {
    const Options& o = results.options;
    if (o.out.empty()) return;
    boost::json::array runs;
    for (const auto& r : results.rows) runs.push_back(to_json(r));
    boost::json::object ratios;
    for (const auto& f : results.figures) {
        ratios[f.key] = f.value ? boost::json::value(*f.value) : boost::json::value(nullptr);
    }
    boost::json::object doc;
    doc["command"] = o.command;
    doc["mode"] = o.quick ? "quick" : "full";
    doc["seconds_per_timed_run"] = o.seconds;
    doc["rounds"] = o.rounds_per_run();
    doc["redis_backend"] = redis_backend_built;
    doc["machine"] = machine(results.load_at_start);
    if (const auto& peer = results.node_redlock) {
        boost::json::object p;
        p["ran"] = peer->why_not().empty();
        if (peer->why_not().empty())
            p["versions"] = peer->versions();
        else
            p["not_run"] = peer->why_not();
        boost::json::object peers;
        peers["node-redlock"] = std::move(p);
        doc["peers"] = std::move(peers);
    }
    doc["runs"] = std::move(runs);
    if (results.viewers && !results.viewers->runs.empty())
        doc["viewers"] = viewers_json(*results.viewers);
    if (results.seat_map && results.seat_map->wanted) {
        if (results.seat_map->not_run.empty())
            doc["seat_map_read"] = results.seat_map->figures;
        else
            doc["seat_map_read"] = {{"not_run", results.seat_map->not_run}};
    }
    if (results.tls && results.tls->wanted) doc["tls"] = tls_json(*results.tls);
    if (results.waiting_room && results.waiting_room->wanted)
        doc["waiting_room"] = waiting_room_json(*results.waiting_room);
    doc["ratios"] = std::move(ratios);
    doc["problems"] = boost::json::value_from(results.problems);
    const std::filesystem::path path(o.out);
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << boost::json::serialize(doc) << '\n';
    fmt::print("\nresults written to {}\n", o.out);
}

}  // namespace seatlock::bench
