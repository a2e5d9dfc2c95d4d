// SPDX-License-Identifier: MIT
// src/redis/telemetry.cpp: the events' queue and notifier thread, and the counters' list
// (telemetry.hpp says why they are so).
#include "telemetry.hpp"

#include <utility>

namespace seatlock {

const char* to_string(RedisEvent::Kind kind) noexcept {
    using K = RedisEvent::Kind;
    switch (kind) {
        case K::connected: return "connected";
        case K::disconnected: return "disconnected";
        case K::reconnecting: return "reconnecting";
        case K::primary_changed: return "primary_changed";
        case K::slots_refreshed: return "slots_refreshed";
        case K::redirected: return "redirected";
        case K::library_loaded: return "library_loaded";
        case K::slow_call: return "slow_call";
    }
    return "unknown";
}

const char* to_string(RedisEvent::Connection connection) noexcept {
    using C = RedisEvent::Connection;
    switch (connection) {
        case C::pooled: return "pooled";
        case C::pipelined: return "pipelined";
        case C::discovery: return "discovery";
    }
    return "unknown";
}

namespace redis_detail {

RedisConnectionStats ConnectionCounters::read() const {
    RedisConnectionStats s;
    s.connection = connection;
    s.node = node;
    s.in_flight = in_flight.load(std::memory_order_relaxed);
    s.sent = sent.load(std::memory_order_relaxed);
    s.writes = writes.load(std::memory_order_relaxed);
    s.reads = reads.load(std::memory_order_relaxed);
    s.connects = connects.load(std::memory_order_relaxed);
    s.reconnects = reconnects.load(std::memory_order_relaxed);
    return s;
}

Telemetry::Telemetry(const RedisOptions& options)
    : on_event_(options.on_event),
      observed_(static_cast<bool>(options.on_event)),
      slow_threshold_(options.slow_call_threshold),
      limit_(options.event_queue_limit) {}

Telemetry::~Telemetry() {
    stop();
}

void Telemetry::emit(RedisEvent event) {
    if (!observed_) return;
    event.at = std::chrono::system_clock::now();
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        if (queue_.size() >= limit_) {
            ++dropped_since_last_;
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        event.dropped = std::exchange(dropped_since_last_, 0);
        queue_.push_back(std::move(event));
        if (!notifier_.joinable()) notifier_ = std::thread([this] { notify(); });
    }
    wake_.notify_one();
}

void Telemetry::emit(RedisEvent::Kind kind, RedisEvent::Connection connection, std::string node,
                     std::string reason) {
    if (!observed_) return;
    RedisEvent event;
    event.kind = kind;
    event.connection = connection;
    event.node = std::move(node);
    event.reason = std::move(reason);
    emit(std::move(event));
}

void Telemetry::notify() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        RedisEvent event = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        // The callback must not throw (RedisOptions::on_event); one that does loses its
        // event, not the thread, nor the process.
        try {
            on_event_(event);
        } catch (...) {
        }
        delivered_.fetch_add(1, std::memory_order_relaxed);
        lock.lock();
    }
}

std::shared_ptr<ConnectionCounters> Telemetry::counters(RedisEvent::Connection connection,
                                                        std::string node) {
    auto made = std::make_shared<ConnectionCounters>(connection, std::move(node));
    std::lock_guard lock(mutex_);
    counters_.push_back(made);
    return made;
}

RedisStats Telemetry::stats() const {
    std::vector<std::shared_ptr<ConnectionCounters>> listed;
    {
        std::lock_guard lock(mutex_);
        listed = counters_;
    }
    RedisStats s;
    s.connections.reserve(listed.size());
    for (const auto& c : listed) s.connections.push_back(c->read());
    s.events_delivered = delivered_.load(std::memory_order_relaxed);
    s.events_dropped = dropped_.load(std::memory_order_relaxed);
    return s;
}

void Telemetry::stop() {
    std::thread notifier;
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !notifier_.joinable()) return;
        stopping_ = true;
        dropped_.fetch_add(queue_.size(), std::memory_order_relaxed);
        queue_.clear();
        notifier.swap(notifier_);
    }
    wake_.notify_all();
    if (!notifier.joinable()) return;
    // A callback that destroys the backend (which it must not) would join itself.
    if (notifier.get_id() == std::this_thread::get_id())
        notifier.detach();
    else
        notifier.join();
}

}  // namespace redis_detail
}  // namespace seatlock
