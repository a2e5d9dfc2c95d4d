// SPDX-License-Identifier: MIT
// src/redis/pipeline.cpp: Pipeline: the requests of callers' threads handed to the
// strand, the RequestQueue (request_queue.hpp) driven by what happens on the connection,
// replies and failures handed to callers, and the pipeline closed (destructor, close()).
// The connection itself (connect, AUTH/SELECT, back-off, reads, writes, the reply timer)
// is pipeline_connection.cpp's; the queue decides, this file and that one act.
//
// A request moves through: inbox (any thread, under inbox_mutex) -> the queue (the strand's).
#include "pipeline.hpp"

#include <boost/asio/post.hpp>
#include <string_view>

#include "pipeline_state.hpp"
#include "resp_writer.hpp"
#include "tls.hpp"

namespace seatlock::redis_detail {

namespace asio = boost::asio;
using pipeline_io::Clock;
using pipeline_io::error_code;

void Pipeline::State::submit(Request r) {
    counters->add(counters->in_flight);
    if (observed) r.given = Clock::now();
    {
        std::unique_lock lock(inbox_mutex);
        if (!closed) {
            inbox.push_back(std::move(r));
            if (drain_posted) return;  // one pending drain takes everything
            drain_posted = true;
            lock.unlock();
            asio::post(strand, [self = shared_from_this()] {
                std::lock_guard guard(self->mutex);
                if (!self->closed) self->pump();
            });
            return;
        }
    }
    // After close(), or a callback of this pipeline calling it while it is destroyed.
    complete(r, not_sent(r));
}

// The work of the destructor (`by_close` false) and of close(): fail everything
// pending, now. The first of them decides how later requests fail.
void Pipeline::State::shut_down(bool by_close) {
    std::vector<Request> arrived;
    {
        std::lock_guard lock(inbox_mutex);
        if (!closed) closed_by_close = by_close;
        closed = true;
        arrived.swap(inbox);
    }
    for (auto& r : arrived) queue.push(std::move(r));
    retry_timer.cancel();
    close_link();
    const std::string why = std::string("the ") + (closed_by_close ? "backend" : "pipeline") +
                            " was closed before the reply";
    while (auto r = queue.take_written()) complete(*r, queue.maybe_applied(*r, why));
    while (auto r = queue.take_unwritten()) complete(*r, not_sent(*r));
}

// Moves what arrived into the queue and sends it, connecting first when needed.
void Pipeline::State::pump() {
    std::vector<Request> arrived;
    {
        std::lock_guard lock(inbox_mutex);
        arrived.swap(inbox);
        drain_posted = false;
    }
    for (auto& r : arrived) queue.push(std::move(r));
    if (!queue.has_unwritten()) return;
    switch (phase) {
        case Phase::down:
            start_connect();
            return;
        case Phase::up:
            if (link->writing) return;
            // An idle connection has no read pending: one the server closed meanwhile
            // (restart, CLIENT KILL, idle timeout) is noticed here, before a request is
            // written to it and lost with it.
            if (!link->reading) {
                if (const char* why = closed_by_peer(*link)) {
                    lost(why, false);
                    return;
                }
            }
            write(false);
            return;
        case Phase::waiting:
        case Phase::connecting:
        case Phase::handshaking:
            return;  // the queue goes out once the connection is up
    }
}

void Pipeline::State::on_reply(RequestQueue::Answer answer) {
    using Verdict = RequestQueue::Verdict;
    switch (answer.verdict) {
        case Verdict::deliver:
            complete(answer.request, std::move(answer.reply));
            return;
        case Verdict::none:
            if (answer.library_loaded)
                emit(RedisEvent::Kind::library_loaded, std::string(redis_scripts::library_name));
            return;
        case Verdict::handshake_step:
            return;
        case Verdict::handshake_done:
            phase = Phase::up;  // on_read's pump sends what waited
            return;
        case Verdict::handshake_refused:
            disconnected(answer.failure->code, answer.failure->detail);
            close_link();
            note_failure();  // wrong credentials must not make the pipeline spin either
            while (queue.take_written()) {
            }  // only the handshake's own requests are written while it runs
            fail_unwritten(*answer.failure);
            return;
        case Verdict::load_refused:
            while (auto r = queue.take_load_waiter()) {
                complete(*r, *answer.failure);
                if (closed) return;
            }
            return;
    }
}

// The connection is gone. What was written may have run: outcome_unknown. What was
// not stays queued for the next connection.
void Pipeline::State::lost(const std::string& reason, bool timed_out) {
    // Replies already read are answers, not losses: hand those a turn left for later.
    if (link->handing) {
        link->handing = false;
        const auto l = link;  // a copy: a reply or callback may end `link` meanwhile
        if (hand_parsed(l, queue.written()) == Handed::ended) return;
    }
    const bool handshaking = phase == Phase::handshaking;
    if (!link->answered) note_failure();
    close_link();
    const std::string why = timed_out ? "no reply came within " +
                                            std::to_string(options.command_timeout.count()) + " ms"
                                      : "the connection broke before the reply (" + reason + ")";
    disconnected(make_error_code(timed_out                               ? errc::timeout
                                 : reason.rfind("unreadable", 0) == 0 ? errc::protocol_error
                                                                      : errc::io_error),
                 timed_out ? why : reason);
    while (auto r = queue.take_written()) {
        complete(*r, queue.maybe_applied(*r, why));
        if (closed) return;
    }
    if (handshaking) {
        fail_unwritten(queue.unanswered_handshake(why));
        if (closed) return;
    }
    pump();
}

// The stream is out of step: the oldest request gets protocol_error, and no later
// reply on this connection can be matched to its request.
void Pipeline::State::unreadable(const std::string& reason) {
    if (auto r = queue.take_unreadable()) {
        complete(*r,
                 Failure(errc::protocol_error,
                         r->named() + ": unreadable reply from Redis at " + where + ": " + reason));
        if (closed) return;
    }
    lost("unreadable reply: " + reason, false);
}

void Pipeline::State::fail_unwritten(const Failure& failure) {
    while (auto r = queue.take_unwritten()) {
        complete(*r, failure);
        if (closed) return;
    }
}

// A request failed by shut_down, or made after it.
Failure Pipeline::State::not_sent(const Request& r) const {
    if (closed_by_close) {
        return Failure(errc::connection_failed, r.named() + " was not sent to Redis at " + where +
                                                    ": the backend was closed");
    }
    return Failure(errc::io_error,
                   r.named() + " was not sent to Redis at " + where + ": the pipeline was closed");
}

void Pipeline::State::complete(Request& r, Result<ReplyPtr> result) {
    if (!r.done) return;
    counters->remove_in_flight();
    if (observed && r.given != Clock::time_point{}) {
        const auto took = Clock::now() - r.given;
        if (telemetry->slow(took)) {
            RedisEvent event;
            event.kind = RedisEvent::Kind::slow_call;
            event.connection = counters->connection;
            event.node = where;
            event.reason = r.named();
            event.took = std::chrono::duration_cast<std::chrono::microseconds>(took);
            telemetry->emit(std::move(event));
        }
    }
    auto done = std::move(r.done);
    done(std::move(result));
}

void Pipeline::State::emit(RedisEvent::Kind kind, std::string reason) const {
    if (observed) telemetry->emit(kind, counters->connection, where, std::move(reason));
}

void Pipeline::State::disconnected(std::error_code code, const std::string& why) const {
    if (!observed) return;
    RedisEvent event;
    event.kind = RedisEvent::Kind::disconnected;
    event.connection = counters->connection;
    event.node = where;
    event.reason = why;
    event.error = code;
    telemetry->emit(std::move(event));
}

Pipeline::Pipeline(asio::any_io_executor executor, RedisOptions options,
                   std::shared_ptr<asio::ssl::context> tls, std::shared_ptr<Telemetry> telemetry,
                   std::shared_ptr<ConnectionCounters> counters) {
    if (options.tls.enabled && !tls) tls = make_tls_context(options.tls);
    if (!options.tls.enabled) tls.reset();
    state_ = std::make_shared<State>(std::move(executor), std::move(options), std::move(tls),
                                     std::move(telemetry), std::move(counters));
}

Pipeline::~Pipeline() {
    close_as(false);
}

void Pipeline::close() {
    close_as(true);
}

void Pipeline::close_as(bool by_close) {
    // Inside one of this pipeline's callbacks the running handler already holds the mutex.
    if (state_->strand.running_in_this_thread()) {
        state_->shut_down(by_close);
        return;
    }
    std::lock_guard lock(state_->mutex);
    state_->shut_down(by_close);
}

void Pipeline::exec(std::vector<std::string> argv, Callback done, bool asking) {
    if (argv.empty())
        throw Error(make_error_code(errc::invalid_argument), "Pipeline::exec: no command");
    const std::vector<std::string_view> views(argv.begin(), argv.end());
    state_->submit(State::Request{
        State::Kind::command, format_command(views), argv.front(), std::move(done), 0, {}, asking});
}

void Pipeline::fcall(const redis_scripts::Script& script, std::vector<std::string> keys,
                     std::vector<std::string> args, Callback done, bool asking) {
    state_->submit(State::Request{State::Kind::fcall,
                                  format_fcall(script.function, keys, args),
                                  std::string(script.name),
                                  std::move(done),
                                  0,
                                  {},
                                  asking});
}

Pipeline::Stats Pipeline::stats() const {
    const ConnectionCounters& c = *state_->counters;
    return {c.sent.load(std::memory_order_relaxed), c.writes.load(std::memory_order_relaxed),
            c.reads.load(std::memory_order_relaxed), c.connects.load(std::memory_order_relaxed)};
}

}  // namespace seatlock::redis_detail
