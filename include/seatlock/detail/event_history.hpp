// SPDX-License-Identifier: MIT
// seatlock/detail/event_history.hpp: a new EventHistory, for an event created or recovered
// (every backend draws its own: the memory tables here, RedisBackend for its functions).
#pragma once

#include <seatlock/vocabulary.hpp>

#include <random>

namespace seatlock::detail {

/// A history no reader has seen: 63 random bits, never 0 (0 is an event stored before
/// histories existed). Kept below 2^63 so that it prints as a signed integer too (Redis).
inline EventHistory new_history() {
    thread_local std::mt19937_64 bits{[] {
        std::random_device device;
        return (std::uint64_t{device()} << 32) ^ device();
    }()};
    EventHistory h = 0;
    while (h == 0) h = bits() >> 1;
    return h;
}

}  // namespace seatlock::detail
