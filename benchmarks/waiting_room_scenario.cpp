// SPDX-License-Identifier: MIT
// benchmarks/waiting_room_scenario.cpp: the waiting_room scenario (waiting_room_scenario.hpp).
#include "waiting_room_scenario.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>
#include <seatlock/backends/memory.hpp>
#include <seatlock/waiting_room.hpp>

#include "harness.hpp"
#include "redis_client.hpp"
#include "redis_server.hpp"
#include "scenarios.hpp"
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
#include <seatlock/backends/redis.hpp>
#endif

namespace seatlock::bench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr long full_crowd = 1'000'000;
constexpr long quick_crowd = 10'000;
constexpr int timed_positions = 10'000;
constexpr int joins_in_flight = 64;

bool asked_for(const Options& o) {
    return o.scenarios.empty() ||
           std::find(o.scenarios.begin(), o.scenarios.end(), waiting_room_scenario) != o.scenarios.end();
}

std::string visitor(long i) { return "visitor-" + std::to_string(i); }

AdmissionKey bench_key() { return AdmissionKey(std::string(32, 'b')); }

// A room that opens in an hour: every join is in the draw.
RoomConfig closed_room() {
    return {std::chrono::system_clock::now() + std::chrono::hours(1), 100, 1000, std::chrono::minutes(10),
            std::chrono::minutes(2), "bench-seed"};
}

// Opens the room (its opening may move while it has not come), then times `n` position()
// calls on visitors drawn at random.
template <typename B>
void time_positions(WaitingRoom<B>& room, long visitors, WaitingRoomRow& row, int n) {
    auto config = closed_room();
    config.opens_at = std::chrono::system_clock::now() - std::chrono::seconds(1);
    detail::require(room.configure("bench", config), "configure");
    std::mt19937_64 random(42);
    std::uniform_int_distribution<long> pick(0, visitors - 1);
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const QueueTicket ticket{"bench", visitor(pick(random))};
        const auto start = Clock::now();
        auto p = room.position(ticket);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        if (!p || !p->place) throw std::runtime_error("position() gave no place");
    }
    std::sort(us.begin(), us.end());
    row.positions = n;
    row.position_p50_us = us[us.size() / 2];
    row.position_p99_us = us[us.size() * 99 / 100];
}

// The admission flow: `rooms` (one per server, all on the same storage) each call admit()
// every admit_every; of the visitors they admit, every third-or-so (30%) never collects the
// admission, the others collect it at once and finish show_for later.
constexpr double flow_rate = 200;
constexpr std::uint64_t flow_cap = 200;
constexpr auto admit_every = std::chrono::milliseconds(20);
constexpr auto show_for = std::chrono::milliseconds(500);
constexpr auto no_show_after = std::chrono::seconds(1);
constexpr auto flow_burst = std::chrono::seconds(2);  // the rate's first second of credit, and more

template <typename B>
void admission_flow(std::vector<std::unique_ptr<WaitingRoom<B>>>& rooms, WaitingRoomRow& row, bool quick) {
    const auto window = quick ? std::chrono::seconds(3) : std::chrono::seconds(8);
    const long crowd = static_cast<long>(flow_rate * 2 * std::chrono::duration<double>(flow_burst + window).count());
    RoomConfig config{std::chrono::system_clock::now() - std::chrono::seconds(1), flow_rate, flow_cap,
                      std::chrono::minutes(10), no_show_after, "flow-seed"};
    auto& first = *rooms.front();
    detail::require(first.configure("flow", config), "configure");
    for (long i = 0; i < crowd; ++i) detail::require(first.join("flow", visitor(i)), "join");
    std::mt19937_64 random(7);
    std::bernoulli_distribution shows_up(0.7);
    std::vector<std::pair<Clock::time_point, std::string>> leaving;  // shows, when they finish
    const auto start = Clock::now();
    const auto counted_from = start + flow_burst, end = counted_from + window;
    long counted = 0;
    auto next = start;
    for (std::size_t turn = 0; Clock::now() < end; ++turn) {
        auto& room = *rooms[turn % rooms.size()];
        auto step = room.admit("flow");
        detail::require(step, "admit");
        auto& report = *step;
        const auto now = Clock::now();
        row.most_active = std::max(row.most_active, report.active);
        row.lapsed += static_cast<long>(report.lapsed);
        if (now >= counted_from) counted += static_cast<long>(report.admitted.size());
        for (auto& v : report.admitted) {
            if (!shows_up(random)) {
                ++row.no_shows;
                continue;
            }
            detail::require(room.admission({"flow", v}), "admission");
            leaving.emplace_back(now + show_for, std::move(v));
        }
        std::erase_if(leaving, [&](const auto& l) {
            if (l.first > now) return false;
            detail::require(room.finished({"flow", l.second}), "finished");
            return true;
        });
        next += admit_every / static_cast<int>(rooms.size());
        std::this_thread::sleep_until(next);
    }
    if (row.lapsed == 0) throw std::runtime_error("admission flow: no no-show was replaced");
    row.admit_target = flow_rate;
    row.max_active = flow_cap;
    row.flow_seconds = std::chrono::duration<double>(window).count();
    row.admit_achieved = static_cast<double>(counted) / row.flow_seconds;
}

WaitingRoomRow on_memory(long visitors, bool quick) {
    WaitingRoomRow row{"memory", "blocking, 1 thread", visitors};
    const auto before = resident_bytes();
    auto backend = std::make_unique<MemoryBackend>();
    WaitingRoom room(*backend, bench_key());
    detail::require(room.configure("bench", closed_room()), "configure");
    const auto start = Clock::now();
    for (long i = 0; i < visitors; ++i) detail::require(room.join("bench", visitor(i)), "join");
    row.joins_per_second = static_cast<double>(visitors) /
                           std::chrono::duration<double>(Clock::now() - start).count();
    row.bytes_per_visitor = static_cast<double>(resident_bytes() - before) / static_cast<double>(visitors);
    time_positions(room, visitors, row, timed_positions);
    std::vector<std::unique_ptr<WaitingRoom<MemoryBackend>>> servers;
    for (int i = 0; i < 4; ++i) servers.push_back(std::make_unique<WaitingRoom<MemoryBackend>>(*backend, bench_key()));
    admission_flow(servers, row, quick);
    return row;
}

#ifdef SEATLOCK_BENCH_REDIS_BACKEND
WaitingRoomRow on_redis(long visitors, bool quick) {
    WaitingRoomRow row{"redis", "async, 64 in flight", visitors};
    testing::RedisServer server;
    Connection admin("127.0.0.1", server.port());
    RedisOptions options;
    options.host = "127.0.0.1";
    options.port = server.port();
    options.command_timeout = std::chrono::seconds(10);
    boost::asio::io_context io(1);
    RedisBackend backend(options, io.get_executor());
    WaitingRoom room(backend, bench_key());
    detail::require(room.configure("bench", closed_room()), "configure");
    const auto before = used_memory(admin);
    long next = 0;
    std::string failure;
    std::function<void()> send = [&] {
        const long i = next++;
        if (i >= visitors) return;
        // Completed on `io`'s thread, which run() keeps busy until the last join answered.
        room.async_join("bench", visitor(i),
                        boost::asio::bind_executor(io, [&](Result<QueueTicket> t) {
                            if (!t && failure.empty()) failure = t.error().message();
                            send();
                        }));
    };
    const auto start = Clock::now();
    for (int k = 0; k < joins_in_flight; ++k) send();
    io.run();
    row.joins_per_second = static_cast<double>(visitors) /
                           std::chrono::duration<double>(Clock::now() - start).count();
    if (!failure.empty()) throw std::runtime_error("join: " + failure);
    row.bytes_per_visitor = static_cast<double>(used_memory(admin) - before) / static_cast<double>(visitors);
    RedisBackend blocking(options);
    WaitingRoom positions(blocking, bench_key());
    time_positions(positions, visitors, row, timed_positions);
    std::vector<std::unique_ptr<RedisBackend>> connections;
    std::vector<std::unique_ptr<WaitingRoom<RedisBackend>>> servers;
    for (int i = 0; i < 4; ++i) {
        connections.push_back(std::make_unique<RedisBackend>(options));
        servers.push_back(std::make_unique<WaitingRoom<RedisBackend>>(*connections.back(), bench_key()));
    }
    admission_flow(servers, row, quick);
    return row;
}
#endif

}  // namespace

WaitingRoomResult run_waiting_room(const Options& options) {
    WaitingRoomResult result;
    result.wanted = asked_for(options);
    if (!result.wanted) return result;
    const long visitors = options.quick ? quick_crowd : full_crowd;
    try {
        if (options.wanted(Kind::memory)) result.rows.push_back(on_memory(visitors, options.quick));
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
        if (options.wanted(Kind::redis)) result.rows.push_back(on_redis(visitors, options.quick));
#endif
        for (const auto& r : result.rows) {
            fmt::print("waiting_room: {} ({}): {:.0f} joins/s up to {} visitors, {:.0f} bytes each, "
                       "position p50 {:.1f} us, p99 {:.1f} us\n",
                       r.backend, r.how, r.joins_per_second, r.visitors, r.bytes_per_visitor,
                       r.position_p50_us, r.position_p99_us);
            fmt::print("waiting_room: {}: {:.1f} admissions/s against {:.0f} over {:.0f} s, at most {} active "
                       "(cap {}), {} no-shows, {} slots lapsed\n",
                       r.backend, r.admit_achieved, r.admit_target, r.flow_seconds, r.most_active, r.max_active,
                       r.no_shows, r.lapsed);
        }
    } catch (const std::exception& e) {
        result.not_run = e.what();
    }
    return result;
}

void print_waiting_room(const WaitingRoomResult& result, bool quick) {
    if (!result.wanted) return;
    fmt::print("\n### waiting_room: a crowd joining a WaitingRoom{}\n\n",
               quick ? " (quick run: 10,000 visitors, the figures mean little)" : "");
    if (!result.not_run.empty()) {
        fmt::print("- not run: {}\n", result.not_run);
        return;
    }
    fmt::print("| backend | joins | visitors | joins/s | bytes per visitor | position p50 us | position p99 us |\n");
    fmt::print("|---|---|---:|---:|---:|---:|---:|\n");
    for (const auto& r : result.rows) {
        fmt::print("| {} | {} | {} | {:.0f} | {:.0f} | {:.1f} | {:.1f} |\n", r.backend, r.how, r.visitors,
                   r.joins_per_second, r.bytes_per_visitor, r.position_p50_us, r.position_p99_us);
    }
    fmt::print("\nAdmission flow: four servers call admit() every {} ms in turn; 30% of the admitted never "
               "collect their admission (lapsed after {} s), the others finish {} ms after collecting it.\n\n",
               admit_every.count(), no_show_after.count(), show_for.count());
    fmt::print("| backend | target admissions/s | measured | ratio | most active (cap) | no-shows | lapsed |\n");
    fmt::print("|---|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& r : result.rows) {
        fmt::print("| {} | {:.0f} | {:.1f} | {:.3f} | {} ({}) | {} | {} |\n", r.backend, r.admit_target,
                   r.admit_achieved, r.admit_achieved / r.admit_target, r.most_active, r.max_active, r.no_shows,
                   r.lapsed);
    }
}

std::vector<std::string> check_waiting_room(const WaitingRoomResult& result) {
    if (!result.wanted) return {};
    if (!result.not_run.empty()) return {"waiting_room: " + result.not_run};
    std::vector<std::string> problems;
    for (const auto& r : result.rows) {
        if (r.joins_per_second <= 0 || r.positions == 0 || r.admit_target <= 0)
            problems.push_back("waiting_room: " + r.backend + " measured nothing");
        else if (r.most_active > r.max_active)
            problems.push_back(fmt::format("waiting_room: {}: {} active, over the cap of {}", r.backend,
                                           r.most_active, r.max_active));
    }
    return problems;
}

boost::json::value waiting_room_json(const WaitingRoomResult& result) {
    if (!result.not_run.empty()) return boost::json::object{{"not_run", result.not_run}};
    boost::json::array rows;
    for (const auto& r : result.rows) {
        rows.push_back(boost::json::object{{"backend", r.backend},
                                           {"joins", r.how},
                                           {"visitors", r.visitors},
                                           {"joins_per_second", r.joins_per_second},
                                           {"bytes_per_visitor", r.bytes_per_visitor},
                                           {"position_p50_us", r.position_p50_us},
                                           {"position_p99_us", r.position_p99_us},
                                           {"positions_timed", r.positions},
                                           {"admit_target", r.admit_target},
                                           {"admit_achieved", r.admit_achieved},
                                           {"admit_window_s", r.flow_seconds},
                                           {"max_active", r.max_active},
                                           {"most_active", r.most_active},
                                           {"no_shows", r.no_shows},
                                           {"lapsed", r.lapsed}});
    }
    return rows;
}

}  // namespace seatlock::bench
