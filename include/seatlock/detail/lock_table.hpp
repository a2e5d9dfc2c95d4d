// SPDX-License-Identifier: MIT
// seatlock/detail/lock_table.hpp: the in-process lock table shared by MemoryBackend and
// FakeBackend. Keys are spread over striped mutexes; a multi-key step locks the stripes
// it needs in ascending order, so concurrent steps never deadlock and never show a
// partial acquisition.
#pragma once

#include <seatlock/detail/text.hpp>
#include <seatlock/operations.hpp>
#include <seatlock/result.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace seatlock::detail {

class LockTable {
public:
    explicit LockTable(std::size_t stripes = 64) : stripes_(std::max<std::size_t>(stripes, 1)) {
        for (auto& s : stripes_) s = std::make_unique<Stripe>();
    }

    // One run() per operation of op::lock_ops (seatlock/operations.hpp says what each
    // does); `now_ms` is the storage clock in milliseconds.

    Result<std::uint64_t> run(const op::acquire_locks& o, std::int64_t now_ms) {
        const auto keys = o.keys;
        const std::string& owner = o.owner;
        const std::int64_t lease_ms = o.lease.count();
        Guard guard(*this, keys);
        std::vector<std::string> busy;
        for (const auto& key : keys) {
            const Entry* entry = find(key);
            if (entry && entry->expires_ms > now_ms && entry->owner != owner) busy.push_back(key);
        }
        if (!busy.empty()) {
            return keys_busy(std::move(busy));
        }
        // Incremented while every stripe of these keys is locked: the next owner of any of
        // them can only draw a larger number.
        const std::uint64_t fence = fence_.fetch_add(1, std::memory_order_relaxed) + 1;
        for (const auto& key : keys) {
            stripe(key).entries[key] = Entry{owner, now_ms + lease_ms, fence};
        }
        return fence;
    }

    // Every later fencing token is larger than `at_least` (one counter for every group).
    Result<void> run(const op::raise_fencing& o, std::int64_t) {
        const std::uint64_t at_least = o.at_least;
        std::uint64_t current = fence_.load(std::memory_order_relaxed);
        while (current < at_least &&
               !fence_.compare_exchange_weak(current, at_least, std::memory_order_relaxed)) {
        }
        return {};
    }

    Result<bool> run(const op::release_locks& o, std::int64_t now_ms) {
        const auto keys = o.keys;
        const std::string& owner = o.owner;
        Guard guard(*this, keys);
        std::size_t released = 0;
        for (const auto& key : keys) {
            auto& entries = stripe(key).entries;
            auto it = entries.find(key);
            if (it == entries.end() || it->second.owner != owner) continue;
            // A lease that ran out is not ours any more, even if nobody took it yet.
            if (it->second.expires_ms > now_ms) ++released;
            entries.erase(it);
        }
        return released == keys.size();
    }

    Result<bool> run(const op::extend_locks& o, std::int64_t now_ms) {
        const auto keys = o.keys;
        const std::string& owner = o.owner;
        const std::int64_t lease_ms = o.lease.count();
        Guard guard(*this, keys);
        for (const auto& key : keys) {
            const Entry* entry = find(key);
            if (!entry || entry->owner != owner || entry->expires_ms <= now_ms) return false;
        }
        for (const auto& key : keys) stripe(key).entries[key].expires_ms = now_ms + lease_ms;
        return true;
    }

private:
    struct Entry {
        std::string owner;
        std::int64_t expires_ms = 0;
        std::uint64_t fence = 0;
    };
    struct Stripe {
        std::mutex mutex;
        std::unordered_map<std::string, Entry> entries;
    };

    // Locks the stripes of a key set in ascending index order.
    class Guard {
    public:
        Guard(LockTable& table, std::span<const std::string> keys) {
            indexes_.reserve(keys.size());
            for (const auto& key : keys) indexes_.push_back(table.index(key));
            std::sort(indexes_.begin(), indexes_.end());
            indexes_.erase(std::unique(indexes_.begin(), indexes_.end()), indexes_.end());
            locks_.reserve(indexes_.size());
            for (std::size_t i : indexes_) locks_.emplace_back(table.stripes_[i]->mutex);
        }

    private:
        std::vector<std::size_t> indexes_;
        std::vector<std::unique_lock<std::mutex>> locks_;
    };

    std::size_t index(const std::string& key) const {
        return std::hash<std::string>{}(key) % stripes_.size();
    }
    Stripe& stripe(const std::string& key) { return *stripes_[index(key)]; }
    const Entry* find(const std::string& key) {
        auto& entries = stripe(key).entries;
        auto it = entries.find(key);
        return it == entries.end() ? nullptr : &it->second;
    }

    std::vector<std::unique_ptr<Stripe>> stripes_;
    std::atomic<std::uint64_t> fence_{0};
};

}  // namespace seatlock::detail
