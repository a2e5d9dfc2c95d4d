// SPDX-License-Identifier: MIT
// tests/faults/faults.hpp: faults injected from outside while buyers are at work: an
// action repeated on a timer (killing Redis connections, flushing its functions), and a
// SQLite write lock held longer than the servers wait for it.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace seatlock::testing::faults {

/// Runs `action` every `period` on its own thread until stop() (or destruction); counts
/// the runs that threw instead of stopping on them.
class Repeatedly {
public:
    Repeatedly(std::chrono::milliseconds period, std::function<void()> action);
    ~Repeatedly();
    Repeatedly(const Repeatedly&) = delete;
    Repeatedly& operator=(const Repeatedly&) = delete;

    void stop();
    [[nodiscard]] int runs() const { return runs_; }
    [[nodiscard]] int failures() const { return failures_; }

private:
    std::atomic<bool> stop_{false};
    std::atomic<int> runs_{0};
    std::atomic<int> failures_{0};
    std::thread thread_;
};

/// Holds the write lock of a SQLite file (BEGIN EXCLUSIVE on a connection of its own)
/// from construction until release() or destruction: every writer waits, then fails.
class DatabaseWriteLock {
public:
    explicit DatabaseWriteLock(const std::string& db_path);
    ~DatabaseWriteLock();
    DatabaseWriteLock(const DatabaseWriteLock&) = delete;
    DatabaseWriteLock& operator=(const DatabaseWriteLock&) = delete;

    void release();

private:
    sqlite3* db_ = nullptr;
    bool locked_ = false;
};

}  // namespace seatlock::testing::faults
