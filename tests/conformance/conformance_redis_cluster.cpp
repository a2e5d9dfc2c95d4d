// The conformance suite on RedisBackend over a Redis Cluster (3 primaries, one replica
// each) that the program starts itself: the same behaviour as on one server, with every
// call routed to the primary of its hash slot, on both API paths (blocking, and
// asynchronous through one pipeline per primary).
#include "hold_conformance.hpp"
#include "lock_conformance.hpp"
#include "model_test.hpp"
#include "retry_conformance.hpp"
#include "version_conformance.hpp"
#include "integration/redis_admin.hpp"
#include "support/redis_cluster.hpp"

#include <seatlock/backends/redis.hpp>

#include <atomic>
#include <string>

namespace seatlock::testing {

/// One cluster for the whole program, started on first use, stopped at exit.
inline RedisCluster& conformance_cluster() {
    static RedisCluster cluster;
    return cluster;
}

/// A RedisBackend on the cluster with a key prefix of its own, so every test starts from
/// empty storage.
struct RedisClusterFixture {
    using backend_type = RedisBackend;
    static constexpr const char* name = "redis-cluster";
    static constexpr bool manual_clock = false;

    RedisClusterFixture() : backend_(options()) {}

    RedisBackend& backend() { return backend_; }
    void advance(Millis d) { std::this_thread::sleep_for(d); }
    // The nodes run on this machine: their TIME is this wall clock.
    WallTime now() const { return std::chrono::system_clock::now(); }
    // Deletes this fixture's keys on every primary, one key per command (they are in many
    // slots); the function library stays, as in conformance_redis.cpp.
    void lose_data() {
        for (const int port : conformance_cluster().ports()) {
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

private:
    static RedisOptions options() {
        static std::atomic<int> fixtures{0};
        RedisOptions o = RedisOptions::from_url(conformance_cluster().url()).value();
        o.prefix = "conformance-" + std::to_string(++fixtures);
        o.command_timeout = std::chrono::seconds(10);  // sanitizer builds on busy machines are slow
        return o;
    }

    RedisBackend backend_;
};

}  // namespace seatlock::testing

SEATLOCK_LOCK_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_HOLD_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_RETRY_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_VERSION_CONFORMANCE(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
SEATLOCK_MODEL_TEST(seatlock::testing::RedisClusterFixture, seatlock::testing::Async<seatlock::testing::RedisClusterFixture>);
