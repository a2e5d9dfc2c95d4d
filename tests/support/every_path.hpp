// SPDX-License-Identifier: MIT
// tests/support/every_path.hpp: holds made through every way a RedisBackend carries calls,
// for the tests of a transport (a Unix socket, TLS): whatever the way, every call arrives.
#pragma once

#include <seatlock/hold_store.hpp>

#include <boost/asio/use_future.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::testing {

/// Holds places of zone "ga" of event "game1" (11 or more places) through a blocking call
/// alone (over TCP, the pool's direct round trip), an asynchronous call (the pipelined
/// connection) and blocking calls of 8 threads at once (which share the pipelined
/// connection), then releases the first two, blocking and asynchronously: 8 stay held.
template <typename Store>
void hold_on_every_path(Store& store) {
    auto alone = store.hold("game1", "alone", quantity("ga", 1));
    REQUIRE(alone);
    auto async = store.async_hold("game1", "async", quantity("ga", 2), boost::asio::use_future).get();
    REQUIRE(async);
    CHECK(async->seats.size() == 2);
    std::atomic<int> held{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back([&store, &held, i] {
            if (store.hold("game1", "thread-" + std::to_string(i), quantity("ga", 1))) ++held;
        });
    }
    for (auto& t : threads) t.join();
    CHECK(held == 8);
    CHECK(store.release(alone->token));
    CHECK(store.async_release(async->token, boost::asio::use_future).get());
    CHECK(store.seats("game1", std::string("ga")).value().at(0).held == 8);
}

}  // namespace seatlock::testing
