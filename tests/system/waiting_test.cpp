// SPDX-License-Identifier: MIT
// tests/system/waiting_test.cpp: a request that waits holds no thread. With one HTTP
// thread, a request waiting for a lock (held here, from outside the server) or for the
// database (write-locked here) must not hold up the requests behind it: they are
// answered at once, while the waiting one is answered when what it waited for is free.
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/system_test.hpp"

#ifdef SEATLOCK_SYSTEM_TEST_REDIS
#include <seatlock/backends/redis.hpp>
#include <seatlock/lock_manager.hpp>
#endif

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace waiting_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto wait_for = 1500ms;  // how long the waiting request waits
constexpr int others = 50;         // requests sent meanwhile
constexpr int clients = 5;

// The server's write lock on its SQLite file, taken as another process would.
class DatabaseWriteLock {
public:
    explicit DatabaseWriteLock(const std::string& path) {
        REQUIRE(sqlite3_open(path.c_str(), &db_) == SQLITE_OK);
        REQUIRE(sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    }
    ~DatabaseWriteLock() {
        release();
        sqlite3_close(db_);
    }
    DatabaseWriteLock(const DatabaseWriteLock&) = delete;
    DatabaseWriteLock& operator=(const DatabaseWriteLock&) = delete;
    void release() {
        if (held_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        held_ = false;
    }

private:
    sqlite3* db_ = nullptr;
    bool held_ = true;
};

struct Others {
    Clock::duration slowest{};
    Clock::time_point last_answered{};
    int answered = 0;
};

// `others` requests that need neither the lock nor the database, from `clients` connections
// at once: how long the slowest took and when the last was answered.
Others send_others(const TicketingServer& server) {
    std::atomic<int> answered{0};
    std::vector<Clock::duration> slowest(clients);
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&, c] {
            auto client = server.client();
            for (int r = 0; r < others / clients; ++r) {
                const auto sent = Clock::now();
                const auto reply = client.get("/events/demo-game/seats?zone=bleachers-right");
                slowest[static_cast<std::size_t>(c)] =
                    std::max(slowest[static_cast<std::size_t>(c)], Clock::now() - sent);
                if (reply.status == 200) ++answered;
            }
        });
    }
    for (auto& t : threads) t.join();
    Others out;
    out.last_answered = Clock::now();
    out.answered = answered;
    for (const auto& s : slowest) out.slowest = std::max(out.slowest, s);
    return out;
}

// The others, sent while a request waits for a lock (its `status` still 0): every one
// answered, none slowly, and the request still waiting. Returns once it has waited wait_for.
Others answered_meanwhile(const TicketingServer& server, const std::atomic<int>& status) {
    const auto locked_at = Clock::now();
    const Others meanwhile = send_others(server);
    CHECK(meanwhile.answered == others);
    CHECK(meanwhile.slowest < 500ms);
    CHECK(status == 0);  // still waiting
    std::this_thread::sleep_for(wait_for - (Clock::now() - locked_at));
    return meanwhile;
}

std::string hold_bleacher(HttpClient& client, const std::string& buyer) {
    const auto held =
        client.post("/events/demo-game/holds", R"({"zone":"bleachers-left","quantity":1})", buyer);
    REQUIRE(held.status == 201);
    return std::string(held.json().at("token").as_string());
}

}  // namespace

TEST_CASE_TEMPLATE("a request waiting for the database does not hold up the others", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage, {"--threads", "1"}));
    INFO(server.log());
    DatabaseWriteLock lock(server.db_path());

    // A hold writes its pending row: it waits for the lock (SQLite's busy timeout is 5 s).
    std::atomic<int> status{0};
    Clock::time_point answered;
    std::thread waiting([&] {
        auto client = server.client();
        const auto reply = client.post("/events/demo-game/holds",
                                       R"({"zone":"bleachers-left","quantity":1})", "patient");
        answered = Clock::now();
        status = reply.status;
    });
    std::this_thread::sleep_for(200ms);  // the hold reaches the database
    const Others meanwhile = answered_meanwhile(server, status);
    lock.release();
    waiting.join();
    CHECK(status == 201);
    CHECK(answered > meanwhile.last_answered);
}

#ifdef SEATLOCK_SYSTEM_TEST_REDIS
TEST_CASE("a request waiting for a lock does not hold up the others") {
    RedisStorage storage;
    TicketingServer server(on(storage, {"--threads", "1"}));
    INFO(server.log());
    auto buyer = server.client();
    const std::string token = hold_bleacher(buyer, "patient");

    // The server locks a hold's row with this key to extend it
    // (examples/ticketing_server/ticketing.cpp); taken here, as another server would, the
    // extend waits up to 3 s for it.
    seatlock::RedisBackend backend(seatlock::RedisOptions::from_url(storage.redis.url()).value());
    seatlock::LockManager locks(backend);
    auto row_lock = locks.lock("demo-game:hold:" + token);
    REQUIRE(row_lock);

    std::atomic<int> status{0};
    Clock::time_point answered;
    std::thread waiting([&] {
        const auto reply = buyer.post("/holds/" + token + "/extend", R"({"ttl_s":60})", "patient");
        answered = Clock::now();
        status = reply.status;
    });
    std::this_thread::sleep_for(200ms);  // the extend is waiting for the lock
    const Others meanwhile = answered_meanwhile(server, status);
    REQUIRE(row_lock->unlock());
    waiting.join();
    CHECK(status == 200);
    CHECK(answered > meanwhile.last_answered);
}
#endif

}  // namespace waiting_test
