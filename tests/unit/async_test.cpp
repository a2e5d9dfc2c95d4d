// SPDX-License-Identifier: MIT
// tests/unit/async_test.cpp: what the asynchronous API promises beyond the conformance
// suite (which runs every rule through it): every kind of completion token, completions
// never inline, failure details, cancellation of a lock wait, the watchdog on a timer,
// guards released without blocking, retries of lost replies, the default completion
// token and the same overloads and defaults as the blocking calls. Lock waits run on a
// FakeLockClock: the test moves the time and runs what fell due (drive()).
#include <seatlock/seatlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace async_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::Result;

namespace {

seatlock::EventSpec small_event() {
    return {"game1",
            "Game",
            {seatlock::ZoneSpec::named("lower", {{"A-1", "A"}, {"A-2", "A"}, {"A-3", "A"}}),
             seatlock::ZoneSpec::general_admission("ga", 10)}};
}

// Runs what is ready on `io`, then moves `clock` by `step`, until `done` or until `limit`
// has passed on the clock. Returns done().
template <typename Pred>
bool drive(asio::io_context& io, seatlock::FakeLockClock& clock, Pred done,
           std::chrono::milliseconds limit = 5s, std::chrono::milliseconds step = 5ms) {
    const auto end = clock.now() + limit;
    for (;;) {
        io.restart();
        io.poll();
        if (done() || clock.now() >= end) return done();
        clock.advance(step);
    }
}

}  // namespace

TEST_CASE("every completion token: callback, use_future, use_awaitable, deferred") {
    seatlock::MemoryBackend backend;
    seatlock::SeatHoldStore store(backend);
    asio::io_context io;

    // A callback bound to an executor: called there, never inside the initiating call.
    bool returned = false;
    std::optional<Result<void>> created;
    store.async_create_event(small_event(), asio::bind_executor(io, [&](Result<void> r) {
                                 CHECK(returned);
                                 created = std::move(r);
                             }));
    returned = true;
    CHECK_FALSE(created);
    io.run();
    io.restart();
    REQUIRE(created);
    CHECK(*created);

    // A future, completed on another thread.
    std::thread runner;
    {
        auto work = asio::make_work_guard(io);
        runner = std::thread([&] { io.run(); });
        auto held = store.async_hold("game1", "ann", seatlock::named_seats("lower", {"A-1"}),
                                     asio::bind_executor(io, asio::use_future))
                        .get();
        REQUIRE(held);
        CHECK(held->seats == std::vector<std::string>{"A-1"});
    }
    runner.join();
    io.restart();

    // A coroutine; the failure's details reach it.
    std::optional<Result<seatlock::Hold>> taken;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            const auto request = seatlock::named_seats("lower", {"A-1", "A-2"});
            taken = co_await store.async_hold("game1", "bob", request, asio::use_awaitable);
        },
        asio::detached);
    io.run();
    io.restart();
    REQUIRE(taken);
    REQUIRE(taken->is(errc::seat_taken));
    CHECK(taken->error().items == std::vector<std::string>{"A-1"});

    // deferred: nothing happens until the operation is started.
    auto op = store.async_seats("game1", std::string("lower"), asio::deferred);
    std::optional<Result<seatlock::SeatMap>> seats;
    std::move(op)(asio::bind_executor(io, [&](Result<seatlock::SeatMap> r) {
        seats = std::move(r);
    }));
    io.run();
    REQUIRE(seats);
    REQUIRE(*seats);
    CHECK((*seats)->at(0).held == 1);
}

TEST_CASE("a limit refusal keeps its numbers; bad input is refused before anything is sent") {
    seatlock::FakeBackend backend;
    seatlock::HoldPolicy policy;
    policy.max_seats_per_holder = 2;
    seatlock::SeatHoldStore store(backend, policy);
    store.create_event(small_event()).value();
    const auto calls_before = backend.calls().size();
    auto bad = store.async_hold("game1", "ann", seatlock::quantity("ga", 0), asio::use_future).get();
    CHECK(bad.is(errc::invalid_argument));
    CHECK(backend.calls().size() == calls_before);

    REQUIRE(store.async_hold("game1", "ann", seatlock::quantity("ga", 2), asio::use_future).get());
    auto over = store.async_hold("game1", "ann", seatlock::quantity("ga", 1), asio::use_future).get();
    REQUIRE(over.is(errc::limit_exceeded));
    CHECK(over.error().limit == 2);
    CHECK(over.error().current == 2);
}

TEST_CASE("a lost reply is sent again, as on the blocking path") {
    seatlock::FakeBackend backend;
    seatlock::SeatHoldStore store(backend);
    store.create_event(small_event()).value();
    backend.inject({seatlock::op::id<seatlock::op::hold>, seatlock::FakeBackend::FaultKind::lose_reply});
    auto held = store.async_hold("game1", "ann", seatlock::named_seats("lower", {"A-3"}),
                                 asio::use_future)
                    .get();
    REQUIRE(held);  // the retry with the same token found the hold the lost reply made
    CHECK(held->seats == std::vector<std::string>{"A-3"});
}

TEST_CASE("cancelling a waiting async_lock_all ends it with cancelled and leaves no lock") {
    seatlock::FakeBackend backend;
    asio::io_context io;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockManager locks(backend, clock);
    auto blocker = locks.try_lock("game1:A-2").value();

    seatlock::LockOptions options;
    options.wait = 10s;
    asio::cancellation_signal cancel;
    std::optional<Result<seatlock::MultiLock<seatlock::FakeBackend>>> result;
    const auto started = clock.now();
    locks.async_lock_all({"game1:A-1", "game1:A-2", "game1:A-3"}, options,
                         asio::bind_cancellation_slot(
                             cancel.slot(), asio::bind_executor(io, [&](auto r) { result = std::move(r); })));
    drive(io, clock, [&] { return clock.now() - started >= 100ms; });
    CHECK_FALSE(result);
    cancel.emit(asio::cancellation_type::terminal);
    drive(io, clock, [&] { return result.has_value(); });
    REQUIRE(result);
    CHECK(result->is(errc::cancelled));
    CHECK(clock.now() - started < 2s);
    // Nothing of the cancelled wait stays locked.
    CHECK(locks.try_lock("game1:A-1"));
    CHECK(locks.try_lock("game1:A-3"));
    CHECK(blocker.unlock());
}

TEST_CASE("a waiting async_lock gets the key when its holder lets go, and times out otherwise") {
    seatlock::FakeBackend backend;
    asio::io_context io;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockOptions options;
    options.wait = 300ms;
    seatlock::LockManager locks(backend, clock, options);
    auto holder = locks.try_lock("game1:B-1").value();

    std::optional<Result<seatlock::SingleLock<seatlock::FakeBackend>>> timed_out;
    const auto t0 = clock.now();
    locks.async_lock("game1:B-1", asio::bind_executor(io, [&](auto r) { timed_out = std::move(r); }));
    drive(io, clock, [&] { return timed_out.has_value(); });
    REQUIRE(timed_out);
    CHECK(timed_out->is(errc::lock_timeout));
    CHECK(clock.now() - t0 >= 290ms);

    std::optional<Result<seatlock::SingleLock<seatlock::FakeBackend>>> got;
    const auto t1 = clock.now();
    locks.async_lock("game1:B-1", asio::bind_executor(io, [&](auto r) { got = std::move(r); }));
    drive(io, clock, [&] { return clock.now() - t1 >= 50ms; });
    CHECK_FALSE(got);
    CHECK(holder.unlock());
    drive(io, clock, [&] { return got.has_value(); });
    REQUIRE(got);
    CHECK(*got);
}

TEST_CASE("the watchdog of a guard acquired asynchronously renews on the executor's timers") {
    seatlock::FakeBackend backend;
    asio::io_context io;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockOptions options;
    options.lease = 300ms;
    options.watchdog = true;
    seatlock::LockManager locks(backend, clock, options);
    std::optional<Result<seatlock::SingleLock<seatlock::FakeBackend>>> guard;
    locks.async_try_lock("game1:W-1", asio::bind_executor(io, [&](auto r) { guard = std::move(r); }));
    drive(io, clock, [&] { return guard.has_value(); });
    REQUIRE(guard);
    REQUIRE(*guard);
    // Three leases long: only renewals keep it.
    drive(io, clock, [] { return false; }, 900ms);
    CHECK((*guard)->owns());
    CHECK(backend.count(seatlock::op::id<seatlock::op::extend_locks>) >= 8);
    CHECK(locks.try_lock("game1:W-1").is(errc::lock_busy));
    // Without anyone running the executor, nothing renews it: the lease runs out.
    clock.advance(400ms);
    CHECK(locks.try_lock("game1:W-1"));
}

TEST_CASE("a guard going out of scope in a coroutine releases without blocking its thread") {
    seatlock::FakeBackend backend;
    asio::io_context io;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockOptions options;
    options.release_retry_inline = 2s;  // a blocking release would wait this long
    seatlock::LockManager locks(backend, clock, options);
    std::chrono::nanoseconds scope_end{};
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            {
                auto guard = co_await locks.async_try_lock("game1:G-1", asio::use_awaitable);
                REQUIRE(guard);
                // The first two releases fail in transit: retried on timers.
                backend.inject({seatlock::op::id<seatlock::op::release_locks>,
                                seatlock::FakeBackend::FaultKind::fail_before, 2});
                // A blocking release would pause on the lock clock, i.e. move it.
                const auto t0 = clock.now();
                guard = Result<seatlock::SingleLock<seatlock::FakeBackend>>(
                    seatlock::Failure(errc::invalid_argument, "dropped"));  // destroys the guard
                scope_end = clock.now() - t0;
            }
            done = true;
        },
        asio::detached);
    drive(io, clock, [&] { return done; });
    REQUIRE(done);
    CHECK(scope_end < 20ms);
    // The retries on the executor's timers free the key soon after.
    const auto t0 = clock.now();
    drive(io, clock, [&] { return backend.count(seatlock::op::id<seatlock::op::release_locks>) == 3; }, 2s);
    CHECK(clock.now() - t0 < 500ms);
    CHECK(locks.try_lock("game1:G-1"));
}

TEST_CASE("async_unlock and async_extend answer as unlock and extend do") {
    seatlock::MemoryBackend backend;
    seatlock::LockManager locks(backend);
    auto guard = locks.async_try_lock_all({"game1:U-1", "game1:U-2"}, asio::use_future).get();
    REQUIRE(guard);
    CHECK(guard->async_extend(5s, asio::use_future).get());
    CHECK(guard->async_extend(0ms, asio::use_future).get().is(errc::invalid_argument));
    CHECK(guard->async_unlock(asio::use_future).get());
    CHECK(guard->async_unlock(asio::use_future).get().is(errc::lock_not_owned));
    CHECK(guard->async_extend(5s, asio::use_future).get().is(errc::lock_not_owned));
    CHECK(locks.try_lock("game1:U-1"));
}

namespace {

// Whether the calling thread is one of OtherThreadBackend's.
thread_local bool on_backend_thread = false;

// MemoryBackend answering from a thread of its own, as RedisBackend does.
class OtherThreadBackend : public seatlock::MemoryBackend {
public:
    ~OtherThreadBackend() {
        for (auto& t : threads_) t.join();
    }
    template <typename Op>
    void async_run(const Op& op, seatlock::detail::Completion<typename Op::result_type> done) {
        threads_.emplace_back([this, op, done = std::move(done)]() mutable {
            on_backend_thread = true;
            done(static_cast<seatlock::MemoryBackend&>(*this).run(op));
        });
    }

private:
    std::vector<std::thread> threads_;
};

// A gate a thread waits at until the test opens it.
class Gate {
public:
    void open() {
        std::lock_guard lock(mutex_);
        open_ = true;
        opened_.notify_all();
    }
    void pass() {
        std::unique_lock lock(mutex_);
        opened_.wait(lock, [this] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable opened_;
    bool open_ = false;
};

// An io_context executor that, asked from a backend's thread to run something, runs it
// there and only then lets that thread go on, once `late` is opened: what a preempted
// thread does.
template <typename Inner>
struct LateExecutor {
    Inner inner;
    Gate* late;

    template <typename F>
    void execute(F&& f) const {
        asio::execution::execute(inner, std::forward<F>(f));
        if (on_backend_thread) late->pass();
    }
    asio::execution_context& query(asio::execution::context_t) const noexcept {
        return asio::query(inner, asio::execution::context);
    }
    static constexpr auto query(asio::execution::blocking_t) noexcept { return asio::execution::blocking.never; }
    LateExecutor require(asio::execution::blocking_t::never_t) const { return *this; }
    template <typename P>
        requires asio::can_prefer<const Inner&, P>::value
    auto prefer(P p) const {
        using Next = std::decay_t<decltype(asio::prefer(inner, p))>;
        return LateExecutor<Next>{asio::prefer(inner, p), late};
    }
    friend bool operator==(const LateExecutor& a, const LateExecutor& b) noexcept {
        return a.inner == b.inner;
    }
    friend bool operator!=(const LateExecutor& a, const LateExecutor& b) noexcept { return !(a == b); }
};

}  // namespace

TEST_CASE("a call answered on another thread keeps the caller's io_context alive until it lets go") {
    // The backend's thread hands the answer to the caller's executor and is then slow to
    // return. Meanwhile the caller gets its answer and has nothing left to run: its
    // io_context must not run out of work, and be destroyed, while the backend's thread
    // still holds an executor of it (ASan would see that in the sanitizer builds).
    OtherThreadBackend backend;
    seatlock::LockManager locks(backend);
    for (int round = 0; round < 3; ++round) {
        auto io = std::make_unique<asio::io_context>();
        auto work = std::make_optional(asio::make_work_guard(*io));
        Gate late_threads;
        LateExecutor<asio::io_context::executor_type> late{io->get_executor(), &late_threads};
        std::optional<Result<seatlock::MultiLock<OtherThreadBackend>>> guard;
        locks.async_try_lock_all({"game1:L-1", "game1:L-2"},
                                 asio::bind_executor(late, [&](auto r) { guard = std::move(r); }));
        while (!guard) io->run_one();
        REQUIRE(*guard);
        std::optional<Result<void>> unlocked;
        (*guard)->async_unlock(asio::bind_executor(late, [&](Result<void> r) { unlocked = std::move(r); }));
        while (!unlocked) io->run_one();
        CHECK(*unlocked);
        guard.reset();
        work.reset();
        io->poll();
        // The release's answer came from a thread that is not let go yet (the acquisition's
        // may have found its strand running and gone): it still holds the io_context.
        CHECK_FALSE(io->stopped());
        late_threads.open();
        io->run();  // returns once they let go
        io.reset();
    }
    CHECK(locks.try_lock_all({"game1:L-1", "game1:L-2"}));
}

// --- The default completion token; the blocking calls' overloads and defaults -------------

TEST_CASE("without a token every async lock call is deferred: co_await it, or call it with a handler") {
    seatlock::FakeBackend backend;
    asio::io_context io;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockManager locks(backend, clock);
    using Single = Result<seatlock::SingleLock<seatlock::FakeBackend>>;
    using Multi = Result<seatlock::MultiLock<seatlock::FakeBackend>>;
    seatlock::LockOptions o;
    o.lease = 1s;

    // In a coroutine: every overload, and a guard's unlock and extend. (The key lists are
    // made outside: g++ 12 cannot compile a braced list of strings inside a coroutine.)
    using Keys = std::vector<std::string>;
    const Keys k5{"game1:D-5", "game1:D-6"}, k7{"game1:D-7"}, k8{"game1:D-8"}, k9{"game1:D-9"};
    bool finished = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            Single a = co_await locks.async_lock("game1:D-1");
            Single b = co_await locks.async_lock("game1:D-2", o);
            Single c = co_await locks.async_try_lock("game1:D-3");
            Single d = co_await locks.async_try_lock("game1:D-4", o);
            Multi e = co_await locks.async_lock_all(k5);
            Multi f = co_await locks.async_lock_all(k7, o);
            Multi g = co_await locks.async_try_lock_all(k8);
            Multi h = co_await locks.async_try_lock_all(k9, o);
            REQUIRE(a);
            REQUIRE(b);
            REQUIRE(c);
            REQUIRE(d);
            REQUIRE(e);
            REQUIRE(f);
            REQUIRE(g);
            REQUIRE(h);
            CHECK(e->keys() == k5);
            Result<void> extended = co_await a->async_extend(5s);
            CHECK(extended);
            Result<void> unlocked = co_await a->async_unlock();
            CHECK(unlocked);
            Single busy = co_await locks.async_try_lock("game1:D-2");
            CHECK(busy.is(errc::lock_busy));
            finished = true;
        },
        asio::detached);
    REQUIRE(drive(io, clock, [&] { return finished; }));
    CHECK(backend.count(seatlock::op::id<seatlock::op::acquire_locks>) == 9);

    // With a callback: nothing is sent until the deferred operation is called.
    auto deferred_lock = locks.async_try_lock("game1:E-1", o);
    auto deferred_all = locks.async_lock_all({"game1:E-2", "game1:E-3"});
    CHECK(backend.count(seatlock::op::id<seatlock::op::acquire_locks>) == 9);
    std::optional<Single> one;
    std::optional<Multi> all;
    std::move(deferred_lock)(asio::bind_executor(io, [&](Single r) { one = std::move(r); }));
    std::move(deferred_all)(asio::bind_executor(io, [&](Multi r) { all = std::move(r); }));
    REQUIRE(drive(io, clock, [&] { return one && all; }));
    REQUIRE(*one);
    REQUIRE(*all);
    std::optional<Result<void>> unlocked;
    (*all)->async_unlock()(asio::bind_executor(io, [&](Result<void> r) { unlocked = std::move(r); }));
    REQUIRE(drive(io, clock, [&] { return unlocked.has_value(); }));
    CHECK(*unlocked);
    CHECK(locks.try_lock_all({"game1:E-2", "game1:E-3"}));
}

TEST_CASE("each async twin takes the blocking call's defaults, or the options given") {
    // The manager's options, or `given`: a wait and a lease each can tell apart on the
    // fake clock.
    seatlock::FakeBackend backend;
    asio::io_context io;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockOptions defaults;
    defaults.wait = 200ms;
    defaults.lease = 2s;
    seatlock::LockManager locks(backend, clock, defaults);
    seatlock::LockOptions given;
    given.wait = 700ms;
    given.lease = 5s;
    using Single = Result<seatlock::SingleLock<seatlock::FakeBackend>>;
    using Multi = Result<seatlock::MultiLock<seatlock::FakeBackend>>;

    // How long a waiting call waits for a held key, blocking and asynchronously.
    seatlock::LockOptions long_lease;
    long_lease.lease = 1min;
    auto holder = locks.try_lock("game1:H-1", long_lease).value();
    const auto waited = [&](auto call) {
        const auto t0 = clock.now();
        auto result = call();
        REQUIRE(result.is(errc::lock_timeout));
        return clock.now() - t0;
    };
    const auto waited_async = [&](auto start) {
        std::optional<bool> timed_out;
        const auto t0 = clock.now();
        start([&](auto r) { timed_out = r.is(errc::lock_timeout); });
        REQUIRE(drive(io, clock, [&] { return timed_out.has_value(); }));
        CHECK(*timed_out);
        return clock.now() - t0;
    };
    const auto in = [](auto elapsed, std::chrono::milliseconds wait) {
        return elapsed >= wait && elapsed < wait + 100ms;  // the last pause ends at the deadline
    };
    auto on_io = [&](auto f) { return asio::bind_executor(io, f); };
    CHECK(in(waited([&] { return locks.lock("game1:H-1"); }), 200ms));
    CHECK(in(waited_async([&](auto f) { locks.async_lock("game1:H-1", on_io(f)); }), 200ms));
    CHECK(in(waited([&] { return locks.lock("game1:H-1", given); }), 700ms));
    CHECK(in(waited_async([&](auto f) { locks.async_lock("game1:H-1", given, on_io(f)); }), 700ms));
    CHECK(in(waited([&] { return locks.lock_all({"game1:H-1", "game1:H-2"}); }), 200ms));
    CHECK(in(waited_async([&](auto f) { locks.async_lock_all({"game1:H-1", "game1:H-2"}, on_io(f)); }),
             200ms));
    CHECK(in(waited([&] { return locks.lock_all({"game1:H-1"}, given); }), 700ms));
    CHECK(in(waited_async([&](auto f) { locks.async_lock_all({"game1:H-1"}, given, on_io(f)); }), 700ms));
    // The default token's calls wait as long.
    std::optional<Single> deferred_wait;
    const auto t0 = clock.now();
    locks.async_lock("game1:H-1")(on_io([&](Single r) { deferred_wait = std::move(r); }));
    REQUIRE(drive(io, clock, [&] { return deferred_wait.has_value(); }));
    CHECK(deferred_wait->is(errc::lock_timeout));
    CHECK(in(clock.now() - t0, 200ms));
    REQUIRE(holder.unlock());

    // The lease each acquisition gets: the try calls' too.
    std::optional<Single> s1, s2;
    std::optional<Multi> m1, m2;
    locks.async_try_lock("game1:L-1", on_io([&](Single r) { s1 = std::move(r); }));
    locks.async_try_lock("game1:L-2", given, on_io([&](Single r) { s2 = std::move(r); }));
    locks.async_try_lock_all({"game1:L-3"}, on_io([&](Multi r) { m1 = std::move(r); }));
    locks.async_try_lock_all({"game1:L-4"}, given, on_io([&](Multi r) { m2 = std::move(r); }));
    auto b1 = locks.try_lock("game1:L-5");
    auto b2 = locks.try_lock("game1:L-6", given);
    auto b3 = locks.try_lock_all({"game1:L-7"});
    auto b4 = locks.try_lock_all({"game1:L-8"}, given);
    REQUIRE(drive(io, clock, [&] { return s1 && s2 && m1 && m2; }));
    REQUIRE(*s1);
    REQUIRE(*s2);
    REQUIRE(*m1);
    REQUIRE(*m2);
    REQUIRE(b1);
    REQUIRE(b2);
    REQUIRE(b3);
    REQUIRE(b4);
    clock.advance(2s);  // the manager's lease has ended, the given one not
    CHECK_FALSE((*s1)->owns());
    CHECK_FALSE((*m1)->owns());
    CHECK_FALSE(b1->owns());
    CHECK_FALSE(b3->owns());
    CHECK((*s2)->owns());
    CHECK((*m2)->owns());
    CHECK(b2->owns());
    CHECK(b4->owns());
    CHECK(locks.try_lock_all({"game1:L-1", "game1:L-3", "game1:L-5", "game1:L-7"}));
    CHECK(locks.try_lock("game1:L-2").is(errc::lock_busy));
    CHECK(locks.try_lock("game1:L-4").is(errc::lock_busy));
    CHECK(locks.try_lock("game1:L-6").is(errc::lock_busy));
    CHECK(locks.try_lock("game1:L-8").is(errc::lock_busy));
}

TEST_CASE("async_try_lock with LockOptions makes one attempt and refuses bad options unsent") {
    seatlock::FakeBackend backend;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockManager locks(backend, clock);
    auto holder = locks.try_lock_all({"game1:T-1", "game1:T-2"}).value();
    seatlock::LockOptions o;
    o.wait = 10s;  // not a waiting call: no effect
    backend.clear_calls();
    const auto t0 = clock.now();
    auto busy = locks.async_try_lock("game1:T-1", o, asio::use_future);
    auto busy_all = locks.async_try_lock_all({"game1:T-2", "game1:T-3"}, o, asio::use_future);
    CHECK(busy.get().is(errc::lock_busy));
    auto all = busy_all.get();
    REQUIRE(all.is(errc::lock_busy));
    CHECK(all.error().items == std::vector<std::string>{"game1:T-2"});
    CHECK(backend.count(seatlock::op::id<seatlock::op::acquire_locks>) == 2);
    CHECK(clock.now() == t0);

    seatlock::LockOptions bad;
    bad.backoff_min = 0ms;
    backend.clear_calls();
    CHECK(locks.async_try_lock("game1:T-4", bad, asio::use_future).get().is(errc::invalid_argument));
    CHECK(locks.async_try_lock_all({"game1:T-4"}, bad, asio::use_future).get().is(errc::invalid_argument));
    CHECK(backend.calls().empty());
}

// --- Guards from a handler without an executor of its own (use_future) ---------------------

namespace {

// What on_release_error heard, from whichever thread.
struct Reported {
    std::mutex mutex;
    std::vector<std::string> details;

    std::function<void(const seatlock::Failure&)> callback() {
        return [this](const seatlock::Failure& f) {
            std::lock_guard lock(mutex);
            details.push_back(f.detail);
        };
    }
    std::vector<std::string> all() {
        std::lock_guard lock(mutex);
        return details;
    }
};

// An executor that belongs to one completion handler, as use_future's promise executor
// does: on Asio's system context, and counting what it is asked to run once its handler
// has completed.
struct HandlerExecutor {
    struct Uses {
        std::atomic<bool> completed{false};
        std::atomic<int> late{0};
    };
    std::shared_ptr<Uses> uses;

    template <typename F>
    void execute(F&& f) const {
        if (uses->completed) ++uses->late;
        asio::execution::execute(
            asio::require(asio::system_executor(), asio::execution::blocking.never),
            std::forward<F>(f));
    }
    asio::execution_context& query(asio::execution::context_t) const noexcept {
        return asio::query(asio::system_executor(), asio::execution::context);
    }
    static constexpr auto query(asio::execution::blocking_t) noexcept {
        return asio::execution::blocking.never;
    }
    HandlerExecutor require(asio::execution::blocking_t::never_t) const { return *this; }
    friend bool operator==(const HandlerExecutor& a, const HandlerExecutor& b) noexcept {
        return a.uses == b.uses;
    }
};

// A fake and its clock, and a manager's options that report the releases it gives up
// (after `retry_inline` of retrying in the caller's stead).
struct FailingReleases {
    seatlock::FakeBackend backend;
    seatlock::FakeLockClock clock{backend};
    Reported reported;
    seatlock::LockOptions options;

    explicit FailingReleases(std::chrono::milliseconds retry_inline) {
        options.release_retry_inline = retry_inline;
        options.on_release_error = reported.callback();
    }
    /// Every release from now on fails before it is applied, until clear_faults().
    void fail_every_release() {
        backend.inject({seatlock::op::id<seatlock::op::release_locks>,
                        seatlock::FakeBackend::FaultKind::fail_before, 1'000'000});
    }
};

// Moves `clock` in 5 ms steps until `done` or `limit` has passed on the clock. A pause
// that fell due in a step runs on Asio's system threads: before the next step, wait
// (yielding, not sleeping) until it has run, i.e. until a pause waits on the clock again
// or `done`. Returns done().
template <typename Pred>
bool advance_until(seatlock::FakeLockClock& clock, Pred done,
                   std::chrono::milliseconds limit = 2s) {
    const auto end = clock.now() + limit;
    while (!done() && clock.now() < end) {
        clock.advance(5ms);
        const auto give_up = std::chrono::steady_clock::now() + 10s;
        while (!done() && clock.pending_calls() == 0 &&
               std::chrono::steady_clock::now() < give_up) {
            std::this_thread::yield();
        }
    }
    return done();
}

}  // namespace

TEST_CASE("a use_future guard's destructor retries a failing release as a blocking guard's does") {
    seatlock::FakeBackend backend;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockManager locks(backend, clock);
    {
        auto guard = locks.async_try_lock_all({"game1:F-1", "game1:F-2"}, asio::use_future).get();
        REQUIRE(guard);
        backend.inject({seatlock::op::id<seatlock::op::release_locks>,
                        seatlock::FakeBackend::FaultKind::fail_before, 3});
    }
    // Retried in the destructor's thread (within release_retry_inline), not on the
    // future's promise executor: done when the destructor returns.
    CHECK(backend.count(seatlock::op::id<seatlock::op::release_locks>) == 4);
    CHECK(locks.try_lock_all({"game1:F-1", "game1:F-2"}));
}

TEST_CASE(
    "a use_future guard's release still failing when its manager goes is given up and reported") {
    FailingReleases w(10ms);
    auto& backend = w.backend;
    auto& clock = w.clock;
    auto& reported = w.reported;
    const auto& o = w.options;
    {
        seatlock::LockManager locks(backend, clock, o);
        {
            auto guard = locks.async_try_lock("game1:F-3", asio::use_future).get();
            REQUIRE(guard);
            w.fail_every_release();
        }
        // The manager's thread goes on retrying (pauses are backoff_max at most); nothing
        // was given up yet.
        const auto tried = backend.count(seatlock::op::id<seatlock::op::release_locks>);
        clock.advance(o.backoff_max + 50ms);
        CHECK(backend.count(seatlock::op::id<seatlock::op::release_locks>) > tried);
        CHECK(reported.all().empty());
    }
    // Nothing of it is left anywhere else (e.g. on Asio's system threads) to outlive the
    // manager and the backend: the manager's end gives it up, and says so.
    const auto details = reported.all();
    REQUIRE(details.size() == 1);
    CHECK(details[0].find("destroyed") != std::string::npos);
    // No pause waits on the clock (a retry left on Asio's system threads would).
    CHECK(clock.pending_calls() == 0);
    const auto attempts = backend.count(seatlock::op::id<seatlock::op::release_locks>);
    clock.advance(1s);
    CHECK(backend.count(seatlock::op::id<seatlock::op::release_locks>) == attempts);
}

TEST_CASE("async_unlock with use_future hands a release still failing to the manager's thread") {
    FailingReleases w(20ms);
    auto& backend = w.backend;
    auto& clock = w.clock;
    auto& reported = w.reported;
    const auto& o = w.options;
    {
        seatlock::LockManager locks(backend, clock, o);
        auto guard = locks.async_try_lock_all({"game1:F-4", "game1:F-5"}, asio::use_future).get();
        REQUIRE(guard);
        w.fail_every_release();
        auto unlocked = guard->async_unlock(asio::use_future);
        REQUIRE(advance_until(clock,
                              [&] { return unlocked.wait_for(0s) == std::future_status::ready; }));
        const auto r = unlocked.get();
        REQUIRE_FALSE(r);
        CHECK(r.error().detail.find("retrying in the background") != std::string::npos);
        // Still retried after the answer, by the manager's thread (advance() waits for it;
        // pauses are backoff_max at most).
        const auto attempts = backend.count(seatlock::op::id<seatlock::op::release_locks>);
        clock.advance(o.backoff_max + 50ms);
        CHECK(backend.count(seatlock::op::id<seatlock::op::release_locks>) > attempts);
        CHECK(reported.all().empty());
        // Once the storage answers, the keys are free.
        backend.clear_faults();
        clock.advance(o.backoff_max + 50ms);
        CHECK(locks.try_lock_all({"game1:F-4", "game1:F-5"}));
    }
    CHECK(reported.all().empty());
}

TEST_CASE(
    "async_unlock with use_future: a release failing past the manager is reported, not left "
    "behind") {
    FailingReleases w(20ms);
    auto& backend = w.backend;
    auto& clock = w.clock;
    auto& reported = w.reported;
    const auto& o = w.options;
    {
        seatlock::LockManager locks(backend, clock, o);
        auto guard = locks.async_try_lock("game1:F-6", asio::use_future).get();
        REQUIRE(guard);
        w.fail_every_release();
        auto unlocked = guard->async_unlock(asio::use_future);
        REQUIRE(advance_until(clock,
                              [&] { return unlocked.wait_for(0s) == std::future_status::ready; }));
        CHECK_FALSE(unlocked.get());
    }
    const auto details = reported.all();
    REQUIRE(details.size() == 1);
    CHECK(details[0].find("destroyed") != std::string::npos);
}

TEST_CASE("a use_future guard with the watchdog is renewed by the manager's thread") {
    seatlock::FakeBackend backend;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockOptions o;
    o.lease = 300ms;
    o.watchdog = true;
    seatlock::LockManager locks(backend, clock, o);
    auto guard = locks.async_try_lock("game1:F-7", asio::use_future).get();
    REQUIRE(guard);
    // Three leases long, each step waited for (advance() waits for the manager's thread).
    for (int i = 0; i < 90; ++i) clock.advance(10ms);
    CHECK(guard->owns());
    CHECK(backend.count(seatlock::op::id<seatlock::op::extend_locks>) >= 8);
    CHECK(locks.try_lock("game1:F-7").is(errc::lock_busy));
    CHECK(guard->unlock());
    const auto renewals = backend.count(seatlock::op::id<seatlock::op::extend_locks>);
    clock.advance(1s);
    CHECK(backend.count(seatlock::op::id<seatlock::op::extend_locks>) == renewals);
}

TEST_CASE("no later step of a guard runs on an executor belonging to a handler already completed") {
    seatlock::FakeBackend backend;
    seatlock::FakeLockClock clock(backend);
    seatlock::LockOptions o;
    o.lease = 300ms;
    o.watchdog = true;
    seatlock::LockManager locks(backend, clock, o);
    HandlerExecutor executor{std::make_shared<HandlerExecutor::Uses>()};
    std::promise<Result<seatlock::SingleLock<seatlock::FakeBackend>>> got;
    locks.async_try_lock("game1:F-8", asio::bind_executor(executor, [&](auto r) {
                             executor.uses->completed = true;
                             got.set_value(std::move(r));
                         }));
    auto guard = got.get_future().get();
    REQUIRE(guard);
    // Renewals: on the manager's thread.
    for (int i = 0; i < 60; ++i) clock.advance(10ms);
    CHECK(backend.count(seatlock::op::id<seatlock::op::extend_locks>) >= 4);
    CHECK(executor.uses->late == 0);
    // A release retried: in the destructor's thread, then on the manager's.
    backend.inject({seatlock::op::id<seatlock::op::release_locks>,
                    seatlock::FakeBackend::FaultKind::fail_before, 3});
    guard = seatlock::Failure(errc::invalid_argument, "dropped");
    CHECK(backend.count(seatlock::op::id<seatlock::op::release_locks>) == 4);
    CHECK(locks.try_lock("game1:F-8"));
    CHECK(executor.uses->late == 0);
}

}  // namespace async_test
