// SPDX-License-Identifier: MIT
// seatlock/lock_clock.hpp: LockClock, the time a LockManager waits and measures leases by.
//
// A LockManager built without one reads std::chrono::steady_clock, sleeps in the calling
// thread, waits on its background thread's condition variable and pauses asynchronous
// calls on Asio steady timers: no clock object, no indirect call. Given a LockClock (which
// must outlive the manager and every guard it hands out), every reading of the time and
// every wait of the manager, its guards, its watchdog thread and its asynchronous calls go
// through it instead. FakeLockClock (seatlock/backends/fake.hpp) is the one tests use: time
// moves only when it is advanced, and it moves FakeBackend's clock with it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace seatlock {

class LockClock {
public:
    using time_point = std::chrono::steady_clock::time_point;

    virtual ~LockClock() = default;

    /// The time now; never goes back.
    [[nodiscard]] virtual time_point now() const = 0;

    /// A pause of the calling thread until now() >= `t`: between attempts of lock() and
    /// lock_all(), of a release or an extend() retried in the caller's thread.
    virtual void sleep_until(time_point t) = 0;

    /// The manager's background thread waiting, with `lock` held on entry and on return,
    /// until `cv` is notified through notify() or now() >= `t` (time_point::max(): no end).
    /// May return early; the caller looks again.
    virtual void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            time_point t) = 0;
    /// Wakes the thread waiting in wait_until() on `cv`; called with that wait's mutex held.
    virtual void notify(std::condition_variable& cv) = 0;
    /// `cv` is about to be destroyed: no notify() or wait_until() on it follows.
    virtual void forget(std::condition_variable& cv) = 0;

    /// An asynchronous pause: `fire` is called once, from whichever thread moves the clock
    /// past `t` (or from this call when `t` has passed), unless cancel_call(id) removed it
    /// before. `id` names the call until then; `fire` must not call back into the clock.
    virtual void call_at(time_point t, const void* id, std::function<void()> fire) = 0;
    /// Removes the pending call named `id`; false when there is none (it fired already).
    virtual bool cancel_call(const void* id) = 0;

protected:
    LockClock() = default;
    LockClock(const LockClock&) = default;
    LockClock& operator=(const LockClock&) = default;
};

}  // namespace seatlock
