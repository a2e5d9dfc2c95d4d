// SPDX-License-Identifier: MIT
// benchmarks/seat_map_read.cpp: seatlock-seat-map-bench, the longest Redis call while a
// large venue's seat map is read through SeatHoldStore::seats().
//
// A private redis-server holds one event of `--seats` named seats (default 100,000: 40
// zones of 2,500 seats in rows of 25), a tenth of them held and a twentieth paid. Redis's
// slow log is set to record every command (slowlog-log-slower-than 0), then the map is
// read `--reads` times, blocking and asynchronously, while a second thread holds and
// releases seats (so the pieces of one read land at several versions and the change log
// brings them together). The slow log then lists every call and its duration: the
// program reports the longest, the number of calls per read, and the whole read's time,
// as text and, with --json FILE, as JSON, and Redis's own CPU time per read and per call
// (INFO cpu) over reads with nothing else running. Exits 1 when a call took 1 ms or more.
//
//     seatlock-seat-map-bench [--seats N] [--reads N] [--json FILE]
#include "cpu_layout.hpp"
#include "redis_client.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>

#include "support/redis_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <fmt/format.h>

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace seatlock;
using Clock = std::chrono::steady_clock;

EventSpec venue(int seats) {
    EventSpec spec{"stadium", "A large venue", {}};
    constexpr int per_zone = 2500, per_row = 25;
    for (int z = 0; z * per_zone < seats; ++z) {
        std::vector<SeatSpec> list;
        for (int s = 0; s < per_zone && z * per_zone + s < seats; ++s) {
            const std::string row = fmt::format("R{}", s / per_row + 1);
            list.push_back({fmt::format("{}-{}", row, s % per_row + 1), row});
        }
        spec.zones.push_back(ZoneSpec::named(fmt::format("S{}", z + 1), std::move(list)));
    }
    return spec;
}

struct SlowCall {
    std::int64_t us = 0;
    std::string command;
};

// Every call the slow log recorded since the last reset, longest first.
std::vector<SlowCall> slow_calls(bench::Connection& admin) {
    bench::Reply r = admin.command({"SLOWLOG", "GET", "-1"});
    std::vector<SlowCall> out;
    for (std::size_t i = 0; r && i < r->elements; ++i) {
        const redisReply* e = r->element[i];
        SlowCall c;
        c.us = e->element[2]->integer;
        const redisReply* argv = e->element[3];
        for (std::size_t a = 0; a < std::min<std::size_t>(argv->elements, 2); ++a) {
            if (a) c.command += ' ';
            c.command.append(argv->element[a]->str, argv->element[a]->len);
        }
        out.push_back(std::move(c));
    }
    std::sort(out.begin(), out.end(), [](const SlowCall& a, const SlowCall& b) { return a.us > b.us; });
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    int seats = 100'000, reads = 5;
    std::string json;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--seats") seats = std::stoi(argv[i + 1]);
        else if (flag == "--reads") reads = std::stoi(argv[i + 1]);
        else if (flag == "--json") json = argv[i + 1];
        else {
            fmt::print(stderr, "usage: seatlock-seat-map-bench [--seats N] [--reads N] [--json FILE]\n");
            return 2;
        }
    }
    testing::RedisServer server;
    // Redis on a CPU of its own, as on a host of its own: the reader and the seller here
    // would otherwise take its CPU in the middle of a call, and the slow log would time them.
    std::optional<bench::RedisApart> apart;
    if (bench::allowed_cpus().size() >= 2) apart.emplace(server.pid());
    // And first in line on it, as a dedicated host's Redis is: the kernel's threads and the
    // machine's other processes would otherwise still preempt it mid-call now and then, and
    // the slow log would count the wait (a one-seat hold of tens of microseconds then shows
    // milliseconds). SCHED_FIFO at the lowest real-time priority needs CAP_SYS_NICE (root);
    // without it the run goes on and says so.
    const sched_param lowest_realtime{sched_get_priority_min(SCHED_FIFO)};
    const bool realtime = ::sched_setscheduler(server.pid(), SCHED_FIFO, &lowest_realtime) == 0;
    const std::string realtime_error = realtime ? "" : std::strerror(errno);
    RedisOptions options;
    options.host = server.host();
    options.port = server.port();
    options.command_timeout = std::chrono::seconds(30);
    RedisBackend backend(options);
    HoldPolicy policy;
    policy.max_seats_per_holder = 0;
    SeatHoldStore store(backend, policy);
    const EventSpec spec = venue(seats);
    store.create_event(spec).value();
    // A tenth held, a twentieth paid.
    int n = 0;
    for (const auto& zone : spec.zones) {
        for (std::size_t s = 0; s < zone.seats.size(); s += 10, ++n) {
            auto h = store.hold("stadium", "buyer-" + std::to_string(n), named_seats(zone.id, {zone.seats[s].id}));
            if (h && n % 2 == 0) store.confirm(h->token, "order-" + std::to_string(n)).value();
        }
    }

    bench::Connection admin(server.host(), server.port());
    admin.command({"CONFIG", "SET", "slowlog-log-slower-than", "0"});
    admin.command({"CONFIG", "SET", "slowlog-max-len", "100000"});

    // Sales go on while the map is read.
    std::atomic<bool> stop{false};
    std::atomic<int> sales{0};
    std::thread seller([&] {
        const auto& zone = spec.zones.front();
        for (std::size_t s = 1; !stop; s = s % (zone.seats.size() - 1) + 1) {
            if (s % 10 == 0) continue;
            auto h = store.hold("stadium", "walk-in", named_seats(zone.id, {zone.seats[s].id}));
            if (h) {
                (void)store.release(h->token);
                sales += 2;
            }
        }
    });

    boost::asio::io_context io;
    std::int64_t longest = 0, calls = 0, read_us = 0;
    std::string longest_command;
    std::map<std::string, std::vector<std::int64_t>> times_of;  // per FCALL function
    std::size_t zones = 0;
    for (int r = 0; r < 2 * reads; ++r) {
        admin.command({"SLOWLOG", "RESET"});
        const auto t0 = Clock::now();
        Result<SeatMap> map = r % 2 == 0 ? store.seats("stadium")
                                         : [&] {
                                               auto f = store.async_seats("stadium", boost::asio::use_future);
                                               io.restart();
                                               io.run();
                                               return f.get();
                                           }();
        read_us += std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
        if (!map) {
            fmt::print(stderr, "seats() failed: {}\n", map.error().detail);
            stop = true;
            seller.join();
            return 1;
        }
        zones = map->zones.size();
        const auto log = slow_calls(admin);
        for (const auto& c : log) {
            if (c.command.rfind("SLOWLOG", 0) == 0) continue;
            // Commands a function runs are logged too: the function's time includes theirs.
            if (c.command.rfind("FCALL", 0) != 0) continue;
            times_of[c.command].push_back(c.us);
            if (c.command.find("_seats_page") != std::string::npos || c.command.find("_changes") != std::string::npos) ++calls;
            if (c.us > longest) {
                longest = c.us;
                longest_command = c.command;
            }
        }
    }
    stop = true;
    seller.join();

    // Wall times above count every moment the server waited for a CPU: on a loaded machine
    // they say more about the machine than about the calls. Redis's own CPU time (INFO
    // cpu, its main thread) over reads with nothing else running does not.
    const auto cpu_us = [&admin] {
        bench::Reply info = admin.command({"INFO", "cpu"});
        const std::string text(info->str, info->len);
        double total = 0;
        for (const char* field : {"used_cpu_user_main_thread:", "used_cpu_sys_main_thread:"}) {
            const auto at = text.find(field);
            if (at != std::string::npos) total += std::stod(text.substr(at + std::strlen(field)));
        }
        return total * 1e6;
    };
    admin.command({"CONFIG", "SET", "slowlog-log-slower-than", "10000"});
    const double cpu_before = cpu_us();
    for (int r = 0; r < reads; ++r) store.seats("stadium").value();
    const double cpu_per_read = (cpu_us() - cpu_before) / reads;
    const double pieces = static_cast<double>(calls) / (2 * reads);  // function calls per read
    // The yardstick on the same machine at the same moment: a hold and a release of one seat.
    const double cpu_pairs_before = cpu_us();
    constexpr int pairs = 500;
    for (int i = 0; i < pairs; ++i) {
        const auto& zone = spec.zones.back();
        auto h = store.hold("stadium", "yardstick", named_seats(zone.id, {zone.seats[1 + i % 9].id})).value();
        store.release(h.token).value();
    }
    const double cpu_per_write = (cpu_us() - cpu_pairs_before) / (2 * pairs);

    const int total = 2 * reads;
    fmt::print("seat map of {} seats in {} zones, read {} times (half blocking, half async) "
               "while {} holds and releases ran:\n",
               seats, zones, total, sales.load());
    fmt::print("  Redis {}\n", realtime ? "on real-time priority (SCHED_FIFO) on its CPU"
                                         : "at normal priority (SCHED_FIFO refused: " + realtime_error +
                                               "): preemption counts in the durations");
    fmt::print("  longest Redis call: {} us ({}); per function (slow log durations, wall time):\n",
               longest, longest_command);
    std::string functions;
    for (auto& entry : times_of) {
        auto& us = entry.second;
        std::sort(us.begin(), us.end());
        const auto at = [&us](double q) { return us[static_cast<std::size_t>(q * static_cast<double>(us.size() - 1))]; };
        fmt::print("    {:<44} {:>6} calls  p50 {:>5} us  p99 {:>6} us  max {:>6} us\n", entry.first,
                   us.size(), at(0.5), at(0.99), us.back());
        functions += fmt::format("{}{{\"function\": \"{}\", \"calls\": {}, \"p50_us\": {}, \"p99_us\": {}, \"max_us\": {}}}",
                                 functions.empty() ? "" : ", ", entry.first, us.size(), at(0.5), at(0.99), us.back());
    }
    fmt::print("  function calls per read (seats_page and changes): {:.0f}\n",
               static_cast<double>(calls) / total);
    fmt::print("  one whole read: {:.1f} ms\n", static_cast<double>(read_us) / total / 1000.0);
    fmt::print("  Redis CPU (main thread) per read with nothing else running: {:.0f} us, "
               "{:.0f} us per call on average\n",
               cpu_per_read, cpu_per_read / pieces);
    fmt::print("  Redis CPU per hold or release of one seat, the same way: {:.0f} us (a piece of the map "
               "costs {:.1f} of them)\n",
               cpu_per_write, cpu_per_read / pieces / cpu_per_write);
    if (!json.empty()) {
        std::ofstream out(json);
        out << fmt::format(
            "{{\"seats\": {}, \"zones\": {}, \"reads\": {}, \"redis_realtime\": {}, \"longest_redis_call_us\": {}, "
            "\"longest_redis_call\": \"{}\", \"calls_per_read\": {:.1f}, \"read_ms\": {:.2f}, "
            "\"redis_cpu_us_per_read\": {:.0f}, \"redis_cpu_us_per_call\": {:.0f}, \"redis_cpu_us_per_write\": {:.0f}, \"functions\": [{}]}}\n",
            seats, zones, total, realtime, longest, longest_command, static_cast<double>(calls) / total,
            static_cast<double>(read_us) / total / 1000.0, cpu_per_read, cpu_per_read / pieces, cpu_per_write, functions);
    }
    return longest >= 1000 ? 1 : 0;
}
