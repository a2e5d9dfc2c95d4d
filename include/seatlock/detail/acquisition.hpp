// SPDX-License-Identifier: MIT
// seatlock/detail/acquisition.hpp: one lock acquisition as logic, shared by the blocking
// loop (LockManager) and the asynchronous one (async_locks.hpp): the step to send, and
// what each answer means. Neither sleeps here; each waits its own way.
#pragma once

#include <seatlock/detail/random.hpp>
#include <seatlock/detail/watchdog.hpp>
#include <seatlock/lock_options.hpp>
#include <seatlock/operations.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace seatlock::detail {

/// The state of a new acquisition of `keys` (sorted, without duplicates) with a fresh owner,
/// timed by `clock`.
inline std::shared_ptr<LeaseState> new_lease(std::vector<std::string> keys, const LockOptions& options,
                                             Clock clock) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    auto state = std::make_shared<LeaseState>();
    state->keys = std::move(keys);
    state->owner = random_hex128();
    state->lease = options.lease;
    state->watched = options.watchdog;
    state->retry_total = options.release_retry;
    state->retry_inline = options.release_retry_inline;
    state->pause_min = options.backoff_min;
    state->pause_max = options.backoff_max;
    state->on_lost = options.on_lost;
    state->on_release_error = options.on_release_error;
    state->clock = clock;
    return state;
}

/// One acquisition as logic, for both ways of calling: the step to send, and what each
/// answer means (granted, failed, send again at once, or pause and send again).
class Acquisition {
public:
    enum class Next { granted, failed, send_again, pause };
    struct Step {
        Next next = Next::granted;
        Millis pause{};
        std::optional<Failure> failure;  ///< when failed
        bool give_back = false;          ///< when failed: a lost reply may have taken the keys
    };

    Acquisition(std::shared_ptr<LeaseState> state, const LockOptions& options, bool wait)
        : state_(std::move(state)),
          lease_(options.lease),
          wait_(wait ? std::optional<Millis>(options.wait) : std::nullopt),
          deadline_(state_->clock.now() + options.wait),
          backoff_(options.backoff_min, options.backoff_max) {}

    [[nodiscard]] op::acquire_locks request() const { return {state_->keys, state_->owner, lease_}; }
    [[nodiscard]] const std::shared_ptr<LeaseState>& state() const noexcept { return state_; }

    Step on_reply(Result<std::uint64_t> fence, SteadyClock::time_point sent) {
        if (fence) {
            state_->fencing_token = *fence;
            state_->valid_until = (sent + lease_).time_since_epoch().count();
            return {};
        }
        // A lost reply may have taken the keys for us: asking again with the same owner is
        // safe and settles it. Anything else but "busy" is for the caller, after giving
        // back what a lost reply may have taken.
        if (fence.is(errc::outcome_unknown)) maybe_taken_ = true;
        // Taken on the primary, its replicas not told in time: given back, not kept unused.
        if (fence.is(errc::not_replicated)) maybe_taken_ = true;
        if (!fence.is(errc::lock_busy)) {
            if (fence.is(errc::outcome_unknown) && !asked_again_) {
                asked_again_ = true;
                return {Next::send_again, {}, std::nullopt, false};
            }
            return {Next::failed, {}, std::move(fence).error(), maybe_taken_};
        }
        // Busy: some key is someone else's, so none is ours.
        maybe_taken_ = false;
        if (!wait_) return {Next::failed, {}, std::move(fence).error(), false};
        const auto now = state_->clock.now();
        if (now >= deadline_) {
            Failure f = std::move(fence).error();
            f.code = make_error_code(errc::lock_timeout);
            f.detail += " after waiting " + std::to_string(wait_->count()) + " ms";
            return {Next::failed, {}, std::move(f), false};
        }
        const auto left = std::chrono::duration_cast<Millis>(deadline_ - now);
        return {Next::pause, std::min(backoff_.pause(), left), std::nullopt, false};
    }

private:
    std::shared_ptr<LeaseState> state_;
    Millis lease_;
    std::optional<Millis> wait_;  // none: one attempt
    SteadyClock::time_point deadline_;
    Backoff backoff_;
    bool asked_again_ = false;
    bool maybe_taken_ = false;  // a reply was lost since the last definite answer
};

}  // namespace seatlock::detail
