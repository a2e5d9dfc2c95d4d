// SPDX-License-Identifier: MIT
// The conformance suite on RedisBackend, against a private redis-server or, with
// SEATLOCK_CONFORMANCE_ON=cluster in the environment, a private Redis Cluster (3 primaries,
// one replica each): the same behaviour as on one server, with every call routed to the
// primary of its hash slot, on both API paths (blocking, and asynchronous through one
// pipeline per primary). One program for both, so the suite is compiled once per build for
// RedisBackend; on a Cluster the lock over two groups is excluded by the test's command
// line (a Cluster refuses it before sending anything: tests/integration/cluster.cpp).
#include "redis_fixture.hpp"
#include "suites.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_setup.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

namespace seatlock::testing {

/// Whether this run is on a Cluster (SEATLOCK_CONFORMANCE_ON=cluster) or one server (unset).
/// Anything else is a mistake in the test's registration: it stops the program.
inline bool on_cluster() {
    static const bool cluster = [] {
        const char* on = std::getenv("SEATLOCK_CONFORMANCE_ON");
        if (on == nullptr || *on == '\0') return false;
        if (std::strcmp(on, "cluster") == 0) return true;
        std::fprintf(stderr, "SEATLOCK_CONFORMANCE_ON=%s: expected cluster or nothing\n", on);
        std::abort();
    }();
    return cluster;
}

/// RedisFixtureBase on the program's server, or on its cluster.
struct RedisFixture : RedisFixtureBase {
    static inline const char* const name = on_cluster() ? "redis-cluster" : "redis";

    RedisFixture() : RedisFixtureBase(servers()) {}

    // Deletes this fixture's keys (the function library stays: a restart would lose it
    // too, and the backend reloads it, but that is tested in integration/). On a cluster,
    // on every primary, one key per command (they are in many slots).
    void lose_data() {
        const std::string pattern = backend_.options().prefix + ":*";
        if (!on_cluster()) {
            RedisAdmin admin(shared<RedisServer>().port());
            admin.command({"EVAL",
                           "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end",
                           "0", pattern});
            return;
        }
        for (const int port : shared<RedisCluster>().ports()) {
            RedisAdmin admin(port);
            const auto role = admin.command({"ROLE"});
            if (role->type != REDIS_REPLY_ARRAY || role->elements == 0 ||
                std::string(role->element[0]->str, role->element[0]->len) != "master") {
                continue;
            }
            const auto keys = admin.command({"KEYS", pattern});
            for (std::size_t i = 0; i < keys->elements; ++i) {
                admin.command({"DEL", std::string_view(keys->element[i]->str, keys->element[i]->len)});
            }
        }
    }

private:
    static RedisOptions servers() {
        if (on_cluster()) return RedisOptions::from_url(shared<RedisCluster>().url()).value();
        RedisOptions o;
        o.host = shared<RedisServer>().host();
        o.port = shared<RedisServer>().port();
        return o;
    }
};

}  // namespace seatlock::testing

SEATLOCK_CONFORMANCE_SUITE(seatlock::testing::RedisFixture);
