// SPDX-License-Identifier: MIT
// src/redis/resp_writer.cpp: RESP written with std::to_chars into one string sized
// beforehand, because hiredis prints every length with sprintf and allocates twice more
// per call: a large share of the client's CPU time on the asynchronous path.
// tests/integration/pipeline_test.cpp compares the bytes with hiredis's for many commands.
#include "resp_writer.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <iterator>

namespace seatlock::redis_detail {

namespace {

// The RESP of a command whose arguments are the elements of `parts`, in order.
template <typename... Parts>
std::string format_parts(const Parts&... parts) {
    constexpr std::size_t max_digits = 20;  // of a std::size_t
    std::size_t size = 1 + max_digits + 2;
    std::size_t count = 0;
    auto measure = [&](const auto& part) {
        for (const auto& arg : part) size += 1 + max_digits + 2 + arg.size() + 2;
        count += std::size(part);
    };
    (measure(parts), ...);
    std::string out(size, '\0');
    char* at = out.data();
    char* const end = at + size;
    auto header = [&](char kind, std::size_t n) {
        *at++ = kind;
        at = std::to_chars(at, end, n).ptr;
        *at++ = '\r';
        *at++ = '\n';
    };
    header('*', count);
    auto write = [&](const auto& part) {
        for (const auto& arg : part) {
            header('$', arg.size());
            at = std::copy(arg.begin(), arg.end(), at);
            *at++ = '\r';
            *at++ = '\n';
        }
    };
    (write(parts), ...);
    out.resize(static_cast<std::size_t>(at - out.data()));
    return out;
}

}  // namespace

std::string format_command(std::span<const std::string_view> argv) {
    return format_parts(argv);
}

std::string format_fcall(std::string_view function, std::span<const std::string> keys,
                         std::span<const std::string> args) {
    std::array<char, 20> digits{};
    const auto count = std::to_chars(digits.data(), digits.data() + digits.size(), keys.size()).ptr;
    const std::array<std::string_view, 3> head{
        "FCALL", function,
        std::string_view(digits.data(), static_cast<std::size_t>(count - digits.data()))};
    return format_parts(head, keys, args);
}

}  // namespace seatlock::redis_detail
