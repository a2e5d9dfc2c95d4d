// SPDX-License-Identifier: MIT
// An asynchronous hold on Redis, in a coroutine: the Redis backend's connection runs on the
// program's own io_context (no thread of the backend's), and every call is co_awaited.
//
//     example_async_hold redis://127.0.0.1:6379
//
// Alice holds two seats and pays; Bob asks for one of them and is told who stands in the
// way; Bob holds another seat and lets it go. Exits 0 when all of that went as described.
#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

namespace asio = boost::asio;

namespace {

const char* const event = "async-demo";

// The whole flow; co_returns the program's exit status.
asio::awaitable<int> sell(seatlock::SeatHoldStore<seatlock::RedisBackend>& store) {
    const seatlock::EventSpec spec{
        event, "Async demo",
        {seatlock::ZoneSpec::named("lower", {{"A-1", "A"}, {"A-2", "A"}, {"A-3", "A"}, {"A-4", "A"}})}};
    // Creating the same spec again is a no-op: running the program twice is fine.
    if (auto created = co_await store.async_create_event(spec, asio::use_awaitable); !created) {
        std::fprintf(stderr, "create_event: %s\n", created.error().message().c_str());
        co_return 1;
    }

    // g++ 12 may destroy a braced temporary inside a co_await twice: name it first.
    const auto pair = seatlock::named_seats("lower", {"A-1", "A-2"});
    auto hold = co_await store.async_hold(event, "alice", pair, asio::use_awaitable);
    if (!hold) {  // a Result, as from the blocking call: a refusal is a value
        std::fprintf(stderr, "alice's hold: %s\n", hold.error().message().c_str());
        co_return 1;
    }
    std::printf("alice holds %s and %s (version %llu)\n", hold->seats[0].c_str(),
                hold->seats[1].c_str(), static_cast<unsigned long long>(hold->version));

    // The order id is the caller's own (a payment id). Confirming again with the same one
    // would answer the same order: safe to retry after a lost reply.
    const std::string order_id = "pay-" + hold->token.substr(hold->token.find('.') + 1);
    auto order = co_await store.async_confirm(hold->token, order_id, asio::use_awaitable);
    if (!order) {
        std::fprintf(stderr, "alice's confirm: %s\n", order.error().message().c_str());
        co_return 1;
    }
    std::printf("alice paid: order %s, %zu seats\n", order->id.c_str(), order->seats.size());

    // A seat someone else has: seat_taken, and Failure::items names it.
    const auto taken = seatlock::named_seats("lower", {"A-2"});
    auto refused = co_await store.async_hold(event, "bob", taken, asio::use_awaitable);
    if (refused || !refused.is(seatlock::errc::seat_taken) || refused.error().items.size() != 1) {
        std::fprintf(stderr, "bob's hold of A-2 should be seat_taken\n");
        co_return 1;
    }
    std::printf("bob asked for A-2: seat_taken (%s)\n", refused.error().items[0].c_str());

    // Bob holds a free seat, then changes his mind.
    const auto free_seat = seatlock::named_seats("lower", {"A-3"});
    auto bobs = co_await store.async_hold(event, "bob", free_seat, asio::use_awaitable);
    if (!bobs) {
        std::fprintf(stderr, "bob's hold of A-3: %s\n", bobs.error().message().c_str());
        co_return 1;
    }
    if (auto released = co_await store.async_release(bobs->token, asio::use_awaitable); !released) {
        std::fprintf(stderr, "bob's release: %s\n", released.error().message().c_str());
        co_return 1;
    }
    std::printf("bob held A-3 and released it\n");

    // Alice's order stays, so that a second run of the program finds sold:
    // cancel it (the seats are free again) to leave the event as it was.
    const std::optional<std::string> owner = "alice";  // someone else's order: not_owner
    if (auto cancelled = co_await store.async_cancel(event, order_id, owner, asio::use_awaitable);
        !cancelled) {
        std::fprintf(stderr, "cancel: %s\n", cancelled.error().message().c_str());
        co_return 1;
    }
    std::printf("alice's order cancelled: A-1 and A-2 are free again\n");
    co_return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s redis://host:port\n", argv[0]);
        return 2;
    }
    auto options = seatlock::RedisOptions::from_url(argv[1]);
    if (!options) {
        std::fprintf(stderr, "%s\n", options.error().message().c_str());
        return 2;
    }

    asio::io_context io;  // declared first: it must outlive the backend that runs on it
    // The backend's pipelined connection runs on `io`: replies are read, and the coroutine
    // resumed, on the thread that calls io.run(), here the only one.
    seatlock::RedisBackend backend(*options, io.get_executor());
    seatlock::SeatHoldStore store(backend);

    int status = 1;
    asio::co_spawn(io, sell(store), [&](std::exception_ptr error, int result) {
        status = error ? 1 : result;
        if (error) {
            try {
                std::rethrow_exception(error);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "the coroutine threw: %s\n", e.what());
            }
        }
    });
    io.run();  // returns once the coroutine is done: an idle connection is no work
    std::printf("io.run() returned\n");
    return status;
}
