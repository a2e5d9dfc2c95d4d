// SPDX-License-Identifier: MIT
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

/// 128 random bits as 32 lowercase hex digits. Reads the kernel's generator in blocks
/// (one system call per 256 tokens per thread); the bytes are used once each.
inline std::string random_hex128() {
    struct Pool {
        std::array<unsigned char, 4096> bytes{};
        std::size_t used = 4096;
    };
    thread_local Pool pool;
    if (pool.used + 16 > pool.bytes.size()) {
        std::size_t got = 0;
        while (got < pool.bytes.size()) {
            const ssize_t n = ::getrandom(pool.bytes.data() + got, pool.bytes.size() - got, 0);
            if (n < 0) {
                if (errno == EINTR) continue;
                throw Error(std::error_code(errno, std::generic_category()), "getrandom failed");
            }
            got += static_cast<std::size_t>(n);
        }
        pool.used = 0;
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex(32, '0');
    for (std::size_t i = 0; i < 16; ++i) {
        const unsigned char byte = pool.bytes[pool.used + i];
        pool.bytes[pool.used + i] = 0;  // never handed out twice, even if the pool leaks
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 0xf];
    }
    pool.used += 16;
    return hex;
}

/// A number in [0, bound] for retry jitter (not a secret: a fast per-thread generator).
inline std::int64_t jitter(std::int64_t bound) {
    if (bound <= 0) return 0;
    thread_local std::minstd_rand engine{std::random_device{}()};
    return std::uniform_int_distribution<std::int64_t>(0, bound)(engine);
}

}  // namespace seatlock::detail
