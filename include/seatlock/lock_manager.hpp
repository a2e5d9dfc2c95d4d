// SPDX-License-Identifier: MIT
// seatlock/lock_manager.hpp: LockManager<B> and its RAII guards SingleLock<B> and
// MultiLock<B>: distributed locks with leases, fencing tokens and an optional watchdog.
//
//     seatlock::LockManager locks(backend);                     // LockOptions defaults
//     auto guard = locks.lock_all({"game1:A-1", "game1:A-2", "game1:A-3"});
//     if (!guard) return guard.error();                          // lock_timeout after `wait`
//     db.write(..., guard->fencing_token());                     // reject stale writers
//     // guard's destructor releases every key
//
// A multi-key lock is one backend step: all keys or none, never a partial lock visible to
// anyone, so two orders locking overlapping seats in any order cannot deadlock. A release
// that fails in transit is retried (briefly in the caller's thread, then in the
// background), so a storage blip does not leave keys locked for the rest of their lease.
// Time is steady_clock's unless the manager is given a LockClock (seatlock/lock_clock.hpp):
// tests pass a FakeLockClock and no lock wait, lease or renewal of theirs sleeps.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/acquisition.hpp>
#include <seatlock/detail/async_locks.hpp>
#include <seatlock/detail/watchdog.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/lock_clock.hpp>
#include <seatlock/lock_options.hpp>

#include <boost/asio/deferred.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace seatlock {

template <LockBackend B>
class LockManager;

namespace detail {

/// A completion token of LockManager's asynchronous calls: anything but LockOptions, so
/// that `async_lock(key, options)` takes the options and the default token.
template <typename T>
concept LockToken = !std::same_as<std::remove_cvref_t<T>, LockOptions>;

/// The shared body of SingleLock and MultiLock: move-only, releases on destruction.
///
/// Releasing: one attempt, then, while it fails in transit, more attempts in the calling
/// thread for up to LockOptions::release_retry_inline (100 ms by default), so that a
/// destructor blocks about that long at most (plus a call in flight when the time is up,
/// which the driver's own timeouts bound). What is still failing then goes to the manager's
/// background thread, which keeps trying every backoff_max at most until the release goes
/// through, release_retry is spent or the lease has ended; only a release given up
/// reaches on_release_error. A key whose release lost its connection is therefore free
/// about backoff_max after the storage answers again, not when its lease ends.
template <LockBackend B>
class BasicGuard {
public:
    BasicGuard(BasicGuard&& other) noexcept
        : backend_(std::exchange(other.backend_, nullptr)),
          watchdog_(std::move(other.watchdog_)),
          state_(std::move(other.state_)),
          executor_(std::move(other.executor_)),
          renewal_(std::move(other.renewal_)) {}
    BasicGuard& operator=(BasicGuard&& other) noexcept {
        if (this != &other) {
            release_in_destructor();
            backend_ = std::exchange(other.backend_, nullptr);
            watchdog_ = std::move(other.watchdog_);
            state_ = std::move(other.state_);
            executor_ = std::move(other.executor_);
            renewal_ = std::move(other.renewal_);
        }
        return *this;
    }
    BasicGuard(const BasicGuard&) = delete;
    BasicGuard& operator=(const BasicGuard&) = delete;
    /// Releases the keys. A guard acquired asynchronously never blocks here: its release
    /// and retries run on its executor's timers; the others retry in the calling thread
    /// for release_retry_inline at most (see the class comment). So does a guard whose
    /// acquisition's handler had no executor of its own (asio::use_future, a callback with
    /// no executor bound): it has nothing else to run them on.
    ~BasicGuard() { release_in_destructor(); }

    /// True while this guard believes it holds its keys: not unlocked, not reported lost,
    /// and within its lease as measured locally (conservatively, from before the request).
    [[nodiscard]] bool owns() const noexcept {
        return backend_ && !state_->lost && state_->valid_at(state_->clock.now());
    }
    /// The keys, sorted and without duplicates.
    [[nodiscard]] const std::vector<std::string>& keys() const noexcept { return state_->keys; }
    /// Strictly larger than any token handed out before for these keys' groups: store it
    /// with every write the lock guards and refuse writes that carry a smaller one.
    [[nodiscard]] std::uint64_t fencing_token() const noexcept { return state_->fencing_token; }

    /// Renews the lease to now + lease. Fails with lock_not_owned when the keys are no
    /// longer this guard's (the guard is then marked lost) or it was unlocked; failures in
    /// transit are retried for LockOptions::release_retry_inline, then returned.
    Result<void> extend(Millis lease) {
        auto renewal = start_extension(lease);
        if (!renewal) return std::move(renewal).error();
        for (;;) {
            const auto sent = state_->clock.now();
            auto step = renewal->on_reply(backend_->run(renewal->request()), sent);
            if (!step.pause) return std::move(step.result);
            state_->clock.sleep_for(*step.pause);
        }
    }

    /// extend(), asynchronously: completes with void(Result<void>); pauses between
    /// retries on a timer of the handler's executor. The token is boost::asio::deferred
    /// when none is given.
    template <typename Token = boost::asio::deferred_t>
    auto async_extend(Millis lease, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(Result<void>)>(
            [this, lease](auto handler) {
                auto executor = timer_executor(handler);
                auto done = std::make_shared<Completer<decltype(handler)>>(std::move(handler));
                auto renewal = start_extension(lease);
                if (!renewal) return (*done)(Result<void>(std::move(renewal).error()));
                auto timer = std::make_shared<StepTimer>(Strand(executor), state_->clock);
                extend_async(*backend_, std::make_shared<Extension>(std::move(*renewal)),
                             std::move(timer), std::move(done));
            },
            token);
    }

    /// Releases the keys now (see the class comment for retries). Fails with
    /// lock_not_owned when they were no longer this guard's: its lease ran out or they
    /// were taken over (nothing is touched then), or it was unlocked already. Any other
    /// failure means the keys may still be locked: a failure in transit that outlasted
    /// release_retry_inline is still being retried in the background (and reaches
    /// on_release_error if it never goes through); other failures leave the keys locked
    /// until their lease ends.
    Result<void> unlock() {
        if (!backend_) return released_already();
        return release(false);
    }

    /// unlock(), asynchronously: completes with void(Result<void>) and the same answers;
    /// retries run on timers of the handler's executor, in the background once
    /// release_retry_inline is spent. A handler without an executor of its own
    /// (asio::use_future, a callback with no executor bound) has its retries run on Asio's
    /// system executor until then, and the manager's background thread goes on after: none
    /// is left on the system executor once it completes. The token is
    /// boost::asio::deferred when none is given.
    template <typename Token = boost::asio::deferred_t>
    auto async_unlock(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(Result<void>)>(
            [this](auto handler) {
                auto executor = timer_executor(handler);
                auto done = std::make_shared<Completer<decltype(handler)>>(std::move(handler));
                if (!backend_) return (*done)(Result<void>(released_already()));
                stop_watching();
                B& backend = *std::exchange(backend_, nullptr);
                auto report = [done](Result<void> r) { (*done)(std::move(r)); };
                if (has_own_executor(executor)) {
                    return AsyncRelease<B>::start(backend, state_, std::move(executor),
                                                  std::move(report));
                }
                AsyncRelease<B>::start(backend, state_, system_steps(), std::move(report),
                                       watchdog_);
            },
            token);
    }

protected:
    BasicGuard(B& backend, std::shared_ptr<Watchdog<B>> watchdog, std::shared_ptr<LeaseState> state)
        : backend_(&backend), watchdog_(std::move(watchdog)), state_(std::move(state)) {}

    /// A guard acquired asynchronously: its watchdog (when asked for) runs on `executor`'s
    /// timers, and its destructor releases there without blocking. Without `executor` (the
    /// handler had none of its own, see has_own_executor), the manager's thread renews it
    /// and it releases as a guard acquired blocking does.
    BasicGuard(B& backend, std::shared_ptr<Watchdog<B>> watchdog, std::shared_ptr<LeaseState> state,
               std::optional<boost::asio::any_io_executor> executor)
        : backend_(&backend),
          watchdog_(std::move(watchdog)),
          state_(std::move(state)),
          executor_(std::move(executor)) {
        if (!state_->watched) return;
        if (executor_) {
            renewal_ = AsyncRenewal<B>::start(backend, state_, *executor_);
        } else {
            watchdog_->watch(state_);
        }
    }

private:
    // One renewal of the lease, across its attempts: what each answer means.
    class Extension {
    public:
        struct Step {
            Result<void> result;          // when settled
            std::optional<Millis> pause;  // when to be sent again
        };
        Extension(std::shared_ptr<LeaseState> state, Millis lease)
            : state_(std::move(state)),
              lease_(lease),
              backoff_(state_->pause_min, state_->pause_max),
              stop_(state_->clock.now() + state_->retry_inline) {}

        [[nodiscard]] op::extend_locks request() const { return {state_->keys, state_->owner, lease_}; }
        [[nodiscard]] const Clock& clock() const noexcept { return state_->clock; }

        Step on_reply(Result<bool> renewed, SteadyClock::time_point sent) {
            if (renewed && *renewed) {
                state_->lease = lease_;
                state_->valid_until = (sent + lease_).time_since_epoch().count();
                return {};
            }
            if (renewed) {
                state_->mark_lost();
                return {Failure(errc::lock_not_owned,
                                "nothing extended: this guard no longer holds " +
                                    state_->describe_keys() +
                                    " (its lease ran out, or another owner took over)",
                                state_->keys),
                        std::nullopt};
            }
            const Millis pause = backoff_.pause();
            if (!worth_retrying(renewed.error()) || state_->clock.now() + pause >= stop_) {
                return {std::move(renewed).error(), std::nullopt};
            }
            return {{}, pause};
        }

    private:
        std::shared_ptr<LeaseState> state_;
        Millis lease_;
        Backoff backoff_;
        SteadyClock::time_point stop_;
    };

    Result<Extension> start_extension(Millis lease) const {
        if (!backend_) return released_already();
        if (lease <= Millis(0)) return Failure(errc::invalid_argument, "lease must be positive");
        return Extension(state_, lease);
    }

    template <typename Done>
    static void extend_async(B& backend, std::shared_ptr<Extension> renewal,
                             std::shared_ptr<StepTimer> timer, Done done) {
        const auto sent = renewal->clock().now();
        const Extension& request = *renewal;
        detail::start(backend, request.request(),
                      [&backend, renewal, timer, done, sent](Result<bool> renewed) mutable {
                          auto step = renewal->on_reply(std::move(renewed), sent);
                          if (!step.pause) return (*done)(std::move(step.result));
                          timer->wait_for(*step.pause, [&backend, renewal, timer, done] {
                              extend_async(backend, renewal, timer, done);
                          });
                      });
    }

    static Failure released_already() {
        return Failure(errc::lock_not_owned,
                       "this guard holds no keys: it was unlocked or moved from");
    }

    void stop_watching() {
        if (renewal_) {
            renewal_->stop();
            renewal_.reset();
        } else if (state_->watched) {
            watchdog_->unwatch(state_.get());
        }
    }

    // Reports instead of returning when `in_destructor`.
    Result<void> release(bool in_destructor) {
        stop_watching();
        B& backend = *std::exchange(backend_, nullptr);
        ReleaseAttempts release(state_);
        switch (release.attempt_inline(backend)) {
            case ReleaseAttempts::Outcome::released: return {};
            case ReleaseAttempts::Outcome::not_owned:
                return Failure(errc::lock_not_owned,
                               "nothing released: this guard no longer held " +
                                   state_->describe_keys() +
                                   " (its lease ran out, or another owner took over)",
                               state_->keys);
            case ReleaseAttempts::Outcome::pending: {
                Failure f = release.failure(
                    "retrying in the background; on_release_error is called if it never "
                    "succeeds");
                watchdog_->release_later(std::move(release));
                return f;
            }
            case ReleaseAttempts::Outcome::failed: break;
        }
        Failure f = release.given_up();
        if (in_destructor) state_->report_release_error(f);
        return f;
    }

    void release_in_destructor() noexcept {
        if (!backend_) return;
        try {
            if (executor_) {
                stop_watching();
                AsyncRelease<B>::start(*std::exchange(backend_, nullptr), state_, *executor_, nullptr);
                return;
            }
            (void)release(true);
        } catch (...) {
            // An allocation failure must not escape a destructor.
        }
    }

    B* backend_;
    std::shared_ptr<Watchdog<B>> watchdog_;
    std::shared_ptr<LeaseState> state_;
    std::optional<boost::asio::any_io_executor> executor_;  // acquired asynchronously
    std::shared_ptr<AsyncRenewal<B>> renewal_;
};

}  // namespace detail

/// A lock on one key. Move-only; the destructor releases it.
template <LockBackend B>
class [[nodiscard]] SingleLock : public detail::BasicGuard<B> {
public:
    [[nodiscard]] const std::string& key() const noexcept { return this->keys().front(); }

private:
    friend class LockManager<B>;
    using detail::BasicGuard<B>::BasicGuard;
};

/// A lock on several keys taken in one step. Move-only; the destructor releases them.
template <LockBackend B>
class [[nodiscard]] MultiLock : public detail::BasicGuard<B> {
private:
    friend class LockManager<B>;
    using detail::BasicGuard<B>::BasicGuard;
};

template <LockBackend B>
class LockManager {
public:
    /// `backend` must outlive the manager and every guard it hands out. Time is
    /// std::chrono::steady_clock's: real sleeps, Asio steady timers.
    explicit LockManager(B& backend, LockOptions options = {})
        : LockManager(backend, detail::Clock{}, std::move(options)) {}
    /// The same, timed by `clock` (which must outlive the manager and every guard it hands
    /// out): every reading of the time and every wait, blocking, on the watchdog thread
    /// and asynchronous, goes through it. Tests pass a FakeLockClock.
    LockManager(B& backend, LockClock& clock, LockOptions options = {})
        : LockManager(backend, detail::Clock{&clock}, std::move(options)) {}

    [[nodiscard]] const LockOptions& options() const noexcept { return options_; }

    /// Waits up to options().wait for `key`; lock_timeout if it stays held.
    [[nodiscard]] Result<SingleLock<B>> lock(const std::string& key) { return lock(key, options_); }
    [[nodiscard]] Result<SingleLock<B>> lock(const std::string& key, const LockOptions& options) {
        return acquire<SingleLock<B>>({key}, options, true);
    }
    /// One attempt; lock_busy if `key` is held. `options` other than wait apply (lease,
    /// watchdog, callbacks, retries of a lost reply's give-back).
    [[nodiscard]] Result<SingleLock<B>> try_lock(const std::string& key) { return try_lock(key, options_); }
    [[nodiscard]] Result<SingleLock<B>> try_lock(const std::string& key, const LockOptions& options) {
        return acquire<SingleLock<B>>({key}, options, false);
    }

    /// Every key or none, in one backend step, waiting up to options().wait.
    [[nodiscard]] Result<MultiLock<B>> lock_all(std::vector<std::string> keys) {
        return lock_all(std::move(keys), options_);
    }
    [[nodiscard]] Result<MultiLock<B>> lock_all(std::vector<std::string> keys,
                                                const LockOptions& options) {
        return acquire<MultiLock<B>>(std::move(keys), options, true);
    }
    /// One all-or-nothing attempt; lock_busy naming the held keys.
    [[nodiscard]] Result<MultiLock<B>> try_lock_all(std::vector<std::string> keys) {
        return try_lock_all(std::move(keys), options_);
    }
    [[nodiscard]] Result<MultiLock<B>> try_lock_all(std::vector<std::string> keys,
                                                    const LockOptions& options) {
        return acquire<MultiLock<B>>(std::move(keys), options, false);
    }

    // The same eight, asynchronously, with the same arguments and defaults, then a
    // completion token: boost::asio::deferred when none is given, so
    // `co_await locks.async_lock(key)` and `locks.async_lock(key)(handler)` both work. The
    // completion signature is void(Result<guard>); pauses while a key is busy run on a
    // timer of the handler's associated executor, never blocking a thread. Cancelling
    // through the handler's cancellation slot (any type) ends a wait with errc::cancelled
    // and leaves no key locked: a request already sent is answered first, and whatever it
    // took is released. The guard handed out releases without blocking when it goes out
    // of scope, and its watchdog (when LockOptions::watchdog) runs on the same executor's
    // timers. A handler with no executor of its own, one on Asio's system context
    // (asio::use_future, whose executor belongs to its promise; a callback with no
    // executor bound), gives a guard that renews and releases as a blocking call's does:
    // on the manager's thread, and with release_retry_inline in the destructor's thread.
    // Bind an executor (asio::bind_executor(io, asio::use_future)) to have its timers.
    //
    //     auto guard = co_await locks.async_lock_all(keys, asio::use_awaitable);

    template <detail::LockToken Token = boost::asio::deferred_t>
    auto async_lock(const std::string& key, Token&& token = {}) {
        return async_lock(key, options_, std::forward<Token>(token));
    }
    template <detail::LockToken Token = boost::asio::deferred_t>
    auto async_lock(const std::string& key, const LockOptions& options, Token&& token = {}) {
        return async_acquire<SingleLock<B>>({key}, options, true, std::forward<Token>(token));
    }
    template <detail::LockToken Token = boost::asio::deferred_t>
    auto async_try_lock(const std::string& key, Token&& token = {}) {
        return async_try_lock(key, options_, std::forward<Token>(token));
    }
    template <detail::LockToken Token = boost::asio::deferred_t>
    auto async_try_lock(const std::string& key, const LockOptions& options, Token&& token = {}) {
        return async_acquire<SingleLock<B>>({key}, options, false, std::forward<Token>(token));
    }
    template <detail::LockToken Token = boost::asio::deferred_t>
    auto async_lock_all(std::vector<std::string> keys, Token&& token = {}) {
        return async_lock_all(std::move(keys), options_, std::forward<Token>(token));
    }
    template <detail::LockToken Token = boost::asio::deferred_t>
    auto async_lock_all(std::vector<std::string> keys, const LockOptions& options, Token&& token = {}) {
        return async_acquire<MultiLock<B>>(std::move(keys), options, true, std::forward<Token>(token));
    }
    template <detail::LockToken Token = boost::asio::deferred_t>
    auto async_try_lock_all(std::vector<std::string> keys, Token&& token = {}) {
        return async_try_lock_all(std::move(keys), options_, std::forward<Token>(token));
    }
    template <detail::LockToken Token = boost::asio::deferred_t>
    auto async_try_lock_all(std::vector<std::string> keys, const LockOptions& options,
                            Token&& token = {}) {
        return async_acquire<MultiLock<B>>(std::move(keys), options, false, std::forward<Token>(token));
    }

private:
    static Result<void> check(const LockOptions& o) {
        if (o.lease <= Millis(0) || o.wait < Millis(0) || o.backoff_min <= Millis(0) ||
            o.backoff_max < o.backoff_min || o.release_retry < Millis(0) ||
            o.release_retry_inline < Millis(0)) {
            return Failure(errc::invalid_argument,
                           "LockOptions need lease > 0, wait >= 0, 0 < backoff_min <= "
                           "backoff_max, release_retry >= 0 and release_retry_inline >= 0");
        }
        return {};
    }

    // The checks both ways share: nothing is sent when they fail.
    static Result<void> check(const std::vector<std::string>& keys, const LockOptions& options) {
        if (auto ok = check(options); !ok) return ok;
        if (keys.empty()) return Failure(errc::invalid_argument, "no key to lock");
        for (const auto& key : keys) {
            if (!is_valid_lock_key(key)) {
                return Failure(errc::invalid_argument,
                               "lock key '" + key.substr(0, 60) +
                                   "' is invalid: 1 to 512 printable characters, no space, { or }",
                               {key});
            }
        }
        return {};
    }

    LockManager(B& backend, detail::Clock clock, LockOptions options)
        : backend_(&backend), options_(std::move(options)), clock_(clock),
          watchdog_(std::make_shared<detail::Watchdog<B>>(backend, clock)) {
        if (auto ok = check(options_); !ok) throw Error(ok.error().code, ok.error().detail);
    }

    template <typename Guard, typename Token>
    auto async_acquire(std::vector<std::string> keys, const LockOptions& options, bool wait,
                       Token&& token) {
        return boost::asio::async_initiate<Token, void(Result<Guard>)>(
            [this](auto handler, std::vector<std::string> keys, LockOptions options, bool wait) {
                if (auto ok = check(keys, options); !ok) {
                    detail::Completer<decltype(handler)> done(std::move(handler));
                    return done(Result<Guard>(std::move(ok).error()));
                }
                auto state = detail::new_lease(std::move(keys), options, clock_);
                auto make_guard = [backend = backend_, watchdog = watchdog_](
                                      std::shared_ptr<detail::LeaseState> lease,
                                      std::optional<boost::asio::any_io_executor> executor) {
                    return Guard(*backend, watchdog, std::move(lease), std::move(executor));
                };
                using Op = detail::AsyncAcquire<B, Guard, decltype(make_guard), decltype(handler)>;
                std::make_shared<Op>(*backend_,
                                     detail::Acquisition(std::move(state), options, wait),
                                     std::move(make_guard), std::move(handler), watchdog_)
                    ->start();
            },
            token, std::move(keys), options, wait);
    }

    template <typename Guard>
    Result<Guard> acquire(std::vector<std::string> keys, const LockOptions& options, bool wait) {
        if (auto ok = check(keys, options); !ok) return std::move(ok).error();
        auto state = detail::new_lease(std::move(keys), options, clock_);
        detail::Acquisition acquisition(state, options, wait);
        for (;;) {
            const auto sent = clock_.now();
            const auto step = acquisition.on_reply(backend_->run(acquisition.request()), sent);
            switch (step.next) {
                case detail::Acquisition::Next::granted:
                    if (options.watchdog) watchdog_->watch(state);
                    return Guard(*backend_, watchdog_, std::move(state));
                case detail::Acquisition::Next::failed: {
                    Failure f = *step.failure;
                    if (step.give_back) give_back(state, f);
                    return f;
                }
                case detail::Acquisition::Next::send_again: continue;
                case detail::Acquisition::Next::pause: clock_.sleep_for(step.pause); continue;
            }
        }
    }

    // Releases, with the same owner token, what an acquisition whose outcome stayed
    // unknown may have taken, and says so in its failure `f`. Retried as a guard's
    // release is; a release given up goes to on_release_error.
    void give_back(const std::shared_ptr<detail::LeaseState>& state, Failure& f) {
        using Outcome = detail::ReleaseAttempts::Outcome;
        // If anything was taken, its lease ends at the latest a lease from now.
        state->valid_until = (clock_.now() + state->lease.load()).time_since_epoch().count();
        detail::ReleaseAttempts release(state);
        switch (release.attempt_inline(*backend_)) {
            case Outcome::released:
            case Outcome::not_owned:
                f.detail += "; whatever it took is released again";
                return;
            case Outcome::pending:
                f.detail += "; releasing whatever it took is being retried in the background";
                watchdog_->release_later(std::move(release));
                return;
            case Outcome::failed: {
                Failure given_up = release.given_up();
                f.detail += "; releasing whatever it took failed too: " + given_up.detail;
                state->report_release_error(given_up);
                return;
            }
        }
    }

    B* backend_;
    LockOptions options_;
    detail::Clock clock_;
    std::shared_ptr<detail::Watchdog<B>> watchdog_;
};

}  // namespace seatlock
