// SPDX-License-Identifier: MIT
// startup.hpp: the server's start-up, run on the io_context its workers run next.
//
// The Redis backend's connections live on the server's io_context (no thread of their
// own), so the start-up (creating or repairing the venue's events) must run there too,
// in the main thread, before the workers start.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <future>
#include <stdexcept>
#include <utility>

namespace ticketing {

/// Keeps an io_context from stopping when it runs out of work, from before the start-up
/// until its workers run it and as long as the server serves (ioc.stop() ends it).
///
/// Without it, a completion handed back from another thread (the database pool's) can
/// drop that thread's hold on the io_context's work count only after the start-up's
/// last step ran: the count reaching zero then stops the io_context by itself, and the
/// workers, started next, find it stopped and return at once. Nothing would serve.
using KeepRunning = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;

/// Runs `task` to its end on `io`, in this thread, and returns its result. `keep` is the
/// guard above, held by the caller until its workers run `io`. Throws std::runtime_error
/// if `io` is stopped (io.stop()) before `task` ends.
template <typename T>
T run_to_end(boost::asio::io_context& io, [[maybe_unused]] const KeepRunning& keep,
             boost::asio::awaitable<T> task) {
    auto result = boost::asio::co_spawn(io, std::move(task), boost::asio::use_future);
    while (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        if (io.run_one() == 0) throw std::runtime_error("the io_context stopped during start-up");
    }
    return result.get();
}

}  // namespace ticketing
