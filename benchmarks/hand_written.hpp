// benchmarks/hand_written.hpp: what seatlock is measured against, written directly on
// hiredis with one connection per caller.
//
// SeedFlow is the seed apps' flow: lock each seat (SET NX PX), SET NX a hold key per
// seat (Spring's setIfAbsent), unlock each seat with a compare-and-delete script; a
// release locks each seat again, deletes the hold keys and unlocks. Keys use the seed
// apps' vocabulary so they read the same in redis-cli.
//
// RawCeiling sends a script that does nothing, as many times per operation as seatlock
// needs round trips: no client-side design that talks to Redis once per step can beat it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_scripts.hpp"
#include "harness.hpp"
#include "redis_client.hpp"

namespace seatlock::bench {

/// The SHA1s of the baseline's scripts, loaded once per server.
struct BaselineScripts {
    std::string seed_unlock;
    std::string noop;

    static BaselineScripts load(Connection& c) {
        return {c.load_script(scripts::seed_unlock), c.load_script(scripts::noop)};
    }
};

/// The keys of the seed apps' flow for a set of seats of one event.
struct SeedSeats {
    std::vector<std::string> lock_keys;
    std::vector<std::string> hold_keys;

    static SeedSeats of(const std::string& event, const std::vector<std::string>& seats) {
        SeedSeats keys;
        for (const auto& seat : seats) {
            keys.lock_keys.push_back("lock:seat:{" + event + "}:" + seat);
            keys.hold_keys.push_back("preempt:seat:{" + event + "}:" + seat);
        }
        return keys;
    }
};

/// One caller of the seed apps' flow, on its own connection.
class SeedFlow {
public:
    /// A hold key lives this long, like the seeds' 10-minute preemption.
    static constexpr const char* hold_ttl_ms = "600000";
    /// A seat lock's lease (Redisson's leaseTime of the seeds).
    static constexpr const char* lease_ms = "10000";

    SeedFlow(const std::string& host, int port, const BaselineScripts& scripts, std::string holder)
        : connection_(host, port), unlock_sha_(scripts.seed_unlock), holder_(std::move(holder)) {}

    /// Holds every seat: 3n commands for n seats.
    void hold(const SeedSeats& seats) {
        lock_each(seats);
        for (const auto& key : seats.hold_keys) {
            Reply r = connection_.command({"SET", key, holder_, "NX", "PX", hold_ttl_ms});
            if (r->type != REDIS_REPLY_STATUS)
                throw std::runtime_error("seed flow: " + key + " already held");
        }
        unlock_each(seats);
    }

    /// Releases every seat: 3n commands for n seats.
    void release(const SeedSeats& seats) {
        lock_each(seats);
        for (const auto& key : seats.hold_keys) {
            Reply r = connection_.command({"DEL", key});
            if (Connection::expect(r, REDIS_REPLY_INTEGER, "DEL")->integer != 1) {
                throw std::runtime_error("seed flow: " + key + " was not held");
            }
        }
        unlock_each(seats);
    }

    /// Redisson's MultiLock over the seats: one key at a time, then unlock each.
    void lock_and_unlock(const SeedSeats& seats) {
        lock_each(seats);
        unlock_each(seats);
    }

private:
    void lock_each(const SeedSeats& seats) {
        // A fresh owner per acquisition, as the seeds' UUID owners; a counter is cheaper
        // than a UUID, which only flatters the baseline.
        owner_ = holder_ + ":" + std::to_string(++acquisitions_);
        for (const auto& key : seats.lock_keys) {
            Reply r = connection_.command({"SET", key, owner_, "NX", "PX", lease_ms});
            if (r->type != REDIS_REPLY_STATUS)
                throw std::runtime_error("seed flow: " + key + " is locked");
        }
    }
    void unlock_each(const SeedSeats& seats) {
        for (const auto& key : seats.lock_keys) {
            Reply r = connection_.command({"EVALSHA", unlock_sha_, "1", key, owner_});
            if (Connection::expect(r, REDIS_REPLY_INTEGER, "unlock")->integer != 1) {
                throw std::runtime_error("seed flow: lost the lock " + key);
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

}  // namespace seatlock::bench
