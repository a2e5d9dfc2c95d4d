// SPDX-License-Identifier: MIT
// benchmarks/run.cpp: how each variant is set up, budgeted and measured.
#include "run.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <seatlock/backends/memory.hpp>
#include <stdexcept>
#include <string>
#include <thread>

#include "cpu_layout.hpp"
#include "http_load.hpp"
#include "http_server.hpp"
#include "redis_server.hpp"
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
#include <seatlock/backends/redis.hpp>
#include <seatlock/redis/key_layout.hpp>
#endif

namespace seatlock::bench {

namespace {

bool scenario_wanted(const Options& o, const ScenarioInfo& s) {
    return o.scenarios.empty() ||
           std::find(o.scenarios.begin(), o.scenarios.end(), s.name) != o.scenarios.end();
}

bool contains(const std::vector<int>& list, int n) {
    return std::find(list.begin(), list.end(), n) != list.end();
}

}  // namespace

Run::Run(const Options& options) : o_(options) {
    const bool needs_redis = o_.wanted(Kind::redis) || o_.wanted(Kind::by_hand) ||
                             o_.wanted(Kind::raw) || o_.wanted(Kind::floor) ||
                             o_.wanted(Kind::node_redlock);
    if (o_.wanted(Kind::node_redlock) && scenario_wanted(o_, info(Scenario::try_lock_all))) {
        node_redlock_ = NodeRedlock::prepare(o_.quick);
    }
    if (needs_redis) {
        server_ = std::make_unique<testing::RedisServer>();
        stats_ = std::make_unique<Connection>(server_->host(), server_->port());
        scripts_ = BaselineScripts::load(*stats_);
    }
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    if (o_.wanted(Kind::floor)) CommandFloor::load(*stats_);
    if (o_.wanted(Kind::redis_cluster) && scenario_wanted(o_, info(Scenario::hold_release))) {
        cluster_ = std::make_unique<RedisCluster>();
        for (int port : cluster_->primary_ports())
            cluster_stats_.push_back(std::make_unique<Connection>("127.0.0.1", port));
    }
#endif
}

Run::~Run() = default;

std::vector<Row> Run::measure(const std::function<void(const Row&)>& on_row) {
    std::vector<Row> rows;
    for (const auto& s : scenarios) {
        if (!scenario_wanted(o_, s)) continue;
        for (int callers : callers_for(s)) {
            for (auto& row : run_group(s, callers)) {
                on_row(row);
                rows.push_back(std::move(row));
            }
        }
    }
    // The viewers scenario has a table of its own (viewers.hpp), after the rows.
    if (o_.scenarios.empty() || std::find(o_.scenarios.begin(), o_.scenarios.end(),
                                          viewers_scenario) != o_.scenarios.end()) {
        viewers_ = run_viewers(o_, server_.get(), stats_.get());
    }
    stats_.reset();
    server_.reset();
    cluster_stats_.clear();
    cluster_.reset();
    return rows;
}

// Every number of callers or operations in flight the scenario runs at, in order.
std::vector<int> Run::callers_for(const ScenarioInfo& s) const {
    // HTTP connections: the 64 of the target.
    if (over_http(s.id)) return o_.callers.empty() ? std::vector{64} : o_.callers;
    std::vector<int> all = blocking_callers(s);
    for (int n : async_in_flight(s)) {
        if (!contains(all, n)) all.push_back(n);
    }
    std::sort(all.begin(), all.end());
    return all;
}

// Operations in flight of the asynchronous twins: one, the 64 node-redlock is compared
// at, and more than any thread pool would have.
std::vector<int> Run::async_in_flight(const ScenarioInfo& s) const {
    if (!has_async_twin(s.id) || !o_.wanted(Api::async) ||
        !(o_.wanted(Kind::memory) || (redis_backend_built && o_.wanted(Kind::redis)))) {
        return {};
    }
    if (!o_.callers.empty()) return o_.callers;
    return {1, 64, 1024};
}

// Callers of the blocking API, the baselines and the peers.
std::vector<int> Run::blocking_callers(const ScenarioInfo& s) const {
    if (!o_.callers.empty()) {
        std::vector<int> list;
        // The two-caller runs are the memory backend's extras, not a column of their own.
        for (int n : o_.callers) {
            if (n != 2 || s.id != Scenario::hold_release) list.push_back(n);
        }
        return list;
    }
    if (s.id == Scenario::contended_hold) return {contenders_per_seat, 64};
    if (s.id == Scenario::hold_kept) return {16};
    // The number of operations in flight node-redlock is compared at.
    if (s.id == Scenario::try_lock_all) return {64};
    return {1, 16, 64};
}

std::vector<Run::Variant> Run::variants_of(const ScenarioInfo& s, int callers) const {
    std::vector<Variant> variants;
    if (over_http(s.id)) {
        // The server calls seatlock asynchronously; its backend is the row's.
        if (!o_.wanted(Api::async)) return variants;
        if (o_.wanted(Kind::memory)) variants.push_back({Kind::memory, callers, false, Api::async});
        if (redis_backend_built && o_.wanted(Kind::redis))
            variants.push_back({Kind::redis, callers, false, Api::async});
        return variants;
    }
    if (contains(async_in_flight(s), callers)) {
        if (o_.wanted(Kind::memory)) variants.push_back({Kind::memory, callers, false, Api::async});
        if (redis_backend_built && o_.wanted(Kind::redis))
            variants.push_back({Kind::redis, callers, false, Api::async});
    }
    // hold3+release on the cluster, one event per caller so that the events' slots spread
    // over the three primaries: at the 64 callers of the one-node figures (or at each
    // number asked for), through both APIs.
    if (cluster_ && s.id == Scenario::hold_release && (!o_.callers.empty() || callers == 64)) {
        if (o_.wanted(Api::async))
            variants.push_back({Kind::redis_cluster, callers, true, Api::async});
        if (o_.wanted(Api::blocking))
            variants.push_back({Kind::redis_cluster, callers, true, Api::blocking});
    }
    if (!contains(blocking_callers(s), callers)) return variants;
    const bool blocking = o_.wanted(Api::blocking);
    if (blocking && o_.wanted(Kind::memory)) variants.push_back({Kind::memory, callers});
    if (blocking && redis_backend_built && o_.wanted(Kind::redis))
        variants.push_back({Kind::redis, callers});
    if (o_.wanted(Kind::by_hand) && s.by_hand_trips > 0)
        variants.push_back({Kind::by_hand, callers});
    if (redis_backend_built && o_.wanted(Kind::floor) && s.id == Scenario::hold_release)
        variants.push_back({Kind::floor, callers});
    if (o_.wanted(Kind::raw) && s.id == Scenario::hold_release)
        variants.push_back({Kind::raw, callers});
    if (node_redlock_ && s.id == Scenario::try_lock_all)
        variants.push_back({Kind::node_redlock, callers});
    // Next to the one-caller figure, the memory backend's two-caller figures on two
    // cores: disjoint seats of one event (one mutex), and one event per caller.
    if (s.id == Scenario::hold_release && callers == 1 && blocking && o_.wanted(Kind::memory) &&
        (o_.callers.empty() || std::count(o_.callers.begin(), o_.callers.end(), 2))) {
        variants.push_back({Kind::memory, 2, false});
        variants.push_back({Kind::memory, 2, true});
    }
    return variants;
}

// Every variant of one scenario at one number of callers, in interleaved slices.
std::vector<Row> Run::run_group(const ScenarioInfo& s, int callers) {
    const std::vector<Variant> variants = variants_of(s, callers);
    // Runs of a fixed number of operations are not cut: their seats are used up.
    const int rounds = s.uses_up_seats ? 1 : o_.rounds_per_run();
    std::vector<std::optional<Row>> slices(variants.size());
    for (int round = 0; round < rounds; ++round) {
        for (std::size_t i = 0; i < variants.size(); ++i) {
            Row slice = run_variant(s, variants[i], rounds);
            if (slices[i])
                slices[i]->merge(slice);
            else
                slices[i] = std::move(slice);
        }
    }
    std::vector<Row> rows;
    for (auto& row : slices) rows.push_back(std::move(*row));
    return rows;
}

Row Run::run_variant(const ScenarioInfo& s, const Variant& v, int rounds) {
    const Budget b = budget_for(s, v, rounds);
    if (over_http(s.id)) return run_http(s, v.kind, v.callers, b);
    switch (v.kind) {
        case Kind::memory:
            return v.api == Api::async ? run_memory_async(s, v.callers, b)
                                       : run_memory(s, v.callers, v.event_per_caller, b);
        case Kind::redis:
            return v.api == Api::async ? run_redis_async(s, v.callers, b)
                                       : run_redis(s, v.callers, b);
        case Kind::redis_cluster:
            return run_redis_cluster(s, v.callers, v.api, b);
        case Kind::by_hand:
            return run_by_hand(s, v.callers, b);
        case Kind::raw:
            return run_raw(s, v.callers, b);
        case Kind::floor:
            return run_floor(s, v.callers, b);
        case Kind::node_redlock:
            return run_node_redlock(s, v.callers, b);
    }
    throw std::logic_error("no such variant");
}

Budget Run::budget_for(const ScenarioInfo& s, const Variant& v, int rounds) const {
    const bool in_process = v.kind == Kind::memory;
    const auto per_caller = [&](std::uint64_t total) {
        return (total + static_cast<std::uint64_t>(v.callers) - 1) /
               static_cast<std::uint64_t>(v.callers);
    };
    Budget b;
    if (v.api == Api::async) {
        // Operations shared out among the slots: 1,024 in flight warm up with one each, and
        // the quick run stays quick.
        const std::uint64_t ops = in_process ? 2000 : 200;
        b.warmup_ops = o_.quick ? 1 : per_caller(ops);
        if (o_.quick)
            b.ops_per_caller = per_caller(ops / 4);
        else
            b.duration =
                std::chrono::milliseconds(static_cast<std::int64_t>(o_.seconds * 1000 / rounds));
        return b;
    }
    if (s.id == Scenario::hold_kept) {
        // 100,000 held seats (3 per hold); no warm-up, so every held seat is counted.
        b.ops_per_caller = per_caller(o_.quick ? 320 : 33'334);
        return b;
    }
    if (o_.quick) {
        b.ops_per_caller = in_process ? 200 : 20;
        b.warmup_ops = 5;
        return b;
    }
    if (s.uses_up_seats) {
        b.ops_per_caller = per_caller(in_process ? 120'000 : 30'000);
        b.warmup_ops = in_process ? 100 : 5;
        return b;
    }
    b.duration = std::chrono::milliseconds(static_cast<std::int64_t>(o_.seconds * 1000 / rounds));
    b.warmup_ops = in_process ? 1000 : 20;
    return b;
}

namespace {

// A row of `s` with nothing measured yet.
Row empty_row(const ScenarioInfo& s, Kind kind, Api api, bool event_per_caller) {
    Row row;
    row.scenario = s.name;
    row.kind = kind;
    row.api = api;
    row.event_per_caller = event_per_caller;
    return row;
}

Inventory inventory_for(const ScenarioInfo& s, const Budget& b, int callers,
                        bool event_per_caller) {
    return Inventory(s.id, callers, b.ops_per_caller + b.warmup_ops, event_per_caller);
}

#ifdef SEATLOCK_BENCH_REDIS_BACKEND
// The private server, with a command timeout a loaded machine does not reach: creating
// 90,000 seats in one call, or a reply behind 1,024 calls on one connection, can take more
// than the default second there, and one timeout ends the whole run.
RedisOptions redis_options(const testing::RedisServer& server) {
    RedisOptions options;
    options.host = server.host();
    options.port = server.port();
    options.command_timeout = std::chrono::seconds(10);
    return options;
}
#endif

}  // namespace

Row Run::run_memory(const ScenarioInfo& s, int callers, bool event_per_caller, const Budget& b) {
    MemoryBackend backend;
    SeatlockScenario<MemoryBackend> scenario(backend,
                                             inventory_for(s, b, callers, event_per_caller));
    Row row = empty_row(s, Kind::memory, Api::blocking, event_per_caller);
    std::int64_t heap = 0, resident = 0;
    row.m = Runner::run(
        callers, b, [&](int i) { return scenario.caller(i); },
        [&] {
            heap = heap_in_use_bytes();
            resident = resident_bytes();
        },
        [&] {
            heap = heap_in_use_bytes() - heap;
            resident = resident_bytes() - resident;
        });
    if (s.id == Scenario::hold_kept) {
        row.seats_held = 3 * row.m.ops;
        row.storage_bytes = static_cast<double>(heap);
        row.resident_bytes = static_cast<double>(resident);
    }
    return row;
}

Row Run::run_memory_async(const ScenarioInfo& s, int in_flight, const Budget& b) {
    boost::asio::io_context io(1);
    MemoryBackend backend;
    SeatlockScenario<MemoryBackend> scenario(backend, inventory_for(s, b, in_flight, false));
    Row row = empty_row(s, Kind::memory, Api::async, false);
    row.m = AsyncRunner::run(io, in_flight, b, [&](int i) { return scenario.async_caller(i, io); });
    return row;
}

Row Run::run_on_redis(const ScenarioInfo& s, Kind kind, int callers, const Budget& b,
                      const CallerFactory& make) {
    return measure_on_redis(s, kind, Api::blocking, [&](const auto& at_start, const auto& at_end) {
        return Runner::run(callers, b, make, at_start, at_end);
    });
}

// Runs on Redis with the server counters (and, for hold3_kept, memory) read around the
// measured operations.
Row Run::measure_on_redis(const ScenarioInfo& s, Kind kind, Api api, const Measure& measure) {
    Row row = empty_row(s, kind, api, false);
    ServerCounters before, after;
    std::int64_t memory = 0;
    const bool kept = s.id == Scenario::hold_kept;
    row.m = measure(
        [&] {
            if (kept) memory = used_memory(*stats_);
            before = read_counters(*stats_);
        },
        [&] {
            after = read_counters(*stats_);
            if (kept) memory = used_memory(*stats_) - memory;
        });
    row.redis = between(before, after);
    if (kept) {
        row.seats_held = 3 * row.m.ops;
        row.storage_bytes = static_cast<double>(memory);
    }
    return row;
}

void Run::flush() {
    Connection::expect(stats_->command({"FLUSHALL"}), REDIS_REPLY_STATUS, "FLUSHALL");
}

Row Run::run_redis([[maybe_unused]] const ScenarioInfo& s, [[maybe_unused]] int callers,
                   [[maybe_unused]] const Budget& b) {
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    flush();
    RedisOptions options = redis_options(*server_);
    // As many connections as callers: the baselines have one each too.
    options.pool_size = static_cast<decltype(options.pool_size)>(callers);
    RedisBackend backend(options);
    detail::require(backend.ping(), "ping");
    SeatlockScenario<RedisBackend> scenario(backend, inventory_for(s, b, callers, false));
    return run_on_redis(s, Kind::redis, callers, b, [&](int i) { return scenario.caller(i); });
#else
    throw std::logic_error("no such variant");
#endif
}

// Every operation in flight goes out on the backend's one pipelined connection
// (RedisOptions::async_connections, default 1), as node-redlock's do on its one, and the
// connection runs on the slots' own thread (RedisBackend(options, executor)), as
// node-redlock's runs on node's: one thread writes, reads, and runs every operation's
// steps.
Row Run::run_redis_async([[maybe_unused]] const ScenarioInfo& s, [[maybe_unused]] int in_flight,
                         [[maybe_unused]] const Budget& b) {
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    flush();
    boost::asio::io_context io(1);
    RedisOptions options = redis_options(*server_);
    RedisBackend backend(options, io.get_executor());
    detail::require(backend.ping(), "ping");
    SeatlockScenario<RedisBackend> scenario(backend, inventory_for(s, b, in_flight, false));
    return measure_on_redis(
        s, Kind::redis, Api::async, [&](const auto& at_start, const auto& at_end) {
            return AsyncRunner::run(
                io, in_flight, b, [&](int i) { return scenario.async_caller(i, io); }, at_start,
                at_end);
        });
#else
    throw std::logic_error("no such variant");
#endif
}

// hold3+release on the cluster: each caller (or slot in flight) on an event of its own,
// whose hash slot picks its primary. Each primary's counters are read around the measured
// operations on a connection of its own; the row's Redis figures are their sum.
Row Run::run_redis_cluster([[maybe_unused]] const ScenarioInfo& s, [[maybe_unused]] int callers,
                           [[maybe_unused]] Api api, [[maybe_unused]] const Budget& b) {
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    for (const auto& node : cluster_stats_)
        Connection::expect(node->command({"FLUSHALL"}), REDIS_REPLY_STATUS, "FLUSHALL");
    auto options = RedisOptions::from_url(cluster_->url());
    detail::require(options, "RedisOptions::from_url");
    options->command_timeout = std::chrono::seconds(10);
    options->pool_size = static_cast<decltype(options->pool_size)>(callers);
    RedisBackend backend(*options);
    detail::require(backend.ping(), "ping");
    SeatlockScenario<RedisBackend> scenario(backend, inventory_for(s, b, callers, true));
    boost::asio::io_context io(1);
    std::vector<ServerCounters> before(cluster_stats_.size()), after(cluster_stats_.size());
    const auto at_start = [&] {
        for (std::size_t i = 0; i < before.size(); ++i)
            before[i] = read_counters(*cluster_stats_[i]);
    };
    const auto at_end = [&] {
        for (std::size_t i = 0; i < after.size(); ++i) after[i] = read_counters(*cluster_stats_[i]);
    };
    Row row = empty_row(s, Kind::redis_cluster, api, true);
    if (api == Api::async) {
        row.m = AsyncRunner::run(
            io, callers, b, [&](int i) { return scenario.async_caller(i, io); }, at_start, at_end);
    } else {
        row.m = Runner::run(
            callers, b, [&](int i) { return scenario.caller(i); }, at_start, at_end);
    }
    row.redis = CounterDelta{};
    for (std::size_t i = 0; i < cluster_stats_.size(); ++i) {
        row.nodes.push_back({cluster_->primary_ports()[i], between(before[i], after[i])});
        *row.redis += row.nodes.back().redis;
    }
    return row;
#else
    throw std::logic_error("no such variant");
#endif
}

Row Run::run_by_hand(const ScenarioInfo& s, int callers, const Budget& b) {
    flush();
    const Inventory inventory = inventory_for(s, b, callers, false);
    auto make = [&](int i) -> Operation {
        auto flow = std::make_shared<ByHandFlow>(server_->host(), server_->port(), scripts_,
                                                 inventory.holder(i));
        const std::string event = inventory.event(i);
        switch (s.id) {
            case Scenario::lock:
            case Scenario::lock_all:
                return [flow, seats = ByHandSeats::of(event, inventory.lock_names(i))](Lap& lap) {
                    flow->lock_and_unlock(seats);
                    lap.first_step_done();
                    return Outcome::done;
                };
            case Scenario::hold_release:
                return [flow, seats = ByHandSeats::of(event, inventory.seats(i, 0))](Lap& lap) {
                    flow->hold(seats);
                    lap.first_step_done();
                    flow->release(seats);
                    return Outcome::done;
                };
            case Scenario::hold_kept: {
                std::vector<ByHandSeats> all;
                for (std::uint64_t op = 0; op < inventory.seats_per_caller() / 3; ++op) {
                    all.push_back(ByHandSeats::of(event, inventory.seats(i, op)));
                }
                return [flow, all = std::move(all), next = std::size_t{0}](Lap& lap) mutable {
                    if (next == all.size())
                        throw std::logic_error("the inventory of this run is used up");
                    flow->hold(all[next++]);
                    lap.first_step_done();
                    return Outcome::done;
                };
            }
            default:
                throw std::logic_error("no hand-written version of " + std::string(s.name));
        }
    };
    return run_on_redis(s, Kind::by_hand, callers, b, make);
}

Row Run::run_raw(const ScenarioInfo& s, int callers, const Budget& b) {
    flush();
    auto make = [&](int) -> Operation {
        auto raw =
            std::make_shared<RawCeiling>(server_->host(), server_->port(), scripts_, s.round_trips);
        return [raw](Lap& lap) { return (*raw)(lap); };
    };
    return run_on_redis(s, Kind::raw, callers, b, make);
}

// The command floor works on the data the redis rows work on: the same inventory,
// created by RedisBackend, whose own operations are then left out.
Row Run::run_floor([[maybe_unused]] const ScenarioInfo& s, [[maybe_unused]] int callers,
                   [[maybe_unused]] const Budget& b) {
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    if (s.id != Scenario::hold_release)
        throw std::logic_error("no command floor of " + std::string(s.name));
    flush();
    const Inventory inventory = inventory_for(s, b, callers, false);
    RedisOptions options = redis_options(*server_);
    {
        RedisBackend backend(options);
        SeatHoldStore<RedisBackend> store(backend);
        for (const auto& event : inventory.events())
            detail::require(store.create_event(event), "create_event");
    }
    const redis_detail::KeyLayout layout(options.prefix);
    auto make = [&](int i) -> Operation {
        const std::string event = inventory.event(i);
        auto floor = std::make_shared<CommandFloor>(
            server_->host(), server_->port(),
            ZoneKeys{layout.event_key("event", event), layout.event_key("deadlines", event),
                     layout.event_key("free", event, inventory.zone())},
            event, inventory.holder(i), inventory.zone(), inventory.seats(i, 0));
        return [floor](Lap& lap) { return (*floor)(lap); };
    };
    return run_on_redis(s, Kind::floor, callers, b, make);
#else
    throw std::logic_error("no such variant");
#endif
}

// node-redlock on the keys seatlock's try_lock_all3 rows lock, under the same Redis names.
// A peer that cannot run here, or fails, gives a row that says so instead of figures.
Row Run::run_node_redlock(const ScenarioInfo& s, int callers, const Budget& b) {
    Row row = empty_row(s, Kind::node_redlock, Api::blocking, false);
    row.peer = PeerOutcome{};
    row.m.callers = callers;
    if (!node_redlock_->why_not().empty()) {
        row.peer->not_run = node_redlock_->why_not();
        return row;
    }
    flush();
    NodeRedlock::Load load;
    load.host = server_->host();
    load.port = server_->port();
    load.in_flight = callers;
    load.seconds = std::chrono::duration<double>(b.duration).count();
    load.keys = shared_lock_keys;
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    load.key_prefix = redis_detail::KeyLayout(RedisOptions{}.prefix).lock_key(shared_lock_key_stem);
#else
    load.key_prefix = "seatlock:lock:{game1}:k";
#endif
    load.warmup_per_slot = b.warmup_ops;
    ServerCounters before, after;
    try {
        const PeerRun run = node_redlock_->run(
            load, [&] { before = read_counters(*stats_); },
            [&] { after = read_counters(*stats_); });
        row.m = run.m;
        row.peer->errors = run.errors;
        row.peer->first_error = run.first_error;
        row.redis = between(before, after);
    } catch (const std::exception& e) {
        row.peer->not_run = e.what();
        row.peer->failed = true;
    }
    return row;
}

// The example server over HTTP, started for each slice: on the memory backend, or on this
// run's redis-server. Its `connections` keep-alive connections run on one thread of this
// process (http_load.hpp); the Redis counters and the server's CPU time are read around
// the measured part. A server that is not built or fails gives a row that says so, as does
// http_hold+release_apart where one CPU is all there is. That scenario moves Redis to a
// CPU of its own for the slice, and this thread, hence the server it starts, to the
// others, whichever the backend: both rows give the server and its load the same CPUs.
Row Run::run_http(const ScenarioInfo& s, Kind kind, int connections, const Budget& b) {
    Row row = empty_row(s, kind, Api::async, false);
    row.peer = PeerOutcome{};
    row.m.callers = connections;
    const auto binary = ticketing_binary();
    if (!binary) {
        row.peer->not_run = "this build has no ticketing server (SEATLOCK_BUILD_EXAMPLES=OFF)";
        return row;
    }
    if (const auto cpus = allowed_cpus().size();
        s.id == Scenario::http_hold_release_apart && cpus < 2) {
        // Not a failure of the server: this machine cannot give Redis a CPU of its own.
        row.peer->not_run = fmt::format(
            "needs two CPUs for Redis to have one of its own; this process may use {}", cpus);
        return row;
    }
    try {
        std::optional<RedisApart> apart;
        if (s.id == Scenario::http_hold_release_apart)
            apart.emplace(kind == Kind::redis ? std::optional<pid_t>(server_->pid())
                                              : std::nullopt);
        // One HTTP thread per core it may use: the server's requests never block them, so
        // more would only take turns.
        const auto threads = allowed_cpus().size();
        // Buyers named by X-User-Id, as behind a gateway (http_auth measures sessions).
        std::vector<std::string> args{"--backend", std::string(kind_name(kind)), "--threads",
                                      std::to_string(threads), "--trust-user-header"};
        if (kind == Kind::redis) {
            flush();
            args.insert(args.end(), {"--redis-url", server_->url()});
        }
        TicketingProcess server(*binary, args);
        boost::asio::io_context io(1);
        const HttpTarget target{server.port()};
        double cpu = 0;
        auto measure = [&](const std::function<void()>& at_start,
                           const std::function<void()>& at_end) {
            return AsyncRunner::run(
                io, connections, b, [&](int i) { return http_hold_release(io, target, i); },
                [&] {
                    if (at_start) at_start();
                    cpu = server.cpu_seconds();
                },
                [&] {
                    cpu = server.cpu_seconds() - cpu;
                    if (at_end) at_end();
                });
        };
        if (kind == Kind::redis) {
            row = measure_on_redis(s, kind, Api::async, measure);
            row.peer = PeerOutcome{};
        } else {
            row.m = measure({}, {});
        }
        row.peer->server_cpu_seconds = cpu;
        server.stop();
    } catch (const std::exception& e) {
        row.peer->not_run = e.what();
        row.peer->failed = true;
    }
    return row;
}

}  // namespace seatlock::bench
