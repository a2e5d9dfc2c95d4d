// SPDX-License-Identifier: MIT
// tests/support/wire_form.hpp: reading the seat map's wire form (docs/ticketing-server.md,
// "The wire form") in tests: a named zone's seat ids and their states.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace seatlock::testing {

/// The seat ids of a named zone of the seat map's wire form, in zone order: each of its
/// "rows" is [row, count] (ids row-1 .. row-count) or [row, [ids...]]
/// (docs/ticketing-server.md, "The wire form").
inline std::vector<std::string> seat_ids(const boost::json::object& zone) {
    std::vector<std::string> ids;
    for (const auto& entry : zone.at("rows").as_array()) {
        const auto& row = entry.as_array();
        const std::string name(row.at(0).as_string());
        if (row.at(1).is_array()) {
            for (const auto& id : row.at(1).as_array()) ids.emplace_back(id.as_string());
        } else {
            const auto count = row.at(1).to_number<std::int64_t>();
            for (std::int64_t n = 1; n <= count; ++n) ids.push_back(name + "-" + std::to_string(n));
        }
    }
    return ids;
}

/// seat id -> "free" / "held" / "paid", for a named zone of the seat map's wire form.
inline std::map<std::string, std::string> seat_states_of(const boost::json::object& zone) {
    const auto ids = seat_ids(zone);
    const std::string states(zone.at("states").as_string());
    if (states.size() != ids.size()) throw std::runtime_error("states and rows differ in length");
    std::map<std::string, std::string> out;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        out[ids[i]] = states[i] == 'f' ? "free" : states[i] == 'h' ? "held" : states[i] == 'p'
                                                                                ? "paid"
                                                                                : "?";
    }
    return out;
}

/// One seat's change as a ?since= answer or a stream's "changes" frame gives it.
struct WireChange {
    std::string zone, seat, state;  // state: "free", "held" or "paid"
    std::int64_t expires_at = 0;    // Unix ms, when held
};

/// The seat changes of a ?since= answer or a "changes" frame, each decoded from its zone
/// and position to its seat id with the rows of `map`, a whole map in the wire form.
inline std::vector<WireChange> wire_changes(const boost::json::value& map,
                                            const boost::json::value& changes) {
    std::map<std::string, std::vector<std::string>> ids;
    for (const auto& zone : map.at("zones").as_array()) {
        if (zone.at("kind").as_string() == "named")
            ids[std::string(zone.at("zone").as_string())] = seat_ids(zone.as_object());
    }
    const auto base = changes.at("base").to_number<std::int64_t>();
    std::vector<WireChange> out;
    for (const auto& entry : changes.at("changes").as_array()) {
        const auto& z = entry.as_array();
        const std::string zone(z.at(0).as_string());
        const auto& names = ids.at(zone);
        const auto seat = [&](const boost::json::value& position) {
            return names.at(position.to_number<std::size_t>());
        };
        for (const auto& p : z.at(1).as_array()) out.push_back({zone, seat(p), "free", 0});
        for (const auto& p : z.at(2).as_array()) out.push_back({zone, seat(p), "paid", 0});
        for (const auto& group : z.at(3).as_array()) {
            const auto& g = group.as_array();
            const auto expires = base + g.at(0).to_number<std::int64_t>();
            for (std::size_t i = 1; i < g.size(); ++i) out.push_back({zone, seat(g[i]), "held", expires});
        }
    }
    return out;
}

}  // namespace seatlock::testing
