// SPDX-License-Identifier: MIT
// The conformance suite on RedisBackend over a Redis Cluster (3 primaries, one replica
// each) that the program starts itself: the same behaviour as on one server, with every
// call routed to the primary of its hash slot, on both API paths (blocking, and
// asynchronous through one pipeline per primary).
#include "change_feed_conformance.hpp"
#include "hold_conformance.hpp"
#include "lock_conformance.hpp"
#include "model_test.hpp"
#include "retry_conformance.hpp"
#include "room_conformance.hpp"
#include "version_conformance.hpp"
#include "redis_fixture.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"
#include "support/redis_cluster.hpp"

#include <seatlock/backends/redis.hpp>

#include <string>

namespace seatlock::testing {

/// RedisFixtureBase on the program's cluster.
struct RedisClusterFixture : RedisFixtureBase {
    static constexpr const char* name = "redis-cluster";

    RedisClusterFixture()
        : RedisFixtureBase(RedisOptions::from_url(shared<RedisCluster>().url()).value()) {}

    // Deletes this fixture's keys on every primary, one key per command (they are in many
    // slots); the function library stays, as in conformance_redis.cpp.
    void lose_data() {
        for (const int port : shared<RedisCluster>().ports()) {
            RedisAdmin admin(port);
            const auto role = admin.command({"ROLE"});
            if (role->type != REDIS_REPLY_ARRAY || role->elements == 0 ||
                std::string(role->element[0]->str, role->element[0]->len) != "master") {
                continue;
            }
            const auto keys = admin.command({"KEYS", backend_.options().prefix + ":*"});
            for (std::size_t i = 0; i < keys->elements; ++i) {
                admin.command({"DEL", std::string_view(keys->element[i]->str, keys->element[i]->len)});
            }
        }
    }

};

}  // namespace seatlock::testing

SEATLOCK_LOCK_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_HOLD_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_RETRY_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_VERSION_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_CHANGE_FEED_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_ROOM_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_MODEL_TEST(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
