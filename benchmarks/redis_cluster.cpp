// benchmarks/redis_cluster.cpp: starting, joining and reading the private Redis Cluster.
#include "redis_cluster.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <utility>

#include "redis_client.hpp"
#include "redis_server.hpp"

namespace seatlock::bench {

namespace {

std::string find_cli() {
    for (const char* candidate : {"/usr/bin/redis-cli", "/usr/local/bin/redis-cli"}) {
        if (::access(candidate, X_OK) == 0) return candidate;
    }
    throw std::runtime_error(
        "redis-cli not found: the redis-cluster rows need it (Debian: apt-get install "
        "redis-tools), or leave them out with --backend");
}

// `cli args 2>&1`: its exit status and what it printed.
std::pair<int, std::string> run(const std::string& command) {
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (!pipe) throw std::runtime_error("cannot run " + command);
    std::string output;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
        output.append(buffer, n);
    return {::pclose(pipe), output};
}

std::string info(int port, std::string_view section) {
    Connection c("127.0.0.1", port);
    const Reply r = c.command({"INFO", section});
    return Connection::expect(r, REDIS_REPLY_STRING, "INFO")->str;
}

}  // namespace

RedisCluster::RedisCluster() : cli_(find_cli()) {
    for (int i = 0; i < 2 * primaries; ++i) {
        // The bus port is given: port + 10000, Redis's default, may be out of range or
        // taken for the high ports free_port() returns. A replica synchronises at once.
        nodes_.push_back(std::make_unique<testing::RedisServer>(std::vector<std::string>{
            "--cluster-enabled", "yes", "--cluster-port",
            std::to_string(testing::RedisServer::free_port()), "--cluster-config-file",
            "nodes.conf", "--repl-diskless-sync-delay", "0"}));
    }
    std::string create = cli_ + " --cluster create";
    for (const auto& node : nodes_) create += " 127.0.0.1:" + std::to_string(node->port());
    create += " --cluster-replicas 1 --cluster-yes";
    const auto [status, output] = run(create);
    if (status != 0) throw std::runtime_error("redis-cli --cluster create failed:\n" + output);
    wait_until_ok();
    for (const auto& node : nodes_) {
        if (info(node->port(), "replication").find("role:master") != std::string::npos)
            primary_ports_.push_back(node->port());
    }
    std::sort(primary_ports_.begin(), primary_ports_.end());
    if (primary_ports_.size() != primaries)
        throw std::runtime_error("the Redis Cluster has " + std::to_string(primary_ports_.size()) +
                                 " primaries, not " + std::to_string(primaries));
}

RedisCluster::~RedisCluster() = default;  // each RedisServer stops its node

std::string RedisCluster::url() const {
    std::string out = "redis+cluster://";
    for (const auto& node : nodes_) {
        if (out.back() != '/') out += ',';
        out += "127.0.0.1:" + std::to_string(node->port());
    }
    return out;
}

// Every node must know the others and see every slot served before the first call: a node
// that joined late answers CLUSTERDOWN, or MOVED to a stale owner.
void RedisCluster::wait_until_ok() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::string last;
    while (std::chrono::steady_clock::now() < deadline) {
        bool ok = true;
        for (const auto& node : nodes_) {
            Connection c("127.0.0.1", node->port());
            const Reply r = c.command({"CLUSTER", "INFO"});
            last = Connection::expect(r, REDIS_REPLY_STRING, "CLUSTER INFO")->str;
            if (last.find("cluster_state:ok") == std::string::npos ||
                last.find("cluster_known_nodes:" + std::to_string(2 * primaries)) ==
                    std::string::npos) {
                ok = false;
                break;
            }
        }
        if (ok) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("the Redis Cluster did not reach cluster_state:ok in 30 s:\n" + last);
}

}  // namespace seatlock::bench
