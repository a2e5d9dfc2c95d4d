// SPDX-License-Identifier: MIT
// The conformance suite on RedisBackend, against a private redis-server.
#include "redis_fixture.hpp"
#include "suites.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>

#include <string>

namespace seatlock::testing {

/// RedisFixtureBase on the program's server.
struct RedisFixture : RedisFixtureBase {
    static constexpr const char* name = "redis";

    RedisFixture() : RedisFixtureBase(server()) {}

    // Deletes this fixture's keys (the function library stays: a restart would lose it
    // too, and the backend reloads it, but that is tested in integration/).
    void lose_data() {
        RedisAdmin admin(shared<RedisServer>().port());
        admin.command({"EVAL",
                       "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end",
                       "0", backend_.options().prefix + ":*"});
    }

private:
    static RedisOptions server() {
        RedisOptions o;
        o.host = shared<RedisServer>().host();
        o.port = shared<RedisServer>().port();
        return o;
    }
};

}  // namespace seatlock::testing

SEATLOCK_CONFORMANCE_SUITE(seatlock::testing::RedisFixture);
