// SPDX-License-Identifier: MIT
// seatlock/redis/key_layout.hpp: the names of every Redis key seatlock writes. The Lua
// scripts build the same names (src/redis/lua/common.lua, event_keys) and check the KEYS
// they are given against them; docs/redis.md's "Key layout" shows the layout to operators.
// Private to the Redis backend and the build tree (target seatlock_redis_key_layout, which
// the benchmarks use to name the keys as the backend does): never installed.
#pragma once

#include <seatlock/keys.hpp>

#include <string>
#include <string_view>

namespace seatlock::redis_detail {

class KeyLayout {
public:
    explicit KeyLayout(std::string prefix) : prefix_(std::move(prefix)) {}

    [[nodiscard]] const std::string& prefix() const noexcept { return prefix_; }

    /// <prefix>:events — hash event id -> canonical spec; the index events() reads.
    [[nodiscard]] std::string events_index() const { return prefix_ + ":events"; }

    /// <prefix>:<kind>:{event} — one key per event and kind (event, paid, deadlines,
    /// expired). The event hash also holds the zones', holds', orders' and holders' records,
    /// and the event's version (field ver) (lua/common.lua).
    [[nodiscard]] std::string event_key(std::string_view kind, std::string_view event) const {
        return prefix_ + ":" + std::string(kind) + ":{" + std::string(event) + "}";
    }
    /// <prefix>:<kind>:{event}:<zone> — per zone (free, seats).
    [[nodiscard]] std::string event_key(std::string_view kind, std::string_view event,
                                        std::string_view name) const {
        return event_key(kind, event) + ":" + std::string(name);
    }

    /// <prefix>:<kind>:{room} — a waiting room's keys (room, line, active), in the order
    /// its functions take them (lua/common_rooms.lua).
    [[nodiscard]] std::string room_key(std::string_view kind, std::string_view room) const {
        return prefix_ + ":" + std::string(kind) + ":{" + std::string(room) + "}";
    }

    /// The hash tag of a lock key's group. The empty group (a key starting with ':') gets
    /// ":", which no real group can be, so distinct keys never share a Redis key.
    static std::string lock_tag(std::string_view key) {
        const std::string_view group = lock_group(key);
        return group.empty() ? std::string(":") : std::string(group);
    }
    /// <prefix>:lock:{group}<rest of the key>: "game1:A-12" -> seatlock:lock:{game1}:A-12
    [[nodiscard]] std::string lock_key(std::string_view key) const {
        const std::string_view group = lock_group(key);
        return prefix_ + ":lock:{" + lock_tag(key) + "}" + std::string(key.substr(group.size()));
    }
    /// <prefix>:fence:{group} — the group's fencing counter.
    [[nodiscard]] std::string fence_key(std::string_view key) const {
        return prefix_ + ":fence:{" + lock_tag(key) + "}";
    }

private:
    std::string prefix_;
};

}  // namespace seatlock::redis_detail
