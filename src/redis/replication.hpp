// SPDX-License-Identifier: MIT
// src/redis/replication.hpp: what a caller is told when a write was applied on the
// primary but fewer replicas than RedisOptions::replicas_to_ack acknowledged it in time.
#pragma once

#include <seatlock/detail/text.hpp>
#include <seatlock/errors.hpp>
#include <seatlock/vocabulary.hpp>

#include "driver.hpp"

#include <string>
#include <string_view>
#include <type_traits>

namespace seatlock::redis_detail {

// What the applied write was, for the not_replicated failure: the caller learns what it
// holds or owns even though the call failed.
inline void describe(const Hold& h, Failure& f) {
    f.detail += " (hold " + h.token + " of " + detail::join(h.seats) + " in zone " + h.zone + ")";
    f.items = h.seats;
}
inline void describe(const Order& o, Failure& f) {
    f.detail += std::string(" (order ") + o.id + (o.cancelled ? ", cancelled," : "") + " of " +
                detail::join(o.seats) + " in zone " + o.zone + ")";
    f.items = o.seats;
}
inline void describe(std::uint64_t fencing_token, Failure& f) {
    f.detail += " (fencing token " + std::to_string(fencing_token) + ")";
}
template <typename T>
void describe(const T&, Failure&) {}

// `result` as the caller gets it: unchanged unless its write was applied and fewer than
// `wanted` replicas acknowledged it in time; then not_replicated, which says so.
template <typename T>
Result<T> replicated(Result<T> result, const Acks& acks, int wanted, Millis timeout,
                     std::string_view what) {
    if (!result || !acks.asked || (acks.trouble.empty() && acks.count >= wanted)) return result;
    Failure f(errc::not_replicated, std::string(what));
    if constexpr (!std::is_void_v<T>) describe(*result, f);
    f.detail += " was applied on the Redis primary, but ";
    f.detail += acks.trouble.empty()
                    ? std::to_string(acks.count) + " of " + std::to_string(wanted) +
                          " replicas acknowledged it within " + std::to_string(timeout.count()) +
                          " ms"
                    : "whether " + std::to_string(wanted) +
                          " replicas have it is unknown (WAIT: " + acks.trouble + ")";
    f.detail +=
        ": it may be lost if the primary fails before its replicas catch up. It is not undone: "
        "treat it as done, keep your own record of it to restore after a failover, and check "
        "the replicas; sending the call again is safe but does not prove replication";
    f.limit = wanted;
    f.current = acks.trouble.empty() ? acks.count : -1;
    return f;
}

}  // namespace seatlock::redis_detail
