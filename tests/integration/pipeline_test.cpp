// SPDX-License-Identifier: MIT
// The pipelined Asio connection (src/redis/pipeline.hpp) against a private redis-server:
// many calls share each server read; a killed connection, a flushed function library, a
// server that stops answering, a server that is down, credentials and a database; and
// a pipeline destroyed with calls in flight. A fake peer adds a write it never takes and
// a reply that is not RESP. Every call's callback runs exactly once.
#include "pipeline.hpp"
#include "support/fake_server.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"
#include "support/redis_setup.hpp"

#include <hiredis/hiredis.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace pipeline_test {

namespace {

using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::Millis;
using seatlock::Result;
using seatlock::redis_detail::Pipeline;
using seatlock::redis_detail::ReplyPtr;
using seatlock::testing::FakeServer;
using seatlock::testing::options_for;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;
using Clock = std::chrono::steady_clock;

Millis since(Clock::time_point t0) {
    return std::chrono::duration_cast<Millis>(Clock::now() - t0);
}

// An io_context run by `threads` threads until stop() or destruction.
class Executor {
public:
    explicit Executor(int threads = 1) : guard_(boost::asio::make_work_guard(io_)) {
        for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
    }
    ~Executor() { stop(); }
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    boost::asio::any_io_executor get() { return io_.get_executor(); }
    void stop() {
        guard_.reset();
        io_.stop();
        for (auto& t : threads_) {
            if (t.joinable()) t.join();
        }
    }

private:
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
    std::vector<std::thread> threads_;
};

// The outcomes of n calls, with how many times each callback ran.
class Outcomes {
public:
    explicit Outcomes(std::size_t n) : results_(n), calls_(n) {}

    Pipeline::Callback slot(std::size_t i) {
        return [this, i](Result<ReplyPtr> r) {
            std::lock_guard lock(mutex_);
            ++calls_[i];
            if (calls_[i] == 1) results_[i].emplace(std::move(r));
            ++done_;
            changed_.notify_all();
        };
    }
    // True when at least `n` callbacks ran within `timeout`.
    bool wait_for(std::size_t n, Millis timeout) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return done_ >= n; });
    }
    bool wait_all(Millis timeout) { return wait_for(calls_.size(), timeout); }
    std::size_t done() {
        std::lock_guard lock(mutex_);
        return done_;
    }
    // How many callbacks ran other than exactly once.
    std::size_t not_once() {
        std::lock_guard lock(mutex_);
        return static_cast<std::size_t>(
            std::count_if(calls_.begin(), calls_.end(), [](int c) { return c != 1; }));
    }
    // The first result of call i (after wait_all).
    const Result<ReplyPtr>& at(std::size_t i) {
        std::lock_guard lock(mutex_);
        return *results_.at(i);
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::optional<Result<ReplyPtr>>> results_;
    std::vector<int> calls_;
    std::size_t done_ = 0;
};

// One call, waited for; a callback that never comes fails the test instead of hanging it.
template <typename Send>
Result<ReplyPtr> wait_for_reply(Send&& send) {
    auto promise = std::make_shared<std::promise<Result<ReplyPtr>>>();
    auto future = promise->get_future();
    send([promise](Result<ReplyPtr> r) { promise->set_value(std::move(r)); });
    if (future.wait_for(10s) != std::future_status::ready)
        throw std::runtime_error("no callback within 10 s");
    return future.get();
}

Result<ReplyPtr> call(Pipeline& pipeline, std::vector<std::string> argv) {
    return wait_for_reply(
        [&](Pipeline::Callback done) { pipeline.exec(std::move(argv), std::move(done)); });
}

bool is_integer(const Result<ReplyPtr>& r, long long value) {
    return r && (*r)->type == REDIS_REPLY_INTEGER && (*r)->integer == value;
}

long long function_loads(RedisAdmin& admin) {
    const std::string info = admin.text({"INFO", "commandstats"});
    const std::string field = "cmdstat_function|load:calls=";
    const auto at = info.find(field);
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + field.size()));
}

// The integer stored at `key`; 0 when there is none.
long long value_of(RedisAdmin& admin, const std::string& key) {
    auto v = admin.command({"GET", key});
    return v->type == REDIS_REPLY_STRING ? std::stoll(std::string(v->str, v->len)) : 0;
}

// Waits until the pipeline has written at least `n` requests, so that they are in flight.
void wait_written(const Pipeline& pipeline, std::uint64_t n) {
    const auto t0 = Clock::now();
    while (pipeline.stats().requests < n) {
        if (since(t0) > 10s) throw std::runtime_error("requests were not written within 10 s");
        std::this_thread::sleep_for(1ms);
    }
    std::this_thread::sleep_for(20ms);  // and reached the server
}

// Runs `io` on this thread until `done()` holds; false when it does not within `timeout`.
template <typename Done>
bool run_until(boost::asio::io_context& io, Done&& done, Millis timeout = 10s) {
    const auto t0 = Clock::now();
    while (!done()) {
        if (since(t0) > timeout) return false;
        io.run_one_for(100ms);
    }
    return true;
}

// One PING on a pipeline whose io_context runs on this thread: true when it is answered.
bool call_on(boost::asio::io_context& io, Pipeline& pipeline) {
    auto answered = std::make_shared<std::optional<bool>>();
    pipeline.exec({"PING"}, [answered](Result<ReplyPtr> r) { *answered = r.has_value(); });
    return run_until(io, [&] { return answered->has_value(); }) && **answered;
}

}  // namespace

TEST_CASE("requests are written byte for byte as hiredis formats them") {
    // What hiredis's redisFormatCommandArgv writes for the same arguments.
    auto hiredis = [](const std::vector<std::string>& argv) {
        std::vector<const char*> pointers;
        std::vector<std::size_t> lengths;
        for (const auto& arg : argv) {
            pointers.push_back(arg.data());
            lengths.push_back(arg.size());
        }
        char* target = nullptr;
        const int size = redisFormatCommandArgv(&target, static_cast<int>(argv.size()),
                                                pointers.data(), lengths.data());
        REQUIRE(size > 0);
        std::string out(target, static_cast<std::size_t>(size));
        redisFreeCommand(target);
        return out;
    };
    auto ours = [](const std::vector<std::string>& argv) {
        const std::vector<std::string_view> views(argv.begin(), argv.end());
        return seatlock::redis_detail::format_command(views);
    };
    std::vector<std::vector<std::string>> commands = {
        {"PING"},
        {"SET", "", ""},                                        // empty arguments
        {"SET", "k", std::string("a\0b\r\n\xff", 6)},          // binary-safe
        {"FCALL", "seatlock_x_hold", "6", "a:{e}", "b:{e}", "c", std::string(100000, 'x')},
    };
    std::vector<std::string> many{"MGET"};  // argc and lengths of several digits
    for (int i = 0; i < 1234; ++i) many.push_back(std::string(static_cast<std::size_t>(i % 13), 'k'));
    commands.push_back(many);
    for (const auto& argv : commands) {
        CAPTURE(argv.front());
        CAPTURE(argv.size());
        CHECK(ours(argv) == hiredis(argv));
    }
}

TEST_CASE("calls issued together share server reads and socket writes") {
    RedisServer server;
    RedisAdmin admin(server.port());
    constexpr std::size_t threads = 4, per_thread = 500, calls = threads * per_thread;
    Outcomes outcomes(calls);  // declared first: it outlives the pipeline's callbacks
    Executor executor;
    Pipeline pipeline(executor.get(), options_for(server));
    REQUIRE(call(pipeline, {"PING"}));  // connected: the count below is the calls' alone

    const auto before = pipeline.stats();
    const long long reads_before = admin.info_field("stats", "total_reads_processed");
    std::vector<std::thread> callers;
    for (std::size_t t = 0; t < threads; ++t) {
        callers.emplace_back([&, t] {
            for (std::size_t i = 0; i < per_thread; ++i)
                pipeline.exec({"INCR", "counter"}, outcomes.slot(t * per_thread + i));
        });
    }
    for (auto& c : callers) c.join();
    REQUIRE(outcomes.wait_all(30s));
    const long long server_reads =
        admin.info_field("stats", "total_reads_processed") - reads_before - 1;  // - this INFO
    const auto after = pipeline.stats();

    CHECK(outcomes.not_once() == 0);
    // Every INCR answered, each with its own value: replies were matched to their calls.
    std::vector<long long> values;
    for (std::size_t i = 0; i < calls; ++i) {
        const auto& r = outcomes.at(i);
        REQUIRE(r);
        REQUIRE((*r)->type == REDIS_REPLY_INTEGER);
        values.push_back((*r)->integer);
    }
    std::sort(values.begin(), values.end());
    std::vector<long long> expected(calls);
    std::iota(expected.begin(), expected.end(), 1);
    CHECK(values == expected);

    const double per_read = static_cast<double>(calls) / static_cast<double>(server_reads);
    MESSAGE("calls per server read: "
            << per_read << " (" << calls << " calls, " << server_reads
            << " server reads; pipeline: " << after.requests - before.requests << " requests in "
            << after.writes - before.writes << " writes, " << after.reads - before.reads
            << " reads)");
    CHECK(per_read >= 4.0);
    CHECK(after.requests - before.requests == calls);
    CHECK(after.writes - before.writes < calls / 4);
}

TEST_CASE("replies of one read are handed in two turns: what their callbacks send goes out between") {
    // On the callers' own thread (one io_context, run here), 64 INCRs go out in one write,
    // Redis answers them in one write, and each callback sends one more INCR. The pipeline
    // hands the first half of the replies, writes what their callbacks sent, and only then
    // hands the second half: Redis runs the first new batch while the second half is handed.
    RedisServer server;
    constexpr std::size_t calls = 64;
    boost::asio::io_context io(1);
    auto work = boost::asio::make_work_guard(io);
    Pipeline pipeline(io.get_executor(), options_for(server));
    REQUIRE(call_on(io, pipeline));

    // Tries until the first batch's replies came in one socket read (Redis sends them in
    // one write; the kernel almost always delivers them together).
    bool one_read = false;
    for (int attempt = 0; attempt < 5 && !one_read; ++attempt) {
        // Shared with the callbacks: a call still pending when a check fails ends, with
        // the pipeline, after this attempt's locals.
        struct Seen {
            std::uint64_t reads = 0, writes = 0;
        };
        struct Attempt {
            std::vector<Seen> seen;
            std::size_t answered = 0, follow_ups = 0, failed = 0;
        };
        auto at = std::make_shared<Attempt>();
        for (std::size_t i = 0; i < calls; ++i) {
            pipeline.exec({"INCR", "counter"}, [at, &pipeline](Result<ReplyPtr> r) {
                if (!r) {
                    ++at->failed;
                    return;
                }
                const auto stats = pipeline.stats();
                at->seen.push_back({stats.reads, stats.writes});
                ++at->answered;
                pipeline.exec({"INCR", "counter"}, [at](Result<ReplyPtr> again) {
                    ++(again ? at->follow_ups : at->failed);
                });
            });
        }
        REQUIRE(run_until(io, [&] {
            return at->answered + at->failed == calls && at->follow_ups + at->failed >= calls;
        }));
        REQUIRE(at->failed == 0);
        const auto& seen = at->seen;
        one_read = seen.front().reads == seen.back().reads;
        if (!one_read) continue;
        const auto written_after = std::count_if(seen.begin(), seen.end(), [&](const Seen& s) {
            return s.writes > seen.front().writes;
        });
        MESSAGE("callbacks of one read that saw a write after the first's: " << written_after);
        // Half were handed before the first follow-ups were written, half after.
        CHECK(written_after == static_cast<std::ptrdiff_t>(calls / 2));
    }
    CHECK(one_read);
}

TEST_CASE("replies read but left for the next turn are answers, even past command_timeout") {
    // The first callback of a read blocks its thread past the command timeout, so that the
    // reply timer comes due while the read's second half waits for its turn: those
    // replies were read, so they reach their callers, and the connection is kept.
    RedisServer server;
    constexpr std::size_t calls = 64;
    auto options = options_for(server);
    options.command_timeout = 100ms;
    boost::asio::io_context io(1);
    auto work = boost::asio::make_work_guard(io);
    Pipeline pipeline(io.get_executor(), options);
    for (int attempt = 0; attempt < 3; ++attempt) {
        CAPTURE(attempt);
        auto answered = std::make_shared<std::size_t>(0);
        auto failed = std::make_shared<std::size_t>(0);
        for (std::size_t i = 0; i < calls; ++i) {
            pipeline.exec({"INCR", "counter"}, [answered, failed, i](Result<ReplyPtr> r) {
                if (i == 0) std::this_thread::sleep_for(250ms);
                ++*(r ? answered : failed);
            });
        }
        run_until(io, [&] { return *answered + *failed == calls; });
        CHECK(*failed == 0);
        CHECK(*answered == calls);
    }
    CHECK(pipeline.stats().connects == 1);  // no reply was taken for lost
}

TEST_CASE("replies read but left for the next turn are answers when the connection is lost") {
    // 64 PINGs answered in one write; the first callback has the peer reset the connection
    // and sends one more PING, whose write then fails while the read's second half waits
    // for its turn. Those replies were read: they reach their callers as PONG, and only
    // the PING written to the reset connection is outcome_unknown.
    FakeServer server(FakeServer::Behaviour::answer_pings);
    seatlock::RedisOptions o;
    o.port = server.port();
    constexpr std::size_t calls = 64;
    boost::asio::io_context io(1);
    auto work = boost::asio::make_work_guard(io);
    auto pipeline = std::make_unique<Pipeline>(io.get_executor(), o);
    REQUIRE(call_on(io, *pipeline));
    // The replies' last callback destroys the pipeline, while the lost connection hands
    // the replies left for the next turn (nothing of the pipeline is touched after).
    bool destroy = false;
    SUBCASE("the connection is kept") {}
    SUBCASE("the replies' last callback destroys the pipeline") { destroy = true; }

    // The 64 replies go out in one write, so they come in one read.
    server.batch(calls);
    struct Seen {
        std::vector<std::uint64_t> reads;  // pipeline reads when each answer came
        std::size_t pongs = 0, failed = 0, ended = 0;
        bool reset = false;
        std::optional<Result<ReplyPtr>> last;  // the PING written to the reset connection
    };
    auto seen = std::make_shared<Seen>();
    for (std::size_t i = 0; i < calls; ++i) {
        pipeline->exec({"PING"}, [=, &pipeline, &server](Result<ReplyPtr> r) {
            ++seen->ended;
            if (!r || (*r)->type != REDIS_REPLY_STATUS) {
                ++seen->failed;
                return;
            }
            ++seen->pongs;
            seen->reads.push_back(pipeline->stats().reads);
            if (i == calls - 1 && destroy && seen->reset) pipeline.reset();
            if (i != 0) return;
            seen->reset = server.reset();
            std::this_thread::sleep_for(50ms);  // the reset reaches this end
            pipeline->exec({"PING"},
                           [seen](Result<ReplyPtr> last) { seen->last.emplace(std::move(last)); });
        });
    }
    REQUIRE(run_until(io, [&] { return seen->ended == calls && seen->last.has_value(); }));
    REQUIRE(seen->reset);
    CHECK(seen->failed == 0);
    CHECK(seen->pongs == calls);
    CHECK(seen->reads.front() == seen->reads.back());  // one read
    // The write to the reset connection failed: the connection was taken for lost.
    if (!destroy) CHECK(seen->last->is(errc::outcome_unknown));
    CHECK((pipeline == nullptr) == destroy);
    if (destroy) return;
    server.batch(1);
    REQUIRE(call_on(io, *pipeline));  // and the next connection works
}

TEST_CASE("CLIENT KILL with calls in flight: each call ends once, none is applied twice") {
    RedisServer server;
    RedisAdmin admin(server.port());
    constexpr std::size_t calls = 200, answered = 100;
    Outcomes outcomes(calls);
    Outcomes blocker(1);
    Executor executor(2);
    Pipeline pipeline(executor.get(), options_for(server));
    REQUIRE(call(pipeline, {"PING"}));
    const auto connects = pipeline.stats().connects;

    // INCR k0..k99 are answered; a BLPOP then holds the connection's later commands in
    // the server unrun, so INCR k100..k199 are surely in flight when the kill comes.
    for (std::size_t i = 0; i < answered; ++i)
        pipeline.exec({"INCR", "k" + std::to_string(i)}, outcomes.slot(i));
    pipeline.exec({"BLPOP", "never-pushed", "30"}, blocker.slot(0));
    for (std::size_t i = answered; i < calls; ++i)
        pipeline.exec({"INCR", "k" + std::to_string(i)}, outcomes.slot(i));
    REQUIRE(outcomes.wait_for(answered, 10s));
    wait_written(pipeline, 1 + calls + 1);

    const auto t0 = Clock::now();
    CHECK(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) == 1);
    REQUIRE(outcomes.wait_all(5s));  // none hangs
    REQUIRE(blocker.wait_all(5s));
    CHECK(since(t0) < 5s);
    CHECK(outcomes.not_once() == 0);
    CHECK(blocker.not_once() == 0);
    CHECK(blocker.at(0).is(errc::outcome_unknown));

    std::size_t succeeded = 0, unknown = 0;
    for (std::size_t i = 0; i < calls; ++i) {
        const auto& r = outcomes.at(i);
        const long long value = value_of(admin, "k" + std::to_string(i));
        INFO("k" << i << " = " << value);
        CHECK((value == 0 || value == 1));  // never applied twice
        if (r) {
            CHECK(is_integer(r, 1));
            CHECK(value == 1);
            ++succeeded;
        } else {
            CHECK(r.is(errc::outcome_unknown));
            CHECK(r.error().detail.find("may or may not") != std::string::npos);
            ++unknown;
        }
    }
    CHECK(succeeded == answered);
    CHECK(unknown == calls - answered);

    // Later calls reconnect and work.
    CHECK(is_integer(call(pipeline, {"INCR", "after"}), 1));
    CHECK(pipeline.stats().connects == connects + 1);
}

TEST_CASE("FUNCTION FLUSH with FCALLs in flight: one FUNCTION LOAD, every call succeeds") {
    RedisServer server;
    RedisAdmin admin(server.port());
    constexpr int rounds = 3;
    constexpr std::size_t calls = 200;
    std::vector<std::unique_ptr<Outcomes>> outcomes_of, blocker_of;
    for (int round = 0; round < rounds; ++round) {
        outcomes_of.push_back(std::make_unique<Outcomes>(calls));
        blocker_of.push_back(std::make_unique<Outcomes>(1));
    }
    Executor executor(2);
    Pipeline pipeline(executor.get(), options_for(server));
    const auto& fence = seatlock::redis_scripts::lock_fence;
    auto fence_key = [](std::size_t i) { return "seatlock:fence:{g" + std::to_string(i) + "}"; };

    for (int round = 0; round < rounds; ++round) {
        CAPTURE(round);
        // The library is loaded (by the pipeline itself in the first round).
        auto warmed = wait_for_reply([&](Pipeline::Callback done) {
            pipeline.fcall(fence, {fence_key(999999)}, {"1"}, std::move(done));
        });
        INFO((warmed ? std::string("a reply") : warmed.error().message()));
        REQUIRE(warmed);

        // The BLPOP holds the FCALLs behind it in the server until the flush has run.
        Outcomes& outcomes = *outcomes_of[static_cast<std::size_t>(round)];
        Outcomes& blocker = *blocker_of[static_cast<std::size_t>(round)];
        const auto before = pipeline.stats();
        pipeline.exec({"BLPOP", "never-pushed", "0.5"}, blocker.slot(0));
        for (std::size_t i = 0; i < calls; ++i) {
            const std::size_t n = static_cast<std::size_t>(round) * calls + i;
            pipeline.fcall(fence, {fence_key(n)}, {std::to_string(n + 1)}, outcomes.slot(i));
        }
        wait_written(pipeline, before.requests + 1 + calls);
        const auto loads_before = function_loads(admin);
        admin.expect_ok({"FUNCTION", "FLUSH"});

        REQUIRE(outcomes.wait_all(10s));
        REQUIRE(blocker.wait_all(10s));
        CHECK(outcomes.not_once() == 0);
        for (std::size_t i = 0; i < calls; ++i) {
            const std::size_t n = static_cast<std::size_t>(round) * calls + i;
            const auto& r = outcomes.at(i);
            INFO("call " << i << ": "
                         << (r ? ((*r)->type == REDIS_REPLY_ERROR ? std::string((*r)->str)
                                                                  : "a reply")
                               : r.error().message()));
            REQUIRE(r);
            REQUIRE((*r)->type == REDIS_REPLY_ARRAY);
            REQUIRE((*r)->elements == 2);
            CHECK((*r)->element[0]->integer == 1);
            CHECK((*r)->element[1]->integer == static_cast<long long>(n + 1));
        }
        // All 200 met "Function not found" and went again after a single load.
        CHECK(function_loads(admin) - loads_before == 1);
        CHECK(pipeline.stats().requests - before.requests == 1 + calls + 1 + calls);
    }
}

TEST_CASE("no reply within command_timeout: outcome_unknown at once; the next call works") {
    RedisServer server({"--enable-debug-command", "yes"});
    RedisAdmin admin(server.port());
    Executor executor;
    Pipeline pipeline(executor.get(), options_for(server, 300ms));
    REQUIRE(call(pipeline, {"PING"}));

    admin.send({"DEBUG", "SLEEP", "1.5"});
    std::this_thread::sleep_for(50ms);  // the server is now asleep
    const auto t0 = Clock::now();
    auto lost = call(pipeline, {"INCR", "slow"});
    const auto waited = since(t0);
    REQUIRE(lost.is(errc::outcome_unknown));
    CHECK(waited >= 250ms);
    CHECK(waited < 1000ms);  // well before the server wakes up
    CHECK(lost.error().detail.find("no reply came within 300 ms") != std::string::npos);
    CHECK(admin.reply()->type == REDIS_REPLY_STATUS);  // awake again

    auto next = call(pipeline, {"INCR", "slow"});
    REQUIRE(next);
    // The lost INCR may or may not have run; this one surely did.
    CHECK(((*next)->integer == 1 || (*next)->integer == 2));
}

TEST_CASE("a request not yet written when the connection is lost goes out on the next one") {
    FakeServer server(FakeServer::Behaviour::never_read);
    seatlock::RedisOptions o;
    o.port = server.port();
    o.connect_timeout = 500ms;
    o.command_timeout = 300ms;
    Outcomes outcomes(2);
    Executor executor;
    Pipeline pipeline(executor.get(), o);

    // A write the peer never takes: the SET stays in flight until its timeout, and the
    // INCR queues behind it, unwritten.
    const auto t0 = Clock::now();
    pipeline.exec({"SET", "big", std::string(std::size_t{32} << 20, 'x')}, outcomes.slot(0));
    wait_written(pipeline, 1);
    pipeline.exec({"INCR", "queued"}, outcomes.slot(1));
    REQUIRE(outcomes.wait_all(10s));
    CHECK(outcomes.not_once() == 0);
    CHECK(outcomes.at(0).is(errc::outcome_unknown));
    // The INCR survived the first connection and timed out on the second.
    CHECK(outcomes.at(1).is(errc::outcome_unknown));
    CHECK(since(t0) >= 600ms);
    const auto stats = pipeline.stats();
    CHECK(stats.connects == 2);
    CHECK(stats.requests == 2);
    CHECK(stats.writes == 2);
}

TEST_CASE("a reply that is not RESP is protocol_error") {
    FakeServer server(FakeServer::Behaviour::answer_garbage);
    seatlock::RedisOptions o;
    o.port = server.port();
    Executor executor;
    Pipeline pipeline(executor.get(), o);
    auto r = call(pipeline, {"PING"});
    REQUIRE(r.is(errc::protocol_error));
    CHECK(r.error().detail.find("unreadable reply") != std::string::npos);
}

TEST_CASE("a down server: connection_failed at once, one connect per pause; back up: calls work") {
    RedisServer server;
    server.stop();
    constexpr std::size_t calls = 100;
    Outcomes outcomes(calls);
    Executor executor;
    Pipeline pipeline(executor.get(), options_for(server));

    const auto t0 = Clock::now();
    auto refused = call(pipeline, {"PING"});
    REQUIRE(refused.is(errc::connection_failed));
    CHECK(since(t0) < 500ms);
    CHECK(refused.error().detail.find("127.0.0.1:" + std::to_string(server.port())) !=
          std::string::npos);

    // A burst of calls against a dead server: all refused, by one or two connect attempts.
    const auto connects = pipeline.stats().connects;
    for (std::size_t i = 0; i < calls; ++i) pipeline.exec({"PING"}, outcomes.slot(i));
    REQUIRE(outcomes.wait_all(5s));
    CHECK(outcomes.not_once() == 0);
    for (std::size_t i = 0; i < calls; ++i) CHECK(outcomes.at(i).is(errc::connection_failed));
    CHECK(pipeline.stats().connects - connects <= 2);

    server.restart();
    auto ok = call(pipeline, {"PING"});
    REQUIRE(ok);
    CHECK(std::string((*ok)->str, (*ok)->len) == "PONG");
}

TEST_CASE("AUTH and SELECT: a wrong password is auth_failed; the right one and db 3 work") {
    RedisServer server({"--requirepass", "s3cret"});
    Executor executor;
    {
        auto o = options_for(server);
        o.password = "wrong";
        Pipeline pipeline(executor.get(), o);
        auto refused = call(pipeline, {"SET", "where", "db3"});
        REQUIRE(refused.is(errc::auth_failed));
        CHECK(refused.error().detail.find("refused AUTH") != std::string::npos);
    }
    {
        auto o = options_for(server);
        o.password = "s3cret";
        o.db = 3;
        Pipeline pipeline(executor.get(), o);
        auto set = call(pipeline, {"SET", "where", "db3"});
        REQUIRE(set);
        CHECK((*set)->type == REDIS_REPLY_STATUS);
    }
    RedisAdmin admin(server.port(), "s3cret");
    CHECK(admin.integer({"EXISTS", "where"}) == 0);  // not in db 0
    admin.expect_ok({"SELECT", "3"});
    CHECK(admin.text({"GET", "where"}) == "db3");
}

TEST_CASE("a pipeline destroyed with calls in flight ends every call once, before it is gone") {
    RedisServer server;
    Executor executor(2);
    constexpr std::size_t calls = 100;
    Outcomes outcomes(calls + 1);
    auto pipeline = std::make_unique<Pipeline>(executor.get(), options_for(server));
    REQUIRE(call(*pipeline, {"PING"}));
    // The BLPOP keeps everything behind it unanswered.
    pipeline->exec({"BLPOP", "never-pushed", "30"}, outcomes.slot(calls));
    for (std::size_t i = 0; i < calls; ++i)
        pipeline->exec({"INCR", "k" + std::to_string(i)}, outcomes.slot(i));

    bool all_written = true;  // then every call was sent: outcome_unknown, never io_error
    SUBCASE("once everything was written, from another thread") {
        wait_written(*pipeline, 1 + calls + 1);
        pipeline.reset();
    }
    SUBCASE("at once, from another thread, the executor running") {
        all_written = false;
        pipeline.reset();
    }
    SUBCASE("after the executor stopped") {
        wait_written(*pipeline, 1 + calls + 1);
        executor.stop();
        pipeline.reset();
    }
    CHECK(outcomes.done() == calls + 1);  // all of them by the time the destructor returned
    std::this_thread::sleep_for(100ms);
    CHECK(outcomes.done() == calls + 1);  // and none after
    CHECK(outcomes.not_once() == 0);
    for (std::size_t i = 0; i <= calls; ++i) {
        const auto& r = outcomes.at(i);
        CHECK((r.is(errc::outcome_unknown) || (!all_written && r.is(errc::io_error))));
    }
}

TEST_CASE("a pipeline destroyed by one of its own callbacks ends every other call once") {
    RedisServer server;
    Executor executor(2);
    constexpr std::size_t calls = 100;
    Outcomes outcomes(calls);
    std::promise<void> issued;
    std::promise<std::size_t> destroyed;  // how many other callbacks had run by then
    auto pipeline = std::make_unique<Pipeline>(executor.get(), options_for(server));
    REQUIRE(call(*pipeline, {"PING"}));

    pipeline->exec({"PING"}, [&, all_issued = issued.get_future().share()](Result<ReplyPtr>) {
        all_issued.wait();  // the test thread no longer touches the pipeline
        pipeline.reset();
        destroyed.set_value(outcomes.done());
    });
    pipeline->exec({"BLPOP", "never-pushed", "30"}, outcomes.slot(0));
    for (std::size_t i = 1; i < calls; ++i)
        pipeline->exec({"INCR", "k" + std::to_string(i)}, outcomes.slot(i));
    issued.set_value();

    auto ended = destroyed.get_future();
    REQUIRE(ended.wait_for(10s) == std::future_status::ready);
    CHECK(ended.get() == calls);
    std::this_thread::sleep_for(100ms);
    CHECK(outcomes.done() == calls);
    CHECK(outcomes.not_once() == 0);
}

}  // namespace pipeline_test
