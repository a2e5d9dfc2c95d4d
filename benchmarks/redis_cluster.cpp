// SPDX-License-Identifier: MIT
// benchmarks/redis_cluster.cpp: the tests' private Redis Cluster, and its primaries.
#include "redis_cluster.hpp"

#include <algorithm>
#include <stdexcept>

#include "redis_client.hpp"
#include "support/redis_cluster.hpp"

namespace seatlock::bench {

static_assert(RedisCluster::primaries == testing::RedisCluster::primaries);

RedisCluster::RedisCluster() : nodes_(std::make_unique<testing::RedisCluster>()) {
    for (const int port : nodes_->ports()) {
        Connection c("127.0.0.1", port);
        const Reply r = c.command({"INFO", "replication"});
        const std::string info = Connection::expect(r, REDIS_REPLY_STRING, "INFO")->str;
        if (info.find("role:master") != std::string::npos) primary_ports_.push_back(port);
    }
    std::sort(primary_ports_.begin(), primary_ports_.end());
    if (primary_ports_.size() != primaries)
        throw std::runtime_error("the Redis Cluster has " + std::to_string(primary_ports_.size()) +
                                 " primaries, not " + std::to_string(primaries));
}

RedisCluster::~RedisCluster() = default;  // stops the six nodes

std::string RedisCluster::url() const { return nodes_->url(); }

}  // namespace seatlock::bench
