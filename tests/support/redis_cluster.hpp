// SPDX-License-Identifier: MIT
// tests/support/redis_cluster.hpp: starts a private Redis Cluster for one test program
// (or for the benchmark's redis-cluster rows): 3 primaries with one replica each, on free
// loopback ports, each node in a temporary directory of its own (RedisServer), joined by
// `redis-cli --cluster create`; waits until every node says cluster_state:ok, and stops
// them all at the end. Never skips: a missing redis-server or redis-cli is an error that
// says how to install it. A failover test asks for a short cluster-node-timeout (how long
// a silent node takes to be declared failed) and kills a node with kill(). The TLS tests
// ask for nodes that serve TLS only (TlsOnly, tls_admin.hpp), and may do without replicas.
#pragma once

#include "support/redis_server.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace seatlock::testing {

class RedisCluster {
public:
    static constexpr int primaries = 3;

    /// `node_timeout`: the nodes' cluster-node-timeout. `tls_only` (which must outlive the
    /// cluster): every node serves TLS only, and redis-cli and url() speak it.
    /// `replicas`: per primary.
    explicit RedisCluster(std::chrono::milliseconds node_timeout = std::chrono::milliseconds(2000),
                          const TlsOnly* tls_only = nullptr, int replicas = 1)
        : tls_only_(tls_only) {
        cli_ = find_cli();
        if (tls_only_) cli_ += " " + tls_only_->cli_arguments;
        const int nodes = primaries * (1 + replicas);
        for (int i = 0; i < nodes; ++i) {
            // The cluster bus port is given explicitly: port + 10000, Redis's default, may
            // be out of range or taken for the high ports free_port() returns (a bus port
            // taken at start makes RedisServer try other ports). A replica synchronises at
            // once, not after the default 5 s wait for more replicas.
            nodes_.push_back(std::make_unique<RedisServer>(std::vector<std::string>{
                "--cluster-enabled", "yes", "--cluster-port", RedisServer::another_free_port,
                "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
                std::to_string(node_timeout.count()), "--repl-diskless-sync-delay", "0"},
                std::string(), 0, tls_only_));
        }
        std::string create = "--cluster create";
        for (const auto& node : nodes_) create += " 127.0.0.1:" + std::to_string(node->port());
        create += " --cluster-replicas " + std::to_string(replicas) + " --cluster-yes";
        const auto [status, output] = cli(create);
        if (status != 0) throw std::runtime_error("redis-cli --cluster create failed:\n" + output);
        wait_until_ok();
    }
    RedisCluster(const RedisCluster&) = delete;
    RedisCluster& operator=(const RedisCluster&) = delete;
    ~RedisCluster() = default;  // each RedisServer stops its node and removes its directory

    /// The ports of all six nodes (which are primaries changes with failovers: ask
    /// CLUSTER SLOTS or CLUSTER NODES).
    std::vector<int> ports() const {
        std::vector<int> out;
        for (const auto& node : nodes_) out.push_back(node->port());
        return out;
    }
    /// redis+cluster://127.0.0.1:<port>,... with every node as a seed (rediss+cluster://
    /// when its nodes serve TLS only).
    std::string url() const {
        std::string out = tls_only_ ? "rediss+cluster://" : "redis+cluster://";
        for (const auto& node : nodes_) {
            if (out.back() != '/') out += ',';
            out += "127.0.0.1:" + std::to_string(node->port());
        }
        return out;
    }

    /// How RedisAdmin connects to its nodes: empty (hiredis), or over TLS.
    AdminConnector admin_connector() const {
        return tls_only_ ? tls_only_->admin : AdminConnector();
    }

    /// SIGKILL of the node on `port`: no goodbye to its clients or to the cluster. The
    /// node stays down (its RedisServer reaps the process at the end).
    void kill(int port) const {
        // RedisServer keeps its process id to itself; the node tells its own.
        const std::string info = cli("-p " + std::to_string(port) + " INFO server").second;
        const std::string field = "process_id:";
        const auto at = info.find(field);
        if (at == std::string::npos)
            throw std::runtime_error("INFO server on port " + std::to_string(port) +
                                     " has no process_id:\n" + info);
        if (::kill(static_cast<pid_t>(std::stol(info.substr(at + field.size()))), SIGKILL) != 0)
            throw std::runtime_error("cannot SIGKILL the node on port " + std::to_string(port));
    }

    /// Runs `redis-cli <args>` (words separated by spaces, no quoting); its exit status
    /// and what it printed on stdout and stderr.
    std::pair<int, std::string> cli(const std::string& args) const {
        const std::string command = cli_ + " " + args + " 2>&1";
        FILE* pipe = ::popen(command.c_str(), "r");
        if (!pipe) throw std::runtime_error("cannot run " + command);
        std::string output;
        char buffer[4096];
        for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
        const int status = ::pclose(pipe);
        return {status, output};
    }

private:
    static std::string find_cli() {
        return redis_program("redis-cli", "a private Redis Cluster needs it", "redis-tools");
    }

    // Every node must know all the others and see all slots served before a test starts:
    // a node that joined late would answer CLUSTERDOWN or MOVED to a stale owner.
    void wait_until_ok() const {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        std::string last;
        while (std::chrono::steady_clock::now() < deadline) {
            bool ok = true;
            for (const auto& node : nodes_) {
                last = cli("-p " + std::to_string(node->port()) + " CLUSTER INFO").second;
                if (last.find("cluster_state:ok") == std::string::npos ||
                    last.find("cluster_known_nodes:" + std::to_string(nodes_.size())) ==
                        std::string::npos) {
                    ok = false;
                    break;
                }
            }
            if (ok) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        throw std::runtime_error("the Redis Cluster did not reach cluster_state:ok in 30 s:\n" +
                                 last);
    }

    const TlsOnly* tls_only_;
    std::string cli_;
    std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace seatlock::testing
