// expiry_drain.hpp: the background job that deletes the pending reservations of expired
// holds, what the seed apps did with a Redis keyspace listener. It asks seatlock's
// expired() (at-least-once, nothing lost while the server was down) every `period`
// instead of listening to notifications that Redis drops when nobody is connected.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "ticketing.hpp"

namespace ticketing {

/// The drain job and its thread.
class ExpiryDrain {
public:
    /// Starts the job on its own thread. `ticketing` must outlive it.
    ExpiryDrain(Ticketing& ticketing, std::chrono::milliseconds period);
    ~ExpiryDrain();
    ExpiryDrain(const ExpiryDrain&) = delete;
    ExpiryDrain& operator=(const ExpiryDrain&) = delete;

    /// Finishes the pass in progress, if any, and stops.
    void stop();

private:
    void run(std::stop_token stop);

    Ticketing& ticketing_;
    std::chrono::milliseconds period_;
    std::mutex mutex_;
    std::condition_variable_any wake_;
    std::jthread thread_;  // last: started once everything it uses exists
};

}  // namespace ticketing
