// SPDX-License-Identifier: MIT
// src/redis/reply.hpp: what a Redis function call is (Call: its function, keys,
// arguments, and how its reply reads), and the reading of replies: typed access to a
// reply's elements (Reader), refusals, and the values several operations answer.
#pragma once

#include <seatlock/errors.hpp>
#include <seatlock/vocabulary.hpp>

#include "seatlock_redis_scripts.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace seatlock::redis_detail {

using redis_scripts::Script;

// Durations the scripts accept: positive and at most 10^15 ms, which any real lease or
// hold fits; larger values (e.g. Millis::max() as "forever") are clamped to that.
constexpr std::int64_t max_script_ms = 1'000'000'000'000'000;
// The highest version event_show.lua accepts to raise a version above (2^53 - 2): the
// scripts count in Lua's numbers, doubles, exact up to 2^53.
constexpr EventVersion max_script_version = (EventVersion{1} << 53) - 2;

inline std::string ms(Millis d) {
    return std::to_string(std::clamp<std::int64_t>(d.count(), 0, max_script_ms));
}

inline WallTime wall(std::int64_t server_ms) {
    return WallTime(Millis(server_ms));
}

// A reply that does not have the shape a script promises; turned into protocol_error.
struct BadReply : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Typed access to the elements of a script's reply; throws BadReply on any mismatch.
class Reader {
public:
    explicit Reader(const redisReply* reply) : reply_(reply) {
        if (!reply_ || reply_->type != REDIS_REPLY_ARRAY) throw BadReply("not an array");
    }
    [[nodiscard]] std::size_t size() const { return reply_->elements; }
    [[nodiscard]] const redisReply* at(std::size_t i) const {
        if (i >= reply_->elements) throw BadReply("missing element " + std::to_string(i));
        return reply_->element[i];
    }
    [[nodiscard]] std::string text(std::size_t i) const {
        const redisReply* r = at(i);
        if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
            throw BadReply("element " + std::to_string(i) + " is not a string");
        }
        return {r->str, r->len};
    }
    [[nodiscard]] std::int64_t integer(std::size_t i) const {
        const redisReply* r = at(i);
        if (r->type != REDIS_REPLY_INTEGER)
            throw BadReply("element " + std::to_string(i) + " is not an integer");
        return static_cast<std::int64_t>(r->integer);
    }
    /// An event's version: an integer above 0 (every step that answers one raised it).
    [[nodiscard]] EventVersion version(std::size_t i) const {
        const auto v = integer(i);
        if (v < 1) throw BadReply("element " + std::to_string(i) + " is not a version");
        return static_cast<EventVersion>(v);
    }
    [[nodiscard]] Reader array(std::size_t i) const { return Reader(at(i)); }
    [[nodiscard]] std::vector<std::string> texts(std::size_t i) const {
        const Reader list = array(i);
        std::vector<std::string> out;
        out.reserve(list.size());
        for (std::size_t k = 0; k < list.size(); ++k) out.push_back(list.text(k));
        return out;
    }

private:
    const redisReply* reply_;
};

/// The errc a script names in a refusal; BadReply for a name seatlock does not know.
errc errc_named(const std::string& name);

/// {0, code, detail, items, limit, current}: a refusal, as the in-process backends build it.
Failure refusal(const Reader& r);

/// {1, id, holder, zone, {seats}, token, paid_at, cancelled, version}: an order of `event`.
Order read_order(const Reader& r, const std::string& event);

/// A zone kind as the scripts store and report it: its to_string name.
ZoneKind kind_of(std::string_view text);

/// A hold status as the scripts report it; BadReply for any other word.
HoldStatus status_named(const std::string& text);

/// The "<expires_ms> <version>" of a new hold of named seats; false when `text` is not that.
bool read_expiry_and_version(std::string_view text, std::int64_t& expires, EventVersion& version);

// One FCALL, and how its reply reads (error replies are mapped before `read` sees one).
template <typename T>
struct Call {
    const Script* script = nullptr;
    std::vector<std::string> keys;
    std::vector<std::string> args;
    std::function<Result<T>(const redisReply*)> read;
};

// The usual reading: {1, ...} read by `read`, or a refusal {0, code, ...}.
template <typename T, typename F>
std::function<Result<T>(const redisReply*)> standard(const Script& script, F read) {
    return [name = script.name, read = std::move(read)](const redisReply* reply) -> Result<T> {
        try {
            const Reader r(reply);
            if (r.integer(0) == 0) return refusal(r);
            if constexpr (std::is_void_v<T>) {
                read(r);
                return {};
            } else {
                return read(r);
            }
        } catch (const BadReply& e) {
            return Failure(errc::protocol_error, "unexpected reply from Redis script " +
                                                     std::string(name) + ": " + e.what());
        }
    };
}

// The reading of a call that answers the event's version, a bare integer above 0, when
// done (release), or a refusal.
inline std::function<Result<EventVersion>(const redisReply*)> version_or_refusal(const Script& script) {
    return [read = standard<EventVersion>(script,
                                          [](const Reader&) -> EventVersion {
                                              throw BadReply("neither a version nor a refusal");
                                          })](const redisReply* reply) -> Result<EventVersion> {
        if (reply && reply->type == REDIS_REPLY_INTEGER && reply->integer > 0)
            return static_cast<EventVersion>(reply->integer);
        return read(reply);
    };
}

// The reading of lock_release and lock_extend: 1 or 0.
inline std::function<Result<bool>(const redisReply*)> flag(const Script& script) {
    return [name = script.name](const redisReply* reply) -> Result<bool> {
        if (reply && reply->type == REDIS_REPLY_INTEGER && (reply->integer == 0 || reply->integer == 1))
            return reply->integer == 1;
        return Failure(errc::protocol_error, "unexpected reply from Redis script " +
                                                 std::string(name) + ": not 0 or 1");
    };
}

/// An empty argument list for the function whose arguments `Layout` names
/// (redis_scripts::args::<op>, declared by the function's `--! ARGV` line), with room for
/// `rest` more after its fixed ones:
///     using A = redis_scripts::args::release;
///     auto args = arguments<A>();
///     args[A::token] = token;
template <typename Layout>
std::vector<std::string> arguments(std::size_t rest = 0) {
    std::vector<std::string> out;
    out.reserve(Layout::argc + rest);
    out.resize(Layout::argc);
    return out;
}

template <typename T>
Call<T> make_call(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                  std::function<Result<T>(const redisReply*)> read) {
    return Call<T>{&script, std::move(keys), std::move(args), std::move(read)};
}

}  // namespace seatlock::redis_detail
