// SPDX-License-Identifier: MIT
// tests/integration/blocking_pipeline.cpp: blocking calls of many threads in flight at once
// share the backend's pipelined connection (RedisOptions::pipeline_blocking_calls): Redis
// reads several of them at a time. One thread alone, or the option off, keeps a pooled
// connection per call. Connections killed under such calls end each of them once.
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace blocking_pipeline_test {

using namespace std::chrono_literals;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;

namespace {

constexpr int threads = 16;

struct Venue {
    explicit Venue(bool pipeline_blocking_calls, std::chrono::milliseconds command_timeout = 10s)
        : backend(options(server, pipeline_blocking_calls, command_timeout)),
          store(backend, seatlock::testing::no_limit()),
          admin(server.port()) {
        store.create_event({"game1", "Game", {seatlock::ZoneSpec::general_admission("ga", 1000)}})
            .value();
    }
    static seatlock::RedisOptions options(const RedisServer& server, bool pipelined,
                                          std::chrono::milliseconds command_timeout) {
        auto o = seatlock::testing::options_for(server, command_timeout);
        o.pipeline_blocking_calls = pipelined;
        o.pool_size = threads;  // with the option off, every thread has a connection of its own
        return o;
    }
    RedisServer server;
    seatlock::RedisBackend backend;
    seatlock::SeatHoldStore<seatlock::RedisBackend> store;
    RedisAdmin admin;
};

// `threads` threads each make one blocking hold while Redis is stopped, so that every call
// is in flight when it reads again; the server reads that took, the two INFOs left out.
long long reads_for_concurrent_holds(Venue& venue) {
    const auto before = venue.admin.info_field("stats", "total_reads_processed");
    std::atomic<int> held{0};
    std::vector<std::thread> callers;
    {
        seatlock::testing::StoppedServer stopped(venue.server.port());
        for (int i = 0; i < threads; ++i) {
            callers.emplace_back([&venue, &held, i] {
                auto hold = venue.store.hold("game1", "buyer-" + std::to_string(i),
                                             seatlock::quantity("ga", 1));
                if (hold) ++held;
            });
        }
        // However slowly the threads start (a sanitizer build on a busy machine), their
        // requests are written by now.
        std::this_thread::sleep_for(500ms);
    }
    for (auto& t : callers) t.join();
    const auto reads = venue.admin.info_field("stats", "total_reads_processed") - before - 2;
    CHECK(held == threads);
    CHECK(venue.store.seats("game1", std::string("ga")).value().at(0).held == threads);
    return reads;
}

}  // namespace

TEST_CASE("blocking calls of 16 threads in flight together: several per server read") {
    Venue venue(true);
    const auto reads = reads_for_concurrent_holds(venue);
    MESSAGE(threads << " blocking holds in " << reads << " server reads");
    // One for the call that found no other in flight (a pooled connection), the rest for
    // the 15 pipelined ones: a few reads, where the pool needs 16.
    CHECK(3 * reads <= threads);
}

TEST_CASE("with pipeline_blocking_calls off, each blocking call is a read of its own") {
    Venue venue(false);
    const auto reads = reads_for_concurrent_holds(venue);
    MESSAGE(threads << " blocking holds in " << reads << " server reads");
    CHECK(reads >= threads);
}

TEST_CASE("one thread's blocking calls keep the pool: no pipelined connection is opened") {
    Venue venue(true);
    const auto connections = venue.admin.info_field("stats", "total_connections_received");
    for (int i = 0; i < 20; ++i) {
        auto hold = venue.store.hold("game1", "solo", seatlock::quantity("ga", 1)).value();
        venue.store.release(hold.token).value();
    }
    CHECK(venue.admin.info_field("stats", "total_connections_received") == connections);
}

TEST_CASE("CLIENT KILL under 16 blocking holds in flight: each ends once, none hangs, none twice") {
    Venue venue(true, 3s);
    auto& server = venue.server;
    auto& store = venue.store;
    auto& admin = venue.admin;
    // The server sleeps while the holds are written; the kill, queued ahead of them, runs
    // when it wakes, with the holds read from their sockets or still in them.
    const auto connections_before = admin.info_field("stats", "total_connections_received");
    seatlock::testing::KillOnWake kill_on_wake(server.port());
    std::vector<std::optional<seatlock::Result<seatlock::Hold>>> results(threads);
    std::vector<std::thread> callers;
    for (int i = 0; i < threads; ++i) {
        callers.emplace_back([&store, &results, i] {
            results[static_cast<std::size_t>(i)] = store.hold(
                "game1", "buyer-" + std::to_string(i), seatlock::quantity("ga", 1));
        });
    }
    for (auto& t : callers) t.join();  // a hung call would hang here (and time the test out)
    int held = 0;
    for (const auto& r : results) {
        REQUIRE(r.has_value());
        if (*r) {
            ++held;
        } else {
            CHECK_MESSAGE((r->is(seatlock::errc::outcome_unknown) ||
                           r->is(seatlock::errc::io_error) ||
                           r->is(seatlock::errc::connection_failed)),
                          r->error().message());
        }
    }
    MESSAGE(held << " of " << threads << " held");
    // The killed connections were made again: the sleeper's, the killer's, at least the
    // pipelined one's again, and this INFO's.
    RedisAdmin after(server.port());  // the kill closed `admin` too
    CHECK(after.info_field("stats", "total_connections_received") - connections_before >= 4);
    // Each call took one place at most (a lost reply is retried with the same token, which
    // finds its hold), and every hold answered has its place.
    const auto zone = store.seats("game1", std::string("ga")).value().at(0);
    CHECK(zone.held >= held);
    CHECK(zone.held <= threads);
    // The connections work again, several threads at once.
    std::atomic<int> again{0};
    callers.clear();
    for (int i = 0; i < threads; ++i) {
        callers.emplace_back([&store, &again, i] {
            if (store.hold("game1", "again-" + std::to_string(i), seatlock::quantity("ga", 1)))
                ++again;
        });
    }
    for (auto& t : callers) t.join();
    CHECK(again == threads);
}

}  // namespace blocking_pipeline_test
