// SPDX-License-Identifier: MIT
// benchmarks/figures.cpp: how each figure is read from the rows.
#include "figures.hpp"

#include <fmt/core.h>

#include <string_view>
#include <utility>

#include "redis_cluster.hpp"

namespace seatlock::bench {

namespace {

class Rows {
public:
    explicit Rows(const std::vector<Row>& rows) : rows_(rows) {}

    [[nodiscard]] const Row* find(std::string_view scenario, Kind kind, int callers,
                                  bool event_per_caller = false, Api api = Api::blocking) const {
        for (const auto& r : rows_) {
            if (r.scenario == scenario && r.kind == kind && r.m.callers == callers &&
                r.event_per_caller == event_per_caller && r.api == api) {
                return &r;
            }
        }
        return nullptr;
    }

private:
    const std::vector<Row>& rows_;
};

std::optional<double> divide(const std::optional<double>& a, const std::optional<double>& b) {
    if (!a || !b || *b == 0) return std::nullopt;
    return *a / *b;
}

std::optional<double> ops(const Row* r) {
    return r ? std::optional<double>(r->m.ops_per_second()) : std::nullopt;
}

std::optional<double> ops_per_cpu_second(const Row* r) {
    if (!r) return std::nullopt;
    return divide(static_cast<double>(r->m.ops), r->m.cpu_seconds);
}

std::optional<double> per_op(const Row* r, std::uint64_t CounterDelta::*field) {
    return r ? r->per_op(field) : std::nullopt;
}

std::optional<double> storage_per_seat(const Row* r) {
    return r ? r->per_seat(r->storage_bytes) : std::nullopt;
}

std::optional<double> quantile_us(const Row* r, double q) {
    return r ? std::optional<double>(r->m.latency.quantile_us(q)) : std::nullopt;
}

std::optional<double> first_step_p99_us(const Row* r) {
    return r ? r->first_step_p99_us() : std::nullopt;
}

// Rows that ran: a peer's row that did not run has no figures.
const Row* measured(const Row* r) {
    return r && r->measured() ? r : nullptr;
}

// Operations that ended done, not refused, per second.
std::optional<double> done_per_second(const Row* r) {
    if (!r || r->m.seconds <= 0) return std::nullopt;
    return static_cast<double>(r->m.ops - r->m.refused) / r->m.seconds;
}

std::optional<double> refused_share(const Row* r) {
    if (!r || r->m.ops == 0) return std::nullopt;
    return static_cast<double>(r->m.refused) / static_cast<double>(r->m.ops);
}

std::optional<double> server_us(const Row* r) {
    return r ? r->server_us_per_op() : std::nullopt;
}

std::optional<double> requests_per_read(const Row* r) {
    return r ? r->requests_per_read() : std::nullopt;
}

std::optional<double> client_cores(const Row* r) {
    return r ? std::optional<double>(r->m.cores_used()) : std::nullopt;
}

std::optional<double> script_usec(const Row* r, std::string_view command) {
    for (std::size_t i = 0; r && i < script_commands.size(); ++i) {
        if (script_commands[i] == command) return r->script_usec_per_call(i);
    }
    return std::nullopt;
}

// The CPU an HTTP row's pairs took, server and load generator, in us per pair.
std::optional<double> http_pair_cpu_us(const Row* r) {
    if (!r || r->m.ops == 0) return std::nullopt;
    const auto server = r->server_process_us_per_op();
    if (!server) return std::nullopt;
    return *server + r->m.cpu_seconds * 1e6 / static_cast<double>(r->m.ops);
}

// The figures of one HTTP scenario at 64 connections, named <prefix>_...
void http_figures(const Rows& table, std::vector<Figure>& out, const std::string& scenario,
                  const std::string& prefix, const std::string& title, bool redis_shares_cores) {
    const auto* memory = measured(table.find(scenario, Kind::memory, 64, false, Api::async));
    const auto* redis = measured(table.find(scenario, Kind::redis, 64, false, Api::async));
    out.push_back({prefix + "_hold_release_64_redis_vs_memory",
                   title + ": holds/s on Redis / on memory", divide(ops(redis), ops(memory))});
    out.push_back(
        {prefix + "_holds_per_second_64_memory", "  holds/s, memory", ops(memory), "{:.0f}"});
    out.push_back(
        {prefix + "_holds_per_second_64_redis", "  holds/s, Redis", ops(redis), "{:.0f}"});
    for (const auto& [row, name] : {std::pair{memory, "memory"}, {redis, "redis"}}) {
        out.push_back({fmt::format("{}_hold_release_p50_us_64_{}", prefix, name),
                       fmt::format("  p50 us of hold+release, {}", name), quantile_us(row, 0.5),
                       "{:.0f}"});
        out.push_back({fmt::format("{}_hold_release_p99_us_64_{}", prefix, name),
                       fmt::format("  p99 us of hold+release, {}", name), quantile_us(row, 0.99),
                       "{:.0f}"});
        out.push_back({fmt::format("{}_server_cpu_us_per_op_64_{}", prefix, name),
                       fmt::format("  ticketing server CPU us per hold+release, {}", name),
                       row ? row->server_process_us_per_op() : std::nullopt, "{:.0f}"});
    }
    out.push_back({prefix + "_redis_cpu_us_per_op_64", "  Redis CPU us per hold+release",
                   server_us(redis), "{:.1f}"});
    out.push_back({prefix + "_redis_requests_per_read_64", "  Redis requests per server read",
                   requests_per_read(redis)});
    // Where Redis shares the cores, its CPU per pair comes on top of what a pair costs the
    // server and the load generator on memory: the ratio cannot pass this, even if talking
    // to Redis cost the server nothing (docs/performance.md#the-example-server-over-http).
    if (redis_shares_cores) {
        const auto memory_pair = http_pair_cpu_us(memory);
        const auto redis_cpu = server_us(redis);
        out.push_back({prefix + "_redis_vs_memory_cpu_bound_64",
                       "  at most, with Redis's CPU per pair on the same cores",
                       memory_pair && redis_cpu ? divide(memory_pair, *memory_pair + *redis_cpu)
                                                : std::nullopt});
    }
}

}  // namespace

std::vector<Figure> figures(const std::vector<Row>& rows) {
    const Rows table(rows);
    const std::string hr = "hold3+release";
    const std::string kept = "hold3_kept";
    std::vector<Figure> out;

    const auto* redis64 = table.find(hr, Kind::redis, 64);
    out.push_back({"redis_hold_release_64_vs_by_hand",
                   "Redis hold3+release, 64 callers: seatlock / hand-written flow",
                   divide(ops(redis64), ops(table.find(hr, Kind::by_hand, 64)))});
    out.push_back({"redis_hold_release_64_vs_raw",
                   "Redis hold3+release, 64 callers: seatlock / raw ceiling",
                   divide(ops(redis64), ops(table.find(hr, Kind::raw, 64)))});
    // No target: how far below the ceiling the commands alone already are.
    out.push_back(
        {"redis_hold_release_64_floor_vs_raw",
         "Redis hold3+release, 64 callers: floor (bare commands) / raw ceiling",
         divide(ops(table.find(hr, Kind::floor, 64)), ops(table.find(hr, Kind::raw, 64)))});

    // seatlock's locks beside node-redlock: the same random keys, no retry, 64 in flight,
    // alternating on one server.
    const std::string tla = "try_lock_all3+unlock";
    const auto* lock_redis = table.find(tla, Kind::redis, 64);
    const auto* lock_peer = measured(table.find(tla, Kind::node_redlock, 64));
    out.push_back({"redis_try_lock_all3_64_vs_node_redlock",
                   "try_lock_all3+unlock, 64 in flight: seatlock / node-redlock pairs/s",
                   divide(done_per_second(lock_redis), done_per_second(lock_peer))});
    out.push_back({"redis_try_lock_all3_pairs_per_second_64", "  pairs done/s, seatlock",
                   done_per_second(lock_redis), "{:.0f}"});
    out.push_back({"node_redlock_pairs_per_second_64", "  pairs done/s, node-redlock",
                   done_per_second(lock_peer), "{:.0f}"});
    out.push_back({"redis_try_lock_all3_busy_share_64", "  busy refusals / attempts, seatlock",
                   refused_share(lock_redis)});
    out.push_back({"node_redlock_busy_share_64", "  busy refusals / attempts, node-redlock",
                   refused_share(lock_peer)});
    out.push_back({"redis_try_lock_all3_cpu_us_per_op_64", "  Redis CPU us per attempt, seatlock",
                   server_us(lock_redis), "{:.1f}"});
    out.push_back({"node_redlock_cpu_us_per_op_64", "  Redis CPU us per attempt, node-redlock",
                   server_us(lock_peer), "{:.1f}"});
    out.push_back({"redis_try_lock_all3_requests_per_read_64",
                   "  requests per server read, seatlock", requests_per_read(lock_redis)});
    out.push_back({"node_redlock_requests_per_read_64", "  requests per server read, node-redlock",
                   requests_per_read(lock_peer)});
    out.push_back({"redis_try_lock_all3_fcall_usec_64", "  FCALL usec_per_call, seatlock",
                   script_usec(lock_redis, "fcall")});
    out.push_back({"node_redlock_evalsha_usec_64", "  EVALSHA usec_per_call, node-redlock",
                   script_usec(lock_peer, "evalsha")});

    // The same through the asynchronous API: every attempt in flight on one thread and one
    // pipelined connection, as node-redlock's on its one connection.
    const auto* async_lock = table.find(tla, Kind::redis, 64, false, Api::async);
    out.push_back({"redis_async_try_lock_all3_64_vs_node_redlock",
                   "async try_lock_all3+unlock, 64 in flight: seatlock / node-redlock",
                   divide(done_per_second(async_lock), done_per_second(lock_peer))});
    out.push_back({"redis_async_try_lock_all3_64_vs_blocking",
                   "  seatlock async / blocking pairs/s",
                   divide(done_per_second(async_lock), done_per_second(lock_redis))});
    out.push_back({"redis_async_try_lock_all3_pairs_per_second_64",
                   "  pairs done/s, seatlock async", done_per_second(async_lock), "{:.0f}"});
    out.push_back({"redis_async_try_lock_all3_busy_share_64",
                   "  busy refusals / attempts, seatlock async", refused_share(async_lock)});
    out.push_back({"redis_async_try_lock_all3_cpu_us_per_op_64",
                   "  Redis CPU us per attempt, seatlock async", server_us(async_lock), "{:.1f}"});
    out.push_back({"redis_async_try_lock_all3_requests_per_read_64",
                   "  requests per server read, seatlock async", requests_per_read(async_lock)});
    out.push_back({"redis_async_try_lock_all3_fcall_usec_64",
                   "  FCALL usec_per_call, seatlock async", script_usec(async_lock, "fcall")});
    out.push_back({"redis_async_try_lock_all3_client_cores_64",
                   "  client cores used, seatlock async (one thread)",
                   client_cores(async_lock)});
    out.push_back({"node_redlock_client_cores_64", "  client cores used, node-redlock",
                   client_cores(lock_peer)});

    // Server CPU per operation: what bounds one Redis server's operations per second.
    out.push_back({"redis_lock_all3_cpu_us_per_op_64",
                   "Redis CPU us per lock_all3+unlock, 64 callers, seatlock",
                   server_us(table.find("lock_all3+unlock", Kind::redis, 64)), "{:.1f}"});
    out.push_back({"redis_hold3_release_cpu_us_per_op_64",
                   "Redis CPU us per hold3+release, 64 callers, seatlock", server_us(redis64),
                   "{:.1f}"});
    // The same 64 in flight on one pipelined connection: fewer reads and writes per call.
    const auto* async_lock_all = table.find("lock_all3+unlock", Kind::redis, 64, false, Api::async);
    const auto* async_hold = table.find(hr, Kind::redis, 64, false, Api::async);
    out.push_back({"redis_async_lock_all3_cpu_us_per_op_64",
                   "Redis CPU us per lock_all3+unlock, 64 in flight, seatlock async",
                   server_us(async_lock_all), "{:.1f}"});
    out.push_back({"redis_async_lock_all3_requests_per_read_64", "  requests per server read",
                   requests_per_read(async_lock_all)});
    out.push_back({"redis_async_hold3_release_cpu_us_per_op_64",
                   "Redis CPU us per hold3+release, 64 in flight, seatlock async",
                   server_us(async_hold), "{:.1f}"});
    out.push_back({"redis_async_hold3_release_requests_per_read_64", "  requests per server read",
                   requests_per_read(async_hold)});
    out.push_back({"redis_async_hold3_release_64_vs_blocking",
                   "  seatlock async / blocking pairs/s, 64",
                   divide(ops(async_hold), ops(redis64))});

    // hold3+release on a Redis Cluster of 3 primaries, one event per caller (so spread over
    // the primaries' slots), beside one redis-server with one event: what routing costs,
    // and how the Redis CPU per pair splits over the primaries.
    for (const Api api : {Api::async, Api::blocking}) {
        const std::string name(api_name(api));
        const auto* one = table.find(hr, Kind::redis, 64, false, api);
        const auto* cluster = table.find(hr, Kind::redis_cluster, 64, true, api);
        out.push_back({fmt::format("redis_cluster_{}_hold3_release_64_vs_one_node", name),
                       fmt::format("Redis Cluster hold3+release, 64 {}: 3 primaries / one node",
                                   api == Api::async ? "in flight" : "callers"),
                       divide(ops(cluster), ops(one))});
        out.push_back({fmt::format("redis_cluster_{}_hold3_release_pairs_per_second_64", name),
                       fmt::format("  pairs/s, cluster ({})", name), ops(cluster), "{:.0f}"});
        out.push_back({fmt::format("redis_{}_hold3_release_pairs_per_second_64", name),
                       fmt::format("  pairs/s, one node ({})", name), ops(one), "{:.0f}"});
        out.push_back({fmt::format("redis_cluster_{}_hold3_release_cpu_us_per_op_64", name),
                       "  Redis CPU us per pair, cluster, primaries summed", server_us(cluster),
                       "{:.1f}"});
        for (int i = 0; i < RedisCluster::primaries; ++i) {
            out.push_back(
                {fmt::format("redis_cluster_{}_hold3_release_cpu_us_per_op_64_primary{}", name,
                             i + 1),
                 fmt::format("    of which primary {}", i + 1),
                 cluster ? cluster->node_us_per_op(static_cast<std::size_t>(i)) : std::nullopt,
                 "{:.1f}"});
        }
        out.push_back({fmt::format("redis_{}_hold3_release_cpu_us_per_op_64_one_node", name),
                       "  Redis CPU us per pair, one node", server_us(one), "{:.1f}"});
    }

    // The example server over HTTP, on each backend, 64 keep-alive connections: what a
    // service built on seatlock gets from Redis beside keeping its seats in process. With
    // Redis on the server's cores, and with Redis on a CPU of its own (_apart).
    http_figures(table, out, "http_hold+release", "http", "HTTP hold+release, 64 connections",
                 true);
    http_figures(table, out, "http_hold+release_apart", "http_apart",
                 "HTTP hold+release, 64 connections, Redis on a CPU of its own", false);

    const auto* redis_kept = table.find(kept, Kind::redis, 16);
    const auto* by_hand_kept = table.find(kept, Kind::by_hand, 16);
    // Requests, not replies: seatlock's 16 callers share writes (pipeline_blocking_calls),
    // but each still waits for one request's answer per hold.
    out.push_back({"redis_round_trips_per_hold", "round trips per 3-seat hold, seatlock",
                   redis_kept ? redis_kept->requests_per_op() : std::nullopt});
    out.push_back({"by_hand_round_trips_per_hold", "round trips per 3-seat hold, hand-written flow",
                   by_hand_kept ? by_hand_kept->requests_per_op() : std::nullopt});
    out.push_back({"redis_commands_per_hold",
                   "Redis commands per 3-seat hold (with scripts'), seatlock",
                   per_op(redis_kept, &CounterDelta::commands)});
    out.push_back({"by_hand_commands_per_hold",
                   "Redis commands per 3-seat hold (with scripts'), hand-written flow",
                   per_op(by_hand_kept, &CounterDelta::commands)});

    // On a shared machine the callers may not get the cores they ask for: the CPU time
    // they did get tells what the figures would be on free cores.
    const auto* single = table.find(hr, Kind::memory, 1);
    const auto* own = table.find(hr, Kind::memory, 2, true);
    const auto one = ops(single);
    out.push_back({"memory_pairs_per_second_1_caller",
                   "MemoryBackend hold3+release pairs/s, 1 caller", one, "{:.0f}"});
    out.push_back({"memory_pairs_per_cpu_second_1_caller",
                   "  pairs per CPU-second (one whole core)", ops_per_cpu_second(single),
                   "{:.0f}"});
    out.push_back({"memory_2_callers_event_per_caller_vs_1",
                   "MemoryBackend 2 callers / 1, one event per caller", divide(ops(own), one)});
    out.push_back({"memory_2_callers_event_per_caller_cores", "  cores the two callers got (of 2)",
                   own ? std::optional<double>(own->m.cores_used()) : std::nullopt});
    out.push_back({"memory_2_callers_event_per_caller_cpu_efficiency",
                   "  pairs per CPU-second, 2 callers / 1 (1 = scales with cores)",
                   single && own ? divide(ops_per_cpu_second(own), ops_per_cpu_second(single))
                                 : std::nullopt});
    out.push_back({"memory_2_callers_same_event_vs_1",
                   "MemoryBackend 2 callers / 1, disjoint seats of one event",
                   divide(ops(table.find(hr, Kind::memory, 2, false)), one)});

    const auto* memory_kept = table.find(kept, Kind::memory, 16);
    out.push_back({"redis_bytes_per_held_seat", "Redis bytes per held seat, seatlock",
                   storage_per_seat(redis_kept), "{:.0f}"});
    out.push_back({"by_hand_bytes_per_held_seat", "Redis bytes per held seat, hand-written flow",
                   storage_per_seat(by_hand_kept), "{:.0f}"});
    out.push_back({"memory_heap_bytes_per_held_seat", "MemoryBackend heap bytes per held seat",
                   storage_per_seat(memory_kept), "{:.0f}"});
    out.push_back({"memory_rss_bytes_per_held_seat", "MemoryBackend resident bytes per held seat",
                   memory_kept ? memory_kept->per_seat(memory_kept->resident_bytes) : std::nullopt,
                   "{:.0f}"});

    out.push_back({"redis_hold_p99_us_16_callers", "Redis 3-seat hold p99 us, 16 callers, seatlock",
                   first_step_p99_us(table.find(hr, Kind::redis, 16)), "{:.1f}"});
    out.push_back({"by_hand_hold_p99_us_16_callers",
                   "Redis 3-seat hold p99 us, 16 callers, hand-written flow",
                   first_step_p99_us(table.find(hr, Kind::by_hand, 16)), "{:.1f}"});
    return out;
}

}  // namespace seatlock::bench
