// SPDX-License-Identifier: MIT
// tests/support/redis_sentinel.hpp: starts a private Redis Sentinel setup for one test
// program: a primary, its replica (--replicaof) and three sentinels (redis-server --sentinel)
// that monitor it as service "svc" with a quorum of 2, a 1 s down-after-milliseconds and
// a 3 s failover-timeout; each process on a free loopback port in a temporary directory of
// its own (RedisServer). Layout changes the failover-timeout, and can put a proxy between
// the replica and the primary. Waits until the replica is in sync and every sentinel knows the
// replica and the other sentinels, and stops them all at the end. Never skips: a missing
// redis-server is an error that says how to install it.
#pragma once

#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"

#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::testing {

class RedisSentinel {
public:
    static constexpr const char* service = "svc";
    static constexpr int sentinel_count = 3;

    /// What a setup may change; the defaults make the setup the header describes.
    struct Layout {
        /// The sentinels' failover-timeout. It is also how long a sentinel lets a replica
        /// replicate from another address than the primary's before it points the replica
        /// at the primary itself (+fix-slave-config), and half the wait before a failover
        /// that failed (no leader elected) is tried again.
        std::chrono::milliseconds failover_timeout{3000};
        /// Given the primary's port, the port the replica replicates from (e.g. a proxy's
        /// in front of the primary); none: the primary's own.
        std::function<int(int primary_port)> replica_source;
        /// Every process, sentinels included, serves TLS only (tls_admin.hpp; it must
        /// outlive the setup), and replicates and monitors over TLS; url() says rediss.
        const TlsOnly* tls_only = nullptr;
    };

    RedisSentinel() : RedisSentinel(Layout{}) {}

    explicit RedisSentinel(const Layout& layout)
        : admin_(layout.tls_only ? layout.tls_only->admin : AdminConnector()) {
        const TlsOnly* tls = layout.tls_only;
        // A replica synchronises at once, not after the default 5 s wait for more replicas.
        const std::vector<std::string> at_once = {"--repl-diskless-sync-delay", "0"};
        servers_.push_back(std::make_unique<RedisServer>(at_once, std::string(), 0, tls));
        const int primary_port = servers_.front()->port();
        const std::string primary = std::to_string(primary_port);
        const std::string source =
            layout.replica_source ? std::to_string(layout.replica_source(primary_port)) : primary;
        auto replica = at_once;
        replica.insert(replica.end(), {"--replicaof", "127.0.0.1", source});
        servers_.push_back(std::make_unique<RedisServer>(replica, std::string(), 0, tls));
        const std::string config = std::string("sentinel monitor ") + service + " 127.0.0.1 " +
                                   primary + " 2\n" + "sentinel down-after-milliseconds " +
                                   service + " 1000\n" + "sentinel failover-timeout " + service +
                                   " " + std::to_string(layout.failover_timeout.count()) + "\n";
        for (int i = 0; i < sentinel_count; ++i) {
            sentinels_.push_back(std::make_unique<RedisServer>(
                std::vector<std::string>{"--sentinel"}, config, 0, tls));
        }
        settle();
    }
    RedisSentinel(const RedisSentinel&) = delete;
    RedisSentinel& operator=(const RedisSentinel&) = delete;
    ~RedisSentinel() = default;  // each RedisServer stops its process and removes its directory

    /// redis+sentinel://127.0.0.1:<port>,.../svc with every sentinel.
    std::string url() const {
        std::string out = admin_ ? "rediss+sentinel://" : "redis+sentinel://";
        for (const auto& s : sentinels_) {
            if (out.back() != '/') out += ',';
            out += "127.0.0.1:" + std::to_string(s->port());
        }
        return out + "/" + service;
    }
    /// How RedisAdmin connects to its processes: empty (hiredis), or over TLS.
    const AdminConnector& admin_connector() const { return admin_; }
    std::vector<int> sentinel_ports() const {
        std::vector<int> out;
        for (const auto& s : sentinels_) out.push_back(s->port());
        return out;
    }

    /// The ports of the two data nodes (which is the primary changes with failovers).
    std::vector<int> data_ports() const {
        std::vector<int> out;
        for (const auto& s : servers_) out.push_back(s->port());
        return out;
    }

    /// Starts the data node on `port` again (after kill()), empty, as a replica of the
    /// primary the sentinels name.
    void restart_as_replica(int port) const {
        for (const auto& server : servers_) {
            if (server->port() != port) continue;
            server->restart();
            RedisAdmin(port, {}, admin_).expect_ok({"REPLICAOF", "127.0.0.1", std::to_string(primary_port())});
            return;
        }
        throw std::runtime_error("no data node on port " + std::to_string(port));
    }

    /// The port of the primary, as the first sentinel that answers names it.
    int primary_port() const {
        for (const auto& s : sentinels_) {
            try {
                RedisAdmin sentinel(s->port(), {}, admin_);
                const auto r = sentinel.command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", service});
                if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
                    return std::stoi(std::string(r->element[1]->str, r->element[1]->len));
            } catch (const std::exception&) {
            }
        }
        throw std::runtime_error("no sentinel names a primary of " + std::string(service));
    }

    /// SENTINEL FAILOVER: the replica is promoted without waiting for any agreement, and the
    /// old primary is made its replica (its clients are disconnected). While the sentinel
    /// still winds up an earlier failover (INPROG), asks again, for up to 20 s.
    void failover() const {
        RedisAdmin sentinel(sentinels_.front()->port(), {}, admin_);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (;;) {
            const auto r = sentinel.command({"SENTINEL", "FAILOVER", service});
            const std::string answer = r->str ? text(r.get()) : std::string();
            if (r->type == REDIS_REPLY_STATUS && answer == "OK") return;
            if (r->type != REDIS_REPLY_ERROR || answer.rfind("INPROG", 0) != 0 ||
                std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("SENTINEL FAILOVER answered: " + answer);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }

    /// SIGKILL of the data node on `port`: no goodbye to its clients. It stays down (its
    /// RedisServer reaps the process at the end).
    void kill(int port) const {
        RedisAdmin node(port, {}, admin_);
        const std::string info = node.text({"INFO", "server"});
        const auto at = info.find("process_id:");
        if (at == std::string::npos) throw std::runtime_error("INFO server tells no process_id");
        ::kill(std::stoi(info.substr(at + 11)), SIGKILL);
    }

    /// Waits until the replica has everything the primary had when it was called: a write
    /// on the primary, then WAIT on the same connection. (WAIT counts the replicas that have
    /// its connection's own last write: on a connection that wrote nothing it waits for
    /// nothing. And after a full sync the primary streams nothing to the replica until the
    /// replica's first acknowledgement, so "state=online" alone does not mean it has it.)
    /// Whether it did within `timeout`.
    bool replicated(std::chrono::milliseconds timeout) const {
        RedisAdmin node(primary_port(), {}, admin_);
        node.expect_ok({"SET", "seatlock-test:replicated", "1"});
        return node.integer({"WAIT", "1", std::to_string(timeout.count())}) == 1;
    }

    /// Waits until every sentinel names the same primary, which says so (ROLE) and has a
    /// replica in sync, and every sentinel knows that replica in good health and the other
    /// sentinels, and flags the primary nothing but "master" (no failover in progress, not
    /// down): before a failover (a sentinel must know whom to promote and whom to ask)
    /// and after one; the replica has what the primary has (replicated()). `alone`: the
    /// primary is expected to have no replica (the other node was killed).
    void settle(bool alone = false) const {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        std::string last;
        while (std::chrono::steady_clock::now() < deadline) {
            try {
                last = settled(alone);
                if (last.empty()) return;
            } catch (const std::exception& e) {
                last = e.what();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        throw std::runtime_error("the Sentinel setup did not settle in 20 s: " + last);
    }

private:
    static std::string text(const redisReply* r) { return {r->str, r->len}; }

    // What is not settled yet; empty when all is.
    std::string settled(bool alone) const {
        const int primary = primary_port();
        RedisAdmin node(primary, {}, admin_);
        const auto role = node.command({"ROLE"});
        if (role->type != REDIS_REPLY_ARRAY || text(role->element[0]) != "master")
            return "the node sentinels name is not a master yet";
        const std::size_t replicas = role->element[2]->elements;
        if (replicas != (alone ? 0U : 1U))
            return "the primary has " + std::to_string(replicas) + " replicas";
        if (!alone && (node.text({"INFO", "replication"}).find("state=online") == std::string::npos ||
                       !replicated(std::chrono::milliseconds(100))))
            return "the replica is not in sync";
        for (const auto& s : sentinels_) {
            RedisAdmin sentinel(s->port(), {}, admin_);
            const auto named = sentinel.command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", service});
            if (named->type != REDIS_REPLY_ARRAY || std::stoi(text(named->element[1])) != primary)
                return "sentinels disagree on the primary";
            const auto master = sentinel.command({"SENTINEL", "MASTER", service});
            for (std::size_t f = 0; f + 1 < master->elements; f += 2) {
                if (text(master->element[f]) == "flags" &&
                    text(master->element[f + 1]) != "master")
                    return "a sentinel flags the primary " + text(master->element[f + 1]);
            }
            const auto others = sentinel.command({"SENTINEL", "SENTINELS", service});
            if (others->elements != sentinel_count - 1)
                return "a sentinel does not know the others";
            if (alone) continue;
            const auto known = sentinel.command({"SENTINEL", "REPLICAS", service});
            bool healthy = false;
            for (std::size_t i = 0; i < known->elements; ++i) {
                const redisReply* fields = known->element[i];
                for (std::size_t f = 0; f + 1 < fields->elements; f += 2) {
                    if (text(fields->element[f]) == "flags" &&
                        text(fields->element[f + 1]) == "slave")
                        healthy = true;
                }
            }
            if (!healthy) return "a sentinel does not know a healthy replica";
        }
        return {};
    }

    AdminConnector admin_;  // empty: hiredis; set: TLS
    std::vector<std::unique_ptr<RedisServer>> servers_;  // the first primary, then its replica
    std::vector<std::unique_ptr<RedisServer>> sentinels_;
};

}  // namespace seatlock::testing
