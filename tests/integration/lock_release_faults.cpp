// SPDX-License-Identifier: MIT
// Lock releases that meet a broken Redis: connections killed while the release waits for
// its reply, a server that is down and comes back. The keys are free again within a
// second of Redis serving again, not when their 10 s lease ends.
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"
#include "support/redis_setup.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <optional>
#include <thread>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace lock_release_faults_test {

namespace {

using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::testing::options_for;
using Clock = std::chrono::steady_clock;
using Guard = seatlock::SingleLock<seatlock::RedisBackend>;

// Options of the locks under test: the defaults of the retry, and a count of the
// releases given up.
seatlock::LockOptions counting(std::atomic<int>& given_up) {
    seatlock::LockOptions o;
    o.wait = 0ms;
    o.lease = 10s;
    o.on_release_error = [&given_up](const seatlock::Failure&) { ++given_up; };
    return o;
}

// How long after `since` `key` could be taken by another client (which releases it again
// at once); gives up after the lease.
Clock::duration until_free(seatlock::LockManager<seatlock::RedisBackend>& other,
                           const std::string& key, Clock::time_point since) {
    while (Clock::now() - since < 12s) {
        if (other.try_lock(key)) return Clock::now() - since;
        std::this_thread::sleep_for(10ms);
    }
    return Clock::now() - since;
}

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// Kills every client connection but its own, every 20 ms, until destroyed.
class ConnectionKiller {
public:
    explicit ConnectionKiller(int port)
        : thread_([this, port] {
              seatlock::testing::RedisAdmin admin(port);
              while (!stop_) {
                  killed_ += admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
                  std::this_thread::sleep_for(20ms);
              }
          }) {}
    ~ConnectionKiller() {
        stop_ = true;
        thread_.join();
    }
    ConnectionKiller(const ConnectionKiller&) = delete;
    ConnectionKiller& operator=(const ConnectionKiller&) = delete;
    long long killed() const { return killed_; }

private:
    std::atomic<bool> stop_{false};
    std::atomic<long long> killed_{0};
    std::thread thread_;
};

}  // namespace

TEST_CASE("releases whose connections are killed before the reply: free within 1 s after") {
    seatlock::testing::RedisServer server;
    seatlock::RedisBackend backend(options_for(server));
    std::atomic<int> given_up{0};
    seatlock::LockManager locks(backend, counting(given_up));
    std::optional<Guard> dropped(locks.try_lock("game1:A-1").value());
    auto unlocked = locks.try_lock("game1:A-2").value();

    // Writes wait while the server is paused, so every release is still waiting for its
    // reply when its connection is killed: outcome_unknown, and nothing applied.
    seatlock::testing::RedisAdmin(server.port()).expect_ok({"CLIENT", "PAUSE", "60000", "WRITE"});
    {
        ConnectionKiller killer(server.port());
        const auto t0 = Clock::now();
        dropped.reset();  // the destructor's release
        CHECK(Clock::now() - t0 < 1s);  // hands over to the background, does not wait
        auto released = unlocked.unlock();
        REQUIRE(released.is(errc::outcome_unknown));
        CHECK(released.error().detail.find("retrying in the background") != std::string::npos);
        std::this_thread::sleep_for(1s);
        CHECK(killer.killed() >= 4);  // releases were retried (and killed) meanwhile
    }
    // On a new connection: the killer did not spare the one that paused the server.
    seatlock::testing::RedisAdmin(server.port()).expect_ok({"CLIENT", "UNPAUSE"});
    const auto back = Clock::now();

    seatlock::RedisBackend other_client(options_for(server));
    seatlock::LockManager other(other_client);
    const auto a1 = until_free(other, "game1:A-1", back);
    const auto a2 = until_free(other, "game1:A-2", back);
    CHECK_MESSAGE(a1 < 1s, "game1:A-1 free only after " << seconds(a1) << " s");
    CHECK_MESSAGE(a2 < 1s, "game1:A-2 free only after " << seconds(a2) << " s");
    CHECK(given_up == 0);
}

TEST_CASE("a release while Redis is down: free within 1 s of Redis coming back") {
    // Persistence on, so that the lock outlives the restart, as it would in production.
    seatlock::testing::RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
    seatlock::RedisBackend backend(options_for(server));
    std::atomic<int> given_up{0};
    seatlock::LockManager locks(backend, counting(given_up));
    std::optional<Guard> dropped(locks.try_lock("game1:A-1").value());
    auto kept = locks.try_lock("game1:A-2").value();  // shows the data survived the restart

    server.stop();
    const auto t0 = Clock::now();
    dropped.reset();  // connection_failed, retried in the background
    CHECK(Clock::now() - t0 < 1s);
    std::this_thread::sleep_for(1s);
    server.restart();
    const auto back = Clock::now();

    seatlock::RedisBackend other_client(options_for(server));
    seatlock::LockManager other(other_client);
    const auto a1 = until_free(other, "game1:A-1", back);
    CHECK_MESSAGE(a1 < 1s, "game1:A-1 free only after " << seconds(a1) << " s");
    CHECK(other.try_lock("game1:A-2").is(errc::lock_busy));
    CHECK(kept.unlock());
    CHECK(given_up == 0);
}

}  // namespace lock_release_faults_test
