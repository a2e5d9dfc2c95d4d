// SPDX-License-Identifier: MIT
// tests/faults/load.hpp: buyers under load, each a thread with a blocking HTTP client that
// behaves as a careful client of the ticketing API should: it retries a 503 after its
// Retry-After (capped at 200 ms to keep the tests fast), a hold with the same
// Idempotency-Key, a confirm with the same payment id, a release and a cancel as they
// were; and it moves to the next server when its own stops answering. Every answer is
// recorded: the checks judge the servers by what their clients were told.
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster_of_servers.hpp"

namespace seatlock::testing::faults {

/// One HTTP attempt and what it said.
struct Answer {
    int status = 0;                  ///< 0: no answer (refused, reset, timed out)
    std::size_t server = 0;          ///< index into the load's ports
    std::string error;               ///< the body's "error" field ("" when none)
    bool has_message = false;        ///< the body has a "message" string
    std::string retry_after;         ///< the Retry-After header ("" when absent)
    std::optional<bool> retry_safe;  ///< the body's "retry_safe", when it is a boolean
    bool replayed = false;           ///< Idempotent-Replayed: true
    std::string excerpt;             ///< the start of the body, or why there was no answer
};

/// One call of a buyer with all its attempts: retried until an answer other than 503
/// (or no answer), or until the client gives up.
struct Call {
    std::int64_t first_sent_ms = 0;  ///< Unix ms before the first attempt was sent
    std::int64_t answered_ms = 0;    ///< Unix ms after the last answer came
    std::vector<Answer> answers;
    boost::json::object body;  ///< the last answer's body, when a JSON object

    [[nodiscard]] const Answer& last() const { return answers.back(); }
    [[nodiscard]] int status() const { return answers.empty() ? 0 : last().status; }
    [[nodiscard]] bool ok() const { return status() >= 200 && status() < 300; }
    /// Never got a definite answer: the call may or may not have happened.
    [[nodiscard]] bool gave_up() const { return status() == 0 || status() >= 500; }
    /// An attempt before the last one got a 5xx or no answer.
    [[nodiscard]] bool was_retried() const { return answers.size() > 1; }
};

/// One buyer's story: one hold (under its own buyer id and Idempotency-Key) and what
/// followed it.
struct Purchase {
    std::string buyer;
    std::string idempotency_key;
    std::string payment_id;
    std::vector<std::string> asked;  ///< the seats asked for
    Call hold;
    // From the hold's answer, when it was granted (201, or a 200 replay still "held"):
    bool granted = false;
    std::string token;
    std::vector<std::string> seats;
    std::int64_t expires_at_ms = 0;
    // What the buyer did next, if anything (none: the hold was left to expire).
    std::optional<Call> confirm;
    std::optional<Call> release;
    std::optional<Call> cancel;
};

struct LoadOptions {
    std::string tag;         ///< names buyers "<tag>.t<thread>.n<purchase>"
    std::vector<int> ports;  ///< buyer i starts on ports[i % size]
    Venue venue;
    int buyers = 36;
    int purchases_per_buyer = 400;  ///< at most; the load normally ends by time
    double confirm_share = 0.55;    ///< of granted holds; then release_share are released,
    double release_share = 0.30;    ///< the rest left to expire
    double cancel_share = 0.60;     ///< of paid orders, so that seats come back on sale
    /// How long a call is retried before the client gives up: longer than the servers'
    /// SQLite busy timeout (5 s) and lock wait (3 s).
    std::chrono::milliseconds retry_for{8000};
};

/// Starts the buyers at construction; finish() stops them and hands over their records.
class Load {
public:
    explicit Load(LoadOptions options);
    ~Load();
    Load(const Load&) = delete;
    Load& operator=(const Load&) = delete;

    /// Lets the buyers run for `more`, then lets each end its current purchase (retrying
    /// for at most `retry_for` from now) and waits for them.
    void finish(std::chrono::milliseconds more);
    /// Every buyer's purchases; after finish().
    [[nodiscard]] const std::vector<Purchase>& purchases() const { return purchases_; }
    /// Counts of what happened, for the test's log.
    [[nodiscard]] std::string summary() const;

private:
    void buyer(int index);

    LoadOptions options_;
    std::atomic<bool> stop_{false};
    /// Once stopping: no call retries past this steady_clock instant (its tick count).
    std::atomic<std::chrono::steady_clock::rep> retry_until_{0};
    std::mutex mutex_;
    std::vector<Purchase> purchases_;
    std::vector<std::thread> threads_;
};

}  // namespace seatlock::testing::faults
