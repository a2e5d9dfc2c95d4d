// SPDX-License-Identifier: MIT
// tests/integration/async_redis.cpp: the asynchronous API on a real redis-server, where
// it differs from the blocking one: many calls share one pipelined connection (several
// per server read), a connection killed under 200 calls in flight ends each of them once
// and applies none twice, a lock wait is cancelled with its request in flight, a release
// failing in the background after async_unlock(use_future) is the manager's to finish.
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"

#include <seatlock/lock_manager.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace async_redis_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::Result;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;

namespace {

// 300 named seats S-1..S-300 and 10,000 general-admission places.
seatlock::EventSpec big_event() {
    std::vector<seatlock::SeatSpec> seats;
    for (int i = 1; i <= 300; ++i) seats.push_back({"S-" + std::to_string(i), ""});
    return {"game1",
            "Game",
            {seatlock::ZoneSpec::named("named", std::move(seats)),
             seatlock::ZoneSpec::general_admission("ga", 10000)}};
}

// A private redis-server, a backend on it and a store selling big_event(), with an
// admin connection and an io_context for the test's own calls.
struct BigEventOnRedis {
    explicit BigEventOnRedis(std::chrono::milliseconds command_timeout = 10s)
        : backend(seatlock::testing::options_for(server, command_timeout)),
          store(backend, seatlock::testing::no_limit()),
          admin(server.port()) {
        store.create_event(big_event()).value();
        // Warm the connection so that what a test counts is its own calls.
        REQUIRE(store.async_seats("game1", std::nullopt, asio::use_future).get());
    }
    RedisServer server;
    seatlock::RedisBackend backend;
    seatlock::SeatHoldStore<seatlock::RedisBackend> store;
    RedisAdmin admin;
    asio::io_context io;
};

// Runs `io` on this thread until `done` or `limit`.
template <typename Pred>
bool run_until(asio::io_context& io, Pred done, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end) {
        io.run_for(5ms);
        if (io.stopped()) io.restart();
    }
    return done();
}

}  // namespace

TEST_CASE("1,000 holds in flight from one thread share the pipeline: several per server read") {
    BigEventOnRedis redis;
    auto& [server, backend, store, admin, io] = redis;

    const auto reads_before = admin.info_field("stats", "total_reads_processed");
    constexpr int calls = 1000;
    std::atomic<int> ok{0}, failed{0};
    {
        // Redis stopped while the calls are made: however slowly this thread makes them (a
        // sanitizer build on a busy machine), they are all in flight together when it
        // reads again. A client that waited for each reply would have one.
        seatlock::testing::StoppedServer stopped(server.port());
        for (int i = 0; i < calls; ++i) {
            store.async_hold(
                "game1", "buyer-" + std::to_string(i), seatlock::quantity("ga", 1),
                asio::bind_executor(io, [&](Result<seatlock::Hold> h) { ++(h ? ok : failed); }));
        }
        std::this_thread::sleep_for(50ms);  // the backend's thread writes what it was handed
    }
    REQUIRE(run_until(io, [&] { return ok + failed == calls; }, 30s));
    const auto reads = admin.info_field("stats", "total_reads_processed") - reads_before;
    CHECK(ok == calls);
    MESSAGE(calls << " holds in " << reads << " server reads");
    // The INFO calls themselves are two reads; the holds must average 4 or more per read.
    CHECK(calls >= 4 * (reads - 2));
    CHECK(store.seats("game1", std::string("ga")).value().at(0).held == calls);
}

TEST_CASE("CLIENT KILL with 200 holds in flight: each ends once, none hangs, none applied twice") {
    BigEventOnRedis redis(3s);
    auto& [server, backend, store, admin, io] = redis;

    // The server sleeps while the holds are written, so that they are in flight, sent and
    // unanswered, when their connection is killed.
    const auto connections_before = admin.info_field("stats", "total_connections_received");
    // The kill is queued while the server sleeps, ahead of the holds: it runs when the
    // server wakes, with the holds read from their socket or still in it.
    seatlock::testing::KillOnWake kill_on_wake(server.port());
    constexpr int calls = 200;
    std::vector<std::optional<Result<seatlock::Hold>>> results(calls);
    std::atomic<int> completions{0};
    for (int i = 0; i < calls; ++i) {
        const std::string seat = "S-" + std::to_string(i + 1);
        store.async_hold("game1", "buyer-" + std::to_string(i), seatlock::named_seats("named", {seat}),
                         asio::bind_executor(io, [&, i](Result<seatlock::Hold> h) {
                             CHECK_FALSE(results[static_cast<std::size_t>(i)].has_value());  // once
                             results[static_cast<std::size_t>(i)] = std::move(h);
                             ++completions;
                         }));
    }
    REQUIRE(run_until(io, [&] { return completions == calls; }, 20s));
    // The pipeline's connection was killed and a new one carried the retries.
    RedisAdmin after(server.port());  // the kill closed every other admin connection too
    CHECK(after.info_field("stats", "total_connections_received") - connections_before >= 4);
    int held = 0, unknown = 0;
    for (int i = 0; i < calls; ++i) {
        const auto& r = *results[static_cast<std::size_t>(i)];
        if (r) {
            ++held;
            CHECK(r->seats == std::vector<std::string>{"S-" + std::to_string(i + 1)});
        } else {
            // A lost reply retried with the same token finds its hold; a second
            // application would be refused as seat_taken: there is none.
            CHECK_MESSAGE((r.is(errc::outcome_unknown) || r.is(errc::io_error) ||
                           r.is(errc::connection_failed)),
                          r.error().message());
            ++unknown;
        }
    }
    MESSAGE(held << " held, " << unknown << " with unknown or failed outcome");
    // Every hold answered is held; at most one hold per call.
    auto zone = store.seats("game1", std::string("named")).value().at(0);
    CHECK(zone.held >= held);
    CHECK(zone.held <= calls);
    for (int i = 0; i < calls; ++i) {
        if (*results[static_cast<std::size_t>(i)]) {
            CHECK(zone.seats[static_cast<std::size_t>(i)].state == seatlock::SeatState::held);
        }
    }
    // The connection works again.
    CHECK(store.async_hold("game1", "late", seatlock::quantity("ga", 1), asio::use_future).get());
}

TEST_CASE("an async_lock_all cancelled while it waits, or with its request in flight, leaves no lock") {
    RedisServer server;
    seatlock::RedisBackend backend(seatlock::testing::options_for(server));
    seatlock::LockOptions options;
    options.wait = 10s;
    seatlock::LockManager locks(backend, options);
    asio::io_context io;
    const std::vector<std::string> keys{"game1:A-1", "game1:A-2", "game1:A-3"};

    // Waiting: a key is someone else's.
    {
        auto blocker = locks.try_lock("game1:A-2").value();
        asio::cancellation_signal cancel;
        std::optional<Result<seatlock::MultiLock<seatlock::RedisBackend>>> result;
        locks.async_lock_all(keys, asio::bind_cancellation_slot(
                                       cancel.slot(), asio::bind_executor(io, [&](auto r) {
                                           result = std::move(r);
                                       })));
        run_until(io, [] { return false; }, 150ms);
        CHECK_FALSE(result);
        cancel.emit(asio::cancellation_type::terminal);
        REQUIRE(run_until(io, [&] { return result.has_value(); }, 5s));
        CHECK(result->is(errc::cancelled));
        CHECK(blocker.unlock());
        CHECK(locks.try_lock_all(keys));
    }
    // In flight: cancelled right after it was sent; whatever the answer took is released.
    for (int round = 0; round < 20; ++round) {
        asio::cancellation_signal cancel;
        std::optional<Result<seatlock::MultiLock<seatlock::RedisBackend>>> result;
        locks.async_lock_all(keys, asio::bind_cancellation_slot(
                                       cancel.slot(), asio::bind_executor(io, [&](auto r) {
                                           result = std::move(r);
                                       })));
        cancel.emit(asio::cancellation_type::terminal);
        REQUIRE(run_until(io, [&] { return result.has_value(); }, 5s));
        CHECK(result->is(errc::cancelled));
        // The release of what it took goes out on the pipeline, after the answer.
        REQUIRE(run_until(io, [&] { return static_cast<bool>(locks.try_lock_all(keys)); }, 2s));
    }
    io.run();  // returns once every release started above has ended
}

TEST_CASE("a backend given the caller's executor does its I/O there, with no thread of its own") {
    RedisServer server;
    asio::io_context io;  // the service's: outlives the backend
    auto io_work = asio::make_work_guard(io);
    {
        seatlock::RedisBackend backend(seatlock::testing::options_for(server, 10s), io.get_executor());
        seatlock::SeatHoldStore<seatlock::RedisBackend> store(backend, seatlock::testing::no_limit());
        store.create_event(big_event()).value();  // the blocking path: its own pool

        // The handler runs elsewhere, but the connection's reads and writes are io's
        // work: while nobody runs io, nothing comes back.
        asio::io_context handlers;
        auto keep = asio::make_work_guard(handlers);
        std::thread handler_thread([&] { handlers.run(); });
        auto held = store.async_hold("game1", "alice", seatlock::named_seats("named", {"S-1", "S-2"}),
                                     asio::bind_executor(handlers, asio::use_future));
        CHECK(held.wait_for(300ms) == std::future_status::timeout);
        while (held.wait_for(0s) != std::future_status::ready) io.run_one_for(100ms);
        const auto hold = held.get();
        REQUIRE(hold);
        CHECK(hold->seats.size() == 2);

        // Many calls at once, all completed by running io on this one thread.
        std::vector<std::future<Result<seatlock::Hold>>> calls;
        for (int i = 3; i <= 40; ++i) {
            calls.push_back(store.async_hold("game1", "buyer-" + std::to_string(i),
                                             seatlock::named_seats("named", {"S-" + std::to_string(i)}),
                                             asio::bind_executor(handlers, asio::use_future)));
        }
        for (auto& call : calls) {
            while (call.wait_for(0s) != std::future_status::ready) io.run_one_for(100ms);
            CHECK(call.get());
        }
        keep.reset();
        handler_thread.join();
        // The backend goes first; a call still in flight would be ended by its destructor.
    }
    io_work.reset();
    io.run_for(1s);
    CHECK(io.stopped());  // nothing of the backend's was left to run
}

TEST_CASE(
    "a backend over several executors sends each call on its caller's executor's connection") {
    CHECK_THROWS_AS(
        seatlock::RedisBackend(seatlock::RedisOptions{}, std::vector<asio::any_io_executor>{}),
        seatlock::Error);
    // An empty executor would fail only at the first asynchronous call: refused at once.
    asio::io_context unused;
    CHECK_THROWS_AS(seatlock::RedisBackend(seatlock::RedisOptions{}, asio::any_io_executor{}),
                    seatlock::Error);
    CHECK_THROWS_AS(seatlock::RedisBackend(seatlock::RedisOptions{},
                                           {unused.get_executor(), asio::any_io_executor{}}),
                    seatlock::Error);

    RedisServer server;
    // `a` runs all along on a thread of its own; `b` only when the test runs it.
    asio::io_context a(1), b(1);
    auto a_work = asio::make_work_guard(a);
    auto b_work = asio::make_work_guard(b);
    std::thread a_thread([&] { a.run(); });
    {
        seatlock::RedisBackend backend(seatlock::testing::options_for(server, 10s),
                                       {a.get_executor(), b.get_executor()});
        seatlock::SeatHoldStore<seatlock::RedisBackend> store(backend,
                                                              seatlock::testing::no_limit());
        store.create_event(big_event()).value();
        int seat = 0;
        // A hold started by `start` (on whichever thread runs it), its handler on `a`.
        auto hold_from = [&](auto executor) {
            auto promise = std::make_shared<std::promise<std::future<Result<seatlock::Hold>>>>();
            auto started = promise->get_future();
            const auto id = "S-" + std::to_string(++seat);
            asio::post(executor, [&store, promise, id, &a] {
                promise->set_value(store.async_hold("game1", "buyer-" + id,
                                                    seatlock::named_seats("named", {id}),
                                                    asio::bind_executor(a, asio::use_future)));
            });
            return started;
        };
        auto ends_without_b = [](std::future<Result<seatlock::Hold>>& call) {
            return call.wait_for(300ms) == std::future_status::ready;
        };
        auto finish_with_b = [&](std::future<Result<seatlock::Hold>>& call) {
            while (call.wait_for(0s) != std::future_status::ready) b.run_one_for(100ms);
            CHECK(call.get());
        };

        // Made on a's thread: a's connection, answered while b stands still.
        auto on_a = hold_from(a.get_executor()).get();
        CHECK(ends_without_b(on_a));
        CHECK(on_a.get());

        // Made on b's thread (and from a strand over b): b's connection, so it waits for b.
        for (auto executor : {asio::any_io_executor(b.get_executor()),
                              asio::any_io_executor(asio::make_strand(b))}) {
            auto started = hold_from(executor);
            while (started.wait_for(0s) != std::future_status::ready) b.run_one_for(100ms);
            auto on_b = started.get();
            CHECK_FALSE(ends_without_b(on_b));
            finish_with_b(on_b);
        }

        // Made on a thread that runs neither: the calls take turns over both connections.
        std::vector<std::future<Result<seatlock::Hold>>> elsewhere;
        for (int i = 0; i < 6; ++i) {
            elsewhere.push_back(
                store.async_hold("game1", "elsewhere",
                                 seatlock::named_seats("named", {"S-" + std::to_string(100 + i)}),
                                 asio::bind_executor(a, asio::use_future)));
        }
        int answered_without_b = 0;
        for (auto& call : elsewhere) answered_without_b += ends_without_b(call) ? 1 : 0;
        CHECK(answered_without_b == 3);
        for (auto& call : elsewhere) finish_with_b(call);
    }
    a_work.reset();
    b_work.reset();
    a_thread.join();
}

TEST_CASE(
    "async_unlock with use_future while the server is paused: its release outlives no manager") {
    // The release fails in transit beyond release_retry_inline, so it goes on in the
    // background after the future is ready. That must be the manager's thread, whose end
    // gives it up and reports it. Left on the future's promise executor (Asio's system
    // threads, which nothing waits for), a retry would run after the manager and the
    // backend were gone, and an exception there would reach the satisfied promise
    // (std::future_error, then std::terminate).
    RedisServer server;
    std::mutex mutex;
    std::vector<std::string> reported;
    seatlock::LockOptions options;
    options.release_retry_inline = 100ms;
    options.on_release_error = [&](const seatlock::Failure& f) {
        std::lock_guard lock(mutex);
        reported.push_back(f.detail);
    };
    for (int round = 0; round < 3; ++round) {
        const std::vector<std::string> keys{"game1:P-" + std::to_string(round),
                                            "game1:Q-" + std::to_string(round)};
        {
            seatlock::RedisBackend backend(seatlock::testing::options_for(server, 150ms));
            seatlock::LockManager locks(backend, options);
            auto guard = locks.async_try_lock_all(keys, asio::use_future).get();
            REQUIRE(guard);
            ::kill(server.pid(), SIGSTOP);
            const auto unlocked = guard->async_unlock(asio::use_future).get();
            REQUIRE_FALSE(unlocked);
            CHECK(unlocked.error().detail.find("retrying in the background") != std::string::npos);
        }  // the manager gives up the release still pending, then the backend goes
        ::kill(server.pid(), SIGCONT);
        std::this_thread::sleep_for(400ms);  // time for a retry left behind to run (none may)
        std::lock_guard lock(mutex);
        REQUIRE(reported.size() == 1);
        CHECK(reported[0].find("destroyed") != std::string::npos);
        reported.clear();
    }
}

}  // namespace async_redis_test
