// SPDX-License-Identifier: MIT
// tests/faults/faults.cpp: the timer thread and the SQLite lock.
#include "faults.hpp"

#include <stdexcept>

namespace seatlock::testing::faults {

Repeatedly::Repeatedly(std::chrono::milliseconds period, std::function<void()> action)
    : thread_([this, period, action = std::move(action)] {
          auto next = std::chrono::steady_clock::now();
          while (!stop_) {
              try {
                  action();
              } catch (const std::exception&) {
                  ++failures_;
              }
              ++runs_;
              next += period;
              while (!stop_ && std::chrono::steady_clock::now() < next)
                  std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
      }) {}

Repeatedly::~Repeatedly() {
    stop();
}

void Repeatedly::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

DatabaseWriteLock::DatabaseWriteLock(const std::string& db_path) {
    if (sqlite3_open_v2(db_path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
        const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        throw std::runtime_error("cannot open " + db_path + ": " + why);
    }
    // The servers' own transactions are short: wait them out to take the lock.
    sqlite3_busy_timeout(db_, 5000);
    char* error = nullptr;
    if (sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, &error) != SQLITE_OK) {
        const std::string why = error ? error : "unknown error";
        sqlite3_free(error);
        sqlite3_close(db_);
        throw std::runtime_error("BEGIN EXCLUSIVE failed: " + why);
    }
    locked_ = true;
}

DatabaseWriteLock::~DatabaseWriteLock() {
    release();
    sqlite3_close(db_);
}

void DatabaseWriteLock::release() {
    if (!locked_) return;
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    locked_ = false;
}

}  // namespace seatlock::testing::faults
