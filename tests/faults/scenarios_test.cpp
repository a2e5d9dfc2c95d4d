// SPDX-License-Identifier: MIT
// tests/faults/scenarios_test.cpp: one scenario per fault. Three seatlock-ticketing
// processes on one Redis (append-only file, fsync always) and one SQLite file sell one
// small venue to 36 buyers at once; a fault strikes mid-load and ends; the buyers go on
// for a while, then every hold left behind expires and is drained, and the rules of
// checks.hpp are checked against what the buyers were told and what the storage holds.
// The last scenario restarts a server on the memory backend over its database instead.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <set>
#include <thread>

#include "checks.hpp"
#include "cluster_of_servers.hpp"
#include "faults.hpp"
#include "load.hpp"
#include "storage_view.hpp"

using namespace seatlock::testing;
using namespace seatlock::testing::faults;
using namespace std::chrono_literals;

namespace {

// The servers' Redis command timeout: RedisOptions' default, which the server has no flag
// to change (its --redis-url takes no options).
constexpr auto server_command_timeout = 1000ms;
// The server's SQLite busy timeout (examples/ticketing_server/database.cpp).
constexpr auto server_busy_timeout = 5000ms;
// Buyers run this long before the fault strikes, and this long after it ended.
constexpr auto before_fault = 1500ms;
constexpr auto after_fault = 2000ms;

LoadOptions load_on(const ServerCluster& cluster, const std::string& tag) {
    LoadOptions options;
    options.tag = tag;
    options.ports = cluster.ports();
    options.venue = cluster.venue();
    return options;
}

// Waits until every hold has expired and the expiry drain closed its row (or `extra`
// past that), then checks every rule.
Findings settle_and_check(ServerCluster& cluster, const Load& load, const CheckOptions& options,
                          std::chrono::milliseconds extra = 2s) {
    eventually([&] { return DatabaseView::pending_count(cluster.db_path()) == 0; },
               cluster.hold_ttl() + extra);
    const auto db = DatabaseView::read(cluster.db_path());
    std::string error;
    const auto seats = seat_map(cluster.live_port(), cluster.venue(), &error);
    return check_after_settling(load.purchases(), db, seats, error, options);
}

// How many FUNCTION LOADs (a server reloading the library it found missing) Redis ran.
long long function_loads(RedisAdmin& admin) {
    const std::string info = admin.text({"INFO", "commandstats"});
    const std::string field = "cmdstat_function|load:calls=";
    const auto at = info.find(field);
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + field.size()));
}

// Calls that found `server` gone (no answer) and were then answered by another server.
int moved_from(const std::vector<Purchase>& purchases, std::size_t server) {
    int moved = 0;
    for (const auto& p : purchases) {
        for (const Call* call :
             {&p.hold, p.confirm ? &*p.confirm : nullptr, p.release ? &*p.release : nullptr,
              p.cancel ? &*p.cancel : nullptr}) {
            if (!call) continue;
            bool lost = false;
            for (const auto& answer : call->answers) {
                lost = lost || (answer.server == server && answer.status == 0);
                if (lost && answer.server != server && answer.status != 0) {
                    ++moved;
                    break;
                }
            }
        }
    }
    return moved;
}

// One failed check per broken rule, with its cases; the servers' last words when any.
void expect_none(const Findings& findings, const std::string& logs) {
    for (const auto& [rule, cases] : findings.by_rule()) FAIL_CHECK(rule << ": " << cases);
    if (!findings.empty()) MESSAGE("servers' logs (last lines):\n" << logs);
}

// The end of every scenario on the cluster, once its fault has ended: the buyers go on
// for after_fault, then the storage settles (`extra` past the holds' expiry) and every
// rule is checked, with the `findings` made during the fault and the data Redis `lost`.
void after_the_fault(ServerCluster& cluster, Load& load, Findings findings = {},
                     std::optional<CheckOptions::Loss> lost = std::nullopt,
                     std::chrono::milliseconds extra = 2s) {
    const auto fault_ended = wall_ms();
    load.finish(after_fault);
    MESSAGE(load.summary());
    findings.merge(settle_and_check(cluster, load, {fault_ended, lost}, extra));
    expect_none(findings, cluster.logs());
}

}  // namespace

TEST_CASE("Redis SIGKILLed and restarted from its append-only file: nothing sold twice or lost" *
          doctest::timeout(20)) {
    ServerCluster cluster;
    Load load(load_on(cluster, "kill9"));
    std::this_thread::sleep_for(before_fault);
    cluster.redis().kill_and_restart();
    after_the_fault(cluster, load);
}

TEST_CASE("Redis connections killed every 300 ms: nothing sold twice or lost" *
          doctest::timeout(20)) {
    ServerCluster cluster;
    Load load(load_on(cluster, "clientkill"));
    std::this_thread::sleep_for(before_fault);
    {
        const auto admin = cluster.redis().admin();
        long long killed = 0;  // connections
        Repeatedly killer(300ms, [&] {
            killed += admin->integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
        });
        std::this_thread::sleep_for(3000ms);
        killer.stop();
        CHECK(killer.runs() >= 8);
        CHECK(killer.failures() == 0);
        CHECK(killed >= killer.runs());
    }
    after_the_fault(cluster, load);
}

TEST_CASE("Redis functions flushed under load: the servers reload them, nothing sold twice" *
          doctest::timeout(20)) {
    ServerCluster cluster;
    Load load(load_on(cluster, "flush"));
    std::this_thread::sleep_for(before_fault);
    const auto admin = cluster.redis().admin();
    const auto loads_before = function_loads(*admin);
    constexpr int flushes = 4;
    for (int i = 0; i < flushes; ++i) {
        admin->expect_ok({"FUNCTION", "FLUSH", "SYNC"});
        std::this_thread::sleep_for(500ms);
    }
    CHECK(function_loads(*admin) >= loads_before + flushes);  // each flush noticed
    after_the_fault(cluster, load);
}

TEST_CASE("Redis stalls for more than twice the command timeout: nothing sold twice or lost" *
          doctest::timeout(20)) {
    ServerCluster cluster;
    Load load(load_on(cluster, "sleep"));
    std::this_thread::sleep_for(before_fault);
    const auto stall = 2 * server_command_timeout + 500ms;
    const auto admin = cluster.redis().admin();
    // Blocks this thread (and Redis) for the whole stall.
    const auto slept = admin->command(
        {"DEBUG", "SLEEP", std::to_string(static_cast<double>(stall.count()) / 1000.0)});
    REQUIRE(slept->type == REDIS_REPLY_STATUS);
    after_the_fault(cluster, load);
}

TEST_CASE("one of three servers SIGKILLed mid-load: its buyers move on, nothing sold twice" *
          doctest::timeout(35)) {
    ServerCluster cluster;
    auto options = load_on(cluster, "serverkill");
    // A killed server's locks keep their 10 s lease: calls on its holds wait that long.
    options.retry_for = 11000ms;
    Load load(options);
    std::this_thread::sleep_for(1000ms);  // earlier than the others, for the same reason
    cluster.kill_server(0);
    // A row whose lock the killed server held is closed by the drain once that lock's
    // 10 s lease has run out (taken at the latest at the kill, 2 s before the load ended)
    // and the expiry is delivered again (3 s later at most).
    after_the_fault(cluster, load, {}, std::nullopt, 12s);
    CHECK(moved_from(load.purchases(), 0) > 0);  // its buyers went on elsewhere
}

TEST_CASE("SQLite write-locked longer than the busy timeout: nothing sold twice or lost" *
          doctest::timeout(20)) {
    ServerCluster cluster;
    Load load(load_on(cluster, "dblock"));
    std::this_thread::sleep_for(before_fault);
    {
        DatabaseWriteLock lock(cluster.db_path());
        std::this_thread::sleep_for(server_busy_timeout + 1000ms);
    }
    after_the_fault(cluster, load);
}

TEST_CASE("Redis restarted empty: the servers rebuild from SQLite before they sell again" *
          doctest::timeout(20)) {
    ServerCluster cluster;
    auto options = load_on(cluster, "empty");
    options.cancel_share = 0;  // paid orders only grow: those paid before the loss stay paid
    Load load(options);
    std::this_thread::sleep_for(before_fault);

    std::set<std::string> paid_seats;
    for (const auto& order : DatabaseView::read(cluster.db_path()).orders) {
        if (order.paid) paid_seats.insert(order.seats.begin(), order.seats.end());
    }
    // Each server's map shows the others' sales one feed read later, and a server that has
    // not yet found Redis empty (its calls wait for the reconnection) serves its last map
    // with /healthz 200: the seats the watch requires paid are those every server showed
    // paid before the loss.
    std::string shown;
    Findings findings =
        wait_until_shown_paid(cluster.ports(), cluster.venue(), paid_seats, 3000ms, shown);
    CheckOptions::Loss loss;
    loss.from_ms = wall_ms();
    cluster.redis().kill_and_forget();
    cluster.redis().restart_empty();
    loss.until_ms = wall_ms();
    std::string repairs;
    findings.merge(watch_repair(cluster.ports(), cluster.venue(), paid_seats, 8000ms, repairs));
    MESSAGE(paid_seats.size() << " seats paid before the loss\n" << shown << repairs);
    after_the_fault(cluster, load, std::move(findings), loss);
}

TEST_CASE(
    "Redis restarted from an older snapshot under load: the servers find it and repair it, "
    "nothing sold twice or lost" *
    doctest::timeout(30)) {
    // Redis without an append-only file: a kill takes it back to the last SAVE.
    ServerCluster::Options older;
    older.redis = Persistence::snapshot;
    ServerCluster cluster(older);
    auto options = load_on(cluster, "older");
    // Paid orders only grow, as in the restarted-empty scenario: those paid before the kill
    // stay paid, which the repair watch checks seat by seat. (A cancellation the rollback
    // takes back is cancelled again by the repair: system_rollback_test.)
    options.cancel_share = 0;
    Load load(options);
    // Early, while most seats are free: many sales come after the snapshot, and the kill
    // takes them back.
    std::this_thread::sleep_for(500ms);
    const auto paid_seats = [&] {
        std::set<std::string> seats;
        for (const auto& order : DatabaseView::read(cluster.db_path()).orders) {
            if (order.paid) seats.insert(order.seats.begin(), order.seats.end());
        }
        return seats;
    };
    CheckOptions::Loss loss;
    loss.from_ms = wall_ms();  // holds granted from here on are gone with the rollback
    cluster.redis().save();
    const auto at_snapshot = paid_seats();
    std::this_thread::sleep_for(1000ms);
    const auto at_kill = paid_seats();
    cluster.redis().kill_and_restart();
    loss.until_ms = wall_ms();
    MESSAGE(at_snapshot.size() << " seats paid at the snapshot, " << at_kill.size()
                               << " at the kill");
    REQUIRE_MESSAGE(at_kill.size() > at_snapshot.size(), "nothing was sold after the snapshot");
    std::string repairs;
    Findings findings =
        watch_rollback_repair(cluster.ports(), cluster.venue(), at_kill, 8000ms, repairs);
    MESSAGE(repairs);
    after_the_fault(cluster, load, std::move(findings), loss);
}

TEST_CASE(
    "memory-backend server restarted over its database: paid orders stay paid and "
    "cancellable, pending holds are closed" *
    doctest::timeout(20)) {
    TemporaryDirectory dir;
    const std::string db_path = dir.path() + "/orders.db";
    const Venue venue;
    // Holds outlive the restart: rows pending at the restart are the server's to close.
    const auto start = [&] {
        return std::make_unique<TicketingServer>(TicketingServer::Options{
            server_flags("memory", db_path, std::chrono::seconds(30)), venue.json()});
    };
    auto server = start();
    LoadOptions options;
    options.tag = "restart";
    options.ports = {server->port()};
    options.venue = venue;
    options.buyers = 30;
    options.cancel_share = 0.3;
    Load load(options);
    load.finish(2500ms);
    MESSAGE(load.summary());

    // The load itself, before the restart.
    Findings findings;
    const auto before = DatabaseView::read(db_path);
    std::string error;
    const auto seats_before = seat_map(server->port(), venue, &error);
    REQUIRE_MESSAGE(seats_before, error);
    no_seat_taken_twice(load.purchases(), {}, findings);
    answered_orders_are_stored(load.purchases(), before, &*seats_before, findings);
    orders_match_seat_map(before, &*seats_before, findings);
    unavailable_answers_say_how_to_retry(load.purchases(), findings);
    retries_act_once(load.purchases(), before, findings);
    const auto paid = std::count_if(before.orders.begin(), before.orders.end(),
                                    [](const OrderRow& order) { return order.paid; });
    MESSAGE(paid << " orders paid and " << before.pending.size()
                 << " holds pending before the restart");
    REQUIRE(paid > 0);
    REQUIRE_FALSE(before.pending.empty());  // some holds were left open for the restart

    server->stop(SIGKILL);
    server = start();

    const auto seats_after = seat_map(server->port(), venue, &error);
    REQUIRE_MESSAGE(seats_after, error);
    paid_orders_still_paid(before, *seats_after, findings);
    // A payment callback retried after the restart, then a refund, for some of the orders.
    paid_orders_answer_as_before(server->port(), before, 30, findings);
    pending_rows_closed(db_path, before, 5000ms, findings);
    expect_none(findings, last_chars(server->log(), 3000));
}
