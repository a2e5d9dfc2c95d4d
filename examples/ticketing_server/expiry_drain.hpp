// SPDX-License-Identifier: MIT
// expiry_drain.hpp: the background job that deletes the pending reservations of expired
// holds, what hand-written services do with a Redis keyspace listener. It asks seatlock's
// expired() (at-least-once, nothing lost while the server was down) every `period`
// instead of listening to notifications that Redis drops when nobody is connected.
//
// A coroutine on the server's io_context, pausing on a timer between passes: like the
// requests, it never blocks a thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <future>
#include <memory>

#include "ticketing.hpp"

namespace ticketing {

/// The drain job.
class ExpiryDrain {
public:
    /// Starts the job on `executor`. `ticketing` must outlive it.
    ExpiryDrain(boost::asio::any_io_executor executor, Ticketing& ticketing,
                std::chrono::milliseconds period);
    /// Asks the job to stop, without waiting.
    ~ExpiryDrain();
    ExpiryDrain(const ExpiryDrain&) = delete;
    ExpiryDrain& operator=(const ExpiryDrain&) = delete;

    /// Finishes the pass in progress, if any, and stops. From a thread that does not run
    /// the executor, while others do.
    void stop();

private:
    struct State;
    static boost::asio::awaitable<void> run(std::shared_ptr<State> state, Ticketing& ticketing,
                                            std::chrono::milliseconds period);

    std::shared_ptr<State> state_;
    std::future<void> finished_;
};

}  // namespace ticketing
