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

WaitingRoomRow on_memory(long visitors) {
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
    return row;
}

#ifdef SEATLOCK_BENCH_REDIS_BACKEND
WaitingRoomRow on_redis(long visitors) {
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
        if (options.wanted(Kind::memory)) result.rows.push_back(on_memory(visitors));
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
        if (options.wanted(Kind::redis)) result.rows.push_back(on_redis(visitors));
#endif
        for (const auto& r : result.rows) {
            fmt::print("waiting_room: {} ({}): {:.0f} joins/s up to {} visitors, {:.0f} bytes each, "
                       "position p50 {:.1f} us, p99 {:.1f} us\n",
                       r.backend, r.how, r.joins_per_second, r.visitors, r.bytes_per_visitor,
                       r.position_p50_us, r.position_p99_us);
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
}

std::vector<std::string> check_waiting_room(const WaitingRoomResult& result) {
    if (!result.wanted) return {};
    if (!result.not_run.empty()) return {"waiting_room: " + result.not_run};
    std::vector<std::string> problems;
    for (const auto& r : result.rows) {
        if (r.joins_per_second <= 0 || r.positions == 0)
            problems.push_back("waiting_room: " + r.backend + " measured nothing");
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
                                           {"positions_timed", r.positions}});
    }
    return rows;
}

}  // namespace seatlock::bench
