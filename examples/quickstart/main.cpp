// SPDX-License-Identifier: MIT
// Locks three seats of one game at once, all or nothing, then writes "the order" with the
// lock's fencing token, as a real service would pass it to its database. In memory; with a
// Redis URL argument (redis://host:port, unix:///path/to/redis.sock), the same on Redis,
// when seatlock was installed with its Redis backend.
#include <seatlock/seatlock.hpp>
#if __has_include(<seatlock/backends/redis.hpp>)  // installed with the Redis backend only
#include <seatlock/backends/redis.hpp>
#define QUICKSTART_WITH_REDIS 1
#endif

#include <cstdio>

template <class Backend>
int lock_three_seats(Backend& backend) {
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

int main(int argc, char** argv) {
    std::printf("seatlock %s\n", SEATLOCK_VERSION);  // <seatlock/version.hpp>
    if (argc < 2) {
        seatlock::MemoryBackend backend;  // in-process; seatlock::RedisBackend to share across machines
        return lock_three_seats(backend);
    }
#ifdef QUICKSTART_WITH_REDIS
    auto options = seatlock::RedisOptions::from_url(argv[1]);
    if (!options) {
        std::fprintf(stderr, "%s\n", options.error().message().c_str());
        return 1;
    }
    seatlock::RedisBackend backend(*options);
    return lock_three_seats(backend);
#else
    (void)argv;
    std::fprintf(stderr, "this seatlock was installed without its Redis backend\n");
    return 1;
#endif
}
