// SPDX-License-Identifier: MIT
// A lock whose fencing token guards an SQLite row, and a paused holder refused.
//
//     example_fenced_row
//
// Holder A locks seat A-1 and stops (a GC pause, a swapped-out process, a slow disk)
// for longer than its lease. The storage ends the lease, holder B locks the seat with a
// larger fencing token and writes the row. A wakes, still believing it holds the lock,
// and writes: the database refuses, because A's token is smaller than the row's. A lock
// alone cannot prevent that late write; the token checked by the database does.
// Exits 0 when B's write was taken and A's refused.
#include <seatlock/seatlock.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

namespace {

// The seat's row: who has it, and the largest fencing token any write to it carried.
const char* const schema =
    "CREATE TABLE seats(event TEXT NOT NULL, seat TEXT NOT NULL, owner TEXT,"
    " fence INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(event, seat));"
    "INSERT INTO seats(event, seat) VALUES('game42', 'A-1');";

// Writes the row only when `fence` is larger than every token written before: one
// statement, so no other write can come between the check and the update.
bool write_owner(sqlite3* db, const std::string& owner, std::uint64_t fence) {
    sqlite3_stmt* update = nullptr;
    sqlite3_prepare_v2(db,
                       "UPDATE seats SET owner = ?1, fence = ?2"
                       " WHERE event = 'game42' AND seat = 'A-1' AND fence < ?2",
                       -1, &update, nullptr);
    sqlite3_bind_text(update, 1, owner.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(update, 2, static_cast<sqlite3_int64>(fence));
    const bool done = sqlite3_step(update) == SQLITE_DONE && sqlite3_changes(db) == 1;
    sqlite3_finalize(update);
    return done;
}

std::string owner_of_row(sqlite3* db) {
    sqlite3_stmt* select = nullptr;
    sqlite3_prepare_v2(db, "SELECT owner FROM seats WHERE event = 'game42' AND seat = 'A-1'", -1,
                       &select, nullptr);
    std::string owner;
    if (sqlite3_step(select) == SQLITE_ROW && sqlite3_column_text(select, 0)) {
        owner = reinterpret_cast<const char*>(sqlite3_column_text(select, 0));
    }
    sqlite3_finalize(select);
    return owner;
}

}  // namespace

int main() {
    sqlite3* db = nullptr;  // in memory here; your service's database file in real life
    if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sqlite3_exec(db, schema, nullptr, nullptr, nullptr) != SQLITE_OK) {
        std::fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
        return 1;
    }

    // A short lease, so that the pause below outlasts it without a long wait. The same
    // code runs on seatlock::RedisBackend, shared by many processes.
    seatlock::MemoryBackend backend;
    seatlock::LockOptions options;
    options.lease = std::chrono::milliseconds(200);
    seatlock::LockManager locks(backend, options);

    auto a = locks.lock("game42:A-1");
    if (!a) {
        std::fprintf(stderr, "A could not lock: %s\n", a.error().message().c_str());
        return 1;
    }
    std::printf("A locked game42:A-1 with fencing token %llu\n",
                static_cast<unsigned long long>(a->fencing_token()));

    // A stops here, between taking the lock and writing, for longer than its lease.
    std::this_thread::sleep_for(options.lease + std::chrono::milliseconds(100));

    // The storage ended A's lease: B gets the lock, with a larger token, and writes.
    auto b = locks.try_lock("game42:A-1");
    if (!b || b->fencing_token() <= a->fencing_token()) {
        std::fprintf(stderr, "B should have locked with a larger token\n");
        return 1;
    }
    const bool b_wrote = write_owner(db, "B", b->fencing_token());
    std::printf("B locked game42:A-1 with fencing token %llu and wrote the row: %s\n",
                static_cast<unsigned long long>(b->fencing_token()), b_wrote ? "accepted" : "refused");

    // A wakes up and carries on with its write, carrying its own, older token.
    const bool a_wrote = write_owner(db, "A", a->fencing_token());
    std::printf("A woke up and wrote with token %llu: %s\n",
                static_cast<unsigned long long>(a->fencing_token()),
                a_wrote ? "accepted" : "refused (the row has a larger token)");

    // Unlocking tells A too, but only afterwards; and B's lock is untouched by it.
    auto unlocked = a->unlock();
    std::printf("A's unlock: %s\n", unlocked ? "ok" : unlocked.error().message().c_str());

    const std::string owner = owner_of_row(db);
    std::printf("the row says: owner %s\n", owner.c_str());
    sqlite3_close(db);
    const bool as_described =
        b_wrote && !a_wrote && owner == "B" && unlocked.is(seatlock::errc::lock_not_owned);
    return as_described ? 0 : 1;
}
