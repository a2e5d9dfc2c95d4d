// SPDX-License-Identifier: MIT
// benchmarks/options.cpp: parsing and checking seatlock-bench's command line.
#include "options.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "auth_scenario.hpp"
#include "scenarios.hpp"
#include "seat_map_scenario.hpp"
#include "tls_scenario.hpp"
#include "waiting_room_scenario.hpp"
#include "viewers.hpp"

namespace seatlock::bench {

const std::string_view usage =
    "usage: seatlock-bench [--quick] [--out FILE] [--scenario NAME,...] [--backend NAME,...]\n"
    "                      [--api NAME,...] [--callers N,...] [--seconds S] [--rounds R]\n"
    "  --quick      a few operations per caller: checks the harness, numbers are not figures\n"
    "  --out        where to write the JSON results\n"
    "  --scenario   lock+unlock lock_all3+unlock try_lock_all3+unlock hold3+release\n"
    "               hold3+confirm ga_hold2+release contended_hold1 hold3_kept http_hold+release\n"
    "               http_hold+release_apart (default: all); http_hold+release: the ticketing\n"
    "               server over HTTP; _apart: with Redis on a CPU of its own\n"
    "               viewers: the server's seat map of a 60,000-seat venue followed by stream\n"
    "               viewers and pollers while 64 connections hold and release (viewers.hpp)\n"
    "               seat_map_read: the longest Redis call while a 100,000-seat venue's map is\n"
    "               read (seatlock-seat-map-bench, run to its end)\n"
    "               tls: lock and hold pairs, 64 in flight, over TLS and TCP (tls_scenario.hpp)\n"
    "               waiting_room: 1,000,000 visitors join a WaitingRoom: joins/s, memory per\n"
    "               visitor, position() latency (waiting_room_scenario.hpp)\n"
    "               http_auth: the server's HTTP hold with sessions and rate limits beside\n"
    "               one without, side by side (auth_scenario.hpp)\n"
    "  --backend    memory redis redis-cluster by-hand floor raw node-redlock (default: all);\n"
    "               redis-cluster: a private Redis Cluster of 3 primaries and 3 replicas,\n"
    "               one event per caller (hold3+release only, at 64 callers unless --callers);\n"
    "               floor: seatlock's Redis commands alone, without its Lua (hold3+release\n"
    "               only); node-redlock: the peer program (try_lock_all3+unlock only; never\n"
    "               in --quick)\n"
    "  --api        blocking async (default: both): how seatlock is called; async: every\n"
    "               operation in flight on one thread (lock_all3+unlock, try_lock_all3+unlock\n"
    "               and hold3+release only, on memory, redis and redis-cluster)\n"
    "  --callers    concurrent callers, or async operations in flight (default: 1,16,64;\n"
    "               contended_hold1: 10,64; hold3_kept: 16; try_lock_all3+unlock and\n"
    "               http_hold+release(_apart): 64 (HTTP connections);\n"
    "               async: 1,64,1024)\n"
    "  --seconds    measured time of each timed run (default 3)\n"
    "  --rounds     interleaved slices each timed run is cut into (default 3)\n";

namespace {

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> items;
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) {
        if (!item.empty()) items.push_back(item);
    }
    return items;
}

bool is_scenario(const std::string& name) {
    if (name == viewers_scenario || name == seat_map_scenario || name == tls_scenario ||
        name == waiting_room_scenario ||
        name == auth_scenario)
        return true;
    return std::any_of(scenarios.begin(), scenarios.end(),
                       [&](const auto& s) { return s.name == name; });
}

}  // namespace

bool Options::wanted(Kind k) const {
    return backends.empty() ||
           std::find(backends.begin(), backends.end(), kind_name(k)) != backends.end();
}

bool Options::wanted(Api a) const {
    return apis.empty() || std::find(apis.begin(), apis.end(), api_name(a)) != apis.end();
}

std::optional<Options> parse(int argc, char** argv) {
    Options o;
    for (int i = 0; i < argc; ++i) {
        if (i > 0) o.command += ' ';
        o.command += argv[i];
    }
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--quick") {
            o.quick = true;
            continue;
        }
        if (arg != "--out" && arg != "--scenario" && arg != "--backend" && arg != "--api" &&
            arg != "--callers" && arg != "--seconds" && arg != "--rounds") {
            return std::nullopt;
        }
        if (i + 1 >= argc) return std::nullopt;
        const std::string value = argv[++i];
        if (arg == "--out") o.out = value;
        if (arg == "--scenario") o.scenarios = split(value);
        if (arg == "--backend") o.backends = split(value);
        if (arg == "--api") o.apis = split(value);
        if (arg == "--seconds") {
            o.seconds = std::atof(value.c_str());
            if (!(o.seconds > 0)) return std::nullopt;
        }
        if (arg == "--rounds") {
            o.rounds = std::atoi(value.c_str());
            if (o.rounds < 1 || o.rounds > 100) return std::nullopt;
        }
        if (arg == "--callers") {
            for (const auto& n : split(value)) {
                const int callers = std::atoi(n.c_str());
                if (callers < 1 || callers > 1024) return std::nullopt;
                o.callers.push_back(callers);
            }
        }
    }
    if (!std::all_of(o.scenarios.begin(), o.scenarios.end(), is_scenario)) return std::nullopt;
    if (!std::all_of(o.backends.begin(), o.backends.end(),
                     [](const std::string& b) { return kind_named(b).has_value(); })) {
        return std::nullopt;
    }
    if (!std::all_of(o.apis.begin(), o.apis.end(),
                     [](const std::string& a) { return api_named(a).has_value(); })) {
        return std::nullopt;
    }
    return o;
}

}  // namespace seatlock::bench
