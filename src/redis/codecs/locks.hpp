// SPDX-License-Identifier: MIT
// src/redis/codecs/locks.hpp: the lock operations' Redis encodings and replies
// (lua/lock_*.lua). See codec.hpp for the two forms a Codec takes.
#pragma once

#include <seatlock/detail/text.hpp>
#include <seatlock/keys.hpp>

#include "../codec.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace seatlock::redis_detail {

namespace lock_codec {

// On a Redis Cluster each lock group is one hash slot, and one call cannot span two: a
// lock over keys of different groups is refused before anything is sent (even when two
// groups happen to share a slot, so that the answer never depends on hashing).
inline Result<void> one_group(const Context& c, std::span<const std::string> ks) {
    if (!c.on_cluster || ks.empty()) return {};
    const std::string first = KeyLayout::lock_tag(ks.front());
    for (const auto& key : ks) {
        if (KeyLayout::lock_tag(key) != first) {
            return Failure(errc::invalid_argument,
                           "lock keys " + ks.front() + " and " + key +
                               " are in different groups, which a Redis Cluster keeps in "
                               "different hash slots: lock together only keys of one group");
        }
    }
    return {};
}

inline std::vector<std::string> lock_keys(const Context& c, std::span<const std::string> ks) {
    std::vector<std::string> out;
    out.reserve(ks.size());
    for (const auto& key : ks) out.push_back(c.keys.lock_key(key));
    return out;
}

// release_locks and extend_locks, on keys the owner holds: true at once for no key, else
// one call answering 1 or 0.
template <typename Exec, typename Done>
void owned_call(Exec exec, std::span<const std::string> ks, const Script& script,
                std::vector<std::string> args, Done done) {
    if (ks.empty()) return done(true);
    if (auto ok = one_group(exec.context(), ks); !ok) return done(std::move(ok).error());
    exec.call(make_call<bool>(script, lock_keys(exec.context(), ks), std::move(args), flag(script)),
              std::move(done));
}

}  // namespace lock_codec

template <>
struct Codec<op::acquire_locks> {
    static Result<Call<std::uint64_t>> call(const Context& c, const op::acquire_locks& o) {
        if (o.keys.empty()) return Failure(errc::invalid_argument, "no key to lock");
        if (auto ok = lock_codec::one_group(c, o.keys); !ok) return std::move(ok).error();
        std::vector<std::string> redis_keys = lock_codec::lock_keys(c, o.keys);
        std::vector<std::string> fences;
        for (const auto& key : o.keys) {
            std::string fence = c.keys.fence_key(key);
            if (std::find(fences.begin(), fences.end(), fence) == fences.end())
                fences.push_back(std::move(fence));
        }
        redis_keys.insert(redis_keys.end(), fences.begin(), fences.end());
        std::vector<std::string> names(o.keys.begin(), o.keys.end());
        using A = redis_scripts::args::lock_acquire;
        auto args = arguments<A>();
        args[A::owner] = o.owner;
        args[A::lease] = ms(std::max(o.lease, Millis(1)));
        args[A::n] = std::to_string(o.keys.size());
        return make_call<std::uint64_t>(
            redis_scripts::lock_acquire, std::move(redis_keys), std::move(args),
            [names = std::move(names)](const redisReply* reply) -> Result<std::uint64_t> {
                try {
                    // The fencing token, or the indexes of the keys held by others.
                    if (reply && reply->type == REDIS_REPLY_INTEGER) {
                        if (reply->integer < 1) throw BadReply("fencing token below 1");
                        return static_cast<std::uint64_t>(reply->integer);
                    }
                    const Reader busy(reply);
                    if (busy.size() == 0) throw BadReply("no busy key");
                    std::vector<std::string> held;
                    for (std::size_t i = 0; i < busy.size(); ++i) {
                        const auto index = busy.integer(i);
                        if (index < 1 || static_cast<std::size_t>(index) > names.size())
                            throw BadReply("bad key index");
                        held.push_back(names[static_cast<std::size_t>(index - 1)]);
                    }
                    return detail::keys_busy(std::move(held));
                } catch (const BadReply& e) {
                    return Failure(errc::protocol_error,
                                   std::string("unexpected reply from Redis script lock_acquire: ") +
                                       e.what());
                }
            });
    }
};

template <>
struct Codec<op::release_locks> {
    template <typename Exec, typename Done>
    static void run(Exec exec, const op::release_locks& o, Done done) {
        using A = redis_scripts::args::lock_release;
        auto args = arguments<A>();
        args[A::owner] = o.owner;
        lock_codec::owned_call(std::move(exec), o.keys, redis_scripts::lock_release, std::move(args),
                               std::move(done));
    }
};

template <>
struct Codec<op::extend_locks> {
    template <typename Exec, typename Done>
    static void run(Exec exec, const op::extend_locks& o, Done done) {
        using A = redis_scripts::args::lock_extend;
        auto args = arguments<A>();
        args[A::owner] = o.owner;
        args[A::lease] = ms(std::max(o.lease, Millis(1)));
        lock_codec::owned_call(std::move(exec), o.keys, redis_scripts::lock_extend, std::move(args),
                               std::move(done));
    }
};

template <>
struct Codec<op::raise_fencing> {
    static Result<Call<void>> call(const Context& c, const op::raise_fencing& o) {
        if (!is_valid_lock_key(o.key)) return Failure(errc::invalid_argument, "invalid lock key");
        using A = redis_scripts::args::lock_fence;
        auto args = arguments<A>();
        args[A::at_least] = std::to_string(o.at_least);
        return make_call<void>(redis_scripts::lock_fence, {c.keys.fence_key(o.key)}, std::move(args),
                               standard<void>(redis_scripts::lock_fence, [](const Reader&) {}));
    }
};

}  // namespace seatlock::redis_detail
