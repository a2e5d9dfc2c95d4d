// SPDX-License-Identifier: MIT
// src/redis/resp_writer.hpp: commands written in RESP, byte for byte as hiredis's
// redisFormatCommandArgv writes them, for the pipelined connection (pipeline.hpp,
// request_queue.hpp). No I/O: a command in, its bytes out.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace seatlock::redis_detail {

/// A command in RESP: "*<argc>\r\n", then "$<length>\r\n<bytes>\r\n" for each argument.
std::string format_command(std::span<const std::string_view> argv);

/// FCALL `function` <number of keys> keys... args..., written from its parts: no argument
/// list is gathered first.
std::string format_fcall(std::string_view function, std::span<const std::string> keys,
                         std::span<const std::string> args);

}  // namespace seatlock::redis_detail
