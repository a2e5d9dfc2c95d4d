// SPDX-License-Identifier: MIT
// src/redis/codec.hpp: how RedisBackend runs an operation. Each operation of op::all has a
// Codec (src/redis/codecs/*.hpp), its Redis encoding and the reading of its reply, in one
// of two forms:
//
//   - one function call: `static Result<Call<T>> call(const Context&, const Op&)` builds
//     the call (its Lua function, keys and arguments, and how its reply reads), or refuses
//     the input before anything is sent;
//   - several commands: `template <class Exec, class Done> static void run(Exec, const Op&,
//     Done)` chains them through an Exec and calls `done(Result<T>)` once at the end.
//
// An Exec (redis_backend.cpp) is where the calls go: BlockingExec waits for each reply in
// the caller's thread, AsyncExec sends it on a pipelined connection and continues where
// the reply is read. Both offer:
//   const Context& context() const;
//   void call(Call<T>, Then);                     // Then: void(Result<T>)
//   void command(std::vector<std::string>, Then); // Then: void(Result<ReplyPtr>); routed
//                                                 // by argv[1], the key it names
// So each operation is written once, for both APIs; RedisBackend::run and async_run are
// one template each over every Codec.
#pragma once

#include <seatlock/operations.hpp>
#include <seatlock/redis/key_layout.hpp>

#include "driver.hpp"
#include "reply.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace seatlock::redis_detail {

/// What an encoding needs to know of the backend.
struct Context {
    const KeyLayout& keys;
    bool on_cluster = false;
    /// RedisOptions::change_log_limit, as digits: the ARGV log_limit of every function
    /// that can write to an event (common_records.lua, arg_log).
    std::string log_limit = "1";

    /// The four keys every hold function receives first (lua/common.lua, check_keys).
    [[nodiscard]] std::vector<std::string> event_keys(const std::string& event) const {
        std::vector<std::string> out;
        out.reserve(6);
        for (const char* kind : {"event", "paid", "deadlines", "expired"}) {
            out.push_back(keys.event_key(kind, event));
        }
        return out;
    }
};

/// An operation's Redis encoding and reply (src/redis/codecs). A missing one is a compile
/// error where RedisBackend instantiates run and async_run for every operation.
template <typename Op>
struct Codec;

/// Whether Codec<Op> makes one function call (else it chains several commands: a run).
template <typename Op>
concept single_call = requires(const Context& context, const Op& operation) {
    Codec<Op>::call(context, operation);
};

/// A completion shared by the steps of a chain (a callback of a pipelined connection must
/// be copyable; completions are not).
template <typename Done>
auto share(Done done) {
    return std::make_shared<Done>(std::move(done));
}

}  // namespace seatlock::redis_detail
