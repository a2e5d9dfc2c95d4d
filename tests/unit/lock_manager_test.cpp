// SPDX-License-Identifier: MIT
// LockManager behaviour that needs FakeBackend's faults or its manual clock. Waits, leases
// and the watchdog run on a FakeLockClock: no test sleeps.
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace lock_manager_test {

using namespace std::chrono_literals;
using Fake = seatlock::FakeBackend;

namespace {
seatlock::LockOptions watched(seatlock::Millis lease, std::atomic<int>& lost_calls) {
    seatlock::LockOptions o;
    o.wait = 0ms;
    o.lease = lease;
    o.watchdog = true;
    o.on_lost = [&lost_calls](const std::vector<std::string>&) { ++lost_calls; };
    return o;
}
// Advances `clock` in steps of 5 ms until `condition` holds or `within` has passed on it.
bool eventually(seatlock::FakeLockClock& clock, const std::function<bool()>& condition,
                seatlock::Millis within = 3s) {
    const auto end = clock.now() + within;
    while (clock.now() < end) {
        if (condition()) return true;
        clock.advance(5ms);
    }
    return condition();
}
}  // namespace

TEST_CASE("the watchdog marks a guard lost and calls back when renewals keep failing") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, clock, watched(300ms, lost));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.inject({seatlock::op::id<seatlock::op::extend_locks>, Fake::FaultKind::fail_before, 1000});
    // Renewals fail from now on; once the lease must have ended the guard gives up.
    CHECK(eventually(clock, [&] { return lost == 1; }));
    CHECK_FALSE(guard->owns());
    CHECK(fake.count(seatlock::op::id<seatlock::op::extend_locks>) >= 2);
    clock.advance(300ms);
    CHECK(lost == 1);  // once only
}

TEST_CASE("the watchdog marks a guard lost when the storage says the lease is gone") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, clock, watched(300ms, lost));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.advance(1s);  // the storage's clock passes the lease before any renewal (none woken)
    seatlock::LockManager other(fake, clock);
    auto thief = other.try_lock("game1:A-1");
    REQUIRE(thief);
    CHECK(eventually(clock, [&] { return lost == 1; }));
    CHECK_FALSE(guard->owns());
    CHECK(thief->owns());
}

TEST_CASE("an on_lost callback may unlock its own guard") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    std::atomic<int> lost{0};
    std::optional<seatlock::SingleLock<Fake>> guard;
    seatlock::LockOptions o = watched(300ms, lost);
    o.on_lost = [&](const std::vector<std::string>&) {
        // From the watchdog thread, inside the renewal.
        if (guard->unlock().is(seatlock::errc::lock_not_owned)) ++lost;
    };
    seatlock::LockManager locks(fake, clock, o);
    auto taken = locks.try_lock("game1:A-1");
    REQUIRE(taken);
    guard.emplace(std::move(*taken));
    fake.advance(1s);
    CHECK(eventually(clock, [&] { return lost == 1; }));
}

TEST_CASE("a lost reply on acquire is settled by asking again with the same owner") {
    Fake fake;
    seatlock::LockManager locks(fake);
    fake.inject({seatlock::op::id<seatlock::op::acquire_locks>, Fake::FaultKind::lose_reply});
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    CHECK(fake.count(seatlock::op::id<seatlock::op::acquire_locks>) == 2);
    CHECK(guard->unlock());
}

TEST_CASE("a storage error on acquire is returned, not retried until wait runs out") {
    Fake fake;
    seatlock::LockManager locks(fake);
    fake.inject({seatlock::op::id<seatlock::op::acquire_locks>, Fake::FaultKind::fail_before});
    auto guard = locks.lock("game1:A-1");
    CHECK(guard.is(seatlock::errc::io_error));
    CHECK(fake.count(seatlock::op::id<seatlock::op::acquire_locks>) == 1);
}

// --- Releases and renewals that fail in transit -----------------------------------------

namespace {
// Counts on_release_error calls and keeps the last failure.
struct ReleaseErrors {
    std::atomic<int> count{0};
    std::mutex mutex;
    seatlock::Failure last;

    std::function<void(const seatlock::Failure&)> callback() {
        return [this](const seatlock::Failure& f) {
            std::lock_guard lock(mutex);
            last = f;
            ++count;
        };
    }
    seatlock::Failure last_failure() {
        std::lock_guard lock(mutex);
        return last;
    }
};

seatlock::LockOptions reporting(ReleaseErrors& errors) {
    seatlock::LockOptions o;
    o.wait = 0ms;
    o.on_release_error = errors.callback();
    return o;
}

// Whether another client can take `key` now.
bool free_now(Fake& fake, const std::string& key) {
    seatlock::LockManager other(fake);
    return bool(other.try_lock(key));
}
}  // namespace

TEST_CASE("a release that fails before it is applied is retried, and the key is free") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockManager locks(fake, clock, reporting(errors));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 2});
    auto unlocked = guard->unlock();
    CHECK_MESSAGE(unlocked, (unlocked ? "" : unlocked.error().message()));
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == 3);
    CHECK(free_now(fake, "game1:A-1"));
    CHECK(errors.count == 0);
}

TEST_CASE("a release whose reply was lost is retried and counts as released, not as lost") {
    Fake fake;
    seatlock::LockManager locks(fake);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::lose_reply});
    // The first attempt freed the key; the second finds it gone, which after a lost reply
    // sent within the lease means "released", not lock_not_owned.
    auto unlocked = guard->unlock();
    CHECK_MESSAGE(unlocked, (unlocked ? "" : unlocked.error().message()));
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == 2);
    CHECK(free_now(fake, "game1:A-1"));
}

TEST_CASE("a destructor's release that fails in transit is retried, and the key is free") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockManager locks(fake, clock, reporting(errors));
    {
        auto guard = locks.try_lock_all({"game1:A-1", "game1:A-2"});
        REQUIRE(guard);
        fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before});
        fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::lose_reply});
    }
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == 3);
    CHECK(free_now(fake, "game1:A-1"));
    CHECK(free_now(fake, "game1:A-2"));
    CHECK(errors.count == 0);
}

TEST_CASE("a release failing longer than the destructor waits goes on in the background") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry_inline = 50ms;
    seatlock::LockManager locks(fake, clock, o);
    std::optional<seatlock::SingleLock<Fake>> guard(locks.try_lock("game1:A-1").value());
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    const auto t0 = clock.now();
    guard.reset();  // the destructor, while the storage is out of reach
    CHECK(clock.now() - t0 < 300ms);  // does not wait for the storage
    clock.advance(300ms);
    CHECK_FALSE(free_now(fake, "game1:A-1"));
    const auto back = clock.now();
    fake.clear_faults();  // the storage answers again
    REQUIRE(eventually(clock, [&] { return free_now(fake, "game1:A-1"); }));
    CHECK(clock.now() - back < 500ms);  // not when the 10 s lease ends
    CHECK(errors.count == 0);
}

TEST_CASE("unlock returns a failure it could not mend in time; the background finishes it") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry_inline = 50ms;
    seatlock::LockManager locks(fake, clock, o);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    auto unlocked = guard->unlock();
    REQUIRE(unlocked.is(seatlock::errc::io_error));
    CHECK(unlocked.error().detail.find("retrying in the background") != std::string::npos);
    CHECK(unlocked.error().items == std::vector<std::string>{"game1:A-1"});
    CHECK_FALSE(guard->owns());
    fake.clear_faults();
    CHECK(eventually(clock, [&] { return free_now(fake, "game1:A-1"); }, 1s));
    CHECK(errors.count == 0);
}

TEST_CASE("a release still pending when its manager is destroyed is reported") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry_inline = 10ms;
    {
        seatlock::LockManager locks(fake, clock, o);
        fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
        { auto guard = locks.try_lock("game1:A-1").value(); }
        CHECK(errors.count == 0);
    }
    CHECK(errors.count == 1);
    CHECK(errors.last_failure().detail.find("destroyed") != std::string::npos);
}

TEST_CASE("a release given up after release_retry calls on_release_error exactly once") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry = 300ms;
    o.release_retry_inline = 50ms;
    seatlock::LockManager locks(fake, clock, o);
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    const auto t0 = clock.now();
    { auto guard = locks.try_lock_all({"game1:A-1", "game1:A-2"}).value(); }
    CHECK(errors.count == 0);  // still retrying in the background
    REQUIRE(eventually(clock, [&] { return errors.count > 0; }));
    CHECK(clock.now() - t0 >= 250ms);
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) > 3);  // tried again and again meanwhile
    const auto attempts = fake.count(seatlock::op::id<seatlock::op::release_locks>);
    clock.advance(300ms);
    CHECK(errors.count == 1);
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == attempts);  // and then left alone
    const auto f = errors.last_failure();
    CHECK(f.is(seatlock::errc::io_error));
    CHECK(f.items == std::vector<std::string>{"game1:A-1", "game1:A-2"});
    CHECK(f.detail.find("release_retry") != std::string::npos);
}

TEST_CASE("a release is not retried past the end of its lease") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.lease = 300ms;
    o.release_retry_inline = 20ms;
    seatlock::LockManager locks(fake, clock, o);
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    const auto t0 = clock.now();
    { auto guard = locks.try_lock("game1:A-1").value(); }
    REQUIRE(eventually(clock, [&] { return errors.count > 0; }));
    const auto took = clock.now() - t0;
    CHECK(took >= 200ms);
    CHECK(took < 2s);  // release_retry is 30 s, the lease ended long before
    CHECK(errors.last_failure().detail.find("as their lease ends") != std::string::npos);
    clock.advance(200ms);
    CHECK(errors.count == 1);
}
TEST_CASE("an acquisition with two lost replies leaves no lock behind") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockManager locks(fake, clock, reporting(errors));
    fake.inject({seatlock::op::id<seatlock::op::acquire_locks>, Fake::FaultKind::lose_reply, 2});
    auto guard = locks.try_lock_all({"game1:A-1", "game1:A-2"});
    REQUIRE(guard.is(seatlock::errc::outcome_unknown));  // both attempts took the keys
    CHECK(guard.error().detail.find("released again") != std::string::npos);
    CHECK(fake.count(seatlock::op::id<seatlock::op::acquire_locks>) == 2);
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == 1);
    CHECK(free_now(fake, "game1:A-1"));
    CHECK(free_now(fake, "game1:A-2"));
    CHECK(errors.count == 0);
}

TEST_CASE("an acquisition with a lost reply, then an error, leaves no lock behind") {
    Fake fake;
    seatlock::LockManager locks(fake);
    fake.inject({seatlock::op::id<seatlock::op::acquire_locks>, Fake::FaultKind::lose_reply});
    fake.inject({seatlock::op::id<seatlock::op::acquire_locks>, Fake::FaultKind::fail_before});
    CHECK(locks.try_lock("game1:A-1").is(seatlock::errc::io_error));
    CHECK(free_now(fake, "game1:A-1"));
}

TEST_CASE("when giving back an unknown acquisition fails too, on_release_error hears of it") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry = 200ms;
    o.release_retry_inline = 20ms;
    seatlock::LockManager locks(fake, clock, o);
    fake.inject({seatlock::op::id<seatlock::op::acquire_locks>, Fake::FaultKind::lose_reply, 2});
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard.is(seatlock::errc::outcome_unknown));
    CHECK(guard.error().detail.find("retried in the background") != std::string::npos);
    CHECK(eventually(clock, [&] { return errors.count == 1; }));
    CHECK(errors.last_failure().items == std::vector<std::string>{"game1:A-1"});
    clock.advance(300ms);
    CHECK(errors.count == 1);
}

TEST_CASE("unlock of a lease that was lost fails with lock_not_owned and touches nothing") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.lease = 200ms;
    seatlock::LockManager locks(fake, clock, o);
    auto old = locks.try_lock("game1:A-1");
    REQUIRE(old);
    fake.advance(300ms);
    seatlock::LockManager other(fake);
    auto next = other.try_lock("game1:A-1");
    REQUIRE(next);
    auto unlocked = old->unlock();
    REQUIRE(unlocked.is(seatlock::errc::lock_not_owned));
    CHECK(unlocked.error().items == std::vector<std::string>{"game1:A-1"});
    CHECK(other.try_lock("game1:A-1").is(seatlock::errc::lock_busy));
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == 1);
    CHECK(errors.count == 0);  // a lost lease is not a release error
}

TEST_CASE("extend of a lease that was lost fails with lock_not_owned and marks the guard lost") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    seatlock::LockOptions o;
    o.lease = 200ms;
    seatlock::LockManager locks(fake, clock, o);
    auto old = locks.try_lock("game1:A-1");
    REQUIRE(old);
    fake.advance(300ms);
    auto extended = old->extend(10s);
    REQUIRE(extended.is(seatlock::errc::lock_not_owned));
    CHECK_FALSE(old->owns());
    CHECK(free_now(fake, "game1:A-1"));
}

TEST_CASE("an unlocked guard's unlock and extend fail with lock_not_owned") {
    Fake fake;
    seatlock::LockManager locks(fake);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    REQUIRE(guard->unlock());
    CHECK(guard->unlock().is(seatlock::errc::lock_not_owned));
    CHECK(guard->extend(1s).is(seatlock::errc::lock_not_owned));
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == 1);
    CHECK(fake.count(seatlock::op::id<seatlock::op::extend_locks>) == 0);
}

TEST_CASE("extend retries a renewal that failed in transit") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    seatlock::LockManager locks(fake, clock);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.inject({seatlock::op::id<seatlock::op::extend_locks>, Fake::FaultKind::fail_before});
    fake.inject({seatlock::op::id<seatlock::op::extend_locks>, Fake::FaultKind::lose_reply});
    auto extended = guard->extend(20s);
    CHECK_MESSAGE(extended, (extended ? "" : extended.error().message()));
    CHECK(fake.count(seatlock::op::id<seatlock::op::extend_locks>) == 3);
    fake.advance(15s);  // past the first lease of 10 s: the extension was applied
    CHECK_FALSE(free_now(fake, "game1:A-1"));
}

TEST_CASE("the watchdog retries a failed renewal after a short pause, not a third of a lease") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, clock, watched(3s, lost));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    const auto t0 = clock.now();
    fake.inject({seatlock::op::id<seatlock::op::extend_locks>, Fake::FaultKind::fail_before});
    // The first renewal is due after 1 s and fails; the next regular one would be at 2 s.
    REQUIRE(eventually(clock, [&] { return fake.count(seatlock::op::id<seatlock::op::extend_locks>) == 2; }));
    CHECK(clock.now() - t0 < 1500ms);
    CHECK(guard->owns());
    CHECK(lost == 0);
}

TEST_CASE("guards are move-only and release exactly once") {
    Fake fake;
    seatlock::LockManager locks(fake);
    static_assert(!std::is_copy_constructible_v<seatlock::SingleLock<Fake>>);
    static_assert(std::is_nothrow_move_constructible_v<seatlock::MultiLock<Fake>>);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    seatlock::SingleLock<Fake> moved = std::move(*guard);
    CHECK(moved.key() == "game1:A-1");
    CHECK(moved.owns());
    CHECK(locks.try_lock("game1:A-1").is(seatlock::errc::lock_busy));
    CHECK(moved.unlock());
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == 1);
}

TEST_CASE("a guard without a watchdog stops claiming ownership when its lease ends locally") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    seatlock::LockOptions o;
    o.lease = 100ms;
    seatlock::LockManager locks(fake, clock, o);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    CHECK(guard->owns());
    clock.advance(99ms);
    CHECK(guard->owns());
    clock.advance(51ms);
    CHECK_FALSE(guard->owns());
}

TEST_CASE("bad LockOptions are refused at construction") {
    Fake fake;
    seatlock::LockOptions o;
    o.lease = 0ms;
    CHECK_THROWS_AS(seatlock::LockManager(fake, o), seatlock::Error);
    o.lease = 1s;
    o.backoff_max = 1ms;
    o.backoff_min = 5ms;
    CHECK_THROWS_AS(seatlock::LockManager(fake, o), seatlock::Error);
    o.backoff_max = 100ms;
    o.release_retry = -1ms;
    CHECK_THROWS_AS(seatlock::LockManager(fake, o), seatlock::Error);
}

// --- Waiting on the lock clock; try_lock with options ------------------------------------

TEST_CASE("lock() waits its `wait` on the lock clock, then times out, without sleeping") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    seatlock::LockManager locks(fake, clock);  // wait 3 s
    auto holder = locks.try_lock("game1:A-1");
    REQUIRE(holder);
    const auto real_start = std::chrono::steady_clock::now();
    const auto t0 = clock.now();
    auto waited = locks.lock("game1:A-1");
    REQUIRE(waited.is(seatlock::errc::lock_timeout));
    CHECK(waited.error().detail.find("after waiting 3000 ms") != std::string::npos);
    CHECK(clock.now() - t0 >= 3s);
    CHECK(clock.now() - t0 < 3s + 100ms);  // the last pause ends at the deadline
    CHECK(fake.count(seatlock::op::id<seatlock::op::acquire_locks>) > 10);  // tried again and again meanwhile
    CHECK(std::chrono::steady_clock::now() - real_start < 2s);  // the pauses were not slept
}

TEST_CASE("a waiting lock() gets the key once the holder's lease ends on the storage") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    seatlock::LockOptions short_lease;
    short_lease.lease = 500ms;
    seatlock::LockManager locks(fake, clock);
    auto holder = locks.try_lock("game1:A-1", short_lease);
    REQUIRE(holder);
    const auto t0 = clock.now();
    auto waiter = locks.lock("game1:A-1");  // its pauses move the storage's clock too
    REQUIRE(waiter);
    CHECK(clock.now() - t0 >= 500ms);
    CHECK(clock.now() - t0 < 700ms);  // within one backoff_max of the lease's end
    CHECK_FALSE(holder->owns());
    CHECK(waiter->owns());
}

TEST_CASE("the watchdog keeps a lease for many lease lengths of the lock clock") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, clock, watched(300ms, lost));
    auto guard = locks.try_lock("game1:W-1");
    REQUIRE(guard);
    for (int i = 0; i < 100; ++i) clock.advance(30ms);  // ten leases
    CHECK(guard->owns());
    CHECK(lost == 0);
    CHECK(fake.count(seatlock::op::id<seatlock::op::extend_locks>) >= 9);
    CHECK(free_now(fake, "game1:W-1") == false);
    REQUIRE(guard->unlock());
    const auto renewals = fake.count(seatlock::op::id<seatlock::op::extend_locks>);
    clock.advance(1s);
    CHECK(fake.count(seatlock::op::id<seatlock::op::extend_locks>) == renewals);  // unwatched
}

TEST_CASE("try_lock and try_lock_all with LockOptions: one attempt, with those options' lease") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    seatlock::LockManager locks(fake, clock);  // lease 10 s
    seatlock::LockOptions o;
    o.lease = 200ms;
    o.wait = 10s;  // not a waiting call: no effect
    auto one = locks.try_lock("game1:A-1", o);
    REQUIRE(one);
    auto all = locks.try_lock_all({"game1:A-2", "game1:A-3"}, o);
    REQUIRE(all);
    CHECK(all->keys() == std::vector<std::string>{"game1:A-2", "game1:A-3"});

    fake.clear_calls();
    const auto t0 = clock.now();
    CHECK(locks.try_lock("game1:A-1", o).is(seatlock::errc::lock_busy));
    CHECK(locks.try_lock_all({"game1:A-3", "game1:A-4"}, o).is(seatlock::errc::lock_busy));
    CHECK(fake.count(seatlock::op::id<seatlock::op::acquire_locks>) == 2);  // one attempt each
    CHECK(clock.now() == t0);                         // no pause

    clock.advance(199ms);
    CHECK(one->owns());
    CHECK_FALSE(free_now(fake, "game1:A-1"));
    clock.advance(1ms);  // the 200 ms lease, not the manager's 10 s
    CHECK_FALSE(one->owns());
    CHECK_FALSE(all->owns());
    CHECK(free_now(fake, "game1:A-1"));
    CHECK(free_now(fake, "game1:A-2"));

    seatlock::LockOptions bad;
    bad.lease = 0ms;
    fake.clear_calls();
    CHECK(locks.try_lock("game1:B-1", bad).is(seatlock::errc::invalid_argument));
    CHECK(locks.try_lock_all({"game1:B-1"}, bad).is(seatlock::errc::invalid_argument));
    CHECK(fake.calls().empty());  // refused before anything is sent
}

TEST_CASE("try_lock with a watchdog in its LockOptions is renewed") {
    Fake fake;
    seatlock::FakeLockClock clock(fake);
    seatlock::LockManager locks(fake, clock);  // no watchdog
    std::atomic<int> lost{0};
    auto guard = locks.try_lock("game1:A-1", watched(300ms, lost));
    REQUIRE(guard);
    for (int i = 0; i < 40; ++i) clock.advance(25ms);  // over three leases
    CHECK(guard->owns());
    CHECK(fake.count(seatlock::op::id<seatlock::op::extend_locks>) >= 3);
    auto plain = locks.try_lock("game1:A-2");
    REQUIRE(plain);
    for (int i = 0; i < 440; ++i) clock.advance(25ms);  // past the manager's 10 s lease
    CHECK_FALSE(plain->owns());  // not renewed
    CHECK(guard->owns());
    CHECK(lost == 0);
}

}  // namespace lock_manager_test
