// SPDX-License-Identifier: MIT
// tests/integration/io_run_returns.cpp: a program whose RedisBackend runs on its own
// io_context ends when its work is done: io_context::run() returns once the last call has
// completed (the idle pipelined connection is no work), never while a call is in flight;
// RedisBackend::close() ends calls in flight with the documented errors and refuses later
// ones at once. Each run is watched: a run() that does not return in time is stopped and
// fails the test instead of hanging it.
#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <seatlock/lock_manager.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace io_run_returns_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::Result;
using seatlock::testing::options_for;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;
using Clock = std::chrono::steady_clock;

namespace {

using Locks = seatlock::LockManager<seatlock::RedisBackend>;
using Store = seatlock::SeatHoldStore<seatlock::RedisBackend>;

// How long run() may take past the end of the work it was given.
constexpr auto patience = 5s;

struct Run {
    bool returned = false;  // by itself, before the watchdog stopped it
    std::chrono::milliseconds took{0};
};

// io.run() on this thread, watched: after `limit` a watchdog thread stops the io_context.
Run run_watched(asio::io_context& io, std::chrono::milliseconds limit) {
    std::mutex mutex;
    std::condition_variable ended;
    bool finished = false;
    bool stopped = false;
    std::thread watchdog([&] {
        std::unique_lock lock(mutex);
        if (!ended.wait_for(lock, limit, [&] { return finished; })) {
            stopped = true;
            io.stop();
        }
    });
    const auto t0 = Clock::now();
    io.run();
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    {
        std::lock_guard lock(mutex);
        finished = true;
    }
    ended.notify_all();
    watchdog.join();
    return {!stopped, took};
}

struct Counts {
    int pairs = 0;
    int failures = 0;
};

// try_lock_all of three keys, then unlock, until `until` (the program).
asio::awaitable<void> lock_pairs(Locks& locks, int caller, Clock::time_point until,
                                 Counts& counts) {
    const std::string k = "game1:C" + std::to_string(caller) + "-";
    const std::vector<std::string> keys{k + "1", k + "2", k + "3"};
    while (Clock::now() < until) {
        auto guard = co_await locks.async_try_lock_all(keys, asio::use_awaitable);
        if (!guard) {
            ++counts.failures;
            continue;
        }
        auto unlocked = co_await guard->async_unlock(asio::use_awaitable);
        ++(unlocked ? counts.pairs : counts.failures);
    }
}

// hold one general-admission place, then release it, until `until`.
asio::awaitable<void> hold_pairs(Store& store, int caller, Clock::time_point until,
                                 Counts& counts) {
    const std::string holder = "buyer-" + std::to_string(caller);
    const auto request = seatlock::quantity("ga", 1);
    while (Clock::now() < until) {
        auto hold = co_await store.async_hold("game1", holder, request, asio::use_awaitable);
        if (!hold) {
            ++counts.failures;
            continue;
        }
        auto released = co_await store.async_release(hold->token, asio::use_awaitable);
        ++(released ? counts.pairs : counts.failures);
    }
}

seatlock::EventSpec ga_event() {
    return {"game1", "Game", {seatlock::ZoneSpec::general_admission("ga", 100000)}};
}

}  // namespace

TEST_CASE(
    "io.run() returns once 64 coroutines' lock pairs are done: the idle connection is no work") {
    RedisServer server;
    asio::io_context io;
    seatlock::RedisBackend backend(options_for(server), io.get_executor());
    Locks locks(backend);
    Counts counts;
    const auto until = Clock::now() + 500ms;
    for (int c = 0; c < 64; ++c)
        asio::co_spawn(io, lock_pairs(locks, c, until, counts), asio::detached);

    const auto run = run_watched(io, 500ms + patience);
    CHECK(run.returned);
    CHECK(counts.failures == 0);
    CHECK(counts.pairs >= 64);
    MESSAGE(counts.pairs << " lock pairs; run() returned after " << run.took.count() << " ms");

    // The backend still works on the same io_context, which run() again serves.
    io.restart();
    Counts again;
    asio::co_spawn(io, lock_pairs(locks, 0, Clock::now() + 50ms, again), asio::detached);
    CHECK(run_watched(io, 50ms + patience).returned);
    CHECK(again.failures == 0);
    CHECK(again.pairs >= 1);
}

TEST_CASE("io.run() returns once 64 coroutines' async holds and releases are done") {
    RedisServer server;
    asio::io_context io;
    seatlock::RedisBackend backend(options_for(server), io.get_executor());
    Store store(backend, seatlock::testing::no_limit());
    store.create_event(ga_event()).value();
    Counts counts;
    const auto until = Clock::now() + 500ms;
    for (int c = 0; c < 64; ++c)
        asio::co_spawn(io, hold_pairs(store, c, until, counts), asio::detached);

    const auto run = run_watched(io, 500ms + patience);
    CHECK(run.returned);
    CHECK(counts.failures == 0);
    CHECK(counts.pairs >= 64);
    CHECK(store.seats("game1", std::string("ga")).value().at(0).held == 0);
}

TEST_CASE("a call in flight keeps io.run() from returning until its reply has been read") {
    RedisServer server({"--enable-debug-command", "yes"});
    RedisAdmin admin(server.port());
    asio::io_context io;
    seatlock::RedisBackend backend(options_for(server), io.get_executor());
    Locks locks(backend);
    Store store(backend, seatlock::testing::no_limit());
    store.create_event(ga_event()).value();  // and the library is loaded: one FCALL per call

    // The server sleeps 0.5 s with the call written: its reply comes late.
    admin.send({"DEBUG", "SLEEP", "0.5"});
    std::this_thread::sleep_for(50ms);  // the server is asleep

    SUBCASE("the handler runs on another io_context: only the connection keeps run() going") {
        // The completion goes to `handlers`, so the call's own bookkeeping keeps that
        // io_context busy, not `io`: what keeps io.run() from returning is the pipelined
        // connection's read of the reply.
        asio::io_context handlers;
        auto answer = std::make_shared<std::optional<bool>>();
        store.async_hold("game1", "buyer", seatlock::quantity("ga", 1),
                         asio::bind_executor(handlers, [answer](Result<seatlock::Hold> hold) {
                             *answer = hold.has_value();
                         }));
        const auto run = run_watched(io, patience);
        CHECK(run.returned);
        CHECK(run.took >= 300ms);  // it waited for the sleeping server's reply
        // The reply was read and handed over before run() returned: it is there to run.
        CHECK(run_watched(handlers, patience).returned);
        REQUIRE(answer->has_value());
        CHECK(**answer);
    }
    SUBCASE("a coroutine on the same io_context gets its result, then run() returns") {
        std::optional<bool> answer;
        asio::co_spawn(
            io,
            [](Locks& l, std::optional<bool>& out) -> asio::awaitable<void> {
                const std::vector<std::string> keys{"game1:S-1", "game1:S-2"};
                auto guard = co_await l.async_try_lock_all(keys, asio::use_awaitable);
                out = guard.has_value();
            }(locks, answer),
            asio::detached);
        const auto run = run_watched(io, patience);
        CHECK(run.returned);
        CHECK(run.took >= 300ms);
        REQUIRE(answer.has_value());
        CHECK(*answer);
    }
    CHECK(admin.reply()->type == REDIS_REPLY_STATUS);  // the sleep's own answer
}

TEST_CASE("close() ends calls in flight with the documented errors; later calls fail at once") {
    RedisServer server;
    asio::io_context io;
    seatlock::RedisBackend backend(options_for(server), io.get_executor());
    seatlock::HoldPolicy policy = seatlock::testing::no_limit();
    policy.retries_on_unknown_outcome = 0;  // to see each call's own outcome
    Store store(backend, policy);
    store.create_event(ga_event()).value();

    constexpr std::size_t calls = 64;
    std::vector<std::optional<Result<seatlock::Hold>>> results(calls);
    auto hold_all = [&] {
        for (std::size_t i = 0; i < calls; ++i) {
            store.async_hold("game1", "buyer-" + std::to_string(i), seatlock::quantity("ga", 1),
                             asio::bind_executor(io, [&results, i](Result<seatlock::Hold> h) {
                                 results[i].emplace(std::move(h));
                             }));
        }
    };
    // With the server stopped, calls written stay unanswered.
    std::optional<seatlock::testing::StoppedServer> stopped(std::in_place, server.port());
    errc expected = errc::outcome_unknown;
    std::string says;
    SUBCASE("written: outcome_unknown (they may have run)") {
        hold_all();
        io.run_for(300ms);  // connected and written; no reply comes
        for (const auto& r : results) REQUIRE_FALSE(r.has_value());
        backend.close();
        says = "the backend was closed before the reply";
    }
    SUBCASE("not yet written: connection_failed (not applied)") {
        hold_all();
        backend.close();  // the io_context has not run: nothing was written
        expected = errc::connection_failed;
        says = "the backend was closed";
    }
    SUBCASE("from a handler on the io_context, twice, and from another thread at once") {
        hold_all();
        io.run_for(300ms);
        asio::post(io, [&backend] {
            backend.close();
            backend.close();
        });
        std::thread other([&backend] { backend.close(); });
        other.join();
        says = "the backend was closed before the reply";
    }
    const auto run = run_watched(io, patience);
    CHECK(run.returned);
    for (std::size_t i = 0; i < calls; ++i) {
        CAPTURE(i);
        REQUIRE(results[i].has_value());
        const auto& r = *results[i];
        REQUIRE_FALSE(r.has_value());
        CHECK(r.is(expected));
        CHECK(r.error().detail.find(says) != std::string::npos);
    }
    stopped.reset();

    // Later calls fail at once, the same way, both APIs, without touching the server.
    std::optional<Result<seatlock::Hold>> later;
    io.restart();
    store.async_hold("game1", "late", seatlock::quantity("ga", 1),
                     asio::bind_executor(
                         io, [&later](Result<seatlock::Hold> h) { later.emplace(std::move(h)); }));
    CHECK(run_watched(io, patience).returned);
    REQUIRE(later.has_value());
    CHECK(later->is(errc::connection_failed));
    CHECK(later->error().detail.find("the backend was closed") != std::string::npos);
    const auto t0 = Clock::now();
    CHECK(store.hold("game1", "late", seatlock::quantity("ga", 1)).is(errc::connection_failed));
    CHECK(backend.ping().is(errc::connection_failed));
    CHECK(Clock::now() - t0 < 100ms);
    backend.close();  // idempotent
}

TEST_CASE("without an executor: close() ends calls in flight and the destructor joins its thread") {
    RedisServer server;
    std::optional<seatlock::RedisBackend> backend(std::in_place, options_for(server));
    Store store(*backend, seatlock::testing::no_limit());
    store.create_event(ga_event()).value();
    REQUIRE(store.async_seats("game1", std::nullopt, asio::use_future).get());  // its thread runs

    std::optional<std::future<Result<seatlock::Hold>>> pending;
    {
        seatlock::testing::StoppedServer stopped(server.port());
        pending = store.async_hold("game1", "buyer", seatlock::quantity("ga", 1), asio::use_future);
        std::this_thread::sleep_for(200ms);  // written, unanswered
        backend->close();
        REQUIRE(pending->wait_for(patience) == std::future_status::ready);
    }
    // Sent, so outcome_unknown, or, when the store asked again, the closed backend's refusal.
    auto lost = pending->get();
    CHECK((lost.is(errc::outcome_unknown) || lost.is(errc::connection_failed)));
    CHECK(lost.error().detail.find("the backend was closed") != std::string::npos);
    CHECK(store.async_seats("game1", std::nullopt, asio::use_future)
              .get()
              .is(errc::connection_failed));
    auto destroyed = std::async(std::launch::async, [&backend] { backend.reset(); });
    CHECK(destroyed.wait_for(patience) == std::future_status::ready);
}

TEST_CASE(
    "an idle connection the server closed is noticed before the next call: no outcome_unknown") {
    RedisServer server;
    RedisAdmin admin(server.port());
    asio::io_context io;
    seatlock::RedisBackend backend(options_for(server), io.get_executor());
    seatlock::HoldPolicy policy = seatlock::testing::no_limit();
    policy.retries_on_unknown_outcome = 0;  // a lost reply would show
    Store store(backend, policy);
    store.create_event(ga_event()).value();
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        std::optional<Result<seatlock::Hold>> held;
        store.async_hold("game1", "buyer", seatlock::quantity("ga", 1),
                         asio::bind_executor(io, [&held](Result<seatlock::Hold> h) {
                             held.emplace(std::move(h));
                         }));
        CHECK(run_watched(io, patience).returned);
        io.restart();
        REQUIRE(held.has_value());
        INFO((*held ? std::string("held") : held->error().message()));
        CHECK(held->has_value());
        // The connection is idle now; the server closes it.
        CHECK(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
        std::this_thread::sleep_for(50ms);  // the close reaches this end
    }
}

}  // namespace io_run_returns_test
