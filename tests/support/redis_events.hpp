// SPDX-License-Identifier: MIT
// tests/support/redis_events.hpp: a RedisOptions::on_event that keeps every RedisEvent it is
// given, for tests that check what the backend reported and wait for an event to come
// (the callback runs on the backend's notifier thread, a little after the fact).
#pragma once

#include <seatlock/backends/redis.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::testing {

class EventLog {
public:
    /// The callback to put in RedisOptions::on_event; the log must outlive the backend.
    std::function<void(const RedisEvent&)> callback() {
        return [this](const RedisEvent& e) {
            {
                std::lock_guard lock(mutex_);
                events_.push_back(e);
                threads_.push_back(std::this_thread::get_id());
            }
            changed_.notify_all();
        };
    }

    /// Waits up to `timeout` for an event that `match` accepts (among those already
    /// kept, too); whether one came.
    bool wait_for(const std::function<bool(const RedisEvent&)>& match,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] {
            for (const auto& e : events_) {
                if (match(e)) return true;
            }
            return false;
        });
    }
    /// The same for an event of `kind` on `connection`.
    bool wait_for(RedisEvent::Kind kind, RedisEvent::Connection connection,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        return wait_for(
            [&](const RedisEvent& e) { return e.kind == kind && e.connection == connection; },
            timeout);
    }

    /// The events kept so far, in the order they were delivered.
    std::vector<RedisEvent> events() const {
        std::lock_guard lock(mutex_);
        return events_;
    }
    /// The threads that ran the callback, one per event.
    std::vector<std::thread::id> threads() const {
        std::lock_guard lock(mutex_);
        return threads_;
    }
    /// How many events kept match.
    std::size_t count(const std::function<bool(const RedisEvent&)>& match) const {
        std::lock_guard lock(mutex_);
        std::size_t n = 0;
        for (const auto& e : events_) n += match(e) ? 1 : 0;
        return n;
    }
    /// Forgets what was kept.
    void clear() {
        std::lock_guard lock(mutex_);
        events_.clear();
        threads_.clear();
    }

    /// "kind connection node [reason]" per event, for messages of failed checks.
    std::string describe() const {
        std::lock_guard lock(mutex_);
        std::string out;
        for (const auto& e : events_) {
            out += std::string(to_string(e.kind)) + " " + to_string(e.connection) + " " + e.node +
                   (e.previous.empty() ? "" : " from " + e.previous) +
                   (e.reason.empty() ? "" : " (" + e.reason + ")") + "\n";
        }
        return out;
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<RedisEvent> events_;
    std::vector<std::thread::id> threads_;
};

}  // namespace seatlock::testing
