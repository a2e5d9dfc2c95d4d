// SPDX-License-Identifier: MIT
// src/redis/request_queue.cpp: RequestQueue, the pipelined connection's protocol logic.
#include "request_queue.hpp"

#include <hiredis/hiredis.h>

#include <iterator>

#include "resp_writer.hpp"
#include "seatlock_redis_scripts.hpp"

namespace seatlock::redis_detail {

namespace {

// An FCALL waits for at most this many FUNCTION LOADs: a FUNCTION FLUSH may land
// between the load and the call again.
constexpr int max_loads = 2;

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

std::string_view error_text(const redisReply& reply) {
    return reply.type == REDIS_REPLY_ERROR ? std::string_view(reply.str, reply.len)
                                           : std::string_view();
}

}  // namespace

std::string RequestQueue::Request::named() const {
    return kind == Kind::fcall ? "FCALL " + what : what;
}

RequestQueue::RequestQueue(const RedisOptions& options, std::string where)
    : options_(options), where_(std::move(where)) {}

std::size_t RequestQueue::write_handshake(std::string& out, Clock::time_point now) {
    const auto deadline = now + options_.command_timeout;
    std::size_t count = 0;
    auto add = [&](Kind kind, std::string what, std::span<const std::string_view> argv) {
        out.append(format_command(argv));
        if (count++ == 0) handshake_first_ = what;
        written_.push_back(Request{kind, {}, std::move(what), {}, 0, deadline});
    };
    if (!options_.password.empty()) {
        if (options_.user.empty()) {
            const std::string_view argv[] = {"AUTH", options_.password};
            add(Kind::auth, "AUTH", argv);
        } else {
            const std::string_view argv[] = {"AUTH", options_.user, options_.password};
            add(Kind::auth, "AUTH", argv);
        }
    }
    if (options_.db != 0) {
        const std::string db = std::to_string(options_.db);
        const std::string_view argv[] = {"SELECT", db};
        add(Kind::select, "SELECT", argv);
    }
    if (count == 0 && options_.tls.enabled) {
        const std::string_view argv[] = {"PING"};
        add(Kind::ping, "PING", argv);
    }
    handshake_pending_ = count;
    return count;
}

std::size_t RequestQueue::write(std::string& out, Clock::time_point now) {
    const auto deadline = now + options_.command_timeout;
    std::size_t count = unwritten_.size();
    for (auto& r : unwritten_) {
        if (r.asking) {
            // Redis forgets ASKING after one command: it is written again with each send
            // of the request (after a FUNCTION LOAD too), right before it.
            static const std::string_view asking_argv[] = {"ASKING"};
            static const std::string asking_command = format_command(asking_argv);
            out.append(asking_command);
            ++count;
            written_.push_back(Request{Kind::asking, {}, "ASKING", {}, 0, deadline});
        }
        out.append(r.command);
        if (r.kind != Kind::fcall) r.command = {};
        r.deadline = deadline;
        written_.push_back(std::move(r));
    }
    unwritten_.clear();
    return count;
}

RequestQueue::Answer RequestQueue::on_reply(ReplyPtr reply) {
    Answer answer;
    Request r = pop(written_);
    const std::string_view error = error_text(*reply);
    switch (r.kind) {
        case Kind::command:
            break;
        case Kind::fcall:
            // Nothing ran: the call may go again once the library is loaded.
            if (starts_with(error, "ERR Function not found") && r.loads < max_loads) {
                ++r.loads;
                load_waiters_.push_back(std::move(r));
                request_load();
                return answer;
            }
            break;
        case Kind::load:
            load_pending_ = false;
            // "ERR Library ... already exists": another client loaded the same text.
            if (error.empty() || starts_with(error, "ERR Library")) {
                answer.library_loaded = error.empty();
                requeue_load_waiters();
                return answer;
            }
            answer.verdict = Verdict::load_refused;
            answer.failure = error_reply_failure(
                error, "Redis FUNCTION LOAD " + std::string(redis_scripts::library_name));
            return answer;
        case Kind::asking:
            return answer;  // a refusal shows in the reply of the request it precedes
        case Kind::auth:
        case Kind::select:
        case Kind::ping:
            if (!error.empty()) {
                answer.verdict = Verdict::handshake_refused;
                answer.failure = handshake_refusal(r.kind, error);
                return answer;
            }
            answer.verdict =
                --handshake_pending_ == 0 ? Verdict::handshake_done : Verdict::handshake_step;
            return answer;
    }
    answer.verdict = Verdict::deliver;
    answer.request = std::move(r);
    answer.reply = std::move(reply);
    return answer;
}

std::optional<RequestQueue::Request> RequestQueue::take_written() {
    while (!written_.empty()) {
        Request r = pop(written_);
        switch (r.kind) {
            case Kind::command:
            case Kind::fcall:
                return r;
            case Kind::load:
                // Its FCALLs did not run ("Function not found"): they go again.
                load_pending_ = false;
                requeue_load_waiters();
                break;
            case Kind::auth:
            case Kind::select:
            case Kind::ping:
            case Kind::asking:
                break;
        }
    }
    return std::nullopt;
}

std::optional<RequestQueue::Request> RequestQueue::take_unreadable() {
    if (written_.empty()) return std::nullopt;
    const Kind kind = written_.front().kind;
    if (kind != Kind::command && kind != Kind::fcall) return std::nullopt;
    return pop(written_);
}

std::optional<RequestQueue::Request> RequestQueue::take_unwritten() {
    while (!unwritten_.empty()) {
        Request r = pop(unwritten_);
        if (r.kind != Kind::load) return r;
        // The FCALLs waiting for this load fail with the rest, first.
        load_pending_ = false;
        requeue_load_waiters();
    }
    return take_load_waiter();
}

std::optional<RequestQueue::Request> RequestQueue::take_load_waiter() {
    load_pending_ = false;
    if (load_waiters_.empty()) return std::nullopt;
    return pop(load_waiters_);
}

Failure RequestQueue::maybe_applied(const Request& r, std::string_view why) const {
    return Failure(errc::outcome_unknown, r.named() + " was sent to Redis at " + where_ + " but " +
                                              std::string(why) +
                                              ": it may or may not have been applied");
}

Failure RequestQueue::unanswered_handshake(std::string_view why) const {
    return Failure(errc::connection_failed, "Redis at " + where_ + " did not answer " +
                                                handshake_first_ + ": " + std::string(why));
}

RequestQueue::Request RequestQueue::pop(std::deque<Request>& from) {
    Request r = std::move(from.front());
    from.pop_front();
    return r;
}

// One FUNCTION LOAD at a time, ahead of everything unwritten: FCALLs already waiting would
// only meet "Function not found" too.
void RequestQueue::request_load() {
    if (load_pending_) return;
    load_pending_ = true;
    const std::string_view argv[] = {"FUNCTION", "LOAD", redis_scripts::library};
    unwritten_.push_front(Request{Kind::load, format_command(argv), "FUNCTION LOAD", {}, 0, {}});
}

void RequestQueue::requeue_load_waiters() {
    unwritten_.insert(unwritten_.begin(), std::make_move_iterator(load_waiters_.begin()),
                      std::make_move_iterator(load_waiters_.end()));
    load_waiters_.clear();
}

Failure RequestQueue::handshake_refusal(Kind kind, std::string_view message) const {
    const std::string text(message);
    if (kind == Kind::auth) {
        return Failure(errc::auth_failed,
                       "Redis at " + where_ + " refused AUTH" +
                           (options_.user.empty() ? "" : " for user " + options_.user) + ": " +
                           text);
    }
    const bool denied = starts_with(text, "NOAUTH") || starts_with(text, "NOPERM");
    const std::string refused =
        kind == Kind::ping ? std::string("PING") : "SELECT " + std::to_string(options_.db);
    return Failure(denied ? errc::auth_failed : errc::connection_failed,
                   "Redis at " + where_ + " refused " + refused + ": " + text);
}

}  // namespace seatlock::redis_detail
