// SPDX-License-Identifier: MIT
// benchmarks/waiting_room_scenario.hpp: the waiting_room scenario of seatlock-bench: what a
// crowd in WaitingRoom costs. On the memory backend and on a private redis-server: joins a
// second up to 1,000,000 visitors (all before opening, so each one's draw key is computed),
// the memory each visitor takes (the process's resident memory on memory, Redis's
// used_memory on Redis), and the latency of position() once the room has opened with
// the whole crowd in line (a ZRANK on Redis). --quick: 10,000 visitors. Then the admission
// flow: four rooms on the storage (four servers) call admit() on a timer against a target
// rate while 30% of the admitted visitors never show up and the others finish soon after
// collecting their admission: the rate held, the most visitors active at once against the
// cap, the no-shows replaced.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"

namespace seatlock::bench {

inline constexpr std::string_view waiting_room_scenario = "waiting_room";

/// One backend's figures.
struct WaitingRoomRow {
    std::string backend;      ///< memory or redis
    std::string how;          ///< how the joins were sent
    long visitors = 0;
    double joins_per_second = 0;
    double bytes_per_visitor = 0;
    double position_p50_us = 0, position_p99_us = 0;
    long positions = 0;  ///< position() calls timed
    // The admission flow.
    double admit_target = 0;      ///< admit_per_second configured
    double admit_achieved = 0;    ///< admissions per second measured after the first burst
    double flow_seconds = 0;      ///< the window they were counted over
    std::uint64_t max_active = 0;       ///< the cap configured
    std::uint64_t most_active = 0;      ///< the most admitted-or-active any admit() reported
    long no_shows = 0;            ///< admitted visitors who never collected their admission
    long lapsed = 0;              ///< slots freed by admit() from no-shows
};

/// The scenario's rows, or why it did not run.
struct WaitingRoomResult {
    bool wanted = false;
    std::string not_run;
    std::vector<WaitingRoomRow> rows;
};

/// Runs it when `options` ask for it (--scenario waiting_room, or every scenario).
[[nodiscard]] WaitingRoomResult run_waiting_room(const Options& options);
void print_waiting_room(const WaitingRoomResult& result, bool quick);
[[nodiscard]] std::vector<std::string> check_waiting_room(const WaitingRoomResult& result);
[[nodiscard]] boost::json::value waiting_room_json(const WaitingRoomResult& result);

}  // namespace seatlock::bench
