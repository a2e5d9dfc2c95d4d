// SPDX-License-Identifier: MIT
// tests/faults/cluster_of_servers.hpp: the system a fault scenario breaks: one
// redis-server that writes every change to its append-only file before it answers, and
// three seatlock-ticketing processes on it sharing one SQLite file, all selling one small
// venue. Also how a scenario breaks Redis from outside (kill it, bring it back with or
// without its data) and a server (kill it).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"
#include "support/ticketing_server.hpp"

namespace seatlock::testing::faults {

/// Unix milliseconds now: the unit of the servers' expiry times, so the buyers' records
/// and the storage compare on one clock.
std::int64_t wall_ms();

/// The venue every scenario sells: one event with one zone of 200 named seats, few enough
/// that buyers keep running into each other.
struct Venue {
    std::string event = "fault-game";
    std::string zone = "floor";
    std::vector<std::string> seats;  ///< "A-1" ... "T-10"

    Venue();
    /// The venue file the servers read (--venue).
    [[nodiscard]] std::string json() const;
};

/// A temporary directory, removed with everything in it.
class TemporaryDirectory {
public:
    TemporaryDirectory();
    ~TemporaryDirectory();
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    std::string path_;
};

/// What a SIGKILLed Redis finds of its data when it starts again.
enum class Persistence {
    every_write,  ///< an append-only file fsynced on every write: all it answered
    snapshot      ///< no append-only file: only what the last save() wrote (an RDB file)
};

/// redis-server with an append-only file fsynced on every write (a kill loses nothing it
/// answered) and DEBUG enabled, on a free loopback port that stays its port across
/// restarts. With Persistence::snapshot, it keeps only what save() wrote instead: a kill
/// and restart takes it back to the last save, as an operator's restore of an older
/// snapshot would.
class DurableRedis {
public:
    explicit DurableRedis(Persistence persistence = Persistence::every_write);
    [[nodiscard]] int port() const { return server_.port(); }
    [[nodiscard]] std::string url() const { return server_.url(); }
    /// A new plain connection for commands behind the servers' backs.
    [[nodiscard]] std::unique_ptr<RedisAdmin> admin() const;

    /// SIGKILL, then a restart on the same port that reloads the append-only file (or,
    /// with Persistence::snapshot, the RDB file the last save() wrote).
    void kill_and_restart();
    /// SAVE: writes the RDB file a restart loads (Persistence::snapshot).
    void save();
    /// SIGKILL and the append-only files deleted: Redis is down until restart_empty().
    void kill_and_forget();
    /// Starts again after kill_and_forget(), empty.
    void restart_empty();

private:
    void kill();

    RedisServer server_;
    std::string dir_;  // where redis-server keeps its append-only files
};

/// Three (by default) seatlock-ticketing processes on one DurableRedis, sharing one
/// SQLite file, with a short hold time so that abandoned holds expire during a scenario.
class ServerCluster {
public:
    struct Options {
        int servers = 3;
        std::chrono::seconds hold_ttl{2};
        Persistence redis = Persistence::every_write;
    };

    ServerCluster();
    explicit ServerCluster(Options options);
    ~ServerCluster();
    ServerCluster(const ServerCluster&) = delete;
    ServerCluster& operator=(const ServerCluster&) = delete;

    [[nodiscard]] DurableRedis& redis() { return redis_; }
    [[nodiscard]] const Venue& venue() const { return venue_; }
    [[nodiscard]] const std::string& db_path() const { return db_path_; }
    [[nodiscard]] std::chrono::seconds hold_ttl() const { return options_.hold_ttl; }
    /// Every server's port, in start order (a killed server's port stays in the list).
    [[nodiscard]] std::vector<int> ports() const;
    /// The port of a server still running.
    [[nodiscard]] int live_port() const;
    /// The last lines every server logged, for failure messages.
    [[nodiscard]] std::string logs() const;

    /// SIGKILL of server `index`: no shutdown, its in-flight requests get no answer.
    void kill_server(std::size_t index);

private:
    Options options_;
    Venue venue_;
    TemporaryDirectory dir_;
    std::string db_path_;
    DurableRedis redis_;
    std::vector<std::unique_ptr<TicketingServer>> servers_;
    std::vector<int> ports_;
    std::vector<std::string> last_logs_;  // of killed servers, whose directory is gone
};

/// The end of `text`, at most `n` characters of it.
std::string last_chars(const std::string& text, std::size_t n);

/// The flags of a server on `backend` (memory, or redis: then add --redis-url) with its
/// database at `db_path`.
std::vector<std::string> server_flags(const std::string& backend, const std::string& db_path,
                                      std::chrono::seconds hold_ttl);

}  // namespace seatlock::testing::faults
