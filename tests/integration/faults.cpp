// SPDX-License-Identifier: MIT
// RedisBackend under the faults a production Redis throws: its functions flushed,
// killed connections, a server that stops and comes back, a server too slow to answer,
// and credentials it refuses. Each fault ends in a clear error or in calls that keep
// working, never in a hang or a crash.
#include "support/fake_server.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"
#include "support/redis_setup.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <thread>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace faults_test {

namespace {

using namespace std::chrono_literals;
using seatlock::testing::no_limit;
using seatlock::testing::options_for;
using seatlock::errc;
using seatlock::Millis;
using Clock = std::chrono::steady_clock;

seatlock::EventSpec small_event(const std::string& id = "game1") {
    std::vector<seatlock::SeatSpec> seats;
    for (int n = 1; n <= 20; ++n) seats.push_back({"A-" + std::to_string(n), "A"});
    return {id,
            "Faults",
            {seatlock::ZoneSpec::named("lower", seats),
             seatlock::ZoneSpec::general_admission("bleachers", 1000)}};
}

Millis since(Clock::time_point t0) {
    return std::chrono::duration_cast<Millis>(Clock::now() - t0);
}

// How many FUNCTION LOADs (the reload when the library is missing) the server ran, from
// INFO commandstats.
long long function_loads(seatlock::testing::RedisAdmin& admin) {
    const std::string info = admin.text({"INFO", "commandstats"});
    const std::string field = "cmdstat_function|load:calls=";
    const auto line = info.find(field);
    return line == std::string::npos ? 0 : std::stoll(info.substr(line + field.size()));
}

// One hold and its release: "" when both worked, else what failed.
std::string hold_and_release(seatlock::SeatHoldStore<seatlock::RedisBackend>& store,
                             const std::string& holder) {
    auto h = store.hold("game1", holder, seatlock::quantity("bleachers", 2));
    if (!h) return "hold: " + h.error().message();
    auto released = store.release(h->token);
    return released ? "" : "release: " + released.error().message();
}

}  // namespace

TEST_CASE("FUNCTION FLUSH while calls run: every call keeps working") {
    seatlock::testing::RedisServer server;
    seatlock::testing::RedisAdmin admin(server.port());
    seatlock::RedisBackend backend(options_for(server));
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::LockManager locks(backend);
    store.create_event(small_event()).value();

    std::atomic<bool> stop{false};
    std::atomic<int> ok{0}, failed{0};
    std::mutex mutex;
    std::vector<std::string> failures;  // guarded by mutex
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            while (!stop) {
                std::string failure = hold_and_release(store, "h" + std::to_string(t));
                auto guard = locks.try_lock("game1:L-" + std::to_string(t));
                if (!guard) failure += " try_lock: " + guard.error().message();
                else if (auto unlocked = guard->unlock(); !unlocked) failure += " unlock: " + unlocked.error().message();
                if (failure.empty()) {
                    ++ok;
                } else {
                    ++failed;
                    std::lock_guard lock(mutex);
                    failures.push_back(failure);
                }
            }
        });
    }
    const auto loads_before = function_loads(admin);
    for (int i = 0; i < 10; ++i) {
        std::this_thread::sleep_for(20ms);
        admin.expect_ok({"FUNCTION", "FLUSH"});
    }
    // Calls go on after the last flush: some more pairs, however slow the machine.
    const int ok_at_last_flush = ok.load();
    const auto deadline = Clock::now() + 10s;
    while (ok.load() < ok_at_last_flush + 20 && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
    stop = true;
    for (auto& t : threads) t.join();
    CHECK(failed == 0);
    for (const auto& f : failures) MESSAGE(f);
    CHECK(ok >= ok_at_last_flush + 20);
    CHECK(function_loads(admin) > loads_before);  // the reload did run
}

TEST_CASE("CLIENT KILL of the pool's connections: the next calls reconnect and work") {
    seatlock::testing::RedisServer server;
    seatlock::testing::RedisAdmin admin(server.port());
    seatlock::RedisBackend backend(options_for(server));
    seatlock::SeatHoldStore store(backend, no_limit());
    store.create_event(small_event()).value();

    // Several threads at once, so that the pool opens several connections.
    auto burst = [&] {
        std::atomic<int> failed{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < 20; ++i) {
                    if (!hold_and_release(store, "k" + std::to_string(t)).empty()) ++failed;
                }
            });
        }
        for (auto& t : threads) t.join();
        return failed.load();
    };
    REQUIRE(burst() == 0);
    const auto killed = admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
    CHECK(killed >= 2);
    CHECK(burst() == 0);
    CHECK(backend.ping());
}

TEST_CASE("a stopped server: calls fail fast with connection_failed; restarted: calls work again") {
    // Persistence on, so that the event survives the restart as it would in production.
    seatlock::testing::RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
    seatlock::RedisBackend backend(options_for(server));
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::LockManager locks(backend);
    store.create_event(small_event()).value();
    auto before = store.hold("game1", "ann", seatlock::named_seats("lower", {"A-1"})).value();

    server.stop();
    for (int i = 0; i < 3; ++i) {
        const auto t0 = Clock::now();
        auto h = store.hold("game1", "bea", seatlock::named_seats("lower", {"A-2"}));
        CHECK(since(t0) < 500ms);  // within the connect timeout: no hang
        REQUIRE(h.is(errc::connection_failed));
        CHECK(h.error().detail.find("127.0.0.1:" + std::to_string(server.port())) !=
              std::string::npos);
        CHECK(backend.ping().is(errc::connection_failed));
        CHECK(locks.try_lock("game1:A-2").is(errc::connection_failed));
    }

    server.restart();
    // Until it has loaded its data the server answers LOADING (io_error, not applied).
    for (int i = 0; i < 100 && !backend.ping(); ++i) std::this_thread::sleep_for(20ms);
    auto after = store.hold("game1", "bea", seatlock::named_seats("lower", {"A-2"}));
    REQUIRE_MESSAGE(after, (after ? "" : after.error().message()));
    CHECK(store.hold("game1", "cid", seatlock::named_seats("lower", {"A-1"})).is(errc::seat_taken));
    CHECK(store.confirm(before.token, "order-ann"));
    CHECK(locks.try_lock("game1:A-2"));
}

TEST_CASE("a server that answers after command_timeout: outcome_unknown, then a retry settles it") {
    seatlock::testing::RedisServer server({"--enable-debug-command", "yes"});
    seatlock::testing::RedisAdmin admin(server.port());
    seatlock::RedisBackend backend(options_for(server, 300ms));
    seatlock::HoldPolicy policy = no_limit();
    policy.retries_on_unknown_outcome = 0;  // to see the raw outcome
    seatlock::SeatHoldStore store(backend, policy);
    store.create_event(small_event()).value();
    REQUIRE(backend.ping());

    seatlock::HoldCommand cmd{"game1",
                              "dora",
                              "game1.0123456789abcdef0123456789abcdef",
                              seatlock::named_seats("lower", {"A-3"}),
                              60s,
                              {0, false},
                              {}};
    admin.send({"DEBUG", "SLEEP", "2"});
    std::this_thread::sleep_for(50ms);  // the server is now asleep
    const auto t0 = Clock::now();
    auto lost = backend.run(seatlock::op::hold{cmd});
    const auto waited = since(t0);
    REQUIRE(lost.is(errc::outcome_unknown));
    CHECK(waited >= 250ms);
    CHECK(waited < 1800ms);  // well before the server wakes up
    CHECK(lost.error().detail.find("may or may not") != std::string::npos);
    CHECK(admin.reply()->type == REDIS_REPLY_STATUS);  // the server woke up

    // Whether or not the lost call was applied, the same command again gives one answer.
    auto settled = backend.run(seatlock::op::hold{cmd});
    REQUIRE(settled);
    CHECK(settled->seats == std::vector<std::string>{"A-3"});
    auto zone = store.seats("game1", std::string("lower")).value().at(0);
    CHECK(zone.held == 1);
}

TEST_CASE("the command timeout still applies after a connection was re-established") {
    seatlock::testing::RedisServer server({"--enable-debug-command", "yes"});
    seatlock::testing::RedisAdmin admin(server.port());
    seatlock::RedisOptions o = options_for(server, 300ms);
    o.pool_size = 1;  // one connection, reconnected in place
    seatlock::RedisBackend backend(o);
    for (int round = 0; round < 2; ++round) {
        REQUIRE(backend.ping());
        CHECK(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
        REQUIRE(backend.ping());  // reconnected
        admin.send({"DEBUG", "SLEEP", "2"});
        std::this_thread::sleep_for(50ms);
        const auto t0 = Clock::now();
        CHECK(backend.ping().is(errc::outcome_unknown));
        CHECK(since(t0) < 1800ms);  // timed out; without the timeout it waits out the sleep
        admin.reply();
    }
}

TEST_CASE("a server that cannot be reached is connection_failed; the constructor does not throw") {
    seatlock::RedisOptions o;
    {
        seatlock::testing::RedisServer server;
        o.port = server.port();
    }  // stopped: nothing listens on that port any more
    o.connect_timeout = 300ms;
    seatlock::RedisBackend backend(o);
    const auto t0 = Clock::now();
    auto pong = backend.ping();
    REQUIRE(pong.is(errc::connection_failed));
    CHECK(since(t0) < 1s);  // refused at once, not after some timeout
    CHECK(pong.error().detail.find("cannot connect to Redis") != std::string::npos);
}

// An inventory whose create_event command is far larger than the socket buffers.
seatlock::EventSpec huge_event() {
    std::vector<seatlock::SeatSpec> seats;
    for (int n = 0; n < 200'000; ++n)
        seats.push_back({std::to_string(n) + std::string(100, 'x'), "A"});
    return {"huge", "Huge", {seatlock::ZoneSpec::named("lower", std::move(seats))}};
}

TEST_CASE("a command the server does not take within command_timeout is timeout: not sent") {
    seatlock::testing::FakeServer server(seatlock::testing::FakeServer::Behaviour::never_read);
    seatlock::RedisOptions o;
    o.port = server.port();
    o.command_timeout = 300ms;
    seatlock::RedisBackend backend(o);
    auto event = huge_event();
    const auto t0 = Clock::now();
    auto created = backend.run(seatlock::op::create_event{std::move(event)});
    REQUIRE(created.is(errc::timeout));
    // No hang: the server never reads, the call still returns. The bound is loose: the
    // call checks and encodes 200,000 seats first, slow under a sanitizer on a busy machine.
    CHECK(since(t0) < 60s);
    CHECK(created.error().detail.find("not sent within 300 ms") != std::string::npos);
}

TEST_CASE(
    "a connection that breaks while a command is written is io_error, and no SIGPIPE kills us") {
    seatlock::testing::FakeServer server(seatlock::testing::FakeServer::Behaviour::close_at_once);
    seatlock::RedisOptions o;
    o.port = server.port();
    seatlock::RedisBackend backend(o);
    auto created = backend.run(seatlock::op::create_event{huge_event()});
    REQUIRE(created.is(errc::io_error));
    CHECK(created.error().detail.find("not sent") != std::string::npos);
}

TEST_CASE("a reply that is not RESP is protocol_error") {
    seatlock::testing::FakeServer server(seatlock::testing::FakeServer::Behaviour::answer_garbage);
    seatlock::RedisOptions o;
    o.port = server.port();
    seatlock::RedisBackend backend(o);
    auto pong = backend.ping();
    REQUIRE(pong.is(errc::protocol_error));
    CHECK(pong.error().detail.find("unreadable reply") != std::string::npos);
}

TEST_CASE("a wrong or missing password is auth_failed; the right one works") {
    seatlock::testing::RedisServer server({"--requirepass", "s3cret"});
    seatlock::RedisOptions o = options_for(server);

    o.password = "wrong";
    auto wrong = seatlock::RedisBackend(o).ping();
    REQUIRE(wrong.is(errc::auth_failed));
    CHECK(wrong.error().detail.find("WRONGPASS") != std::string::npos);

    o.password.clear();
    auto missing = seatlock::RedisBackend(o).ping();
    REQUIRE(missing.is(errc::auth_failed));
    CHECK(missing.error().detail.find("NOAUTH") != std::string::npos);

    o.password = "s3cret";
    seatlock::RedisBackend right(o);
    CHECK(right.ping());
    seatlock::SeatHoldStore store(right);
    CHECK(store.create_event(small_event()));
}

TEST_CASE(
    "an ACL user limited to seatlock's keys and commands works; a wrong password is auth_failed") {
    // The rule the README's "Configuring Redis" recommends.
    seatlock::testing::RedisServer server({"--user", "ticketing", "on", ">tickets-pw",
                                           "~seatlock:*", "+@read", "+@write", "+@scripting",
                                           "+@connection", "+time"});
    seatlock::RedisOptions o = options_for(server);
    o.user = "ticketing";
    o.password = "tickets-pw";
    seatlock::RedisBackend backend(o);
    REQUIRE(backend.ping());
    seatlock::SeatHoldStore store(backend, no_limit());
    REQUIRE(store.create_event(small_event()));
    auto h = store.hold("game1", "ann", seatlock::named_seats("lower", {"A-1"}), 100ms);
    REQUIRE(h);
    std::this_thread::sleep_for(200ms);
    CHECK(store.expired(10, 1min).value().size() == 1);
    CHECK(store.events().value().size() == 1);
    seatlock::LockManager locks(backend);
    CHECK(locks.try_lock_all({"game1:A-1", "game2:A-1"}));

    o.password = "nope";
    auto refused = seatlock::RedisBackend(o).ping();
    REQUIRE(refused.is(errc::auth_failed));
    CHECK(refused.error().detail.find("ticketing") != std::string::npos);
}

TEST_CASE("db selects the database every connection works in") {
    seatlock::testing::RedisServer server;
    seatlock::testing::RedisAdmin admin(server.port());
    seatlock::RedisOptions o = options_for(server);
    o.db = 3;
    o.prefix = "tickets";
    seatlock::RedisBackend backend(o);
    seatlock::SeatHoldStore store(backend);
    store.create_event(small_event()).value();
    CHECK(admin.integer({"EXISTS", "tickets:event:{game1}"}) == 0);
    admin.expect_ok({"SELECT", "3"});
    CHECK(admin.integer({"EXISTS", "tickets:event:{game1}"}) == 1);

    o.db = 99;  // beyond the server's 16 databases
    auto refused = seatlock::RedisBackend(o).ping();
    REQUIRE(refused.is(errc::connection_failed));
    CHECK(refused.error().detail.find("SELECT 99") != std::string::npos);
}

}  // namespace faults_test
