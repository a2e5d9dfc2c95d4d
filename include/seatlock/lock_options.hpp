// SPDX-License-Identifier: MIT
// seatlock/lock_options.hpp: LockOptions, how a LockManager waits, leases, renews and
// releases.
#pragma once

#include <seatlock/backend.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace seatlock {

struct LockOptions {
    Millis wait = std::chrono::seconds(3);    ///< lock()/lock_all(): how long to keep trying
    Millis lease = std::chrono::seconds(10);  ///< how long the storage keeps a key for its owner
    bool watchdog = false;                    ///< renew every lease/3 while the guard lives
    /// Pauses between attempts, of acquisitions that find a key busy and of releases and
    /// renewals that failed in transit: the first up to backoff_min, doubling up to
    /// backoff_max, each a random part of that (full jitter). backoff_max is also how long
    /// a release being retried waits at most, once the storage answers again.
    Millis backoff_min = Millis(2);
    Millis backoff_max = Millis(100);
    /// How long a release (unlock(), a guard's destructor, an acquisition whose outcome
    /// stayed unknown) keeps being retried after a failure in transit: io_error, timeout,
    /// connection_failed or outcome_unknown. Releasing compares the owner token, so asking
    /// again is always safe. The first release_retry_inline are spent in the calling
    /// thread; the rest on the manager's background thread, never past the end of the
    /// lease, when the storage frees the keys anyway. extend() retries for
    /// release_retry_inline, in the calling thread.
    Millis release_retry = std::chrono::seconds(30);
    Millis release_retry_inline = Millis(100);
    /// Called once, from the watchdog thread, when a watched lease is lost.
    std::function<void(const std::vector<std::string>& keys)> on_lost;
    /// Called once for every release that was given up: a failure that retrying cannot
    /// mend, or failures in transit beyond release_retry or until the lease ended. From
    /// the destructor's thread or from the manager's background thread; the Failure names
    /// the keys, the attempts and the last error. Releases the caller was told about
    /// already (unlock() returned the error and nothing was left to retry) are not
    /// reported again; neither is a lease found lost (that is on_lost's or unlock()'s).
    std::function<void(const Failure&)> on_release_error;
};

}  // namespace seatlock
