// tests/unit/async_test.cpp: what the asynchronous API promises beyond the conformance
// suite (which runs every rule through it): every kind of completion token, completions
// never inline, failure details, cancellation of a lock wait, the watchdog on a timer,
// guards released without blocking, retries of lost replies.
#include <seatlock/seatlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

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

// Runs `io` until `done` or `limit` passes.
template <typename Pred>
void run_until(asio::io_context& io, Pred done, std::chrono::milliseconds limit = 5s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end) {
        io.run_for(5ms);
        if (io.stopped()) io.restart();
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
    std::optional<Result<std::vector<seatlock::ZoneState>>> seats;
    std::move(op)(asio::bind_executor(io, [&](Result<std::vector<seatlock::ZoneState>> r) {
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
    seatlock::MemoryBackend backend;
    seatlock::LockManager locks(backend);
    asio::io_context io;
    auto blocker = locks.try_lock("game1:A-2").value();

    seatlock::LockOptions options;
    options.wait = 10s;
    asio::cancellation_signal cancel;
    std::optional<Result<seatlock::MultiLock<seatlock::MemoryBackend>>> result;
    const auto started = std::chrono::steady_clock::now();
    locks.async_lock_all({"game1:A-1", "game1:A-2", "game1:A-3"}, options,
                         asio::bind_cancellation_slot(
                             cancel.slot(), asio::bind_executor(io, [&](auto r) { result = std::move(r); })));
    asio::steady_timer later(io, 100ms);
    later.async_wait([&](boost::system::error_code) { cancel.emit(asio::cancellation_type::terminal); });
    run_until(io, [&] { return result.has_value(); });
    REQUIRE(result);
    CHECK(result->is(errc::cancelled));
    CHECK(std::chrono::steady_clock::now() - started < 2s);
    // Nothing of the cancelled wait stays locked.
    CHECK(locks.try_lock("game1:A-1"));
    CHECK(locks.try_lock("game1:A-3"));
    CHECK(blocker.unlock());
}

TEST_CASE("a waiting async_lock gets the key when its holder lets go, and times out otherwise") {
    seatlock::MemoryBackend backend;
    seatlock::LockOptions options;
    options.wait = 300ms;
    seatlock::LockManager locks(backend, options);
    asio::io_context io;
    auto holder = locks.try_lock("game1:B-1").value();

    std::optional<Result<seatlock::SingleLock<seatlock::MemoryBackend>>> timed_out;
    const auto t0 = std::chrono::steady_clock::now();
    locks.async_lock("game1:B-1", asio::bind_executor(io, [&](auto r) { timed_out = std::move(r); }));
    run_until(io, [&] { return timed_out.has_value(); });
    REQUIRE(timed_out);
    CHECK(timed_out->is(errc::lock_timeout));
    CHECK(std::chrono::steady_clock::now() - t0 >= 290ms);

    std::optional<Result<seatlock::SingleLock<seatlock::MemoryBackend>>> got;
    locks.async_lock("game1:B-1", asio::bind_executor(io, [&](auto r) { got = std::move(r); }));
    asio::steady_timer later(io, 50ms);
    later.async_wait([&](boost::system::error_code) { CHECK(holder.unlock()); });
    run_until(io, [&] { return got.has_value(); });
    REQUIRE(got);
    CHECK(*got);
}

TEST_CASE("the watchdog of a guard acquired asynchronously renews on the executor's timers") {
    seatlock::MemoryBackend backend;
    seatlock::LockOptions options;
    options.lease = 300ms;
    options.watchdog = true;
    seatlock::LockManager locks(backend, options);
    asio::io_context io;
    std::optional<Result<seatlock::SingleLock<seatlock::MemoryBackend>>> guard;
    locks.async_try_lock("game1:W-1", asio::bind_executor(io, [&](auto r) { guard = std::move(r); }));
    run_until(io, [&] { return guard.has_value(); });
    REQUIRE(guard);
    REQUIRE(*guard);
    // Three leases long: only renewals keep it.
    run_until(io, [] { return false; }, 900ms);
    CHECK((*guard)->owns());
    CHECK(locks.try_lock("game1:W-1").is(errc::lock_busy));
    // Without anyone running the executor, nothing renews it: the lease runs out.
    std::this_thread::sleep_for(400ms);
    CHECK(locks.try_lock("game1:W-1"));
}

TEST_CASE("a guard going out of scope in a coroutine releases without blocking its thread") {
    seatlock::FakeBackend backend;
    seatlock::LockOptions options;
    options.release_retry_inline = 2s;  // a blocking release would wait this long
    seatlock::LockManager locks(backend, options);
    asio::io_context io;
    std::chrono::steady_clock::duration scope_end{};
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
                const auto t0 = std::chrono::steady_clock::now();
                guard = Result<seatlock::SingleLock<seatlock::FakeBackend>>(
                    seatlock::Failure(errc::invalid_argument, "dropped"));  // destroys the guard
                scope_end = std::chrono::steady_clock::now() - t0;
            }
            done = true;
        },
        asio::detached);
    run_until(io, [&] { return done; });
    REQUIRE(done);
    CHECK(scope_end < 20ms);
    // The retries on the executor's timers free the key soon after.
    run_until(io, [&] { return static_cast<bool>(locks.try_lock("game1:G-1")); }, 2s);
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

// MemoryBackend answering from a thread of its own, as RedisBackend does.
class OtherThreadBackend : public seatlock::MemoryBackend {
public:
    ~OtherThreadBackend() {
        for (auto& t : threads_) t.join();
    }
    template <typename Op>
    void async_run(const Op& op, seatlock::detail::Completion<typename Op::result_type> done) {
        threads_.emplace_back([this, op, done = std::move(done)]() mutable {
            done(static_cast<seatlock::MemoryBackend&>(*this).run(op));
        });
    }

private:
    std::vector<std::thread> threads_;
};

// An io_context executor that, asked from another thread to run something, runs it there
// and only then lets that thread go on, 100 ms later: what a preempted thread does.
template <typename Inner>
struct LateExecutor {
    Inner inner;
    std::thread::id io_thread;

    template <typename F>
    void execute(F&& f) const {
        asio::execution::execute(inner, std::forward<F>(f));
        if (std::this_thread::get_id() != io_thread) std::this_thread::sleep_for(100ms);
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
        return LateExecutor<Next>{asio::prefer(inner, p), io_thread};
    }
    friend bool operator==(const LateExecutor& a, const LateExecutor& b) noexcept {
        return a.inner == b.inner;
    }
    friend bool operator!=(const LateExecutor& a, const LateExecutor& b) noexcept { return !(a == b); }
};

}  // namespace

TEST_CASE("a call answered on another thread keeps the caller's io_context alive until it lets go") {
    // The backend's thread hands the answer to the caller's executor and is then slow to
    // return. Meanwhile the caller gets its answer and destroys its io_context: nothing
    // the backend's thread still holds may refer to it (ASan would see it in the
    // sanitizer builds).
    OtherThreadBackend backend;
    seatlock::LockManager locks(backend);
    for (int round = 0; round < 3; ++round) {
        auto io = std::make_unique<asio::io_context>();
        auto work = std::make_optional(asio::make_work_guard(*io));
        std::thread runner([&io] { io->run(); });
        LateExecutor<asio::io_context::executor_type> late{io->get_executor(), runner.get_id()};
        {
            auto guard = locks.async_try_lock_all({"game1:L-1", "game1:L-2"},
                                                  asio::bind_executor(late, asio::use_future))
                             .get();
            REQUIRE(guard);
            CHECK(guard->async_unlock(asio::bind_executor(late, asio::use_future)).get());
        }
        work.reset();
        runner.join();
        io.reset();
    }
    CHECK(locks.try_lock_all({"game1:L-1", "game1:L-2"}));
}
