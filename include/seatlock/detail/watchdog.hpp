// SPDX-License-Identifier: MIT
// seatlock/detail/watchdog.hpp: what a LockManager does for its guards behind their back.
//
// One background thread per LockManager, started on first use, with two jobs:
// - renewals: each watched guard's lease is renewed every lease/3; a renewal that failed
//   in transit is tried again after a backoff pause. A renewal the storage refuses (the
//   lease was lost), or failures until the lease must have ended, mark the guard lost
//   and call its on_lost callback once.
// - releases a guard (or an acquisition whose outcome stayed unknown) could not finish in
//   its own thread, or within release_retry_inline of an asynchronous call whose handler
//   has no executor of its own (async_locks.hpp): retried with backoff until they go
//   through, until LockOptions::release_retry is spent or until the lease has ended
//   anyway; a release given up is handed to on_release_error once.
// ReleaseAttempts is the retry of one release, shared by unlock(), the guard's destructor
// and this thread, so that every path asks the storage the same way.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/random.hpp>
#include <seatlock/detail/text.hpp>
#include <seatlock/lock_clock.hpp>
#include <seatlock/operations.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace seatlock::detail {

using SteadyClock = std::chrono::steady_clock;

/// The time of one LockManager: its LockClock, or steady_clock and real waits when it has
/// none (then no indirect call is made).
struct Clock {
    LockClock* clock = nullptr;

    [[nodiscard]] SteadyClock::time_point now() const {
        return clock ? clock->now() : SteadyClock::now();
    }
    void sleep_until(SteadyClock::time_point t) const {
        if (clock) return clock->sleep_until(t);
        std::this_thread::sleep_until(t);
    }
    void sleep_for(Millis d) const { sleep_until(now() + d); }
    void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                    SteadyClock::time_point t) const {
        if (clock) return clock->wait_until(lock, cv, t);
        if (t == SteadyClock::time_point::max()) return cv.wait(lock);
        cv.wait_until(lock, t);
    }
    void notify(std::condition_variable& cv) const {
        if (clock) return clock->notify(cv);
        cv.notify_all();
    }
};

/// What a guard and the background thread share about one acquisition.
struct LeaseState {
    std::vector<std::string> keys;
    std::string owner;
    std::uint64_t fencing_token = 0;
    std::atomic<Millis> lease{};  // extend() changes it while the watchdog reads it
    bool watched = false;
    // From the LockOptions of the acquisition: how releases and renewals are retried.
    Millis retry_total{};
    Millis retry_inline{};
    Millis pause_min{};
    Millis pause_max{};
    std::function<void(const std::vector<std::string>&)> on_lost;
    std::function<void(const Failure&)> on_release_error;
    std::atomic<bool> lost{false};
    Clock clock;  // the manager's
    // Local, conservative end of the lease: measured from before the request was sent.
    std::atomic<SteadyClock::rep> valid_until{0};

    void mark_lost() {
        if (!lost.exchange(true) && on_lost) on_lost(keys);
    }
    [[nodiscard]] bool valid_at(SteadyClock::time_point t) const noexcept {
        return t.time_since_epoch().count() < valid_until.load();
    }
    [[nodiscard]] SteadyClock::time_point lease_end() const noexcept {
        return SteadyClock::time_point(SteadyClock::duration(valid_until.load()));
    }
    /// Hands `failure` to on_release_error; a callback that throws is not let out (this
    /// runs in destructors and on the background thread).
    void report_release_error(const Failure& failure) const noexcept {
        if (!on_release_error) return;
        try {
            on_release_error(failure);
        } catch (...) {
        }
    }
    [[nodiscard]] std::string describe_keys() const { return name_keys(keys); }
};

/// The failures after which asking again is safe and may work: the call was not applied
/// (io_error, connection_failed, timeout) or may have been (outcome_unknown), and release
/// and renewal compare the owner token, so applying one twice changes nothing.
inline bool worth_retrying(const Failure& f) noexcept {
    return f.is(errc::io_error) || f.is(errc::outcome_unknown) || f.is(errc::connection_failed) ||
           f.is(errc::timeout);
}

/// Exponential backoff with full jitter: pauses of up to `next`, which doubles to `max`.
class Backoff {
public:
    Backoff(Millis min, Millis max) : next_(min), max_(max) {}
    Millis pause() {
        const Millis pause(jitter(next_.count()));
        next_ = std::min(next_ * 2, max_);
        return pause;
    }

private:
    Millis next_;
    Millis max_;
};

/// What the answer to a renewal of `state` sent at `sent` means: when to renew next, or
/// nothing once the lease is lost (refused, or failing for so long that it must have
/// ended; on_lost has been called then). Shared by the watchdog thread and the
/// asynchronous guards' timers.
inline std::optional<SteadyClock::time_point> after_renewal(LeaseState& state,
                                                            const Result<bool>& renewed,
                                                            SteadyClock::time_point sent,
                                                            Millis lease, Backoff& backoff) {
    const auto now = state.clock.now();
    if (renewed && *renewed) {
        state.valid_until = (sent + lease).time_since_epoch().count();
        backoff = Backoff(state.pause_min, state.pause_max);
        return now + lease / 3;
    }
    if (renewed || !state.valid_at(now)) {
        state.mark_lost();
        return std::nullopt;
    }
    return now + backoff.pause();  // soon: the lease is running out
}

/// One release of one lease, across its attempts: first in the caller's thread, then,
/// if the storage stays out of reach, on the background thread.
class ReleaseAttempts {
public:
    enum class Outcome {
        released,   ///< the keys were this lease's and are free now
        not_owned,  ///< they were not this lease's any more (it ran out or was taken over)
        failed,     ///< a failure that asking again cannot mend, or the retries are spent
        pending,    ///< failed in transit, and may still be retried
    };

    explicit ReleaseAttempts(std::shared_ptr<LeaseState> state)
        : state_(std::move(state)),
          backoff_(state_->pause_min, state_->pause_max),
          started_(state_->clock.now()),
          give_up_at_(std::min(started_ + state_->retry_total, state_->lease_end())) {}

    [[nodiscard]] const LeaseState& state() const noexcept { return *state_; }

    /// The step each attempt sends: a compare-and-delete by owner token.
    [[nodiscard]] op::release_locks request() const { return {state_->keys, state_->owner}; }

    /// One attempt, in the calling thread.
    template <LockBackend B>
    Outcome attempt(B& backend) {
        const auto sent = state_->clock.now();
        return settle(backend.run(request()), sent);
    }

    /// What the answer to an attempt sent at `sent` means.
    Outcome settle(Result<bool> released, SteadyClock::time_point sent) {
        ++attempts_;
        if (released) {
            // After a lost reply of an attempt sent within the lease, "not yours" is the
            // answer to that attempt having freed the keys.
            return *released || maybe_applied_ ? Outcome::released : Outcome::not_owned;
        }
        if (released.is(errc::outcome_unknown) && state_->valid_at(sent)) maybe_applied_ = true;
        last_ = std::move(released).error();
        return worth_retrying(*last_) ? Outcome::pending : Outcome::failed;
    }

    /// Attempts in the calling thread until the release is settled or its share of the
    /// budget (LockOptions::release_retry_inline) is spent: then pending, with the next
    /// attempt planned for the background thread, or failed when no budget is left.
    template <LockBackend B>
    Outcome attempt_inline(B& backend) {
        const auto stop = started_ + state_->retry_inline;
        for (;;) {
            const Outcome outcome = attempt(backend);
            if (outcome != Outcome::pending) return outcome;
            if (!plan_next()) return Outcome::failed;
            if (next_at_ >= stop) return Outcome::pending;
            state_->clock.sleep_until(next_at_);
        }
    }

    /// Plans the next attempt after a backoff pause, the last one when the budget ends
    /// (LockOptions::release_retry, or the end of the lease); false once it has ended.
    bool plan_next() {
        const auto now = state_->clock.now();
        if (now >= give_up_at_) return false;
        next_at_ = std::min(now + backoff_.pause(), give_up_at_);
        return true;
    }
    [[nodiscard]] SteadyClock::time_point next_at() const noexcept { return next_at_; }

    /// Why the release did not go through (only after an attempt that failed), with
    /// what `happens_next` to the keys.
    [[nodiscard]] Failure failure(const std::string& happens_next) const {
        Failure f = *last_;
        const auto took = std::chrono::duration_cast<Millis>(state_->clock.now() - started_).count();
        f.detail = "release of " + state_->describe_keys() + " failed" +
                   (attempts_ > 1 ? " " + std::to_string(attempts_) + " times in " +
                                        std::to_string(took) + " ms"
                                  : "") +
                   " (" + last_->detail + "); " + happens_next;
        f.items = state_->keys;
        return f;
    }
    /// The failure of a release given up: the keys stay locked until their lease ends.
    [[nodiscard]] Failure given_up() const {
        if (!worth_retrying(*last_)) return failure("the keys stay locked until their lease ends");
        return failure(give_up_at_ == state_->lease_end()
                           ? "gave up as their lease ends: the storage frees them by expiry"
                           : "gave up after LockOptions::release_retry; the keys stay locked "
                             "until their lease ends");
    }

private:
    std::shared_ptr<LeaseState> state_;
    Backoff backoff_;
    SteadyClock::time_point started_;
    SteadyClock::time_point give_up_at_;
    SteadyClock::time_point next_at_{};
    int attempts_ = 0;
    bool maybe_applied_ = false;
    std::optional<Failure> last_;
};

template <LockBackend B>
class Watchdog {
public:
    Watchdog(B& backend, Clock clock) : backend_(&backend), clock_(clock) {}
    /// Stops the thread. Releases still pending are given up and reported.
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
            clock_.notify(wake_);
        }
        if (thread_.joinable()) thread_.join();
        if (clock_.clock) clock_.clock->forget(wake_);
        for (const auto& job : releases_) {
            job.state().report_release_error(job.failure(
                "given up because its LockManager and guards were destroyed; the keys stay "
                "locked until their lease ends"));
        }
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

    void watch(const std::shared_ptr<LeaseState>& state) {
        std::lock_guard lock(mutex_);
        renewals_.push_back({state, clock_.now() + state->lease.load() / 3,
                             Backoff(state->pause_min, state->pause_max)});
        start();
    }

    /// Stops renewing; returns once no renewal of `state` is in flight (unless called
    /// from an on_lost callback, i.e. from inside that renewal).
    void unwatch(const LeaseState* state) {
        std::unique_lock lock(mutex_);
        std::erase_if(renewals_, [state](const Renewal& r) { return r.state.get() == state; });
        if (std::this_thread::get_id() == thread_.get_id()) return;
        idle_.wait(lock, [&] { return renewing_ != state; });
    }

    /// Takes over a release that failed in transit, from its planned next attempt on.
    void release_later(ReleaseAttempts attempts) {
        std::lock_guard lock(mutex_);
        releases_.push_back(std::move(attempts));
        start();
    }

private:
    struct Renewal {
        std::shared_ptr<LeaseState> state;
        SteadyClock::time_point next;
        Backoff backoff;
    };

    void start() {  // with mutex_ held
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
        clock_.notify(wake_);
    }

    void run() {
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            auto renewal = std::min_element(
                renewals_.begin(), renewals_.end(),
                [](const Renewal& a, const Renewal& b) { return a.next < b.next; });
            auto release = std::min_element(releases_.begin(), releases_.end(),
                                            [](const ReleaseAttempts& a, const ReleaseAttempts& b) {
                                                return a.next_at() < b.next_at();
                                            });
            const bool renewal_first =
                renewal != renewals_.end() &&
                (release == releases_.end() || renewal->next <= release->next_at());
            if (renewal == renewals_.end() && release == releases_.end()) {
                clock_.wait_until(lock, wake_, SteadyClock::time_point::max());
                continue;
            }
            const auto due = renewal_first ? renewal->next : release->next_at();
            if (due > clock_.now()) {
                clock_.wait_until(lock, wake_, due);
                continue;
            }
            if (renewal_first) {
                renew(lock, renewal->state);
            } else {
                ReleaseAttempts job = std::move(*release);
                releases_.erase(release);
                retry_release(lock, std::move(job));
            }
        }
    }

    // Called and returns with `lock` held; the storage is asked without it.
    void renew(std::unique_lock<std::mutex>& lock, std::shared_ptr<LeaseState> state) {
        renewing_ = state.get();
        auto it = std::find_if(renewals_.begin(), renewals_.end(),
                               [&](const Renewal& r) { return r.state == state; });
        Backoff backoff = it->backoff;
        lock.unlock();
        const auto sent = clock_.now();
        const Millis lease = state->lease.load();
        const auto renewed = backend_->run(op::extend_locks{state->keys, state->owner, lease});
        const auto next = after_renewal(*state, renewed, sent, lease, backoff);
        lock.lock();
        renewing_ = nullptr;
        idle_.notify_all();
        // Found again: unwatch() or watch() may have changed the list meanwhile.
        it = std::find_if(renewals_.begin(), renewals_.end(),
                          [&](const Renewal& r) { return r.state == state; });
        if (it == renewals_.end()) return;
        if (!next) {
            renewals_.erase(it);
        } else {
            it->next = *next;
            it->backoff = backoff;
        }
    }

    // Called and returns with `lock` held; the storage is asked without it.
    void retry_release(std::unique_lock<std::mutex>& lock, ReleaseAttempts job) {
        lock.unlock();
        using Outcome = ReleaseAttempts::Outcome;
        Outcome outcome = job.attempt(*backend_);
        if (outcome == Outcome::pending && !job.plan_next()) outcome = Outcome::failed;
        if (outcome == Outcome::failed) job.state().report_release_error(job.given_up());
        lock.lock();
        if (outcome == Outcome::pending) releases_.push_back(std::move(job));
    }

    B* backend_;
    Clock clock_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::vector<Renewal> renewals_;
    std::vector<ReleaseAttempts> releases_;
    const LeaseState* renewing_ = nullptr;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace seatlock::detail
