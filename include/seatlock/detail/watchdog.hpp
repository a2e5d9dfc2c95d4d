// seatlock/detail/watchdog.hpp: one background thread per LockManager that keeps the
// leases of watched guards alive, renewing each every lease/3. A renewal the storage
// refuses (the lease was lost) or that keeps failing until the lease must have ended
// marks the guard lost and calls its on_lost callback once.
#pragma once

#include <seatlock/backend.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::detail {

/// What a guard and the watchdog share about one acquisition.
struct LeaseState {
    std::vector<std::string> keys;
    std::string owner;
    std::uint64_t fencing_token = 0;
    Millis lease{};
    std::function<void(const std::vector<std::string>&)> on_lost;
    std::atomic<bool> lost{false};
    // Local, conservative end of the lease: measured from before the request was sent.
    std::atomic<std::chrono::steady_clock::rep> valid_until{0};

    void mark_lost() {
        if (!lost.exchange(true) && on_lost) on_lost(keys);
    }
};

template <LockBackend B>
class Watchdog {
public:
    explicit Watchdog(B& backend) : backend_(&backend) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

    void watch(const std::shared_ptr<LeaseState>& state) {
        std::lock_guard lock(mutex_);
        entries_.push_back({state, Clock::now() + state->lease / 3});
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
        wake_.notify_all();
    }

    /// Stops renewing; returns once no renewal of `state` is in flight (unless called
    /// from an on_lost callback, i.e. from inside that renewal).
    void unwatch(const LeaseState* state) {
        std::unique_lock lock(mutex_);
        std::erase_if(entries_, [state](const Entry& e) { return e.state.get() == state; });
        if (std::this_thread::get_id() == thread_.get_id()) return;
        idle_.wait(lock, [&] { return renewing_ != state; });
    }

private:
    using Clock = std::chrono::steady_clock;
    struct Entry {
        std::shared_ptr<LeaseState> state;
        Clock::time_point next;
    };

    void run() {
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            auto due = std::min_element(entries_.begin(), entries_.end(),
                                        [](const Entry& a, const Entry& b) { return a.next < b.next; });
            if (due == entries_.end()) {
                wake_.wait(lock);
                continue;
            }
            if (due->next > Clock::now()) {
                wake_.wait_until(lock, due->next);
                continue;
            }
            auto state = due->state;
            due->next = Clock::now() + state->lease / 3;
            renewing_ = state.get();
            lock.unlock();
            renew(*state);
            lock.lock();
            renewing_ = nullptr;
            idle_.notify_all();
            if (state->lost) {
                std::erase_if(entries_, [&](const Entry& e) { return e.state == state; });
            }
        }
    }

    void renew(LeaseState& state) {
        const auto sent = Clock::now();
        auto renewed = backend_->extend_locks(state.keys, state.owner, state.lease);
        if (renewed && *renewed) {
            state.valid_until = (sent + state.lease).time_since_epoch().count();
        } else if (renewed || Clock::now().time_since_epoch().count() >= state.valid_until) {
            // Refused (someone else holds a key, or the lease ran out), or failing for so
            // long that the lease must have ended.
            state.mark_lost();
        }
    }

    B* backend_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::vector<Entry> entries_;
    const LeaseState* renewing_ = nullptr;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace seatlock::detail
