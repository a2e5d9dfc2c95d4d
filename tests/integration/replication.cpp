// SPDX-License-Identifier: MIT
// RedisBackend's replica-acknowledged writes (RedisOptions::replicas_to_ack) on a primary
// with one replica, both started here: a write answered done is on the replica; a replica
// that does not acknowledge turns the answer into not_replicated, on both API paths and on
// a Redis Cluster; and when the primary dies and its replica is promoted, sales answered
// done without WAIT can be gone, while with WAIT every one answered done is still there.
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/lock_manager.hpp>
#include <seatlock/redis/key_layout.hpp>

#include <boost/asio/use_future.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace replication_test {

namespace {

using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::testing::no_limit;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisServer;

constexpr auto ack_timeout = 200ms;

// redis-server arguments: replicas get the stream at once (no disk, no delay before a sync).
std::vector<std::string> replication_args(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
                                  "--repl-diskless-load", "swapdb"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// One of the INFO fields of `section`, e.g. info(port, "server", "process_id").
std::string info(int port, std::string_view section, const std::string& field) {
    RedisAdmin admin(port);
    const std::string text = admin.text({"INFO", section});
    const auto at = text.find(field + ":");
    if (at == std::string::npos) return {};
    const auto start = at + field.size() + 1;
    return text.substr(start, text.find_first_of("\r\n", start) - start);
}

// A primary and its replica, in sync when constructed.
struct Replicated {
    RedisServer primary{replication_args()};
    RedisServer replica{replication_args({"--replicaof", "127.0.0.1", std::to_string(primary.port())})};

    Replicated() {
        for (int i = 0; i < 500 && !in_sync(100); ++i) std::this_thread::sleep_for(10ms);
        if (!in_sync(100)) {
            throw std::runtime_error("the replica on port " + std::to_string(replica.port()) +
                                     " did not get in sync with its primary");
        }
    }

    // Whether the replica has everything the primary was sent until now. WAIT counts from
    // its own connection's last write, so that connection writes first.
    bool in_sync(int wait_ms) const {
        if (info(replica.port(), "replication", "master_link_status") != "up") return false;
        RedisAdmin admin(primary.port());
        admin.expect_ok({"SET", "replication-test-marker", "1"});
        return admin.integer({"WAIT", "1", std::to_string(wait_ms)}) == 1;
    }

    pid_t pid(const RedisServer& server) const {
        return static_cast<pid_t>(std::stoi(info(server.port(), "server", "process_id")));
    }

    // Options for the primary; `acks` replicas per write, or 0: the option off.
    seatlock::RedisOptions options(int acks) const {
        auto o = seatlock::testing::options_for(primary, 5s);
        o.replicas_to_ack = acks;
        o.replica_ack_timeout = ack_timeout;
        return o;
    }
};

// A process stopped with SIGSTOP for as long as this lives (SIGCONT at the end, also when
// a check throws: a stopped redis-server would never end on RedisServer's SIGTERM).
class Frozen {
public:
    explicit Frozen(pid_t pid) : pid_(pid) { ::kill(pid_, SIGSTOP); }
    ~Frozen() { thaw(); }
    Frozen(const Frozen&) = delete;
    Frozen& operator=(const Frozen&) = delete;
    void thaw() {
        if (pid_ > 0) ::kill(pid_, SIGCONT);
        pid_ = -1;
    }

private:
    pid_t pid_;
};

seatlock::EventSpec event(int seats) {
    std::vector<seatlock::SeatSpec> list;
    for (int n = 1; n <= seats; ++n) list.push_back({"A-" + std::to_string(n), "A"});
    return {"game1", "Replicated", {seatlock::ZoneSpec::named("lower", list)}};
}

// The order that paid seat `seat` of zone lower on the server at `port` ("" for none),
// read from the storage itself: it works on a replica, where the functions do not run
// (a Cluster replica serves reads after READONLY).
std::string paid_order(int port, const std::string& seat, bool cluster_replica = false) {
    RedisAdmin admin(port);
    if (cluster_replica) admin.expect_ok({"READONLY"});
    const seatlock::redis_detail::KeyLayout keys("seatlock");
    auto reply = admin.command({"HGET", keys.event_key("paid", "game1"), "lower:" + seat});
    return reply->type == REDIS_REPLY_STRING ? std::string(reply->str, reply->len) : std::string();
}

// The primary dies with what its replica has not got; the replica becomes the primary.
// Its link is cut first (CLIENT KILL), so that nothing written after the cut reaches even
// the stopped replica's socket buffer, from which it would read it on SIGCONT.
void cut_off(Replicated& pair) {
    RedisAdmin(pair.primary.port()).command({"CLIENT", "KILL", "TYPE", "replica"});
}
void fail_over(Replicated& pair, Frozen& replica) {
    ::kill(pair.pid(pair.primary), SIGKILL);
    replica.thaw();
    RedisAdmin promoted(pair.replica.port());
    promoted.expect_ok({"REPLICAOF", "NO", "ONE"});
}

}  // namespace

TEST_CASE("with replicas_to_ack, a hold and its confirm answer done once the replica has them") {
    Replicated pair;
    seatlock::RedisBackend backend(pair.options(1));
    seatlock::SeatHoldStore store(backend, no_limit());
    REQUIRE(store.create_event(event(4)));

    auto hold = store.hold("game1", "ann", seatlock::named_seats("lower", {"A-1"}));
    REQUIRE(hold);
    auto order = store.confirm(hold->token, "pay-1");
    REQUIRE(order);
    CHECK(paid_order(pair.replica.port(), "A-1") == "pay-1");

    auto async_hold =
        store.async_hold("game1", "bob", seatlock::named_seats("lower", {"A-2"}), boost::asio::use_future).get();
    REQUIRE(async_hold);
    REQUIRE(store.async_confirm(async_hold->token, "pay-2", boost::asio::use_future).get());
    CHECK(paid_order(pair.replica.port(), "A-2") == "pay-2");
}

TEST_CASE("a write its replica does not acknowledge in time is not_replicated, and applied") {
    Replicated pair;
    seatlock::RedisBackend backend(pair.options(1));
    seatlock::SeatHoldStore store(backend, no_limit());
    REQUIRE(store.create_event(event(4)));
    auto first = store.hold("game1", "ann", seatlock::named_seats("lower", {"A-1"}));
    auto second = store.hold("game1", "bob", seatlock::named_seats("lower", {"A-2"}));
    REQUIRE(first);
    REQUIRE(second);

    Frozen replica(pair.pid(pair.replica));
    auto check = [&](const seatlock::Result<seatlock::Order>& order, const std::string& seat,
                     std::chrono::steady_clock::duration took) {
        REQUIRE_FALSE(order);
        INFO(order.error().message());
        CHECK(order.is(errc::not_replicated));
        CHECK(order.code() == seatlock::condition::storage_unavailable);
        CHECK_FALSE(order.code() == seatlock::condition::retry_safe);
        CHECK(order.error().detail.find("applied on the Redis primary") != std::string::npos);
        CHECK(order.error().items == std::vector<std::string>{seat});
        CHECK(order.error().limit == 1);
        CHECK(order.error().current == 0);
        CHECK(took >= ack_timeout);
        CHECK(took < ack_timeout + 3s);  // WAIT's timeout, not the command timeout
    };

    auto start = std::chrono::steady_clock::now();
    auto blocking = store.confirm(first->token, "pay-1");
    check(blocking, "A-1", std::chrono::steady_clock::now() - start);
    CHECK(paid_order(pair.primary.port(), "A-1") == "pay-1");  // the write did happen

    start = std::chrono::steady_clock::now();
    auto asynchronous = store.async_confirm(second->token, "pay-2", boost::asio::use_future).get();
    check(asynchronous, "A-2", std::chrono::steady_clock::now() - start);
    CHECK(paid_order(pair.primary.port(), "A-2") == "pay-2");
}

TEST_CASE("the writes that answer a bare integer wait for the replica too: locks, releases, holds of named seats") {
    Replicated pair;
    seatlock::RedisBackend backend(pair.options(1));
    seatlock::SeatHoldStore store(backend, no_limit());
    seatlock::LockManager locks(backend);
    REQUIRE(store.create_event(event(4)));
    auto first = store.hold("game1", "ann", seatlock::named_seats("lower", {"A-1"}));
    auto second = store.hold("game1", "bob", seatlock::named_seats("lower", {"A-2"}));
    REQUIRE(first);
    REQUIRE(second);
    auto door = locks.try_lock("door");
    auto gate = locks.try_lock("gate");
    REQUIRE(door);
    REQUIRE(gate);

    Frozen replica(pair.pid(pair.replica));
    auto hold = store.hold("game1", "cyd", seatlock::named_seats("lower", {"A-3"}));
    CHECK(hold.is(errc::not_replicated));
    if (!hold) CHECK(hold.error().items == std::vector<std::string>{"A-3"});
    CHECK(store.release(first->token).is(errc::not_replicated));
    CHECK(store.async_release(second->token, boost::asio::use_future).get().is(errc::not_replicated));
    CHECK(door->extend(30s).is(errc::not_replicated));
    CHECK(door->unlock().is(errc::not_replicated));
    CHECK(gate->async_unlock(boost::asio::use_future).get().is(errc::not_replicated));
    CHECK(locks.try_lock("hall").is(errc::not_replicated));
    replica.thaw();

    // All were applied: the held seat is taken, the released ones and the locks are free.
    CHECK(store.hold("game1", "dan", seatlock::named_seats("lower", {"A-3"})).is(errc::seat_taken));
    CHECK(store.hold("game1", "dan", seatlock::named_seats("lower", {"A-1", "A-2"})));
    CHECK(locks.try_lock("door"));
    CHECK(locks.try_lock("gate"));
    CHECK(locks.try_lock("hall"));  // taken without its replica's word, then given back
}

TEST_CASE("without replicas_to_ack, a sale answered done is lost when the primary dies before its replica has it") {
    Replicated pair;
    seatlock::RedisBackend backend(pair.options(0));
    seatlock::SeatHoldStore store(backend, no_limit());
    REQUIRE(store.create_event(event(4)));
    auto hold = store.hold("game1", "ann", seatlock::named_seats("lower", {"A-1"}));
    REQUIRE(hold);
    REQUIRE(pair.in_sync(2000));  // the hold is on the replica

    Frozen replica(pair.pid(pair.replica));
    cut_off(pair);
    REQUIRE(store.confirm(hold->token, "pay-1"));  // done, as far as the caller knows
    CHECK(paid_order(pair.primary.port(), "A-1") == "pay-1");

    fail_over(pair, replica);
    CHECK(paid_order(pair.replica.port(), "A-1").empty());  // the sale is gone
}

TEST_CASE("with replicas_to_ack, every confirm answered done survives the primary's death") {
    Replicated pair;
    seatlock::RedisBackend backend(pair.options(1));
    seatlock::SeatHoldStore store(backend, no_limit());
    constexpr int seats = 5000;  // more than the buyers reach before they stop
    REQUIRE(store.create_event(event(seats)));

    // Two buyers, one per API path, sell seats one by one until told to stop; the replica
    // is stopped and cut off while they run, so some calls are in flight when it happens.
    std::atomic<bool> stop{false};
    std::atomic<int> sales{0};
    std::atomic<int> not_replicated{0};
    std::vector<std::string> done[2];
    auto buyer = [&](int path) {
        for (int n = 1 + path; n <= seats && !stop; n += 2) {
            const std::string seat = "A-" + std::to_string(n);
            const std::string id = "pay-" + std::to_string(n);
            auto hold = path == 0
                            ? store.hold("game1", "buyer", seatlock::named_seats("lower", {seat}))
                            : store.async_hold("game1", "buyer", seatlock::named_seats("lower", {seat}),
                                               boost::asio::use_future)
                                  .get();
            if (!hold) {
                if (hold.is(errc::not_replicated)) ++not_replicated;
                else FAIL_CHECK("hold " << seat << ": " << hold.error().message());
                continue;
            }
            auto order = path == 0 ? store.confirm(hold->token, id)
                                   : store.async_confirm(hold->token, id, boost::asio::use_future).get();
            if (order) {
                done[path].push_back(seat);
                ++sales;
            } else if (order.is(errc::not_replicated)) {
                ++not_replicated;
            } else {
                FAIL_CHECK("confirm " << seat << ": " << order.error().message());
            }
        }
    };
    std::thread blocking(buyer, 0), asynchronous(buyer, 1);
    for (int i = 0; i < 20000 && sales < 50; ++i) std::this_thread::sleep_for(1ms);
    if (sales < 50) {
        stop = true;
        blocking.join();
        asynchronous.join();
        FAIL("the buyers did not sell 50 seats within 20 s");
    }
    Frozen replica(pair.pid(pair.replica));
    cut_off(pair);
    std::this_thread::sleep_for(3 * ack_timeout);
    stop = true;
    blocking.join();
    asynchronous.join();
    fail_over(pair, replica);

    CHECK(not_replicated.load() > 0);  // the cut came while they ran
    std::size_t sold = 0;
    for (const auto& seats_done : done) {
        sold += seats_done.size();
        for (const auto& seat : seats_done) {
            INFO("seat " << seat << " was answered done");
            CHECK(paid_order(pair.replica.port(), seat) == "pay-" + seat.substr(2));
        }
    }
    MESSAGE(sold << " sales answered done, all on the promoted replica; " << not_replicated.load()
                 << " calls answered not_replicated");
    CHECK(sold > 0);
}

TEST_CASE("on a Redis Cluster, writes wait for the replica of their slot's primary") {
    seatlock::testing::RedisCluster cluster;
    auto options = seatlock::RedisOptions::from_url(cluster.url()).value();
    options.connect_timeout = 500ms;
    options.command_timeout = 5s;
    options.replicas_to_ack = 1;
    options.replica_ack_timeout = ack_timeout;

    // The replica of the primary serving the event's slot, once it is in sync, as its
    // primary's INFO says (CLUSTER SLOTS lists a replica only after gossip says it has
    // data). A new cluster's first syncs start sooner without the default 5 s wait for
    // more replicas.
    for (int port : cluster.ports()) {
        RedisAdmin(port).expect_ok({"CONFIG", "SET", "repl-diskless-sync-delay", "0"});
    }
    RedisAdmin admin(cluster.ports().front());
    const long long slot = admin.integer({"CLUSTER", "KEYSLOT", "{game1}"});
    int primary_port = 0;
    const auto slots = admin.command({"CLUSTER", "SLOTS"});
    for (std::size_t r = 0; r < slots->elements; ++r) {
        const redisReply* range = slots->element[r];
        if (slot >= range->element[0]->integer && slot <= range->element[1]->integer) {
            primary_port = static_cast<int>(range->element[2]->element[1]->integer);
        }
    }
    REQUIRE(primary_port != 0);
    int replica_port = 0;
    for (int i = 0; i < 1000 && replica_port == 0; ++i) {
        const std::string replica = info(primary_port, "replication", "slave0");  // ip=,port=,state=
        const auto port_at = replica.find("port=");
        RedisAdmin primary(primary_port);
        primary.expect_ok({"SET", "{game1}replication-test-marker", "1"});
        if (replica.find("state=online") != std::string::npos &&
            primary.integer({"WAIT", "1", "100"}) == 1) {
            replica_port = std::stoi(replica.substr(port_at + 5));
        } else {
            std::this_thread::sleep_for(10ms);
        }
    }
    REQUIRE_MESSAGE(replica_port != 0, "the event's primary has no replica in sync");

    seatlock::RedisBackend backend(options);
    seatlock::SeatHoldStore store(backend, no_limit());
    auto created = store.create_event(event(4));
    REQUIRE_MESSAGE(created, created.error().message());

    auto first = store.hold("game1", "ann", seatlock::named_seats("lower", {"A-1"}));
    REQUIRE(first);
    REQUIRE(store.confirm(first->token, "pay-1"));
    CHECK(paid_order(replica_port, "A-1", true) == "pay-1");
    auto second = store.async_hold("game1", "bob", seatlock::named_seats("lower", {"A-2"}),
                                   boost::asio::use_future)
                      .get();
    REQUIRE(second);
    REQUIRE(store.async_confirm(second->token, "pay-2", boost::asio::use_future).get());
    CHECK(paid_order(replica_port, "A-2", true) == "pay-2");

    Frozen replica(static_cast<pid_t>(std::stoi(info(replica_port, "server", "process_id"))));
    auto blocking = store.hold("game1", "cyd", seatlock::named_seats("lower", {"A-3"}));
    CHECK(blocking.is(errc::not_replicated));
    auto asynchronous = store.async_hold("game1", "dan", seatlock::named_seats("lower", {"A-4"}),
                                         boost::asio::use_future)
                            .get();
    CHECK(asynchronous.is(errc::not_replicated));
    replica.thaw();
    // Both holds were applied: the seats are taken.
    auto again = store.hold("game1", "eve", seatlock::named_seats("lower", {"A-3"}));
    CHECK(again.is(errc::seat_taken));
}

TEST_CASE("replica-acknowledged writes refuse options that cannot work") {
    seatlock::RedisOptions o;
    o.replicas_to_ack = -1;
    CHECK_THROWS_AS(seatlock::RedisBackend{o}, seatlock::Error);
    o.replicas_to_ack = 1;
    o.command_timeout = 1s;
    o.replica_ack_timeout = 1s;  // WAIT would outlast the command it follows
    CHECK_THROWS_AS(seatlock::RedisBackend{o}, seatlock::Error);
    o.replica_ack_timeout = 0ms;  // WAIT 0 waits for ever
    CHECK_THROWS_AS(seatlock::RedisBackend{o}, seatlock::Error);
    o.replica_ack_timeout = 500ms;
    CHECK_NOTHROW(seatlock::RedisBackend{o});
}

TEST_CASE("URLs turn replica-acknowledged writes on with query options") {
    auto o = seatlock::RedisOptions::from_url("redis://10.0.0.5:6379/2?replicas_to_ack=2&replica_ack_timeout_ms=250");
    REQUIRE(o);
    CHECK(o->replicas_to_ack == 2);
    CHECK(o->replica_ack_timeout == 250ms);
    CHECK(o->db == 2);
    auto cluster = seatlock::RedisOptions::from_url("redis+cluster://:pw@a:7000,b:7001?replicas_to_ack=1");
    REQUIRE(cluster);
    CHECK(cluster->replicas_to_ack == 1);
    CHECK(cluster->cluster_nodes.size() == 2);
    CHECK(cluster->password == "pw");
    auto question_in_password = seatlock::RedisOptions::from_url("redis://:p?w@host:6379");
    REQUIRE(question_in_password);
    CHECK(question_in_password->password == "p?w");
    CHECK(question_in_password->replicas_to_ack == 0);
    for (const char* bad : {"redis://host?replicas_to_ack=-1", "redis://host?replicas_to_ack=x",
                            "redis://host?replica_ack_timeout_ms=0", "redis://host?timeout=1",
                            "redis://:s3cret@host?nope=1"}) {
        auto refused = seatlock::RedisOptions::from_url(bad);
        CHECK_MESSAGE(refused.is(errc::invalid_argument), "accepted: " << bad);
        if (!refused) CHECK(refused.error().detail.find("s3cret") == std::string::npos);
    }
}

}  // namespace replication_test
