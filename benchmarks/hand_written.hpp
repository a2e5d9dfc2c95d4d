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

#include "bench_scripts.hpp"
#include "harness.hpp"
#include "redis_client.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace seatlock::bench {

/// The SHA1s of the baseline's scripts, loaded once per server.
struct BaselineScripts {
    std::string seed_unlock;
    std::string noop;

    static BaselineScripts load(Connection& c) {
        return {c.load_script(scripts::seed_unlock), c.load_script(scripts::noop)};
    }
};

/// One caller of the seed apps' flow over its own seats.
class SeedFlow {
public:
    /// A hold key lives this long, like the seeds' 10-minute preemption.
    static constexpr const char* hold_ttl_ms = "600000";
    /// A seat lock's lease (Redisson's leaseTime of the seeds).
    static constexpr const char* lease_ms = "10000";

    SeedFlow(const std::string& host, int port, const BaselineScripts& scripts, std::string event,
             const std::vector<std::string>& seats, std::string holder)
        : connection_(host, port), unlock_sha_(scripts.seed_unlock), holder_(std::move(holder)) {
        for (const auto& seat : seats) {
            lock_keys_.push_back("lock:seat:{" + event + "}:" + seat);
            hold_keys_.push_back(hold_key(event, seat));
        }
    }

    /// The seeds' hold key of a seat.
    static std::string hold_key(const std::string& event, const std::string& seat) {
        return "preempt:seat:{" + event + "}:" + seat;
    }

    /// Hold every seat: 3n commands for n seats.
    void hold() {
        lock_each();
        for (const auto& key : hold_keys_) {
            Reply r = connection_.command({"SET", key, holder_, "NX", "PX", hold_ttl_ms});
            if (r->type != REDIS_REPLY_STATUS) throw std::runtime_error("seed flow: " + key + " already held");
        }
        unlock_each();
    }

    /// Release every seat: 3n commands for n seats.
    void release() {
        lock_each();
        for (const auto& key : hold_keys_) {
            Reply r = connection_.command({"DEL", key});
            if (Connection::expect(r, REDIS_REPLY_INTEGER, "DEL")->integer != 1) {
                throw std::runtime_error("seed flow: " + key + " was not held");
            }
        }
        unlock_each();
    }

    /// Redisson's MultiLock over the seats: one key at a time, then unlock each.
    void lock_and_unlock() {
        lock_each();
        unlock_each();
    }

private:
    void lock_each() {
        owner_ = std::to_string(++acquisitions_);
        for (const auto& key : lock_keys_) {
            Reply r = connection_.command({"SET", key, owner_, "NX", "PX", lease_ms});
            if (r->type != REDIS_REPLY_STATUS) throw std::runtime_error("seed flow: " + key + " is locked");
        }
    }
    void unlock_each() {
        for (const auto& key : lock_keys_) {
            Reply r = connection_.command({"EVALSHA", unlock_sha_, "1", key, owner_});
            if (Connection::expect(r, REDIS_REPLY_INTEGER, "unlock")->integer != 1) {
                throw std::runtime_error("seed flow: lost the lock " + key);
            }
        }
    }

    Connection connection_;
    std::string unlock_sha_;
    std::string holder_;
    std::vector<std::string> lock_keys_;
    std::vector<std::string> hold_keys_;
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
