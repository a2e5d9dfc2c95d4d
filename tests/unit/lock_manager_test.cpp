// LockManager behaviour that needs FakeBackend's faults or its manual clock.
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

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
bool eventually(const std::function<bool()>& condition, seatlock::Millis within = 3s) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
        if (condition()) return true;
        std::this_thread::sleep_for(5ms);
    }
    return condition();
}
}  // namespace

TEST_CASE("the watchdog marks a guard lost and calls back when renewals keep failing") {
    Fake fake;
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, watched(300ms, lost));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.inject({seatlock::op::id<seatlock::op::extend_locks>, Fake::FaultKind::fail_before, 1000});
    // Renewals fail from now on; once the lease must have ended the guard gives up.
    CHECK(eventually([&] { return lost == 1; }));
    CHECK_FALSE(guard->owns());
    CHECK(fake.count(seatlock::op::id<seatlock::op::extend_locks>) >= 2);
    std::this_thread::sleep_for(300ms);
    CHECK(lost == 1);  // once only
}

TEST_CASE("the watchdog marks a guard lost when the storage says the lease is gone") {
    Fake fake;
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, watched(300ms, lost));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.advance(1s);  // the storage's clock passes the lease before any renewal
    seatlock::LockManager other(fake);
    auto thief = other.try_lock("game1:A-1");
    REQUIRE(thief);
    CHECK(eventually([&] { return lost == 1; }));
    CHECK_FALSE(guard->owns());
    CHECK(thief->owns());
}

TEST_CASE("an on_lost callback may unlock its own guard") {
    Fake fake;
    std::atomic<int> lost{0};
    std::optional<seatlock::SingleLock<Fake>> guard;
    seatlock::LockOptions o = watched(300ms, lost);
    o.on_lost = [&](const std::vector<std::string>&) {
        // From the watchdog thread, inside the renewal.
        if (guard->unlock().is(seatlock::errc::lock_not_owned)) ++lost;
    };
    seatlock::LockManager locks(fake, o);
    auto taken = locks.try_lock("game1:A-1");
    REQUIRE(taken);
    guard.emplace(std::move(*taken));
    fake.advance(1s);
    CHECK(eventually([&] { return lost == 1; }));
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
    ReleaseErrors errors;
    seatlock::LockManager locks(fake, reporting(errors));
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
    ReleaseErrors errors;
    seatlock::LockManager locks(fake, reporting(errors));
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
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry_inline = 50ms;
    seatlock::LockManager locks(fake, o);
    std::optional<seatlock::SingleLock<Fake>> guard(locks.try_lock("game1:A-1").value());
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    const auto t0 = std::chrono::steady_clock::now();
    guard.reset();  // the destructor, while the storage is out of reach
    CHECK(std::chrono::steady_clock::now() - t0 < 300ms);  // does not wait for the storage
    std::this_thread::sleep_for(300ms);
    CHECK_FALSE(free_now(fake, "game1:A-1"));
    const auto back = std::chrono::steady_clock::now();
    fake.clear_faults();  // the storage answers again
    REQUIRE(eventually([&] { return free_now(fake, "game1:A-1"); }));
    CHECK(std::chrono::steady_clock::now() - back < 500ms);  // not when the 10 s lease ends
    CHECK(errors.count == 0);
}

TEST_CASE("unlock returns a failure it could not mend in time; the background finishes it") {
    Fake fake;
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry_inline = 50ms;
    seatlock::LockManager locks(fake, o);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    auto unlocked = guard->unlock();
    REQUIRE(unlocked.is(seatlock::errc::io_error));
    CHECK(unlocked.error().detail.find("retrying in the background") != std::string::npos);
    CHECK(unlocked.error().items == std::vector<std::string>{"game1:A-1"});
    CHECK_FALSE(guard->owns());
    fake.clear_faults();
    CHECK(eventually([&] { return free_now(fake, "game1:A-1"); }, 1s));
    CHECK(errors.count == 0);
}

TEST_CASE("a release still pending when its manager is destroyed is reported") {
    Fake fake;
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry_inline = 10ms;
    {
        seatlock::LockManager locks(fake, o);
        fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
        { auto guard = locks.try_lock("game1:A-1").value(); }
        CHECK(errors.count == 0);
    }
    CHECK(errors.count == 1);
    CHECK(errors.last_failure().detail.find("destroyed") != std::string::npos);
}

TEST_CASE("a release given up after release_retry calls on_release_error exactly once") {
    Fake fake;
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry = 300ms;
    o.release_retry_inline = 50ms;
    seatlock::LockManager locks(fake, o);
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    const auto t0 = std::chrono::steady_clock::now();
    { auto guard = locks.try_lock_all({"game1:A-1", "game1:A-2"}).value(); }
    CHECK(errors.count == 0);  // still retrying in the background
    REQUIRE(eventually([&] { return errors.count > 0; }));
    CHECK(std::chrono::steady_clock::now() - t0 >= 250ms);
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) > 3);  // tried again and again meanwhile
    const auto attempts = fake.count(seatlock::op::id<seatlock::op::release_locks>);
    std::this_thread::sleep_for(300ms);
    CHECK(errors.count == 1);
    CHECK(fake.count(seatlock::op::id<seatlock::op::release_locks>) == attempts);  // and then left alone
    const auto f = errors.last_failure();
    CHECK(f.is(seatlock::errc::io_error));
    CHECK(f.items == std::vector<std::string>{"game1:A-1", "game1:A-2"});
    CHECK(f.detail.find("release_retry") != std::string::npos);
}

TEST_CASE("a release is not retried past the end of its lease") {
    Fake fake;
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.lease = 300ms;
    o.release_retry_inline = 20ms;
    seatlock::LockManager locks(fake, o);
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    const auto t0 = std::chrono::steady_clock::now();
    { auto guard = locks.try_lock("game1:A-1").value(); }
    REQUIRE(eventually([&] { return errors.count > 0; }));
    const auto took = std::chrono::steady_clock::now() - t0;
    CHECK(took >= 200ms);
    CHECK(took < 2s);  // release_retry is 30 s, the lease ended long before
    CHECK(errors.last_failure().detail.find("as their lease ends") != std::string::npos);
    std::this_thread::sleep_for(200ms);
    CHECK(errors.count == 1);
}
TEST_CASE("an acquisition with two lost replies leaves no lock behind") {
    Fake fake;
    ReleaseErrors errors;
    seatlock::LockManager locks(fake, reporting(errors));
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
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.release_retry = 200ms;
    o.release_retry_inline = 20ms;
    seatlock::LockManager locks(fake, o);
    fake.inject({seatlock::op::id<seatlock::op::acquire_locks>, Fake::FaultKind::lose_reply, 2});
    fake.inject({seatlock::op::id<seatlock::op::release_locks>, Fake::FaultKind::fail_before, 1'000'000});
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard.is(seatlock::errc::outcome_unknown));
    CHECK(guard.error().detail.find("retried in the background") != std::string::npos);
    CHECK(eventually([&] { return errors.count == 1; }));
    CHECK(errors.last_failure().items == std::vector<std::string>{"game1:A-1"});
    std::this_thread::sleep_for(300ms);
    CHECK(errors.count == 1);
}

TEST_CASE("unlock of a lease that was lost fails with lock_not_owned and touches nothing") {
    Fake fake;
    ReleaseErrors errors;
    seatlock::LockOptions o = reporting(errors);
    o.lease = 200ms;
    seatlock::LockManager locks(fake, o);
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
    seatlock::LockOptions o;
    o.lease = 200ms;
    seatlock::LockManager locks(fake, o);
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
    seatlock::LockManager locks(fake);
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
    std::atomic<int> lost{0};
    seatlock::LockManager locks(fake, watched(3s, lost));
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    const auto t0 = std::chrono::steady_clock::now();
    fake.inject({seatlock::op::id<seatlock::op::extend_locks>, Fake::FaultKind::fail_before});
    // The first renewal is due after 1 s and fails; the next regular one would be at 2 s.
    REQUIRE(eventually([&] { return fake.count(seatlock::op::id<seatlock::op::extend_locks>) == 2; }));
    CHECK(std::chrono::steady_clock::now() - t0 < 1500ms);
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
    seatlock::MemoryBackend memory;
    seatlock::LockOptions o;
    o.lease = 100ms;
    seatlock::LockManager locks(memory, o);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    CHECK(guard->owns());
    std::this_thread::sleep_for(150ms);
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
