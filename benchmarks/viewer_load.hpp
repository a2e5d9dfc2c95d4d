// SPDX-License-Identifier: MIT
// benchmarks/viewer_load.hpp: the load of the viewers scenario (viewers.hpp), all of it
// Boost.Asio/Beast clients in this process:
//
// - buyers: keep-alive connections that hold one named seat of the venue and release it,
//   as http_load.hpp's do with general-admission places; each hold's answer names the
//   event version it raised the event to, which the staleness book follows;
// - viewers: a pool of stream viewers (GET /events/{event}/stream, Server-Sent Events) and
//   pollers (GET /events/{event}/seats with If-None-Match, every period), on an
//   io_context and a thread of their own, so that ten thousand open streams are read
//   while the buyers' runner starts and stops its phases;
// - full maps: GET /events/{event}/seats without If-None-Match, as fast as answered.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "async_runner.hpp"
#include "viewer_parts.hpp"

namespace seatlock::bench {

/// What the buyers' answers said.
struct BuyerCounters {
    std::atomic<std::uint64_t> holds{0};
    std::atomic<std::uint64_t> holds_with_version{0};  ///< answers naming the event version
};

/// Connects buyer `index` (before the clock starts) and returns its operation: hold one
/// seat of its own row of `venue` (a zone and row per buyer, the seat in turn), then
/// release it; each hold's answer goes to every book of `books`.
[[nodiscard]] AsyncOperation viewer_buyer(boost::asio::io_context& io, int port,
                                          const VenueShape& venue, int index,
                                          std::vector<StalenessBook*> books,
                                          BuyerCounters& counters);

/// Connects `index` and returns its operation: one GET of the whole seat map of `event`,
/// gzip or not, checked (200, the encoding asked for).
[[nodiscard]] AsyncOperation full_map_get(boost::asio::io_context& io, int port,
                                          const std::string& event, bool gzip, int index);

/// The value of the counter `name` (no labels) in the server's `GET /metrics` answer, read
/// over a connection of its own; throws when the server does not answer 200 or names no
/// such counter.
[[nodiscard]] double server_counter(int port, const std::string& name);

/// What the viewers saw, so far.
struct ViewerCounters {
    std::uint64_t streams_open = 0;   ///< streams that received their first frame
    std::uint64_t frames = 0;         ///< stream events received (snapshot and changes)
    std::uint64_t heartbeats = 0;     ///< stream comments received
    std::uint64_t stream_bytes = 0;   ///< bytes read from streams, heads included
    std::uint64_t dropped = 0;        ///< streams the server closed (or that failed)
    std::uint64_t polls = 0;          ///< poll answers
    std::uint64_t polls_changed = 0;  ///< of which 200 (a new map), the rest 304
    std::uint64_t pollers_ready = 0;  ///< pollers that had their first answer
    std::uint64_t poll_failures = 0;  ///< pollers stopped by a failed poll
};

/// Stream viewers and pollers of one event, on a thread of their own. Each receipt of a
/// version (a frame's id, a poll answer's ETag) goes to the pool's staleness book of its
/// kind. Destroying the pool closes every connection and joins its thread.
class ViewerPool {
public:
    ViewerPool(int port, std::string event, StalenessBook& stream_book, StalenessBook& poll_book);
    ~ViewerPool();
    ViewerPool(const ViewerPool&) = delete;
    ViewerPool& operator=(const ViewerPool&) = delete;

    /// Opens `streams` stream viewers and `pollers` pollers (polling every `period`, at
    /// staggered times), and waits until every one has had its first frame or answer;
    /// throws, saying how many did, when that takes longer than `timeout`.
    void open(int streams, int pollers, std::chrono::milliseconds period,
              std::chrono::seconds timeout);
    [[nodiscard]] ViewerCounters counters() const;

    struct State;  ///< shared with the connections

private:
    std::shared_ptr<State> state_;
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::thread thread_;
};

/// Raises this process's open-file limit to its hard limit: the limit it now has.
std::uint64_t raise_open_files();

}  // namespace seatlock::bench
