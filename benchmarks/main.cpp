// benchmarks/main.cpp: seatlock-bench, every benchmark in one run, side by side with the
// seed apps' hand-written flow, the raw Redis ceiling and the floor of seatlock's bare
// Redis commands, against one private redis-server, so that comparisons hold on a noisy
// machine.
//
//   seatlock-bench [--quick] [--out FILE] [--scenario NAME,...] [--backend NAME,...]
//                  [--callers N,...] [--seconds S] [--rounds R]
//
// The runs compared with each other (seatlock, seed flow, command floor and raw ceiling at
// one number of callers) are cut into R interleaved slices, A B C A B C ..., so that a
// neighbour's burst of load hits all of them alike. Prints a Markdown table as it goes,
// then the ratios the project is judged by, and writes everything as JSON. Exits non-zero
// when a run failed or measured something that cannot be right (no operations, round
// trips other than the design's); speed itself is reported, never asserted.
#include <seatlock/backends/memory.hpp>

#include "hand_written.hpp"
#include "harness.hpp"
#include "redis_client.hpp"
#include "scenarios.hpp"
#include "support/redis_server.hpp"
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
#include <seatlock/backends/redis.hpp>
#include "key_layout.hpp"
#endif

#include <fmt/core.h>
#include <sys/utsname.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace seatlock::bench {
namespace {

constexpr std::string_view usage =
    "usage: seatlock-bench [--quick] [--out FILE] [--scenario NAME,...] [--backend NAME,...]\n"
    "                      [--callers N,...] [--seconds S] [--rounds R]\n"
    "  --quick      a few operations per caller: checks the harness, numbers are not figures\n"
    "  --out        where to write the JSON results\n"
    "  --scenario   lock+unlock lock_all3+unlock hold3+release hold3+confirm ga_hold2+release\n"
    "               contended_hold1 hold3_kept (default: all)\n"
    "  --backend    memory redis seed floor raw (default: all); floor: seatlock's Redis\n"
    "               commands alone, without its Lua (hold3+release only)\n"
    "  --callers    concurrent callers (default: 1,16,64; contended_hold1: 10,64; hold3_kept: 16)\n"
    "  --seconds    measured time of each timed run (default 3)\n"
    "  --rounds     interleaved slices each timed run is cut into (default 3)\n";

enum class Kind { memory, redis, seed, raw, floor };

constexpr std::string_view kind_name(Kind k) {
    switch (k) {
        case Kind::memory:
            return "memory";
        case Kind::redis:
            return "redis";
        case Kind::seed:
            return "seed";
        case Kind::raw:
            return "raw";
        case Kind::floor:
            return "floor";
    }
    return "?";
}

struct Options {
    bool quick = false;
    std::string out;
    std::vector<std::string> scenarios;
    std::vector<std::string> backends;
    std::vector<int> callers;
    double seconds = 3.0;
    int rounds = 3;
    std::string command;  // as typed, for the record
};

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> items;
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) {
        if (!item.empty()) items.push_back(item);
    }
    return items;
}

std::optional<Options> parse(int argc, char** argv) {
    Options o;
    for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::optional<std::string> {
            if (i + 1 >= argc) return std::nullopt;
            return std::string(argv[++i]);
        };
        if (arg == "--quick") {
            o.quick = true;
        } else if (arg == "--out" || arg == "--scenario" || arg == "--backend" ||
                   arg == "--callers" || arg == "--seconds" || arg == "--rounds") {
            const auto v = value();
            if (!v) return std::nullopt;
            if (arg == "--out") o.out = *v;
            if (arg == "--scenario") o.scenarios = split(*v);
            if (arg == "--backend") o.backends = split(*v);
            if (arg == "--seconds") {
                o.seconds = std::atof(v->c_str());
                if (!(o.seconds > 0)) return std::nullopt;
            }
            if (arg == "--rounds") {
                o.rounds = std::atoi(v->c_str());
                if (o.rounds < 1 || o.rounds > 100) return std::nullopt;
            }
            if (arg == "--callers") {
                for (const auto& n : split(*v)) {
                    const int callers = std::atoi(n.c_str());
                    if (callers < 1 || callers > 1024) return std::nullopt;
                    o.callers.push_back(callers);
                }
            }
        } else {
            return std::nullopt;
        }
    }
    for (const auto& s : o.scenarios) {
        if (std::none_of(scenarios.begin(), scenarios.end(),
                         [&](const auto& i) { return i.name == s; })) {
            return std::nullopt;
        }
    }
    for (const auto& b : o.backends) {
        if (b != "memory" && b != "redis" && b != "seed" && b != "raw" && b != "floor")
            return std::nullopt;
    }
    return o;
}

/// One line of the results.
struct Row {
    std::string scenario;
    Kind kind = Kind::memory;
    bool event_per_caller = false;
    Measurement m;
    std::optional<CounterDelta> redis;     ///< Redis runs: what the server did
    std::optional<double> storage_bytes;   ///< hold3_kept: Redis used_memory or heap growth
    std::optional<double> resident_bytes;  ///< hold3_kept on memory: resident memory growth
    std::uint64_t seats_held = 0;          ///< hold3_kept: seats held by the measured ops

    /// Adds another slice of the same run.
    void merge(const Row& other) {
        m.merge(other.m);
        if (redis && other.redis) {
            redis->commands += other.redis->commands;
            redis->replies += other.redis->replies;
            redis->cpu_seconds += other.redis->cpu_seconds;
        }
    }

    [[nodiscard]] std::string label() const {
        return scenario + (event_per_caller ? " (event per caller)" : "");
    }
    template <typename T>
    [[nodiscard]] std::optional<double> per_op(T CounterDelta::*field) const {
        if (!redis || m.ops == 0) return std::nullopt;
        return static_cast<double>((*redis).*field) / static_cast<double>(m.ops);
    }
    /// Redis server CPU microseconds per operation.
    [[nodiscard]] std::optional<double> server_us_per_op() const {
        const auto seconds = per_op(&CounterDelta::cpu_seconds);
        return seconds ? std::optional<double>(*seconds * 1e6) : std::nullopt;
    }
    [[nodiscard]] std::optional<double> per_seat(const std::optional<double>& bytes) const {
        if (!bytes || seats_held == 0) return std::nullopt;
        return *bytes / static_cast<double>(seats_held);
    }
};

std::string first_line_field(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(key, 0) == 0) {
            const auto colon = line.find(':');
            return colon == std::string::npos
                       ? line
                       : line.substr(line.find_first_not_of(" \t", colon + 1));
        }
    }
    return "unknown";
}

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen;
    in >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

class Bench {
public:
    explicit Bench(Options options) : o_(std::move(options)) {}

    int run() {
        load_at_start_ = load_average();
        const bool needs_redis =
            wanted(Kind::redis) || wanted(Kind::seed) || wanted(Kind::raw) || wanted(Kind::floor);
        if (needs_redis) {
            server_ = std::make_unique<testing::RedisServer>();
            stats_ = std::make_unique<Connection>(server_->host(), server_->port());
            scripts_ = BaselineScripts::load(*stats_);
        }
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
        if (wanted(Kind::floor)) CommandFloor::load(*stats_);
#else
        if (wanted(Kind::redis) || wanted(Kind::floor)) {
            fmt::print(
                "note: built without the Redis backend (no seatlock_redis target): "
                "no seatlock-on-Redis or command floor rows\n");
        }
#endif
        fmt::print(
            "seatlock-bench: {} mode, {} s per timed run in {} interleaved slices, {} CPUs ({}), "
            "load {}\n\n",
            o_.quick ? "quick" : "full", o_.seconds, o_.quick ? 1 : o_.rounds,
            std::thread::hardware_concurrency(), first_line_field("/proc/cpuinfo", "model name"),
            load_at_start_);
        print_header();
        for (const auto& s : scenarios) {
            if (!o_.scenarios.empty() &&
                std::find(o_.scenarios.begin(), o_.scenarios.end(), s.name) == o_.scenarios.end()) {
                continue;
            }
            for (int callers : callers_for(s)) run_group(s, callers);
        }
        server_.reset();
        const boost::json::object ratios = print_ratios();
        write_json(ratios);
        if (!problems_.empty()) {
            fmt::print(stderr, "\n{} problem(s):\n", problems_.size());
            for (const auto& p : problems_) fmt::print(stderr, "  - {}\n", p);
            return 1;
        }
        return 0;
    }

private:
    bool wanted(Kind k) const {
        return o_.backends.empty() ||
               std::find(o_.backends.begin(), o_.backends.end(), kind_name(k)) != o_.backends.end();
    }

    std::vector<int> callers_for(const ScenarioInfo& s) const {
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
        return {1, 16, 64};
    }

    // One run of the table: a backend (or baseline) at a number of callers.
    struct Variant {
        Kind kind;
        int callers;
        bool event_per_caller = false;
    };

    // Every variant of one scenario at one number of callers, in interleaved slices.
    void run_group(const ScenarioInfo& s, int callers) {
        std::vector<Variant> variants;
        if (wanted(Kind::memory)) variants.push_back({Kind::memory, callers});
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
        if (wanted(Kind::redis)) variants.push_back({Kind::redis, callers});
#endif
        if (wanted(Kind::seed) && s.seed_trips > 0) variants.push_back({Kind::seed, callers});
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
        if (wanted(Kind::floor) && s.id == Scenario::hold_release)
            variants.push_back({Kind::floor, callers});
#endif
        if (wanted(Kind::raw) && s.id == Scenario::hold_release)
            variants.push_back({Kind::raw, callers});
        // Next to the one-caller figure, the memory backend's two-caller figures on two
        // cores: disjoint seats of one event (one mutex), and one event per caller.
        if (s.id == Scenario::hold_release && callers == 1 && wanted(Kind::memory) &&
            (o_.callers.empty() || std::count(o_.callers.begin(), o_.callers.end(), 2))) {
            variants.push_back({Kind::memory, 2, false});
            variants.push_back({Kind::memory, 2, true});
        }
        // Runs of a fixed number of operations are not cut: their seats are used up.
        const int rounds = s.uses_up_seats || o_.quick ? 1 : o_.rounds;
        std::vector<std::optional<Row>> rows(variants.size());
        for (int round = 0; round < rounds; ++round) {
            for (std::size_t i = 0; i < variants.size(); ++i) {
                Row slice = run_variant(s, variants[i], rounds);
                if (rows[i])
                    rows[i]->merge(slice);
                else
                    rows[i] = std::move(slice);
            }
        }
        for (auto& row : rows) add(std::move(*row));
    }

    Row run_variant(const ScenarioInfo& s, const Variant& v, int rounds) {
        const Budget b = budget_for(s, v.kind, v.callers, rounds);
        switch (v.kind) {
            case Kind::memory:
                return run_memory(s, v.callers, v.event_per_caller, b);
            case Kind::redis:
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
                return run_redis(s, v.callers, b);
#else
                break;
#endif
            case Kind::seed:
                return run_seed(s, v.callers, b);
            case Kind::raw:
                return run_raw(s, v.callers, b);
            case Kind::floor:
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
                return run_floor(s, v.callers, b);
#else
                break;
#endif
        }
        throw std::logic_error("no such variant");
    }

    Budget budget_for(const ScenarioInfo& s, Kind kind, int callers, int rounds) const {
        const bool in_process = kind == Kind::memory;
        const auto per_caller = [&](std::uint64_t total) {
            return (total + static_cast<std::uint64_t>(callers) - 1) /
                   static_cast<std::uint64_t>(callers);
        };
        Budget b;
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
        b.duration =
            std::chrono::milliseconds(static_cast<std::int64_t>(o_.seconds * 1000 / rounds));
        b.warmup_ops = in_process ? 1000 : 20;
        return b;
    }

    Inventory inventory_for(const ScenarioInfo& s, const Budget& b, int callers,
                            bool event_per_caller) const {
        return Inventory(s.id, callers, b.ops_per_caller + b.warmup_ops, event_per_caller);
    }

    Row run_memory(const ScenarioInfo& s, int callers, bool event_per_caller, const Budget& b) {
        MemoryBackend backend;
        SeatlockScenario<MemoryBackend> scenario(backend,
                                                 inventory_for(s, b, callers, event_per_caller));
        Row row{std::string(s.name), Kind::memory, event_per_caller, {}, {}, {}, {}, 0};
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

    // Runs on Redis with the server counters (and, for hold3_kept, memory) read around the
    // measured operations.
    Row run_on_redis(const ScenarioInfo& s, Kind kind, int callers, const Budget& b,
                     const CallerFactory& make) {
        Row row{std::string(s.name), kind, false, {}, {}, {}, {}, 0};
        ServerCounters before, after;
        std::int64_t memory = 0;
        const bool kept = s.id == Scenario::hold_kept;
        row.m = Runner::run(
            callers, b, make,
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

    void flush() {
        Connection::expect(stats_->command({"FLUSHALL"}), REDIS_REPLY_STATUS, "FLUSHALL");
    }

#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    Row run_redis(const ScenarioInfo& s, int callers, const Budget& b) {
        flush();
        RedisOptions options;
        options.host = server_->host();
        options.port = server_->port();
        // As many connections as callers: the baselines have one each too.
        options.pool_size = static_cast<decltype(options.pool_size)>(callers);
        RedisBackend backend(options);
        detail::require(backend.ping(), "ping");
        SeatlockScenario<RedisBackend> scenario(backend, inventory_for(s, b, callers, false));
        return run_on_redis(s, Kind::redis, callers, b, [&](int i) { return scenario.caller(i); });
    }
#endif

    Row run_seed(const ScenarioInfo& s, int callers, const Budget& b) {
        flush();
        const Inventory inventory = inventory_for(s, b, callers, false);
        auto make = [&](int i) -> Operation {
            auto flow = std::make_shared<SeedFlow>(server_->host(), server_->port(), scripts_,
                                                   inventory.holder(i));
            const std::string event = inventory.event(i);
            switch (s.id) {
                case Scenario::lock:
                case Scenario::lock_all:
                    return [flow, seats = SeedSeats::of(event, inventory.lock_names(i))](Lap& lap) {
                        flow->lock_and_unlock(seats);
                        lap.first_step_done();
                        return Outcome::done;
                    };
                case Scenario::hold_release:
                    return [flow, seats = SeedSeats::of(event, inventory.seats(i, 0))](Lap& lap) {
                        flow->hold(seats);
                        lap.first_step_done();
                        flow->release(seats);
                        return Outcome::done;
                    };
                case Scenario::hold_kept: {
                    std::vector<SeedSeats> all;
                    for (std::uint64_t op = 0; op < inventory.seats_per_caller() / 3; ++op) {
                        all.push_back(SeedSeats::of(event, inventory.seats(i, op)));
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
                    throw std::logic_error("no seed version of " + std::string(s.name));
            }
        };
        return run_on_redis(s, Kind::seed, callers, b, make);
    }

    Row run_raw(const ScenarioInfo& s, int callers, const Budget& b) {
        flush();
        auto make = [&](int) -> Operation {
            auto raw = std::make_shared<RawCeiling>(server_->host(), server_->port(), scripts_,
                                                    s.round_trips);
            return [raw](Lap& lap) { return (*raw)(lap); };
        };
        return run_on_redis(s, Kind::raw, callers, b, make);
    }

#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    // The command floor works on the data the redis rows work on: the same inventory,
    // created by RedisBackend, whose own operations are then left out.
    Row run_floor(const ScenarioInfo& s, int callers, const Budget& b) {
        if (s.id != Scenario::hold_release)
            throw std::logic_error("no command floor of " + std::string(s.name));
        flush();
        const Inventory inventory = inventory_for(s, b, callers, false);
        RedisOptions options;
        options.host = server_->host();
        options.port = server_->port();
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
                event, inventory.holder(i),
                inventory.zone(), inventory.seats(i, 0));
            return [floor](Lap& lap) { return (*floor)(lap); };
        };
        return run_on_redis(s, Kind::floor, callers, b, make);
    }
#endif

    // -----------------------------------------------------------------------------------
    // Checks, table, ratios, JSON

    void add(Row row) {
        check(row);
        print_row(row);
        rows_.push_back(std::move(row));
    }

    void check(const Row& row) {
        const std::string what = fmt::format("{} on {} with {} callers", row.label(),
                                             kind_name(row.kind), row.m.callers);
        const auto& s = *std::find_if(scenarios.begin(), scenarios.end(),
                                      [&](const auto& i) { return i.name == row.scenario; });
        if (row.m.ops == 0 || !(row.m.ops_per_second() > 0) ||
            !(row.m.latency.quantile_us(0.5) > 0)) {
            problems_.push_back(what + ": no operation measured");
        }
        const bool contended = s.id == Scenario::contended_hold;
        if (row.m.refused > 0 && !contended) problems_.push_back(what + ": operations refused");
        if (contended && row.m.refused >= row.m.ops)
            problems_.push_back(what + ": nobody ever won the seat");
        if (!row.redis) return;
        // Round trips are the design (one per step): anything else is a bug, not noise.
        double expected = row.kind == Kind::seed ? s.seed_trips : s.round_trips;
        if (contended)
            expected =
                static_cast<double>(2 * row.m.ops - row.m.refused) / static_cast<double>(row.m.ops);
        const double trips = *row.per_op(&CounterDelta::replies);
        const double commands = *row.per_op(&CounterDelta::commands);
        if (std::abs(trips - expected) > 0.01 * expected) {
            problems_.push_back(fmt::format("{}: {:.3f} round trips per operation, expected {:.3f}",
                                            what, trips, expected));
        }
        if (commands + 1e-9 < trips) {
            problems_.push_back(fmt::format("{}: fewer commands ({:.3f}) than round trips ({:.3f})",
                                            what, commands, trips));
        }
    }

    static std::string opt(const std::optional<double>& v, const char* format = "{:.2f}") {
        return v ? fmt::format(fmt::runtime(format), *v) : "-";
    }

    static constexpr std::string_view row_format =
        "| {:<36} | {:<7} | {:>7} | {:>10} | {:>8} | {:>8} | {:>9} | {:>10} | {:>8} | {:>8} | "
        "{:>10} | {:>5} | {:>8} |\n";

    static void print_header() {
        fmt::print(fmt::runtime(row_format), "scenario", "backend", "callers", "ops/s", "p50 us",
                   "p99 us", "p99.9 us", "step p99", "trips/op", "cmds/op", "srv us/op", "cores",
                   "RSS MiB");
        fmt::print(
            "|{:-<38}|{:-<9}|{:-<8}:|{:-<11}:|{:-<9}:|{:-<9}:|{:-<10}:|{:-<11}:|{:-<9}:|{:-<9}:|{:-"
            "<11}:|{:-<6}:|{:-<9}:|\n",
            "", "", "", "", "", "", "", "", "", "", "", "", "");
    }

    static void print_row(const Row& r) {
        const auto& m = r.m;
        std::optional<double> step;
        if (m.first_step.count() > 0) step = m.first_step.quantile_us(0.99);
        fmt::print(fmt::runtime(row_format), r.label(), kind_name(r.kind), m.callers,
                   fmt::format("{:.0f}", m.ops_per_second()),
                   fmt::format("{:.1f}", m.latency.quantile_us(0.5)),
                   fmt::format("{:.1f}", m.latency.quantile_us(0.99)),
                   fmt::format("{:.1f}", m.latency.quantile_us(0.999)), opt(step, "{:.1f}"),
                   opt(r.per_op(&CounterDelta::replies)), opt(r.per_op(&CounterDelta::commands)),
                   opt(r.server_us_per_op(), "{:.1f}"), fmt::format("{:.2f}", m.cores_used()),
                   fmt::format("{:.1f}", static_cast<double>(m.peak_rss_kib) / 1024.0));
        std::fflush(stdout);
    }

    const Row* find(std::string_view scenario, Kind kind, int callers,
                    bool event_per_caller = false) const {
        for (const auto& r : rows_) {
            if (r.scenario == scenario && r.kind == kind && r.m.callers == callers &&
                r.event_per_caller == event_per_caller) {
                return &r;
            }
        }
        return nullptr;
    }

    // One ratio of the acceptance list: printed with its target, stored in `into`.
    static void ratio(boost::json::object& into, const std::string& key, const std::string& text,
                      std::optional<double> value, std::optional<double> at_least = {},
                      std::optional<double> at_most = {}, const char* format = "{:.2f}") {
        std::string verdict;
        if (value && at_least)
            verdict = *value >= *at_least
                          ? "  (target >= " + fmt::format("{}", *at_least) + ": met)"
                          : "  (target >= " + fmt::format("{}", *at_least) + ": MISSED)";
        if (value && at_most)
            verdict = *value <= *at_most
                          ? "  (target <= " + fmt::format("{}", *at_most) + ": met)"
                          : "  (target <= " + fmt::format("{}", *at_most) + ": MISSED)";
        fmt::print("  {:<68} {:>9}{}\n", text, opt(value, format), verdict);
        into[key] = value ? boost::json::value(*value) : boost::json::value(nullptr);
    }

    static std::optional<double> divide(const std::optional<double>& a,
                                        const std::optional<double>& b) {
        if (!a || !b || *b == 0) return std::nullopt;
        return *a / *b;
    }

    static std::optional<double> ops(const Row* r) {
        return r ? std::optional<double>(r->m.ops_per_second()) : std::nullopt;
    }

    boost::json::object print_ratios() const {
        boost::json::object out;
        fmt::print("\nratios{}:\n",
                   o_.quick ? " (quick mode: too few operations to mean anything)" : "");
        const std::string hr = "hold3+release";
        const auto* redis64 = find(hr, Kind::redis, 64);
        ratio(out, "redis_hold_release_64_vs_seed",
              "Redis hold3+release, 64 callers: seatlock / seed flow",
              divide(ops(redis64), ops(find(hr, Kind::seed, 64))), 3.0);
        ratio(out, "redis_hold_release_64_vs_raw",
              "Redis hold3+release, 64 callers: seatlock / raw ceiling",
              divide(ops(redis64), ops(find(hr, Kind::raw, 64))), 0.6);
        // No target: how far below the ceiling the commands alone already are.
        ratio(out, "redis_hold_release_64_floor_vs_raw",
              "Redis hold3+release, 64 callers: floor (bare commands) / raw ceiling",
              divide(ops(find(hr, Kind::floor, 64)), ops(find(hr, Kind::raw, 64))));

        const auto* kept = find("hold3_kept", Kind::redis, 16);
        const auto* seed_kept = find("hold3_kept", Kind::seed, 16);
        ratio(out, "redis_round_trips_per_hold", "round trips per 3-seat hold, seatlock",
              kept ? kept->per_op(&CounterDelta::replies) : std::nullopt, {}, 1.0);
        ratio(out, "seed_round_trips_per_hold", "round trips per 3-seat hold, seed flow",
              seed_kept ? seed_kept->per_op(&CounterDelta::replies) : std::nullopt, 9.0);
        ratio(out, "redis_commands_per_hold",
              "Redis commands per 3-seat hold (with scripts'), seatlock",
              kept ? kept->per_op(&CounterDelta::commands) : std::nullopt);
        ratio(out, "seed_commands_per_hold",
              "Redis commands per 3-seat hold (with scripts'), seed flow",
              seed_kept ? seed_kept->per_op(&CounterDelta::commands) : std::nullopt);

        // On a shared machine the callers may not get the cores they ask for: the CPU time
        // they did get tells what the figures would be on free cores.
        const auto* single = find(hr, Kind::memory, 1);
        const auto* own = find(hr, Kind::memory, 2, true);
        const auto one = ops(single);
        ratio(out, "memory_pairs_per_second_1_caller",
              "MemoryBackend hold3+release pairs/s, 1 caller", one, 500'000.0, {}, "{:.0f}");
        ratio(out, "memory_pairs_per_cpu_second_1_caller",
              "  pairs per CPU-second (one whole core)",
              single ? divide(static_cast<double>(single->m.ops), single->m.cpu_seconds)
                     : std::nullopt,
              {}, {}, "{:.0f}");
        ratio(out, "memory_2_callers_event_per_caller_vs_1",
              "MemoryBackend 2 callers / 1, one event per caller", divide(ops(own), one), 1.5);
        ratio(out, "memory_2_callers_event_per_caller_cores", "  cores the two callers got (of 2)",
              own ? std::optional<double>(own->m.cores_used()) : std::nullopt);
        ratio(out, "memory_2_callers_event_per_caller_cpu_efficiency",
              "  pairs per CPU-second, 2 callers / 1 (1 = scales with cores)",
              single && own
                  ? divide(divide(static_cast<double>(own->m.ops), own->m.cpu_seconds),
                           divide(static_cast<double>(single->m.ops), single->m.cpu_seconds))
                  : std::nullopt);
        ratio(out, "memory_2_callers_same_event_vs_1",
              "MemoryBackend 2 callers / 1, disjoint seats of one event",
              divide(ops(find(hr, Kind::memory, 2, false)), one));

        const auto* mem_kept = find("hold3_kept", Kind::memory, 16);
        ratio(out, "redis_bytes_per_held_seat", "Redis bytes per held seat, seatlock",
              kept ? kept->per_seat(kept->storage_bytes) : std::nullopt, {}, {}, "{:.0f}");
        ratio(out, "seed_bytes_per_held_seat", "Redis bytes per held seat, seed flow",
              seed_kept ? seed_kept->per_seat(seed_kept->storage_bytes) : std::nullopt, {}, {},
              "{:.0f}");
        ratio(out, "memory_heap_bytes_per_held_seat", "MemoryBackend heap bytes per held seat",
              mem_kept ? mem_kept->per_seat(mem_kept->storage_bytes) : std::nullopt, {}, {},
              "{:.0f}");
        ratio(out, "memory_rss_bytes_per_held_seat", "MemoryBackend resident bytes per held seat",
              mem_kept ? mem_kept->per_seat(mem_kept->resident_bytes) : std::nullopt, {}, {},
              "{:.0f}");

        auto hold_p99 = [&](Kind k) -> std::optional<double> {
            const auto* r = find(hr, k, 16);
            if (!r || r->m.first_step.count() == 0) return std::nullopt;
            return r->m.first_step.quantile_us(0.99);
        };
        ratio(out, "redis_hold_p99_us_16_callers", "Redis 3-seat hold p99 us, 16 callers, seatlock",
              hold_p99(Kind::redis), {}, {}, "{:.1f}");
        ratio(out, "seed_hold_p99_us_16_callers", "Redis 3-seat hold p99 us, 16 callers, seed flow",
              hold_p99(Kind::seed), {}, {}, "{:.1f}");
        return out;
    }

    boost::json::object machine() const {
        utsname u{};
        ::uname(&u);
        boost::json::object m;
        m["cpu"] = first_line_field("/proc/cpuinfo", "model name");
        m["nproc"] = std::thread::hardware_concurrency();
        m["kernel"] = std::string(u.sysname) + " " + u.release;
        m["compiler"] = __VERSION__;
        m["build_type"] = SEATLOCK_BENCH_BUILD_TYPE;
        m["load_average_at_start"] = load_at_start_;
        m["load_average_at_end"] = load_average();
        return m;
    }

    void write_json(const boost::json::object& ratios) const {
        boost::json::array runs;
        for (const auto& r : rows_) {
            boost::json::object j;
            j["scenario"] = r.scenario;
            j["backend"] = kind_name(r.kind);
            j["layout"] = r.event_per_caller ? "event per caller" : "one event";
            j["callers"] = r.m.callers;
            j["ops"] = r.m.ops;
            j["refused"] = r.m.refused;
            j["seconds"] = r.m.seconds;
            j["ops_per_second"] = r.m.ops_per_second();
            j["latency_us"] = {{"p50", r.m.latency.quantile_us(0.5)},
                               {"p99", r.m.latency.quantile_us(0.99)},
                               {"p999", r.m.latency.quantile_us(0.999)}};
            if (r.m.first_step.count() > 0) {
                j["first_step_latency_us"] = {{"p50", r.m.first_step.quantile_us(0.5)},
                                              {"p99", r.m.first_step.quantile_us(0.99)},
                                              {"p999", r.m.first_step.quantile_us(0.999)}};
            }
            if (r.redis) {
                j["round_trips_per_op"] = *r.per_op(&CounterDelta::replies);
                j["redis_commands_per_op"] = *r.per_op(&CounterDelta::commands);
                j["redis_cpu_us_per_op"] = *r.server_us_per_op();
            }
            if (r.seats_held > 0) {
                j["seats_held"] = r.seats_held;
                if (auto b = r.per_seat(r.storage_bytes)) j["storage_bytes_per_seat"] = *b;
                if (auto b = r.per_seat(r.resident_bytes)) j["resident_bytes_per_seat"] = *b;
            }
            j["peak_rss_kib"] = r.m.peak_rss_kib;
            j["client_cores_used"] = r.m.cores_used();
            runs.push_back(std::move(j));
        }
        boost::json::object doc;
        doc["command"] = o_.command;
        doc["mode"] = o_.quick ? "quick" : "full";
        doc["seconds_per_timed_run"] = o_.seconds;
        doc["rounds"] = o_.quick ? 1 : o_.rounds;
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
        doc["redis_backend"] = true;
#else
        doc["redis_backend"] = false;
#endif
        doc["machine"] = machine();
        doc["runs"] = std::move(runs);
        doc["ratios"] = ratios;
        doc["problems"] = boost::json::value_from(problems_);
        if (o_.out.empty()) return;
        const std::filesystem::path path(o_.out);
        if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
        std::ofstream(path) << boost::json::serialize(doc) << '\n';
        fmt::print("\nresults written to {}\n", o_.out);
    }

    Options o_;
    std::unique_ptr<testing::RedisServer> server_;
    std::unique_ptr<Connection> stats_;
    BaselineScripts scripts_;
    std::vector<Row> rows_;
    std::vector<std::string> problems_;
    std::string load_at_start_;
};

}  // namespace
}  // namespace seatlock::bench

int main(int argc, char** argv) {
    auto options = seatlock::bench::parse(argc, argv);
    if (!options) {
        fmt::print(stderr, "{}", seatlock::bench::usage);
        return 2;
    }
    try {
        return seatlock::bench::Bench(std::move(*options)).run();
    } catch (const std::exception& e) {
        fmt::print(stderr, "seatlock-bench: {}\n", e.what());
        return 1;
    }
}
