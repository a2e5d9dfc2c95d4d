// SPDX-License-Identifier: MIT
// redis_race_worker: one of the processes of the multi-process race (multi_process.cpp).
//
//   redis_race_worker PORT LOG_PATH PROCESS_INDEX THREADS ROUNDS
//
// Each thread, ROUNDS times: holds 1 to 3 overlapping seats (named zone "race") or places
// (GA zone "pit") of event "race", then confirms (1 in 16) or releases the hold; and
// takes two of six lock keys with lock_all, incrementing a plain Redis counter per key
// with GET + SET while it holds them (lost updates would show a broken lock).
//
// Every success is logged with CLOCK_MONOTONIC nanoseconds, which all processes share:
//   hold TOKEN ZONE T_REPLY SEAT...        (T_REPLY: after the reply came)
//   confirm TOKEN T_SENT ORDER             (T_SENT: before the request left)
//   release TOKEN T_SENT
//   lock FENCE T_ACQUIRED T_RELEASING KEY...
//   refused CODE
// Exit status 0, or 1 after printing any unexpected failure.
#include "support/redis_admin.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace {

using namespace std::chrono_literals;

long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

class Log {
public:
    explicit Log(const std::string& path) : out_(path) {}
    void line(const std::string& text) {
        std::lock_guard lock(mutex_);
        out_ << text << '\n';
    }
    void fail(const std::string& what) {
        std::lock_guard lock(mutex_);
        std::cerr << "race worker: " << what << '\n';
        failed_ = true;
    }
    bool failed() const { return failed_; }
    bool good() const { return out_.good(); }

private:
    std::mutex mutex_;
    std::ofstream out_;
    std::atomic<bool> failed_{false};
};

struct Worker {
    int port;
    int process;
    int rounds;
    seatlock::SeatHoldStore<seatlock::RedisBackend>& store;
    seatlock::LockManager<seatlock::RedisBackend>& locks;
    Log& log;

    void run(int thread) {
        seatlock::testing::RedisAdmin counters(port);
        std::mt19937 rng(static_cast<unsigned>(process * 1000 + thread));
        const std::string id = std::to_string(process) + "-" + std::to_string(thread);
        for (int i = 0; i < rounds; ++i) {
            race_for_seats(rng, id, i);
            race_for_locks(rng, counters);
        }
    }

    void race_for_seats(std::mt19937& rng, const std::string& id, int round) {
        seatlock::HoldRequest request;
        if (rng() % 4 == 0) {
            request = seatlock::quantity("pit", 1 + static_cast<int>(rng() % 3));
        } else {
            // 1 to 3 seats from a window of 6 of the 40: overlaps with other requests.
            const int first = 1 + static_cast<int>(rng() % 35);
            std::set<std::string> seats;
            const int n = 1 + static_cast<int>(rng() % 3);
            while (static_cast<int>(seats.size()) < n) {
                seats.insert("S-" + std::to_string(first + static_cast<int>(rng() % 6)));
            }
            request = seatlock::named_seats("race", {seats.begin(), seats.end()});
        }
        auto hold = store.hold("race", "buyer-" + id, request);
        if (!hold) {
            if (hold.is(seatlock::errc::seat_taken) || hold.is(seatlock::errc::sold_out)) {
                log.line(hold.is(seatlock::errc::seat_taken) ? "refused seat_taken"
                                                             : "refused sold_out");
            } else {
                log.fail("hold: " + hold.error().message());
            }
            return;
        }
        std::ostringstream line;
        line << "hold " << hold->token << ' ' << hold->zone << ' ' << now_ns();
        for (const auto& seat : hold->seats) line << ' ' << seat;
        log.line(line.str());
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
        if (rng() % 16 == 0) {
            const std::string order = "order-" + id + "-" + std::to_string(round);
            const long long sent = now_ns();
            auto paid = store.confirm(hold->token, order);
            if (!paid) return log.fail("confirm: " + paid.error().message());
            log.line("confirm " + hold->token + " " + std::to_string(sent) + " " + order);
        } else {
            const long long sent = now_ns();
            auto released = store.release(hold->token);
            if (!released) return log.fail("release: " + released.error().message());
            log.line("release " + hold->token + " " + std::to_string(sent));
        }
    }

    void race_for_locks(std::mt19937& rng, seatlock::testing::RedisAdmin& counters) {
        const int a = static_cast<int>(rng() % 6);
        const int b = (a + 1 + static_cast<int>(rng() % 5)) % 6;
        const std::vector<std::string> keys{"lockrace:k" + std::to_string(a),
                                            "lockrace:k" + std::to_string(b)};
        auto guard = locks.lock_all(keys);
        if (!guard) return log.fail("lock_all: " + guard.error().message());
        const long long acquired = now_ns();
        for (const auto& key : guard->keys()) {
            auto value = counters.command({"GET", "counter:" + key});
            const long long n = value->type == REDIS_REPLY_STRING
                                    ? std::stoll(std::string(value->str, value->len))
                                    : 0;
            counters.command({"SET", "counter:" + key, std::to_string(n + 1)});
        }
        const long long releasing = now_ns();
        std::ostringstream line;
        line << "lock " << guard->fencing_token() << ' ' << acquired << ' ' << releasing;
        for (const auto& key : guard->keys()) line << ' ' << key;
        log.line(line.str());
        if (auto released = guard->unlock(); !released) {
            log.fail("unlock: " + released.error().message());
        }
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: redis_race_worker PORT LOG_PATH PROCESS_INDEX THREADS ROUNDS\n";
        return 2;
    }
    const int port = std::stoi(argv[1]);
    const int process = std::stoi(argv[3]);
    const int threads = std::stoi(argv[4]);
    const int rounds = std::stoi(argv[5]);
    Log log(argv[2]);
    if (!log.good()) {
        std::cerr << "race worker: cannot write " << argv[2] << '\n';
        return 1;
    }

    seatlock::RedisOptions options;
    options.port = port;
    options.command_timeout = 10s;  // sanitizer builds on two busy cores are slow
    options.pool_size = static_cast<std::size_t>(threads);
    seatlock::RedisBackend backend(options);
    seatlock::HoldPolicy policy;
    policy.max_seats_per_holder = 0;
    policy.hold_ttl = 5min;  // no hold expires during the race: each ends by confirm or release
    seatlock::SeatHoldStore store(backend, policy);
    seatlock::LockOptions lock_options;
    lock_options.wait = 60s;
    lock_options.lease = 60s;
    seatlock::LockManager locks(backend, lock_options);

    Worker worker{port, process, rounds, store, locks, log};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&worker, t] { worker.run(t); });
    for (auto& t : pool) t.join();
    return log.failed() ? 1 : 0;
}
