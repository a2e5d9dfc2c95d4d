// SPDX-License-Identifier: MIT
// benchmarks/http_load.hpp: the load generator of the http_hold+release scenario, a client of
// the benchmark's own (Boost.Beast) rather than wrk: each slot of AsyncRunner is one
// keep-alive connection that loops over "POST a hold of 1 general-admission place, then
// DELETE it", and every answer is checked (201, then 204), so that a server that fails is
// a failed run, not a fast one. All connections share one thread, as wrk's would.
//
// Buyers are drawn at random, a thousand per connection: no two connections share one, so
// the 3-seat limit per buyer never refuses a hold. They are named by X-User-Id (a server
// started with --trust-user-header), or, given the server's session key, by a session
// token each: signed here, as the server signs them (session.hpp's format), before the
// clock starts, and sent as Authorization: Bearer.
#pragma once

#include <boost/asio/io_context.hpp>
#include <string>

#include "async_runner.hpp"

namespace seatlock::bench {

/// Where the holds go: an event and a general-admission zone of the server's venue.
struct HttpTarget {
    int port = 0;
    std::string event = "demo-game";
    std::string zone = "bleachers-left";
    /// The server's session key (--session-key-file): buyers send session tokens. Empty:
    /// X-User-Id.
    std::string session_key = {};
};

/// Connects slot `index` to the server (before the clock starts) and returns its
/// operation: one hold and its release, completing on `io`.
[[nodiscard]] AsyncOperation http_hold_release(boost::asio::io_context& io,
                                               const HttpTarget& target, int index);

}  // namespace seatlock::bench
