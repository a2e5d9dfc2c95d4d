// SPDX-License-Identifier: MIT
// seatlock/detail/async_locks.hpp: the asynchronous side of locks, on Asio timers.
//
// The rules are the blocking side's (Acquisition, ReleaseAttempts, after_renewal in
// lock_manager.hpp and watchdog.hpp): what to send and what each answer means. Here they
// are driven by timers on the caller's executor (StepTimer: Asio steady timers, or the
// manager's LockClock when it has one) instead of sleeps and a thread:
// - AsyncAcquire: sends, pauses on a timer while a key is busy, honours the handler's
//   cancellation slot, and leaves no lock behind when cancelled;
// - AsyncRelease: a release and its retries in transit, reporting to a callback once the
//   inline budget (LockOptions::release_retry_inline) is spent, then going on alone;
// - AsyncRenewal: the watchdog of one guard, renewing every lease/3.
// Each lives in a shared_ptr for as long as a timer or a backend call refers to it, and
// works on a strand of the caller's executor, so backend completions from another thread
// and cancellation from the caller never race with it. Each also counts as outstanding
// work of that executor's context while it lives: io_context::run() returns only once the
// last release, renewal or wait has ended, so destroying the context after run() is safe.
//
// A handler whose executor runs on Asio's system context (use_future's promise executor,
// which belongs to its one promise; a callback with no executor bound) has no executor of
// its own to run steps on after it has completed: nothing could wait for them, and an
// exception in one would reach a promise already satisfied. What such a guard does later
// is the manager's background thread's, as for a guard acquired blocking (has_own_executor).
#pragma once

#include <seatlock/detail/acquisition.hpp>
#include <seatlock/detail/async.hpp>
#include <seatlock/detail/watchdog.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace seatlock::detail {

/// The strand each asynchronous lock step runs on. It is made from a tracked executor
/// (see tracked()): a backend's thread that hands a reply to the strand holds a copy of
/// it until its dispatch returns, and the caller's io_context must not run out of work,
/// and be destroyed, before that copy is gone.
using Strand = boost::asio::strand<boost::asio::any_io_executor>;

/// The executor a handler's timers run on: its associated executor.
template <typename Handler>
boost::asio::any_io_executor timer_executor(const Handler& handler) {
    return boost::asio::any_io_executor(boost::asio::get_associated_executor(handler));
}

/// Whether a handler with this associated executor has an executor of its own to run a
/// guard's later steps on (renewals, a release going on after the handler completed):
/// not when it runs on Asio's system context. That is use_future's promise executor, which
/// belongs to one promise (run after the promise is satisfied, an exception would throw
/// future_error from Asio's thread), and the system_executor of a callback with no
/// executor bound; no io_context::run() waits for either, so work left there could outlive
/// the backend. Those steps go to the manager's background thread instead.
inline bool has_own_executor(const boost::asio::any_io_executor& executor) {
    namespace execution = boost::asio::execution;
    return &boost::asio::query(executor, execution::context) !=
           &boost::asio::query(boost::asio::system_executor(), execution::context);
}

/// The executor of the steps of a release started for a handler without one of its own
/// (see has_own_executor): the system executor, until the manager's thread takes over.
inline boost::asio::any_io_executor system_steps() {
    return boost::asio::any_io_executor(boost::asio::system_executor());
}

/// `executor`, counting as outstanding work of its context while the copy lives.
inline boost::asio::any_io_executor tracked(const boost::asio::any_io_executor& executor) {
    return boost::asio::prefer(executor, boost::asio::execution::outstanding_work.tracked);
}

/// The timer of one asynchronous lock step, used on its strand: an Asio steady timer, or
/// the manager's LockClock (call_at) when it has one. `then` runs on the strand once the
/// time has come or the wait was cancelled.
class StepTimer {
public:
    StepTimer(const Strand& strand, Clock clock) : strand_(strand), timer_(strand), clock_(clock) {}

    void wait_until(SteadyClock::time_point t, std::function<void()> then) {
        if (!clock_.clock) {
            timer_.expires_at(t);
            timer_.async_wait(boost::asio::bind_executor(
                strand_, [then = std::move(then)](boost::system::error_code) { then(); }));
            return;
        }
        // Either the clock fires or cancel() takes it back; whichever does posts `then`.
        then_ = std::make_shared<std::function<void()>>(std::move(then));
        clock_.clock->call_at(t, this, [strand = strand_, then = then_] {
            boost::asio::post(strand, std::exchange(*then, nullptr));
        });
    }
    void wait_for(Millis d, std::function<void()> then) { wait_until(clock_.now() + d, std::move(then)); }

    /// Ends a wait early: its `then` runs soon.
    void cancel() {
        if (!clock_.clock) return (void)timer_.cancel();
        if (clock_.clock->cancel_call(this)) boost::asio::post(strand_, std::exchange(*then_, nullptr));
    }

private:
    Strand strand_;
    boost::asio::steady_timer timer_;
    Clock clock_;
    std::shared_ptr<std::function<void()>> then_;  // of the wait on clock_
};

/// One release, its retries on a timer. `report` gets the outcome once: as soon as the
/// release is settled, or when LockOptions::release_retry_inline is spent (the release
/// then goes on in the background until it succeeds or is given up, and a release given
/// up reaches on_release_error). Without `report` (a guard destroyed), a release given up
/// goes to on_release_error. With a `background` watchdog (for a handler without an
/// executor of its own), the release goes on there, not on `executor`, once
/// release_retry_inline is spent: nothing of it is left on `executor` when `report` is told.
template <LockBackend B>
class AsyncRelease : public std::enable_shared_from_this<AsyncRelease<B>> {
public:
    using Report = std::function<void(Result<void>)>;

    static void start(B& backend, std::shared_ptr<LeaseState> state,
                      boost::asio::any_io_executor executor, Report report,
                      std::shared_ptr<Watchdog<B>> background = nullptr) {
        auto self = std::shared_ptr<AsyncRelease>(
            new AsyncRelease(backend, std::move(state), std::move(executor), std::move(report),
                             std::move(background)));
        self->send();
    }

private:
    using Outcome = ReleaseAttempts::Outcome;

    AsyncRelease(B& backend, std::shared_ptr<LeaseState> state, boost::asio::any_io_executor ex,
                 Report report, std::shared_ptr<Watchdog<B>> background)
        : backend_(backend),
          attempts_(state),
          inline_until_(state->clock.now() + state->retry_inline),
          strand_(tracked(ex)),
          timer_(strand_, state->clock),
          report_(std::move(report)),
          handoff_(std::move(background)) {}

    void send() {
        const auto sent = attempts_.state().clock.now();
        detail::start(backend_, attempts_.request(),
                      [self = this->shared_from_this(), sent](Result<bool> released) mutable {
                          auto& me = *self;
                          boost::asio::dispatch(me.strand_, [self = std::move(self), sent,
                                                             released = std::move(released)]() mutable {
                              self->on_reply(std::move(released), sent);
                          });
                      });
    }

    void on_reply(Result<bool> released, SteadyClock::time_point sent) {
        Outcome outcome = attempts_.settle(std::move(released), sent);
        if (outcome == Outcome::pending && !attempts_.plan_next()) outcome = Outcome::failed;
        switch (outcome) {
            case Outcome::released: return tell({});
            case Outcome::not_owned:
                return tell(Failure(errc::lock_not_owned,
                                    "nothing released: this guard no longer held " +
                                        attempts_.state().describe_keys() +
                                        " (its lease ran out, or another owner took over)",
                                    attempts_.state().keys));
            case Outcome::failed: {
                Failure f = attempts_.given_up();
                if (!report_) attempts_.state().report_release_error(f);
                return tell(std::move(f));
            }
            case Outcome::pending: break;
        }
        if (handoff_ && attempts_.next_at() >= inline_until_) {
            // The manager's thread goes on from the next attempt planned; this one ends
            // before the caller hears of it.
            std::optional<Failure> failure;
            if (report_) failure = attempts_.failure(kept_retrying);
            std::exchange(handoff_, nullptr)->release_later(std::move(attempts_));
            if (failure) tell(std::move(*failure));
            return;
        }
        if (report_ && attempts_.next_at() >= inline_until_) {
            tell(attempts_.failure(kept_retrying));
            background_ = true;
        }
        timer_.wait_until(attempts_.next_at(), [self = this->shared_from_this()] { self->send(); });
    }

    // The caller hears once; a release given up in the background is reported instead.
    void tell(Result<void> result) {
        if (background_) {
            if (!result && !result.is(errc::lock_not_owned)) {
                attempts_.state().report_release_error(result.error());
            }
            return;
        }
        if (auto report = std::exchange(report_, nullptr)) report(std::move(result));
    }

    static constexpr const char* kept_retrying =
        "retrying in the background; on_release_error is called if it never succeeds";

    B& backend_;
    ReleaseAttempts attempts_;
    SteadyClock::time_point inline_until_;
    Strand strand_;
    StepTimer timer_;
    Report report_;
    std::shared_ptr<Watchdog<B>> handoff_;  // takes over after the inline budget, when set
    bool background_ = false;
};

/// The watchdog of one guard acquired asynchronously: renews its lease every lease/3 on
/// a timer, as the watchdog thread does for the others (after_renewal decides).
template <LockBackend B>
class AsyncRenewal : public std::enable_shared_from_this<AsyncRenewal<B>> {
public:
    static std::shared_ptr<AsyncRenewal> start(B& backend, std::shared_ptr<LeaseState> state,
                                               boost::asio::any_io_executor executor) {
        auto self = std::shared_ptr<AsyncRenewal>(
            new AsyncRenewal(backend, std::move(state), std::move(executor)));
        boost::asio::dispatch(self->strand_, [self] {
            self->wait_until(self->state_->clock.now() + self->state_->lease.load() / 3);
        });
        return self;
    }

    /// No renewal is sent after this returns. One already in flight is ignored when it
    /// comes back: the guard is being released.
    void stop() {
        stopped_ = true;
        boost::asio::dispatch(strand_, [self = this->shared_from_this()] { self->timer_.cancel(); });
    }

private:
    AsyncRenewal(B& backend, std::shared_ptr<LeaseState> state, boost::asio::any_io_executor ex)
        : backend_(backend),
          state_(std::move(state)),
          strand_(tracked(ex)),
          timer_(strand_, state_->clock),
          backoff_(state_->pause_min, state_->pause_max) {}

    void wait_until(SteadyClock::time_point when) {
        timer_.wait_until(when, [self = this->shared_from_this()] {
            if (!self->stopped_) self->renew();
        });
    }

    void renew() {
        const auto sent = state_->clock.now();
        const Millis lease = state_->lease.load();
        detail::start(backend_, op::extend_locks{state_->keys, state_->owner, lease},
                      [self = this->shared_from_this(), sent, lease](Result<bool> renewed) mutable {
                          auto& me = *self;
                          boost::asio::dispatch(me.strand_, [self = std::move(self), sent, lease,
                                                             renewed = std::move(renewed)] {
                              if (self->stopped_) return;
                              const auto next =
                                  after_renewal(*self->state_, renewed, sent, lease, self->backoff_);
                              if (next) self->wait_until(*next);
                          });
                      });
    }

    B& backend_;
    std::shared_ptr<LeaseState> state_;
    Strand strand_;
    StepTimer timer_;
    Backoff backoff_;
    std::atomic<bool> stopped_{false};
};

/// One asynchronous acquisition: Acquisition's answers, with pauses on a timer and the
/// handler's cancellation slot honoured. `make_guard(state, executor)` builds the guard on
/// success: `executor` is the one its later steps run on, or none when the handler has no
/// executor of its own (has_own_executor), and `watchdog` (the manager's) does them then.
template <LockBackend B, typename Guard, typename MakeGuard, typename Handler>
class AsyncAcquire
    : public std::enable_shared_from_this<AsyncAcquire<B, Guard, MakeGuard, Handler>> {
public:
    AsyncAcquire(B& backend, Acquisition acquisition, MakeGuard make_guard, Handler handler,
                 std::shared_ptr<Watchdog<B>> watchdog)
        : backend_(backend),
          acquisition_(std::move(acquisition)),
          make_guard_(std::move(make_guard)),
          own_executor_(has_own_executor(timer_executor(handler))),
          strand_(tracked(timer_executor(handler))),
          timer_(strand_, acquisition_.state()->clock),
          done_(std::move(handler)),
          watchdog_(std::move(watchdog)) {}

    void start() {
        auto slot = boost::asio::get_associated_cancellation_slot(done_.handler());
        if (slot.is_connected()) {
            std::weak_ptr<AsyncAcquire> weak = this->shared_from_this();
            slot.assign([weak](boost::asio::cancellation_type type) {
                if (type == boost::asio::cancellation_type::none) return;
                if (auto self = weak.lock()) {
                    boost::asio::dispatch(self->strand_, [self] { self->cancel(); });
                }
            });
        }
        boost::asio::dispatch(strand_, [self = this->shared_from_this()] { self->send(); });
    }

private:
    using Next = Acquisition::Next;

    void send() {
        in_flight_ = true;
        const auto sent = acquisition_.state()->clock.now();
        detail::start(backend_, acquisition_.request(),
                      [self = this->shared_from_this(), sent](Result<std::uint64_t> fence) mutable {
                          auto& me = *self;
                          boost::asio::dispatch(me.strand_, [self = std::move(self), sent,
                                                             fence = std::move(fence)]() mutable {
                              self->on_reply(std::move(fence), sent);
                          });
                      });
    }

    void on_reply(Result<std::uint64_t> fence, SteadyClock::time_point sent) {
        in_flight_ = false;
        auto step = acquisition_.on_reply(std::move(fence), sent);
        if (cancelled_) {
            // Whatever the answer took goes back at once: a cancelled wait leaves no lock.
            if (step.next == Next::granted || step.give_back) give_back();
            return finish(cancelled());
        }
        switch (step.next) {
            case Next::granted: {
                // The guard's copy does not keep the caller's io_context busy while it lives.
                std::optional<boost::asio::any_io_executor> later;
                if (own_executor_) {
                    later = boost::asio::prefer(strand_,
                                                boost::asio::execution::outstanding_work.untracked);
                }
                return finish(make_guard_(acquisition_.state(), std::move(later)));
            }
            case Next::failed:
                if (step.give_back) {
                    step.failure->detail += "; whatever it took is being released";
                    give_back();
                }
                return finish(std::move(*step.failure));
            case Next::send_again: return send();
            case Next::pause:
                timer_.wait_for(step.pause, [self = this->shared_from_this()] {
                    if (self->cancelled_) return self->finish(self->cancelled());
                    self->send();
                });
                return;
        }
    }

    void cancel() {
        if (finished_ || cancelled_) return;
        cancelled_ = true;
        if (!in_flight_) timer_.cancel();  // its handler finishes
    }

    void give_back() {
        auto& state = *acquisition_.state();
        // If anything was taken, its lease ends at the latest a lease from now.
        state.valid_until = (state.clock.now() + state.lease.load()).time_since_epoch().count();
        if (own_executor_) {
            AsyncRelease<B>::start(backend_, acquisition_.state(), strand_, nullptr);
        } else {
            AsyncRelease<B>::start(backend_, acquisition_.state(), system_steps(), nullptr,
                                   watchdog_);
        }
    }

    Failure cancelled() const {
        return Failure(errc::cancelled,
                       "the wait for " + acquisition_.state()->describe_keys() +
                           " was cancelled; no key was left locked",
                       acquisition_.state()->keys);
    }

    void finish(Result<Guard> result) {
        if (finished_) return;
        finished_ = true;
        boost::asio::get_associated_cancellation_slot(done_.handler()).clear();
        done_(std::move(result));
    }

    B& backend_;
    Acquisition acquisition_;
    MakeGuard make_guard_;
    bool own_executor_;  // has_own_executor() of the handler's
    Strand strand_;
    StepTimer timer_;
    Completer<Handler> done_;
    std::shared_ptr<Watchdog<B>> watchdog_;
    bool in_flight_ = false;
    bool cancelled_ = false;
    bool finished_ = false;
};

}  // namespace seatlock::detail
