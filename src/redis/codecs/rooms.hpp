// SPDX-License-Identifier: MIT
// src/redis/codecs/rooms.hpp: the waiting room's Redis encodings and replies
// (lua/room_*.lua, lua/common_rooms.lua). Every call takes the room's three keys, which
// share the room's hash tag: one Cluster slot. See codec.hpp for the two forms a Codec takes.
#pragma once

#include <seatlock/keys.hpp>

#include "../codec.hpp"

#include <charconv>
#include <string>
#include <vector>

namespace seatlock::redis_detail {

namespace room_codec {

inline std::vector<std::string> room_keys(const Context& c, const std::string& room) {
    return {c.keys.room_key("room", room), c.keys.room_key("line", room), c.keys.room_key("active", room)};
}

inline Failure bad_id(const char* what) {
    return Failure(errc::invalid_argument, std::string(what) + " id is invalid");
}

// A call of `script` on one visitor of a room: ARGV prefix room visitor.
template <typename A, typename T, typename F>
Result<Call<T>> visitor_call(const Context& c, const Script& script, const std::string& room,
                             const std::string& visitor, F read) {
    if (!is_valid_id(room)) return bad_id("room");
    if (!is_valid_id(visitor)) return bad_id("visitor");
    auto args = arguments<A>();
    args[A::prefix] = c.keys.prefix();
    args[A::room] = room;
    args[A::visitor] = visitor;
    return make_call<T>(script, room_keys(c, room), std::move(args), standard<T>(script, std::move(read)));
}

inline QueueState state_named(const std::string& text) {
    for (QueueState s : {QueueState::waiting, QueueState::admitted, QueueState::active,
                         QueueState::finished, QueueState::lapsed}) {
        if (text == to_string(s)) return s;
    }
    throw BadReply("unknown queue state " + text);
}

inline std::uint64_t count(const Reader& r, std::size_t i) {
    const auto n = r.integer(i);
    if (n < 0) throw BadReply("a negative count");
    return static_cast<std::uint64_t>(n);
}

}  // namespace room_codec

template <>
struct Codec<op::configure_room> {
    static Result<Call<void>> call(const Context& c, const op::configure_room& o) {
        if (!is_valid_id(o.room)) return room_codec::bad_id("room");
        const RoomConfig& cfg = o.config;
        using A = redis_scripts::args::room_configure;
        auto args = arguments<A>();
        args[A::prefix] = c.keys.prefix();
        args[A::room] = o.room;
        args[A::opens_at] = std::to_string(
            std::chrono::duration_cast<Millis>(cfg.opens_at.time_since_epoch()).count());
        char rate[32];
        const auto written = std::to_chars(rate, rate + sizeof rate, cfg.admit_per_second);
        args[A::rate] = std::string(rate, written.ptr);
        args[A::max_active] = std::to_string(cfg.max_active);
        args[A::ttl] = ms(cfg.admission_ttl);
        args[A::no_show] = ms(cfg.no_show_after);
        args[A::seed] = cfg.shuffle_seed.value_or("");
        args[A::seed_given] = o.seed_given ? "1" : "0";
        return make_call<void>(redis_scripts::room_configure, room_codec::room_keys(c, o.room),
                               std::move(args),
                               standard<void>(redis_scripts::room_configure, [](const Reader&) {}));
    }
};

template <>
struct Codec<op::join_room> {
    static Result<Call<QueueTicket>> call(const Context& c, const op::join_room& o) {
        // {1, joined_at, in draw, replayed}
        return room_codec::visitor_call<redis_scripts::args::room_join, QueueTicket>(
            c, redis_scripts::room_join, o.room, o.visitor,
            [room = o.room, visitor = o.visitor](const Reader& r) {
                return QueueTicket{room, visitor, wall(r.integer(1)), r.integer(2) != 0, r.integer(3) != 0};
            });
    }
};

template <>
struct Codec<op::room_position> {
    static Result<Call<QueuePosition>> call(const Context& c, const op::room_position& o) {
        // {1, state, place (-1: none), waiting, wait ms, opens_at ms, deadline ms}
        return room_codec::visitor_call<redis_scripts::args::room_position, QueuePosition>(
            c, redis_scripts::room_position, o.room, o.visitor, [](const Reader& r) {
                QueuePosition p;
                p.state = room_codec::state_named(r.text(1));
                if (const auto place = r.integer(2); place >= 1)
                    p.place = static_cast<std::uint64_t>(place);
                p.waiting = room_codec::count(r, 3);
                p.estimated_wait = Millis(r.integer(4));
                p.opens_at = wall(r.integer(5));
                if (p.state == QueueState::admitted || p.state == QueueState::active)
                    p.deadline = wall(r.integer(6));
                return p;
            });
    }
};

template <>
struct Codec<op::admit> {
    static Result<Call<AdmitReport>> call(const Context& c, const op::admit& o) {
        if (!is_valid_id(o.room)) return room_codec::bad_id("room");
        using A = redis_scripts::args::room_admit;
        auto args = arguments<A>();
        args[A::prefix] = c.keys.prefix();
        args[A::room] = o.room;
        args[A::limit] = std::to_string(o.limit);
        // {1, {admitted}, lapsed, active, waiting}
        return make_call<AdmitReport>(
            redis_scripts::room_admit, room_codec::room_keys(c, o.room), std::move(args),
            standard<AdmitReport>(redis_scripts::room_admit, [](const Reader& r) {
                return AdmitReport{r.texts(1), room_codec::count(r, 2), room_codec::count(r, 3),
                                   room_codec::count(r, 4)};
            }));
    }
};

template <>
struct Codec<op::admission> {
    static Result<Call<WallTime>> call(const Context& c, const op::admission& o) {
        // {1, expiry}
        return room_codec::visitor_call<redis_scripts::args::room_admission, WallTime>(
            c, redis_scripts::room_admission, o.room, o.visitor,
            [](const Reader& r) { return wall(r.integer(1)); });
    }
};

template <>
struct Codec<op::finished> {
    static Result<Call<void>> call(const Context& c, const op::finished& o) {
        return room_codec::visitor_call<redis_scripts::args::room_finished, void>(
            c, redis_scripts::room_finished, o.room, o.visitor, [](const Reader&) {});
    }
};

}  // namespace seatlock::redis_detail
