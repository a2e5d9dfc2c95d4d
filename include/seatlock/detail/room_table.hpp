// SPDX-License-Identifier: MIT
// seatlock/detail/room_table.hpp: the in-process waiting rooms shared by MemoryBackend and
// FakeBackend: the rules of op::configure_room ... op::finished (seatlock/operations.hpp,
// docs/waiting-room.md), which src/redis/lua/room_*.lua implement for Redis. Each room
// lives behind a mutex of its own; every step is one critical section.
//
// The line is an order-statistics tree (libstdc++'s policy-based tree) keyed as the Redis
// sorted set is scored: the draw key in [0, 1) for who joined before opening, the arrival
// number from 1 on after it. So a place is a rank, found in O(log n), and the same seed
// draws the same order here and on Redis.
#pragma once

#include <seatlock/operations.hpp>
#include <seatlock/result.hpp>

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace seatlock::detail {

/// The draw key of a visitor who joined before opening: the first 52 bits of
/// SHA-1("<seed> <visitor>") over 2^52, in [0, 1) and exact in a double. Redis computes
/// the same with redis.sha1hex (lua/room_join.lua).
inline double draw_key(const std::string& seed, const std::string& visitor) {
    const std::string text = seed + " " + visitor;
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
    std::uint64_t bits = 0;
    for (int i = 0; i < 7; ++i) bits = (bits << 8) | digest[i];
    return std::ldexp(static_cast<double>(bits >> 4), -52);
}

class RoomTable {
public:
    /// `to_wall`: the storage's milliseconds as wall-clock time.
    explicit RoomTable(std::function<WallTime(std::int64_t)> to_wall) : to_wall_(std::move(to_wall)) {}

    // One run() per operation of op::room_ops; `now_ms` is the storage clock in ms.

    Result<void> run(const op::configure_room& o, std::int64_t now_ms) {
        const RoomConfig& c = o.config;
        const std::int64_t opens = ms_of(c.opens_at);
        std::unique_lock tables(mutex_);
        auto& slot = rooms_[o.room];
        if (!slot) {
            slot = std::make_unique<Room>();
            slot->seed = *c.shuffle_seed;
            slot->opens_ms = opens;
            slot->credit_at = opens;
        }
        Room& room = *slot;
        std::lock_guard lock(room.mutex);
        tables.unlock();
        if (o.seed_given && *c.shuffle_seed != room.seed) {
            return Failure(errc::invalid_argument,
                           "room " + o.room + " was configured with another shuffle seed, which it keeps");
        }
        if (opens != room.opens_ms) {
            if (now_ms >= room.opens_ms) {
                return Failure(errc::invalid_argument,
                               "room " + o.room + " has opened: its opening time cannot change");
            }
            room.opens_ms = opens;
            room.credit_at = opens;
        }
        room.rate = c.admit_per_second;
        room.max_active = c.max_active;
        room.ttl_ms = c.admission_ttl.count();
        room.no_show_ms = c.no_show_after.count();
        return {};
    }

    Result<QueueTicket> run(const op::join_room& o, std::int64_t now_ms) {
        return with_room(o.room, [&](Room& room) -> Result<QueueTicket> {
            auto found = room.index.find(o.visitor);
            if (found != room.index.end()) {
                const Visitor& v = room.visitors[found->second];
                return QueueTicket{o.room, o.visitor, to_wall_(v.joined_ms), v.in_draw, true};
            }
            const auto id = static_cast<std::uint32_t>(room.visitors.size());
            const bool in_draw = now_ms < room.opens_ms;
            const double key = in_draw ? draw_key(room.seed, o.visitor)
                                       : static_cast<double>(++room.arrivals);
            room.visitors.push_back(Visitor{key, now_ms, 0, State::waiting, in_draw});
            room.index.emplace(room.names.emplace_back(o.visitor), id);
            room.line.insert({key, id});
            return QueueTicket{o.room, o.visitor, to_wall_(now_ms), in_draw, false};
        });
    }

    Result<QueuePosition> run(const op::room_position& o, std::int64_t now_ms) {
        return with_visitor(o.room, o.visitor, [&](Room& room, std::uint32_t id) -> Result<QueuePosition> {
            const Visitor& v = room.visitors[id];
            QueuePosition p;
            p.opens_at = to_wall_(room.opens_ms);
            p.waiting = room.line.size();
            p.state = state_at(v, now_ms);
            if (p.state == QueueState::admitted || p.state == QueueState::active)
                p.deadline = to_wall_(v.deadline_ms);
            if (p.state != QueueState::waiting) return p;
            if (now_ms < room.opens_ms) {
                p.estimated_wait = Millis(room.opens_ms - now_ms);
                return p;
            }
            p.place = room.line.order_of_key({v.key, id}) + 1;
            p.estimated_wait = wait_for(*p.place, room.rate);
            return p;
        });
    }

    Result<AdmitReport> run(const op::admit& o, std::int64_t now_ms) {
        return with_room(o.room, [&](Room& room) -> Result<AdmitReport> {
            AdmitReport report;
            report.lapsed = lapse_due(room, now_ms, o.limit);
            if (now_ms >= room.opens_ms) {
                const double cap = std::max(1.0, room.rate);
                if (now_ms > room.credit_at) {
                    room.credit = std::min(
                        cap, room.credit + static_cast<double>(now_ms - room.credit_at) * room.rate / 1000);
                    room.credit_at = now_ms;
                }
                const std::uint64_t free_slots =
                    room.max_active > room.active.size() ? room.max_active - room.active.size() : 0;
                std::uint64_t n = std::min<std::uint64_t>(
                    {static_cast<std::uint64_t>(std::floor(room.credit)), free_slots,
                     static_cast<std::uint64_t>(room.line.size()), o.limit});
                room.credit -= static_cast<double>(n);
                for (; n > 0; --n) {
                    const auto first = *room.line.begin();
                    room.line.erase(room.line.begin());
                    Visitor& v = room.visitors[first.second];
                    v.state = State::admitted;
                    v.deadline_ms = now_ms + room.no_show_ms;
                    room.active.insert({v.deadline_ms, first.second});
                    report.admitted.push_back(room.names[first.second]);
                }
            }
            report.active = room.active.size();
            report.waiting = room.line.size();
            return report;
        });
    }

    Result<WallTime> run(const op::admission& o, std::int64_t now_ms) {
        return with_visitor(o.room, o.visitor, [&](Room& room, std::uint32_t id) -> Result<WallTime> {
            Visitor& v = room.visitors[id];
            const QueueState state = state_at(v, now_ms);
            if (state == QueueState::active) return to_wall_(v.deadline_ms);
            if (state != QueueState::admitted) {
                if ((v.state == State::admitted || v.state == State::active)) lapse(room, id);
                return not_admitted(o.room, o.visitor, state);
            }
            room.active.erase({v.deadline_ms, id});
            v.state = State::active;
            v.deadline_ms = now_ms + room.ttl_ms;
            room.active.insert({v.deadline_ms, id});
            return to_wall_(v.deadline_ms);
        });
    }

    Result<void> run(const op::finished& o, std::int64_t now_ms) {
        return with_visitor(o.room, o.visitor, [&](Room& room, std::uint32_t id) -> Result<void> {
            Visitor& v = room.visitors[id];
            switch (state_at(v, now_ms)) {
                case QueueState::waiting: room.line.erase({v.key, id}); break;
                case QueueState::admitted:
                case QueueState::active: room.active.erase({v.deadline_ms, id}); break;
                case QueueState::lapsed:
                    if (v.state != State::lapsed) lapse(room, id);
                    return {};
                case QueueState::finished: return {};
            }
            v.state = State::finished;
            return {};
        });
    }

private:
    enum class State : unsigned char { waiting, admitted, active, finished, lapsed };
    struct Visitor {
        double key;  // its key in the line
        std::int64_t joined_ms;
        std::int64_t deadline_ms;  // admitted: to collect; active: the admission's expiry
        State state;
        bool in_draw;
    };
    using Line = __gnu_pbds::tree<std::pair<double, std::uint32_t>, __gnu_pbds::null_type,
                                  std::less<>, __gnu_pbds::rb_tree_tag,
                                  __gnu_pbds::tree_order_statistics_node_update>;
    struct Room {
        std::mutex mutex;
        std::string seed;
        std::int64_t opens_ms = 0;
        double rate = 1;
        std::uint64_t max_active = 1;
        std::int64_t ttl_ms = 0;
        std::int64_t no_show_ms = 0;
        double credit = 0;           // admissions the rate allows now
        std::int64_t credit_at = 0;  // when credit was last counted
        std::uint64_t arrivals = 0;  // visitors who joined after opening
        // Each visitor's id is stored once, in `names` (a deque: its strings never move, so
        // the index's views into them stay valid).
        std::deque<std::string> names;
        std::unordered_map<std::string_view, std::uint32_t> index;
        std::vector<Visitor> visitors;
        Line line;
        std::set<std::pair<std::int64_t, std::uint32_t>> active;  // by deadline
    };

    static std::int64_t ms_of(WallTime t) {
        return std::chrono::duration_cast<Millis>(t.time_since_epoch()).count();
    }

    static Millis wait_for(std::uint64_t place, double rate) {
        return Millis(static_cast<std::int64_t>(std::ceil(static_cast<double>(place) * 1000 / rate)));
    }

    static QueueState state_at(const Visitor& v, std::int64_t now_ms) {
        switch (v.state) {
            case State::waiting: return QueueState::waiting;
            case State::admitted:
                return v.deadline_ms > now_ms ? QueueState::admitted : QueueState::lapsed;
            case State::active: return v.deadline_ms > now_ms ? QueueState::active : QueueState::lapsed;
            case State::finished: return QueueState::finished;
            case State::lapsed: return QueueState::lapsed;
        }
        return QueueState::lapsed;
    }

    static Failure not_admitted(const std::string& room, const std::string& visitor, QueueState s) {
        return Failure(errc::not_admitted, "visitor " + visitor + " of room " + room + " is " +
                                               to_string(s) + ", not admitted");
    }

    static void lapse(Room& room, std::uint32_t id) {
        Visitor& v = room.visitors[id];
        room.active.erase({v.deadline_ms, id});
        v.state = State::lapsed;
    }

    // Lapses up to `limit` admitted or active visitors whose deadline has passed.
    static std::uint64_t lapse_due(Room& room, std::int64_t now_ms, std::size_t limit) {
        std::uint64_t n = 0;
        while (n < limit && !room.active.empty() && room.active.begin()->first <= now_ms) {
            lapse(room, room.active.begin()->second);
            ++n;
        }
        return n;
    }

    template <typename F>
    auto with_room(const std::string& name, F&& step) -> decltype(step(std::declval<Room&>())) {
        std::unique_lock tables(mutex_);
        auto it = rooms_.find(name);
        if (it == rooms_.end()) return Failure(errc::unknown_room, "no room " + name);
        Room& room = *it->second;
        std::lock_guard lock(room.mutex);
        tables.unlock();
        return step(room);
    }

    template <typename F>
    auto with_visitor(const std::string& name, const std::string& visitor, F&& step)
        -> decltype(step(std::declval<Room&>(), std::uint32_t{})) {
        return with_room(name, [&](Room& room) -> decltype(step(room, std::uint32_t{})) {
            auto found = room.index.find(visitor);
            if (found == room.index.end())
                return Failure(errc::not_in_queue, "visitor " + visitor + " never joined room " + name);
            return step(room, found->second);
        });
    }

    std::function<WallTime(std::int64_t)> to_wall_;
    std::mutex mutex_;  // guards rooms_ (the map, not the rooms)
    std::map<std::string, std::unique_ptr<Room>> rooms_;
};

}  // namespace seatlock::detail
