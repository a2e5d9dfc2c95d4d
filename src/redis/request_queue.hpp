// SPDX-License-Identifier: MIT
// src/redis/request_queue.hpp: the protocol logic of one pipelined Redis connection,
// without I/O: no socket, no timer, no executor. The connection (pipeline.cpp) feeds it
// events (requests, parsed replies, the time, a lost connection) and does what it answers.
//
// It decides what is written next, matches replies to requests first in, first out (Redis
// answers a connection's commands in the order it received them), holds callers' requests
// back behind AUTH/SELECT, reloads the function library for FCALLs answered "Function not
// found" (nothing ran: they are sent again), applies the command timeout given the time,
// and says, when the connection is lost, which requests may have run (outcome_unknown) and
// which go again on the next connection.
//
// A request moves through: unwritten (waiting for a connection or for the write in flight)
// -> written (waiting for its reply). An FCALL answered "Function not found" waits for the
// FUNCTION LOAD queued ahead of everything, then goes back to the front of the unwritten.
//
// It never calls a callback: it hands back the request whose turn it is, and the
// connection calls it (a callback may send requests or close the connection; the queue is
// in a consistent state between any two calls).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <seatlock/backends/redis.hpp>
#include <string>
#include <string_view>

#include "connection_pool.hpp"

namespace seatlock::redis_detail {

class RequestQueue {
public:
    using Clock = std::chrono::steady_clock;
    using Callback = std::function<void(Result<ReplyPtr>)>;

    // The connection's own requests (AUTH, SELECT, PING, FUNCTION LOAD, ASKING) have no
    // callback: their replies steer the connection instead. ASKING goes just before a
    // request that a Cluster's ASK redirection sent here. PING is the handshake of a TLS
    // connection that has neither AUTH nor SELECT (Pipeline's constructor says why).
    enum class Kind { command, fcall, auth, select, ping, load, asking };

    struct Request {
        Kind kind = Kind::command;
        std::string command;  // its RESP; kept after writing only for an FCALL, which may go again
        std::string what;     // the command ("INCR") or, for an FCALL, the function ("hold")
        Callback done;
        int loads = 0;  // FUNCTION LOADs this FCALL waited for
        Clock::time_point deadline{};
        bool asking = false;  // ASKING goes just before it, every time it is written
        Clock::time_point given{};  // when a caller gave it, for slow_call events (else unset)

        /// How messages name it: "INCR", "FCALL hold".
        [[nodiscard]] std::string named() const;
    };

    /// What a reply means for the connection.
    enum class Verdict {
        deliver,            ///< `request`'s answer: hand it `reply`
        none,               ///< nothing to hand (ASKING, a load, an FCALL waiting for a load)
        handshake_step,     ///< AUTH or SELECT accepted, another still unanswered
        handshake_done,     ///< the last of them accepted: callers' requests may go
        handshake_refused,  ///< `failure`: close the connection, fail what is unwritten
        load_refused,       ///< `failure`: fail every FCALL waiting for the load
    };
    struct Answer {
        Verdict verdict = Verdict::none;
        bool library_loaded = false;  // a FUNCTION LOAD of this connection was accepted
        Request request;  // deliver
        ReplyPtr reply;   // deliver
        std::optional<Failure> failure;
    };

    /// What the reply timer finds.
    enum class Deadline {
        none,     ///< nothing written waits for a reply
        later,    ///< wait again, until oldest_deadline()
        overdue,  ///< no reply within command_timeout: the connection is lost
    };

    /// `options` (for AUTH, SELECT, the timeout and messages) must outlive the queue;
    /// `where` names the server in messages.
    RequestQueue(const RedisOptions& options, std::string where);

    /// A caller's request, to be written after those already waiting.
    void push(Request r) { unwritten_.push_back(std::move(r)); }

    [[nodiscard]] bool has_unwritten() const noexcept { return !unwritten_.empty(); }
    [[nodiscard]] bool has_written() const noexcept { return !written_.empty(); }
    /// How many written requests (the connection's own included) wait for their reply.
    [[nodiscard]] std::size_t written() const noexcept { return written_.size(); }
    /// Nothing written waits for a reply and nothing waits to be written.
    [[nodiscard]] bool idle() const noexcept { return written_.empty() && unwritten_.empty(); }

    /// A new connection's AUTH and SELECT (over TLS, PING when neither), appended to `out`
    /// and counted as written; 0 when the options need none (callers' requests may go at
    /// once).
    std::size_t write_handshake(std::string& out, Clock::time_point now);

    /// Every unwritten request appended to `out` (ASKING before those that need it), each
    /// due by now + command_timeout. Answers how many commands that is.
    std::size_t write(std::string& out, Clock::time_point now);

    /// The reply to the oldest written request. Call only while has_written().
    Answer on_reply(ReplyPtr reply);

    /// When the reply timer fires at `now`. `reply_waiting()` says whether bytes already
    /// read or waiting in the socket may be the oldest request's reply (the connection was
    /// busy, not the server late): then it gets a short grace instead of being overdue.
    template <typename ReplyWaiting>
    Deadline on_timer(Clock::time_point now, ReplyWaiting&& reply_waiting);
    /// The deadline of the oldest written request. Call only while has_written().
    [[nodiscard]] Clock::time_point oldest_deadline() const { return written_.front().deadline; }

    /// The connection is gone: the next written request that may have run, to fail with
    /// maybe_applied(). FCALLs waiting for a FUNCTION LOAD that was written go back to the
    /// front of the unwritten (nothing ran); the connection's own requests are dropped.
    /// nullopt once nothing written is left.
    std::optional<Request> take_written();
    /// The oldest written request, when it is a caller's, for a reply that cannot be read.
    std::optional<Request> take_unreadable();
    /// The next unwritten request (FCALLs waiting for a load among them), to fail; nullopt
    /// once none is left.
    std::optional<Request> take_unwritten();
    /// The next FCALL waiting for a load that was refused; nullopt once none is left.
    std::optional<Request> take_load_waiter();
    /// The connection closed: a new one starts with a new handshake.
    void disconnected() noexcept { handshake_pending_ = 0; }

    /// outcome_unknown for a written request whose reply will not come, and why.
    [[nodiscard]] Failure maybe_applied(const Request& r, std::string_view why) const;
    /// connection_failed for requests held back behind a handshake the server left unanswered.
    [[nodiscard]] Failure unanswered_handshake(std::string_view why) const;

private:
    static Request pop(std::deque<Request>& from);
    void request_load();
    void requeue_load_waiters();
    [[nodiscard]] Failure handshake_refusal(Kind kind, std::string_view message) const;

    const RedisOptions& options_;
    const std::string where_;
    std::deque<Request> unwritten_;
    std::deque<Request> written_;
    std::deque<Request> load_waiters_;
    bool load_pending_ = false;  // a FUNCTION LOAD is unwritten or written
    std::size_t handshake_pending_ = 0;
    std::string handshake_first_;  // "AUTH" or "SELECT", for messages
};

template <typename ReplyWaiting>
RequestQueue::Deadline RequestQueue::on_timer(Clock::time_point now, ReplyWaiting&& reply_waiting) {
    if (written_.empty()) return Deadline::none;
    if (written_.front().deadline > now) return Deadline::later;
    if (reply_waiting()) {
        written_.front().deadline = now + std::min<Clock::duration>(options_.command_timeout,
                                                                    std::chrono::milliseconds(10));
        return Deadline::later;
    }
    return Deadline::overdue;
}

}  // namespace seatlock::redis_detail
