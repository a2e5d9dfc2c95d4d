// SPDX-License-Identifier: MIT
// benchmarks/redis_cluster.hpp: the private Redis Cluster of the redis-cluster rows: the
// tests' one (tests/support/redis_cluster.hpp: 3 primaries with one replica each on free
// loopback ports, stopped at the end), and which of its nodes are primaries, whose CPU
// time the rows read one by one: a cluster's throughput is bounded per primary.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace seatlock::testing {
class RedisCluster;
}

namespace seatlock::bench {

class RedisCluster {
public:
    static constexpr int primaries = 3;  // as testing::RedisCluster

    /// Starts and joins the six nodes; throws, saying what failed, when they cannot be.
    RedisCluster();
    ~RedisCluster();
    RedisCluster(const RedisCluster&) = delete;
    RedisCluster& operator=(const RedisCluster&) = delete;

    /// redis+cluster://127.0.0.1:<port>,... with every node as a seed.
    [[nodiscard]] std::string url() const;
    /// The ports of the nodes that are primaries, in ascending order.
    [[nodiscard]] const std::vector<int>& primary_ports() const noexcept { return primary_ports_; }

private:
    std::unique_ptr<testing::RedisCluster> nodes_;
    std::vector<int> primary_ports_;
};

}  // namespace seatlock::bench
