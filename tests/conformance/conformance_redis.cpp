// The conformance suite on RedisBackend, against a private redis-server.
#include "hold_conformance.hpp"
#include "lock_conformance.hpp"
#include "model_test.hpp"
#include "retry_conformance.hpp"
#include "version_conformance.hpp"
#include "integration/redis_admin.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>

#include <atomic>
#include <string>

namespace seatlock::testing {

/// One redis-server for the whole program, started on first use, stopped at exit.
inline RedisServer& conformance_server() {
    static RedisServer server;
    return server;
}

/// A RedisBackend with a key prefix of its own, so every test starts from empty storage.
struct RedisFixture {
    using backend_type = RedisBackend;
    static constexpr const char* name = "redis";
    static constexpr bool manual_clock = false;

    RedisFixture() : backend_(options()) {}

    RedisBackend& backend() { return backend_; }
    void advance(Millis d) { std::this_thread::sleep_for(d); }
    // The server runs on this machine: its TIME is this wall clock.
    WallTime now() const { return std::chrono::system_clock::now(); }
    // Deletes this fixture's keys (the function library stays: a restart would lose it
    // too, and the backend reloads it, but that is tested in integration/).
    void lose_data() {
        RedisAdmin admin(conformance_server().port());
        admin.command({"EVAL",
                       "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end",
                       "0", backend_.options().prefix + ":*"});
    }

private:
    static RedisOptions options() {
        static std::atomic<int> fixtures{0};
        RedisOptions o;
        o.host = conformance_server().host();
        o.port = conformance_server().port();
        o.prefix = "conformance-" + std::to_string(++fixtures);
        o.command_timeout = std::chrono::seconds(10);  // sanitizer builds on busy machines are slow
        return o;
    }

    RedisBackend backend_;
};

}  // namespace seatlock::testing

SEATLOCK_LOCK_CONFORMANCE(seatlock::testing::RedisFixture, seatlock::testing::Async<seatlock::testing::RedisFixture>);
SEATLOCK_LOCK_GROUPS_CONFORMANCE(seatlock::testing::RedisFixture, seatlock::testing::Async<seatlock::testing::RedisFixture>);
SEATLOCK_HOLD_CONFORMANCE(seatlock::testing::RedisFixture, seatlock::testing::Async<seatlock::testing::RedisFixture>);
SEATLOCK_RETRY_CONFORMANCE(seatlock::testing::RedisFixture, seatlock::testing::Async<seatlock::testing::RedisFixture>);
SEATLOCK_VERSION_CONFORMANCE(seatlock::testing::RedisFixture, seatlock::testing::Async<seatlock::testing::RedisFixture>);
SEATLOCK_MODEL_TEST(seatlock::testing::RedisFixture, seatlock::testing::Async<seatlock::testing::RedisFixture>);
