// SPDX-License-Identifier: MIT
// benchmarks/hand_written.hpp: what seatlock is measured against, written directly on
// hiredis with one connection per caller.
//
// ByHandFlow is the flow users write by hand on Redis: lock each seat (SET NX PX), SET
// NX a hold key per seat (Spring's setIfAbsent), unlock each seat with a compare-and-delete script;
// a release locks each seat again, deletes the hold keys and unlocks. Keys use the names such
// hand-written services use, so they read the same in redis-cli.
//
// RawCeiling sends a script that does nothing, as many times per operation as seatlock
// needs round trips: no client-side design that talks to Redis once per step can beat it.
//
// CommandFloor runs, in one function call per step like seatlock, the Redis commands of
// seatlock's hold and release and nothing else (lua/floor.lua), on an event RedisBackend
// created: between it and the raw ceiling is the cost of the commands themselves, between
// it and seatlock the cost of seatlock's own Lua.
#pragma once

#include <cstdint>
#include <seatlock/detail/random.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench_scripts.hpp"
#include "harness.hpp"
#include "redis_client.hpp"

namespace seatlock::bench {

/// The SHA1s of the baseline's scripts, loaded once per server.
struct BaselineScripts {
    std::string by_hand_unlock;
    std::string noop;

    static BaselineScripts load(Connection& c) {
        return {c.load_script(scripts::by_hand_unlock), c.load_script(scripts::noop)};
    }
};

/// The keys of the hand-written flow for a set of seats of one event.
struct ByHandSeats {
    std::vector<std::string> lock_keys;
    std::vector<std::string> hold_keys;

    static ByHandSeats of(const std::string& event, const std::vector<std::string>& seats) {
        ByHandSeats keys;
        for (const auto& seat : seats) {
            keys.lock_keys.push_back("lock:seat:{" + event + "}:" + seat);
            keys.hold_keys.push_back("preempt:seat:{" + event + "}:" + seat);
        }
        return keys;
    }
};

/// One caller of the hand-written flow, on its own connection.
class ByHandFlow {
public:
    /// A hold key lives this long, a typical hand-written 10-minute hold.
    static constexpr const char* hold_ttl_ms = "600000";
    /// A seat lock's lease (a typical Redisson leaseTime).
    static constexpr const char* lease_ms = "10000";

    ByHandFlow(const std::string& host, int port, const BaselineScripts& scripts,
               std::string holder)
        : connection_(host, port),
          unlock_sha_(scripts.by_hand_unlock),
          holder_(std::move(holder)) {}

    /// Holds every seat: 3n commands for n seats.
    void hold(const ByHandSeats& seats) {
        lock_each(seats);
        for (const auto& key : seats.hold_keys) {
            Reply r = connection_.command({"SET", key, holder_, "NX", "PX", hold_ttl_ms});
            if (r->type != REDIS_REPLY_STATUS)
                throw std::runtime_error("hand-written flow: " + key + " already held");
        }
        unlock_each(seats);
    }

    /// Releases every seat: 3n commands for n seats.
    void release(const ByHandSeats& seats) {
        lock_each(seats);
        for (const auto& key : seats.hold_keys) {
            Reply r = connection_.command({"DEL", key});
            if (Connection::expect(r, REDIS_REPLY_INTEGER, "DEL")->integer != 1) {
                throw std::runtime_error("hand-written flow: " + key + " was not held");
            }
        }
        unlock_each(seats);
    }

    /// Redisson's MultiLock over the seats: one key at a time, then unlock each.
    void lock_and_unlock(const ByHandSeats& seats) {
        lock_each(seats);
        unlock_each(seats);
    }

private:
    void lock_each(const ByHandSeats& seats) {
        // A fresh owner per acquisition, as the UUID owners of such services; a counter is cheaper
        // than a UUID, which only flatters the baseline.
        owner_ = holder_ + ":" + std::to_string(++acquisitions_);
        for (const auto& key : seats.lock_keys) {
            Reply r = connection_.command({"SET", key, owner_, "NX", "PX", lease_ms});
            if (r->type != REDIS_REPLY_STATUS)
                throw std::runtime_error("hand-written flow: " + key + " is locked");
        }
    }
    void unlock_each(const ByHandSeats& seats) {
        for (const auto& key : seats.lock_keys) {
            Reply r = connection_.command({"EVALSHA", unlock_sha_, "1", key, owner_});
            if (Connection::expect(r, REDIS_REPLY_INTEGER, "unlock")->integer != 1) {
                throw std::runtime_error("hand-written flow: lost the lock " + key);
            }
        }
    }

    Connection connection_;
    std::string unlock_sha_;
    std::string holder_;
    std::string owner_;
    std::uint64_t acquisitions_ = 0;
};

/// One caller of the raw ceiling: `round_trips` no-op script calls per operation.
class RawCeiling {
public:
    RawCeiling(const std::string& host, int port, const BaselineScripts& scripts, int round_trips)
        : connection_(host, port), noop_sha_(scripts.noop), round_trips_(round_trips) {}

    Outcome operator()(Lap& lap) {
        for (int i = 0; i < round_trips_; ++i) {
            Reply r = connection_.command({"EVALSHA", noop_sha_, "0"});
            Connection::expect(r, REDIS_REPLY_INTEGER, "EVALSHA");
            if (i == 0) lap.first_step_done();
        }
        return Outcome::done;
    }

private:
    Connection connection_;
    std::string noop_sha_;
    int round_trips_;
};

/// The Redis keys a hold of one zone of one event touches, as RedisBackend names them
/// (seatlock/redis/key_layout.hpp builds them).
struct ZoneKeys {
    std::string event;      ///< <prefix>:event:{<event>}, the event hash
    std::string deadlines;  ///< <prefix>:deadlines:{<event>}
    std::string free;       ///< <prefix>:free:{<event>}:<zone>, the zone's free seats
};

/// One caller of the command floor: holds its 3 named seats and releases them, one FCALL
/// each, on its own connection.
class CommandFloor {
public:
    static constexpr const char* hold_function = "seatlock_bench_floor_hold";
    static constexpr const char* release_function = "seatlock_bench_floor_release";

    /// FUNCTION LOAD REPLACE of the floor's library: once per server (FLUSHALL keeps it).
    static void load(Connection& c) {
        Reply r = c.command({"FUNCTION", "LOAD", "REPLACE", scripts::floor});
        Connection::expect(r, REDIS_REPLY_STRING, "FUNCTION LOAD");
    }

    CommandFloor(const std::string& host, int port, ZoneKeys keys, std::string event,
                 std::string holder, std::string zone, const std::vector<std::string>& seats)
        : connection_(host, port),
          keys_(std::move(keys)),
          event_(std::move(event)),
          holder_(std::move(holder)),
          zone_(std::move(zone)),
          seats_(seats) {
        if (seats_.size() != 3) throw std::logic_error("the command floor holds 3 seats");
    }

    Outcome operator()(Lap& lap) {
        // A fresh token per hold, made as SeatHoldStore makes them.
        const std::string token = event_ + "." + seatlock::detail::random_hex128();
        Reply held = connection_.command({"FCALL", hold_function, "3", keys_.event, keys_.deadlines,
                                          keys_.free, token, holder_, zone_, seats_[0], seats_[1],
                                          seats_[2]});
        // The floor checks nothing itself: a count other than 3 means it is not running on
        // the data it claims to, and its figures would not be the commands' cost.
        if (Connection::expect(held, REDIS_REPLY_INTEGER, "floor hold")->integer != 3)
            throw std::runtime_error("command floor: the seats were not free");
        lap.first_step_done();
        Reply freed = connection_.command(
            {"FCALL", release_function, "3", keys_.event, keys_.deadlines, keys_.free, token});
        if (Connection::expect(freed, REDIS_REPLY_INTEGER, "floor release")->integer != 3)
            throw std::runtime_error("command floor: the seats did not go back");
        return Outcome::done;
    }

private:
    Connection connection_;
    ZoneKeys keys_;
    std::string event_;
    std::string holder_;
    std::string zone_;
    std::vector<std::string> seats_;
};

}  // namespace seatlock::bench
