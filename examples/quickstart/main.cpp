// Locks three seats of one game at once, all or nothing, then writes "the order" with the
// lock's fencing token, as a real service would pass it to its database.
#include <seatlock/seatlock.hpp>

#include <cstdio>

int main() {
    seatlock::MemoryBackend backend;  // in-process; seatlock::RedisBackend to share across machines
    seatlock::LockManager locks(backend);

    auto guard = locks.lock_all({"game42:A-1", "game42:A-2", "game42:A-3"});
    if (!guard) {
        std::fprintf(stderr, "could not lock: %s\n", guard.error().message().c_str());
        return 1;
    }
    std::printf("locked %zu seats, fencing token %llu\n", guard->keys().size(),
                static_cast<unsigned long long>(guard->fencing_token()));

    // Someone else trying now gets a clear refusal naming the key.
    auto other = locks.try_lock("game42:A-2");
    std::printf("second try: %s\n", other ? "locked?!" : other.error().message().c_str());
    return other ? 1 : 0;
}   // guard's destructor releases all three seats
