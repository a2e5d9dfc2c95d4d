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
// anyone, so two orders locking overlapping seats in any order cannot deadlock.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/random.hpp>
#include <seatlock/detail/watchdog.hpp>
#include <seatlock/keys.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace seatlock {

struct LockOptions {
    Millis wait = std::chrono::seconds(3);    ///< lock()/lock_all(): how long to keep trying
    Millis lease = std::chrono::seconds(10);  ///< how long the storage keeps a key for its owner
    bool watchdog = false;                    ///< renew every lease/3 while the guard lives
    Millis backoff_min = Millis(2);           ///< first pause between attempts (before jitter)
    Millis backoff_max = Millis(100);         ///< pauses double up to this; full jitter
    /// Called once, from the watchdog thread, when a watched lease is lost.
    std::function<void(const std::vector<std::string>& keys)> on_lost;
    /// Called when a guard's destructor could not release its keys (e.g. storage down):
    /// the keys stay locked until their lease ends. Errors are never silently dropped by
    /// unlock(); this is where the destructor reports them.
    std::function<void(const Failure&)> on_release_error;
};

template <LockBackend B>
class LockManager;

namespace detail {

/// The shared body of SingleLock and MultiLock: move-only, releases on destruction.
template <LockBackend B>
class BasicGuard {
public:
    BasicGuard(BasicGuard&& other) noexcept
        : backend_(other.backend_), watchdog_(std::move(other.watchdog_)),
          state_(std::move(other.state_)), on_release_error_(std::move(other.on_release_error_)) {
        other.backend_ = nullptr;
    }
    BasicGuard& operator=(BasicGuard&& other) noexcept {
        if (this != &other) {
            release_in_destructor();
            backend_ = std::exchange(other.backend_, nullptr);
            watchdog_ = std::move(other.watchdog_);
            state_ = std::move(other.state_);
            on_release_error_ = std::move(other.on_release_error_);
        }
        return *this;
    }
    BasicGuard(const BasicGuard&) = delete;
    BasicGuard& operator=(const BasicGuard&) = delete;
    ~BasicGuard() { release_in_destructor(); }

    /// True while this guard believes it holds its keys: not unlocked, not reported lost,
    /// and within its lease as measured locally (conservatively, from before the request).
    [[nodiscard]] bool owns() const noexcept {
        return backend_ && !state_->lost &&
               std::chrono::steady_clock::now().time_since_epoch().count() < state_->valid_until;
    }
    /// The keys, sorted and without duplicates.
    [[nodiscard]] const std::vector<std::string>& keys() const noexcept { return state_->keys; }
    /// Strictly larger than any token handed out before for these keys' groups: store it
    /// with every write the lock guards and refuse writes that carry a smaller one.
    [[nodiscard]] std::uint64_t fencing_token() const noexcept { return state_->fencing_token; }

    /// Renews the lease to now + lease. false (and the guard marked lost) when the keys
    /// are no longer this guard's; a Failure when the storage could not be asked.
    Result<bool> extend(Millis lease) {
        if (!backend_) return false;
        if (lease <= Millis(0)) return Failure(errc::invalid_argument, "lease must be positive");
        const auto sent = std::chrono::steady_clock::now();
        auto renewed = backend_->extend_locks(state_->keys, state_->owner, lease);
        if (!renewed) return renewed;
        if (*renewed) {
            state_->lease = lease;
            state_->valid_until = (sent + lease).time_since_epoch().count();
        } else {
            state_->mark_lost();
        }
        return renewed;
    }

    /// Releases now. true when it still held every key; false when the lease had run out
    /// (keys taken by someone else are never touched). A Failure when the storage could not
    /// be asked: the keys then stay locked until their lease ends.
    Result<bool> unlock() {
        if (!backend_) return false;
        if (watchdog_) watchdog_->unwatch(state_.get());
        auto released = backend_->release_locks(state_->keys, state_->owner);
        backend_ = nullptr;
        return released;
    }

protected:
    BasicGuard(B& backend, std::shared_ptr<Watchdog<B>> watchdog,
               std::shared_ptr<LeaseState> state, std::function<void(const Failure&)> on_error)
        : backend_(&backend), watchdog_(std::move(watchdog)), state_(std::move(state)),
          on_release_error_(std::move(on_error)) {}

private:
    void release_in_destructor() noexcept {
        if (!backend_) return;
        try {
            auto released = unlock();
            if (!released && on_release_error_) on_release_error_(released.error());
        } catch (...) {
            // A throwing callback or allocation failure must not escape a destructor.
        }
    }

    B* backend_;
    std::shared_ptr<Watchdog<B>> watchdog_;
    std::shared_ptr<LeaseState> state_;
    std::function<void(const Failure&)> on_release_error_;
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
    /// `backend` must outlive the manager and every guard it hands out.
    explicit LockManager(B& backend, LockOptions options = {})
        : backend_(&backend), options_(std::move(options)),
          watchdog_(std::make_shared<detail::Watchdog<B>>(backend)) {
        if (auto ok = check(options_); !ok) throw Error(ok.error().code, ok.error().detail);
    }

    [[nodiscard]] const LockOptions& options() const noexcept { return options_; }

    /// Waits up to options().wait for `key`; lock_timeout if it stays held.
    [[nodiscard]] Result<SingleLock<B>> lock(const std::string& key) { return lock(key, options_); }
    [[nodiscard]] Result<SingleLock<B>> lock(const std::string& key, const LockOptions& options) {
        return acquire<SingleLock<B>>({key}, options, true);
    }
    /// One attempt; lock_busy if `key` is held.
    [[nodiscard]] Result<SingleLock<B>> try_lock(const std::string& key) {
        return acquire<SingleLock<B>>({key}, options_, false);
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
        return acquire<MultiLock<B>>(std::move(keys), options_, false);
    }

private:
    static Result<void> check(const LockOptions& o) {
        if (o.lease <= Millis(0) || o.wait < Millis(0) || o.backoff_min <= Millis(0) ||
            o.backoff_max < o.backoff_min) {
            return Failure(errc::invalid_argument,
                           "LockOptions need lease > 0, wait >= 0 and 0 < backoff_min <= backoff_max");
        }
        return {};
    }

    template <typename Guard>
    Result<Guard> acquire(std::vector<std::string> keys, const LockOptions& options, bool wait) {
        if (auto ok = check(options); !ok) return std::move(ok).error();
        if (keys.empty()) return Failure(errc::invalid_argument, "no key to lock");
        for (const auto& key : keys) {
            if (!is_valid_lock_key(key)) {
                return Failure(errc::invalid_argument,
                               "lock key '" + key.substr(0, 60) +
                                   "' is invalid: 1 to 512 printable characters, no space, { or }",
                               {key});
            }
        }
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());

        auto state = std::make_shared<detail::LeaseState>();
        state->keys = std::move(keys);
        state->owner = detail::random_hex128();
        state->lease = options.lease;
        state->on_lost = options.on_lost;

        using Clock = std::chrono::steady_clock;
        const auto deadline = Clock::now() + options.wait;
        Millis pause = options.backoff_min;
        bool asked_again = false;
        for (;;) {
            const auto sent = Clock::now();
            auto fence = backend_->acquire_locks(state->keys, state->owner, options.lease);
            if (fence) {
                state->fencing_token = *fence;
                state->valid_until = (sent + options.lease).time_since_epoch().count();
                if (options.watchdog) watchdog_->watch(state);
                return Guard(*backend_, options.watchdog ? watchdog_ : nullptr, std::move(state),
                             options.on_release_error);
            }
            // A lost reply may have taken the keys for us: asking again with the same
            // owner is safe and settles it. Anything else but "busy" is for the caller.
            const bool busy = fence.is(errc::lock_busy);
            if (!busy) {
                if (!fence.is(errc::outcome_unknown) || asked_again) return std::move(fence).error();
                asked_again = true;
                continue;
            }
            const auto now = Clock::now();
            if (!wait) return std::move(fence).error();
            if (now >= deadline) {
                Failure f = std::move(fence).error();
                f.code = make_error_code(errc::lock_timeout);
                f.detail += " after waiting " + std::to_string(options.wait.count()) + " ms";
                return f;
            }
            const auto left = std::chrono::duration_cast<Millis>(deadline - now);
            std::this_thread::sleep_for(std::min(Millis(detail::jitter(pause.count())), left));
            pause = std::min(pause * 2, options.backoff_max);
        }
    }

    B* backend_;
    LockOptions options_;
    std::shared_ptr<detail::Watchdog<B>> watchdog_;
};

}  // namespace seatlock
