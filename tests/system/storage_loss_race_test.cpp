// SPDX-License-Identifier: MIT
// tests/system/storage_loss_race_test.cpp: a hold, a payment or a cancellation made in
// the storage just before it lost its data, whose row is written just after another
// server's recovery closed the event's rows and restored its paid orders, is refused: the
// row would say what the recovered storage does not (a hold never closed, seats paid
// that are free again, seats freed that stay paid).
//
// Two Ticketing objects, two servers sharing one SQLite file and one storage, driven
// directly. The storage forwards to a MemoryBackend that the test swaps for an empty one
// (Redis restarted empty) at a chosen step of server A, then runs server B's recovery to
// its end before A goes on: the race, made to happen every time.
//
// And A's seat map: a copy read before the loss, missing a sale B made just before it, is
// not served once A repaired the venue (the repair restored the sale).
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <seatlock/seatlock.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "database.hpp"
#include "metrics.hpp"
#include "seat_feed.hpp"
#include "ticketing.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace storage_loss_race_test {

namespace asio = boost::asio;
using seatlock::errc;
using seatlock::MemoryBackend;
using seatlock::Result;

namespace {

// A storage that loses its data at a chosen step: every call goes to the current
// MemoryBackend; at the armed step it is replaced by an empty one, and the armed function
// runs, before the step (before_next_hold) or after it (after_next_*: applied to the lost
// one).
class LosingStorage {
public:
    enum class Step {
        before_next_hold,
        after_next_hold,
        after_next_confirm,
        after_next_cancel
    };

    void lose_at(Step step, std::function<void()> then) {
        std::lock_guard lock(mutex_);
        armed_ = step;
        then_ = std::move(then);
    }

    // The storage loses its data now (Redis restarted empty).
    void lose_now() {
        std::lock_guard lock(mutex_);
        current_ = std::make_shared<MemoryBackend>();
    }

    template <seatlock::op::any_op O>
    seatlock::op::result_of<O> run(const O& o) {
        if constexpr (std::is_same_v<O, seatlock::op::hold>) lose_if(Step::before_next_hold);
        auto result = current()->run(o);
        if constexpr (std::is_same_v<O, seatlock::op::hold>) lose_if(Step::after_next_hold);
        if constexpr (std::is_same_v<O, seatlock::op::confirm>) lose_if(Step::after_next_confirm);
        if constexpr (std::is_same_v<O, seatlock::op::cancel>) lose_if(Step::after_next_cancel);
        return result;
    }

private:
    std::shared_ptr<MemoryBackend> current() {
        std::lock_guard lock(mutex_);
        return current_;
    }

    void lose_if(Step step) {
        std::function<void()> then;
        {
            std::lock_guard lock(mutex_);
            if (armed_ != step) return;
            armed_.reset();
            then = std::exchange(then_, nullptr);
            current_ = std::make_shared<MemoryBackend>();
        }
        then();
    }

    std::mutex mutex_;
    std::shared_ptr<MemoryBackend> current_ = std::make_shared<MemoryBackend>();
    std::optional<Step> armed_;
    std::function<void()> then_;
};

static_assert(seatlock::Backend<LosingStorage>);

seatlock::EventSpec small_event() {
    return {"game1",
            "Game",
            {seatlock::ZoneSpec::named("lower", {{"A-1", "A"}, {"A-2", "A"}, {"A-3", "A"}})}};
}

// Runs `task` to its end on an io_context of its own, as the server's start-up does (a
// Result has no empty state for use_future to start from).
template <typename T>
T run_to_end(asio::awaitable<T> task) {
    asio::io_context io;
    std::optional<T> result;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { result.emplace(co_await std::move(task)); },
        [](std::exception_ptr failed) {
            if (failed) std::rethrow_exception(failed);
        });
    io.run();
    REQUIRE(result);
    return std::move(*result);
}

// A database file of its own, removed with its WAL files at the end.
class TemporaryDatabase {
public:
    TemporaryDatabase() {
        static std::atomic<int> serial{0};
        path_ = std::filesystem::temp_directory_path() /
                ("seatlock-storage-loss-" + std::to_string(::getpid()) + "-" +
                 std::to_string(serial++) + ".sqlite");
    }
    ~TemporaryDatabase() {
        for (const char* suffix : {"", "-wal", "-shm"}) {
            std::error_code ignored;
            std::filesystem::remove(path_.string() + suffix, ignored);
        }
    }
    TemporaryDatabase(const TemporaryDatabase&) = delete;
    TemporaryDatabase& operator=(const TemporaryDatabase&) = delete;
    std::string path() const { return path_.string(); }

private:
    std::filesystem::path path_;
};

// Server A and server B: their own connection to one database file, one storage.
struct TwoServers {
    TwoServers() { REQUIRE(run_to_end(a.create_events({small_event()}))); }

    // Arms the loss at `step` of A; B's recovery (its start-up) runs on a thread of its
    // own, and A's call waits for its end: B finds the event lost and closes its rows.
    void lose_storage_at(LosingStorage::Step step) {
        storage->lose_at(step, [this] {
            std::thread recovery(
                [this] { recovered = run_to_end(b.create_events({small_event()})); });
            recovery.join();
        });
    }

    std::shared_ptr<LosingStorage> storage = std::make_shared<LosingStorage>();
    TemporaryDatabase file;
    ticketing::Database db_a{file.path()};
    ticketing::Database db_b{file.path()};
    ticketing::Metrics metrics_a;
    ticketing::Metrics metrics_b;
    ticketing::Ticketing a{seatlock::AnyBackend(storage), {}, db_a, metrics_a};
    ticketing::Ticketing b{seatlock::AnyBackend(storage), {}, db_b, metrics_b};
    Result<void> recovered = seatlock::Failure(errc::invalid_argument, "no recovery ran");
};

Result<seatlock::Hold> hold(ticketing::Ticketing& server, const std::string& buyer,
                            const std::string& idempotency_key = "") {
    const auto seats = seatlock::named_seats("lower", {"A-1", "A-2"});
    return run_to_end(server.hold(buyer, "game1", seats, idempotency_key));
}

std::size_t pending_rows_of(ticketing::Database& db, const std::string& buyer) {
    return db.holds_of(buyer, std::string("game1"), 0).size();
}

// A's store saw the version its call reached in the storage that was then lost; B's
// recovery, which never saw it, shows the event again below it. A's next sale is therefore
// found to have gone back, once: A repairs the event as well (its expiry drain), and the
// sale goes through. `sell` makes A's next sale.
template <typename Sell>
auto after_repair_of_what_a_saw(TwoServers& servers, Sell sell) {
    auto first = sell();
    CHECK(first.is(errc::storage_lost));
    if (first.is(errc::storage_lost)) {
        CHECK(first.error().detail.find("went back") != std::string::npos);
        REQUIRE(run_to_end(servers.a.drain_expired()));
        return sell();
    }
    return first;
}

// A seat's state in a snapshot: 'f', 'h' or 'p'.
char state_of(const ticketing::Snapshot& snapshot, const std::string& seat) {
    const int zone = snapshot.zone_index("lower");
    REQUIRE(zone >= 0);
    const auto at = static_cast<std::size_t>(zone);
    REQUIRE(snapshot.layouts[at]);
    return snapshot.zones[at]->states.at(snapshot.layouts[at]->index.at(seat));
}

}  // namespace

TEST_CASE(
    "a seat map read before the storage lost its data is not served once the server repaired "
    "the venue: a sale another server made just before the loss reads paid") {
    TwoServers servers;
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    std::thread runner([&io] { io.run(); });
    // A's reader reads once at start, then only when woken: its copy stays as it read it.
    ticketing::FeedOptions options;
    options.interval = std::chrono::hours(1);
    ticketing::SeatFeed feed(servers.a, servers.metrics_a, {"game1"}, options);
    feed.start(io.get_executor());
    const auto read_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!feed.current("game1") && std::chrono::steady_clock::now() < read_by)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(feed.current("game1"));

    // B starts (its start-up finds the event there), sells; A has not read
    // since. Then the storage loses everything.
    REQUIRE(run_to_end(servers.b.create_events({small_event()})));
    const auto held = hold(servers.b, "bob");
    REQUIRE(held);
    REQUIRE(run_to_end(servers.b.confirm("bob", held->token, "pay-1")));
    CHECK(state_of(*feed.current("game1"), "A-1") == 'f');
    servers.storage->lose_now();

    // A finds the loss (its probe) and repairs the venue (its expiry drain): the repair
    // restores B's order from the database, and /healthz says ok again.
    CHECK(run_to_end(servers.a.probe_versions()).is(errc::storage_lost));
    REQUIRE(servers.a.trouble());
    REQUIRE(run_to_end(servers.a.drain_expired()));
    REQUIRE_FALSE(servers.a.trouble());

    // What GET /events/game1/seats answers now.
    auto answered =
        asio::co_spawn(io, feed.fresh("game1", std::chrono::seconds(5)), asio::use_future);
    const auto snapshot = answered.get();
    REQUIRE(snapshot);
    CHECK(state_of(*snapshot, "A-1") == 'p');
    CHECK(state_of(*snapshot, "A-2") == 'p');

    feed.stop();
    work.reset();
    runner.join();
}

TEST_CASE(
    "a hold made before the storage lost its data and recorded after the recovery is "
    "refused") {
    TwoServers servers;
    servers.lose_storage_at(LosingStorage::Step::after_next_hold);

    const auto lost = hold(servers.a, "ann");
    REQUIRE(servers.recovered);
    CHECK(lost.is(errc::storage_lost));
    CHECK(pending_rows_of(servers.db_a, "ann") == 0);

    // The seats are free in the recovered storage: the next buyer gets them, alone.
    const auto next = after_repair_of_what_a_saw(servers, [&] { return hold(servers.a, "bob"); });
    REQUIRE(next);
    CHECK(pending_rows_of(servers.db_a, "bob") == 1);
    CHECK(pending_rows_of(servers.db_a, "ann") == 0);
}

TEST_CASE(
    "a payment made before the storage lost its data and recorded after the recovery is "
    "refused") {
    TwoServers servers;
    const auto held = hold(servers.a, "ann");
    REQUIRE(held);
    servers.lose_storage_at(LosingStorage::Step::after_next_confirm);

    const auto paid = run_to_end(servers.a.confirm("ann", held->token, "pay-1"));
    REQUIRE(servers.recovered);
    CHECK(paid.is(errc::storage_lost));
    // Recovery restored the orders it found, without this one: it must not appear after.
    CHECK_FALSE(servers.db_a.order("pay-1"));

    const auto next = after_repair_of_what_a_saw(servers, [&] { return hold(servers.a, "bob"); });
    REQUIRE(next);
    CHECK(servers.db_a.paid_orders("game1").empty());
}

TEST_CASE(
    "a hold refused because another server recovered the event first succeeds when "
    "retried") {
    TwoServers servers;
    // B recovers before A's hold: the hold is made in the recovered storage, but A still
    // knows the epoch from before the loss, so its row is refused.
    servers.lose_storage_at(LosingStorage::Step::before_next_hold);
    const auto first = hold(servers.a, "ann", "key-1");
    REQUIRE(servers.recovered);
    CHECK(first.is(errc::storage_lost));
    CHECK(pending_rows_of(servers.db_a, "ann") == 0);

    // The retry with the same key finds the hold, and records it this time.
    const auto again = hold(servers.a, "ann", "key-1");
    REQUIRE(again);
    CHECK(again->replayed);
    CHECK(pending_rows_of(servers.db_a, "ann") == 1);
}

TEST_CASE(
    "a cancellation made before the storage lost its data and recorded after the recovery is "
    "refused, and cancelling again frees the seats") {
    TwoServers servers;
    const auto held = hold(servers.a, "ann");
    REQUIRE(held);
    REQUIRE(run_to_end(servers.a.confirm("ann", held->token, "pay-1")));
    servers.lose_storage_at(LosingStorage::Step::after_next_cancel);

    // The recovery restored the order paid: the row must not say cancelled.
    const auto cancelled = run_to_end(servers.a.cancel("ann", "pay-1"));
    REQUIRE(servers.recovered);
    CHECK(cancelled.is(errc::storage_lost));
    REQUIRE(servers.db_a.order("pay-1"));
    CHECK_FALSE(servers.db_a.order("pay-1")->cancelled);
    CHECK(hold(servers.a, "bob").is(errc::seat_taken));

    const auto again = run_to_end(servers.a.cancel("ann", "pay-1"));
    REQUIRE(again);
    CHECK(servers.db_a.order("pay-1")->cancelled);
    CHECK(hold(servers.a, "bob"));
}

}  // namespace storage_loss_race_test
