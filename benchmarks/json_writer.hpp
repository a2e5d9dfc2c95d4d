// SPDX-License-Identifier: MIT
// benchmarks/json_writer.hpp: the results as JSON — the command and mode, the machine, every
// row, every figure and every problem — for comparing runs over time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "figures.hpp"
#include "node_redlock.hpp"
#include "options.hpp"
#include "row.hpp"
#include "seat_map_scenario.hpp"
#include "tls_scenario.hpp"
#include "viewers.hpp"
#include "waiting_room_scenario.hpp"

namespace seatlock::bench {

struct Results {
    const Options& options;
    const std::vector<Row>& rows;
    const std::vector<Figure>& figures;
    const std::vector<std::string>& problems;
    std::string load_at_start;
    std::optional<NodeRedlock> node_redlock;  ///< when a wanted scenario had the peer
    const ViewersResult* viewers;             ///< the viewers scenario, when it ran
    const SeatMapRead* seat_map;              ///< the seat_map_read scenario, when it ran
    const TlsResult* tls = nullptr;           ///< the tls scenario, when it ran
    const WaitingRoomResult* waiting_room = nullptr;  ///< the waiting_room scenario, when it ran
};

/// Writes `results` to options.out (creating its directory) and says where; nothing when
/// no --out was given.
void write_json(const Results& results);

}  // namespace seatlock::bench
