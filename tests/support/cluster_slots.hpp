// SPDX-License-Identifier: MIT
// tests/support/cluster_slots.hpp: a Redis Cluster's slots as a test reads and moves them
// behind RedisBackend's back: which primary owns a slot (CLUSTER SLOTS), and moving a
// slot with its keys to another primary (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT
// NODE), so that the next call there meets MOVED. Over plain connections or, with a
// connector, over TLS (MIGRATE between nodes then goes over TLS too).
#pragma once

#include "support/redis_admin.hpp"

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace seatlock::testing {

/// The cluster's primaries as CLUSTER SLOTS says: slot ranges -> port, port -> node id.
struct SlotMap {
    std::vector<std::pair<std::pair<int, int>, int>> ranges;  ///< {first, last} -> port
    std::map<int, std::string> ids;                           ///< port -> node id

    /// The port of the primary that owns `slot`, -1 when none does.
    [[nodiscard]] int port_of(int slot) const {
        for (const auto& entry : ranges)
            if (slot >= entry.first.first && slot <= entry.first.second) return entry.second;
        return -1;
    }
};

/// CLUSTER SLOTS asked of the node on `port`.
inline SlotMap slot_map(int port, const AdminConnector& connect = {}) {
    RedisAdmin admin(port, {}, connect);
    const auto slots = admin.command({"CLUSTER", "SLOTS"});
    const auto text = [](const redisReply* r) { return std::string(r->str, r->len); };
    SlotMap map;
    for (std::size_t i = 0; i < slots->elements; ++i) {
        const redisReply* range = slots->element[i];
        const int owner = static_cast<int>(range->element[2]->element[1]->integer);
        map.ranges.push_back({{static_cast<int>(range->element[0]->integer),
                               static_cast<int>(range->element[1]->integer)},
                              owner});
        map.ids[owner] = text(range->element[2]->element[2]);
    }
    return map;
}

/// Moves `slot` with its keys from the primary on port `source` to the one on `target`,
/// with no caller in between, then tells every primary of `map` (the target first, then
/// the source) who owns it: the next call at the source meets MOVED. Throws on a refusal.
inline void move_slot(const SlotMap& map, int slot, int source, int target, const AdminConnector& connect = {}) {
    RedisAdmin from(source, {}, connect);
    RedisAdmin to(target, {}, connect);
    const std::string slot_text = std::to_string(slot);
    to.expect_ok({"CLUSTER", "SETSLOT", slot_text, "IMPORTING", map.ids.at(source)});
    from.expect_ok({"CLUSTER", "SETSLOT", slot_text, "MIGRATING", map.ids.at(target)});
    for (;;) {
        const auto keys = from.command({"CLUSTER", "GETKEYSINSLOT", slot_text, "100"});
        if (keys->elements == 0) break;
        std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(target), "", "0", "5000", "KEYS"};
        for (std::size_t i = 0; i < keys->elements; ++i)
            migrate.emplace_back(keys->element[i]->str, keys->element[i]->len);
        const auto r = from.command(migrate);
        if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error("MIGRATE: " + std::string(r->str, r->len));
    }
    std::vector<int> handover{target, source};
    for (const auto& entry : map.ids)
        if (entry.first != target && entry.first != source) handover.push_back(entry.first);
    for (const int port : handover)
        RedisAdmin(port, {}, connect).expect_ok({"CLUSTER", "SETSLOT", slot_text, "NODE", map.ids.at(target)});
}

}  // namespace seatlock::testing
