// seatlock/detail/random.hpp: owner and hold tokens from the operating system's
// cryptographic source (getrandom), never from a seeded PRNG: a guessable token would let
// one client release or confirm another's seats.
#pragma once

#include <seatlock/errors.hpp>

#include <array>
#include <cerrno>
#include <cstdint>
#include <random>
#include <string>
#include <sys/random.h>

namespace seatlock::detail {

/// 128 random bits as 32 lowercase hex digits.
inline std::string random_hex128() {
    std::array<unsigned char, 16> bytes{};
    std::size_t got = 0;
    while (got < bytes.size()) {
        const ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error(std::error_code(errno, std::generic_category()), "getrandom failed");
        }
        got += static_cast<std::size_t>(n);
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex(32, '0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 0xf];
    }
    return hex;
}

/// A number in [0, bound] for retry jitter (not a secret: a fast per-thread generator).
inline std::int64_t jitter(std::int64_t bound) {
    if (bound <= 0) return 0;
    thread_local std::minstd_rand engine{std::random_device{}()};
    return std::uniform_int_distribution<std::int64_t>(0, bound)(engine);
}

}  // namespace seatlock::detail
