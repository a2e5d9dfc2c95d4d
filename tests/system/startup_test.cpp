// SPDX-License-Identifier: MIT
// tests/system/startup_test.cpp: the server's start-up (startup.hpp) leaves its
// io_context ready for the workers, even when the thread that answered the start-up's
// last step lets go of the io_context's work only after that step ran — as the database
// pool's thread does, and as a preempted thread does for longer.
#include <doctest/doctest.h>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "startup.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace startup_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// One step answered from another thread, which keeps its hold on the awaiting
// io_context's work for `linger` after handing the answer over.
asio::awaitable<int> answered_elsewhere(std::thread& answering, std::chrono::milliseconds linger) {
    co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(int)>(
        [&answering, linger](auto handler) {
            auto work = asio::prefer(asio::get_associated_executor(handler),
                                     asio::execution::outstanding_work.tracked);
            answering = std::thread([handler = std::move(handler), work = std::move(work),
                                     linger]() mutable {
                asio::post(work, [handler = std::move(handler)]() mutable {
                    std::move(handler)(7);
                });
                std::this_thread::sleep_for(linger);
            });
        },
        asio::use_awaitable);
}

}  // namespace

TEST_CASE("after the start-up the workers find the io_context running, whoever let go last") {
    asio::io_context ioc;
    const ticketing::KeepRunning keep = asio::make_work_guard(ioc);
    std::thread answering;
    CHECK(ticketing::run_to_end(ioc, keep, answered_elsewhere(answering, 100ms)) == 7);
    answering.join();  // its hold on the work is gone now

    // What the server does next: start the workers, which serve whatever is posted.
    std::promise<void> served;
    asio::post(ioc, [&served] { served.set_value(); });
    std::thread worker([&ioc] { ioc.run(); });
    const bool ran = served.get_future().wait_for(5s) == std::future_status::ready;
    ioc.stop();
    worker.join();
    CHECK_MESSAGE(ran, "the io_context had stopped itself: the workers returned at once");
}

TEST_CASE("a start-up whose io_context is stopped ends with an error, not a hang") {
    asio::io_context ioc;
    const ticketing::KeepRunning keep = asio::make_work_guard(ioc);
    ioc.stop();
    std::thread answering;
    CHECK_THROWS_AS(ticketing::run_to_end(ioc, keep, answered_elsewhere(answering, 0ms)),
                    std::runtime_error);
    if (answering.joinable()) answering.join();
}

}  // namespace startup_test
