// SPDX-License-Identifier: MIT
// RedisBackend on a Redis Cluster whose primary fails over under callers: the primary
// serving a live event's slot is killed (SIGKILL) or hands over to its replica (CLUSTER
// FAILOVER), while callers of the blocking and of the asynchronous API hold, confirm,
// cancel and release there. The replica is promoted; both paths find it within seconds,
// see only errors that say "retry", and no seat is ever held by two callers.
//
// Before the kill, the primary stops taking writes (CLIENT PAUSE WRITE) until its replica
// has every one of them: a write the replica never got is lost by any failover without
// WAIT, which the replica-acknowledged writes' tests cover. Here the calls paused on the
// primary die with it: their outcome is unknown, and the callers' retries settle them.
#include "conformance/async_api.hpp"
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"
#include "support/redis_cluster.hpp"

#include "cluster.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace cluster_failover_test {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using seatlock::testing::no_limit;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisCluster;

// How long a silent node takes to be declared failed: short, so that a failover takes
// seconds, not the default's tens of seconds.
constexpr auto node_timeout = 1000ms;
// What the callers may wait for their calls to resume after a primary fails.
constexpr auto resume_bound = 10s;

RedisCluster& cluster() {
    static RedisCluster c(node_timeout);
    return c;
}

std::string text(const redisReply* r) {
    return {r->str, r->len};
}

// One primary and its replicas (ports).
struct Shard {
    int primary = 0;
    std::vector<int> replicas;
    std::vector<std::pair<int, int>> ranges;
    [[nodiscard]] bool serves(int slot) const {
        for (const auto& [first, last] : ranges) {
            if (slot >= first && slot <= last) return true;
        }
        return false;
    }
};

// A connection to the node on `port`, or none when it is down (killed).
std::unique_ptr<RedisAdmin> admin_of(int port) {
    try {
        return std::make_unique<RedisAdmin>(port);
    } catch (const std::exception&) {
        return nullptr;
    }
}

std::string field(const std::string& info, const std::string& name) {
    const auto at = info.find(name + ":");
    if (at == std::string::npos) return {};
    const auto from = at + name.size() + 1;
    return info.substr(from, info.find_first_of("\r\n", from) - from);
}

// The cluster's shards: the primaries and their slots as CLUSTER SLOTS says (asked of the
// first node that answers), and the replicas that are in sync with each, as they say
// themselves (CLUSTER SLOTS lists a replica only once its offset has moved).
std::vector<Shard> shards() {
    std::map<int, Shard> by_primary;
    for (const int port : cluster().ports()) {
        auto admin = admin_of(port);
        if (!admin) continue;
        const auto slots = admin->command({"CLUSTER", "SLOTS"});
        if (slots->type != REDIS_REPLY_ARRAY) continue;
        for (std::size_t i = 0; i < slots->elements; ++i) {
            const redisReply* range = slots->element[i];
            const int primary = static_cast<int>(range->element[2]->element[1]->integer);
            by_primary[primary].primary = primary;
            by_primary[primary].ranges.emplace_back(static_cast<int>(range->element[0]->integer),
                                                    static_cast<int>(range->element[1]->integer));
        }
        break;
    }
    if (by_primary.empty()) throw std::runtime_error("no Redis Cluster node answers CLUSTER SLOTS");
    for (const int port : cluster().ports()) {
        auto admin = admin_of(port);
        if (!admin) continue;
        const std::string info = admin->text({"INFO", "replication"});
        if (field(info, "role") != "slave" || field(info, "master_link_status") != "up") continue;
        const auto primary = by_primary.find(std::stoi(field(info, "master_port")));
        if (primary != by_primary.end()) primary->second.replicas.push_back(port);
    }
    std::vector<Shard> out;
    for (auto& [port, shard] : by_primary) out.push_back(std::move(shard));
    return out;
}

int primary_of(int slot) {
    for (const auto& shard : shards()) {
        if (shard.serves(slot)) return shard.primary;
    }
    return -1;
}

// An event id named after `prefix` whose slot a primary with a replica in sync serves,
// and that shard. Waits for one: a replica synchronises after the cluster says it is ok.
std::pair<std::string, Shard> event_on_a_replicated_shard(const std::string& prefix) {
    const auto deadline = Clock::now() + 10s;
    for (;;) {
        for (const auto& shard : shards()) {
            if (shard.replicas.empty()) continue;
            for (int i = 0;; ++i) {
                const std::string id = prefix + std::to_string(i);
                if (shard.serves(seatlock::redis_detail::hash_slot(id))) return {id, shard};
            }
        }
        if (Clock::now() > deadline) {
            std::string seen;
            for (const auto& shard : shards()) {
                seen += " primary " + std::to_string(shard.primary) + " replicas";
                for (const int replica : shard.replicas) seen += " " + std::to_string(replica);
                seen += ";";
            }
            FAIL("no primary has a synchronised replica after 10 s:" << seen);
        }
        std::this_thread::sleep_for(50ms);
    }
}

seatlock::RedisOptions cluster_options(const std::string& prefix) {
    return seatlock::testing::options_for(cluster().url(), prefix, 500ms, 2s);
}

seatlock::EventSpec event(const std::string& id, int seats) {
    std::vector<seatlock::SeatSpec> list;
    for (int n = 1; n <= seats; ++n) list.push_back({"A-" + std::to_string(n), "A"});
    return {id, "Failover", {seatlock::ZoneSpec::named("lower", list)}};
}

bool retryable(const seatlock::Failure& f) {
    return f.code == seatlock::condition::retry_safe;
}

long long offset(int port) {
    const std::string value = field(RedisAdmin(port).text({"INFO", "replication"}), "master_repl_offset");
    if (value.empty()) throw std::runtime_error("INFO replication has no offset");
    return std::stoll(value);
}

// Writes stop on `shard`'s primary (the calls wait there) until its replica has them all.
void pause_until_replicated(const Shard& shard) {
    RedisAdmin(shard.primary).expect_ok({"CLIENT", "PAUSE", "10000", "WRITE"});
    const auto deadline = Clock::now() + 5s;
    while (offset(shard.replicas.front()) != offset(shard.primary)) {
        REQUIRE_MESSAGE(Clock::now() < deadline, "the replica did not catch up in 5 s");
        std::this_thread::sleep_for(5ms);
    }
}

// Callers of one event, half on the blocking API and half on the asynchronous one (path
// 0 and 1), each holding a random seat, then confirming and cancelling or releasing it,
// each call retried until it answers something other than "retry". They count what
// they see, and when each path's calls first succeeded again after a mark.
class Callers {
public:
    static constexpr int seats = 12;

    Callers(seatlock::RedisBackend& backend, std::string event)
        : blocking_(backend, no_limit()), async_(backend, no_limit()), event_(std::move(event)) {
        blocking_.create_event(cluster_failover_test::event(event_, seats)).value();
        for (int t = 0; t < 4; ++t) {
            threads_.emplace_back([this, t] {
                if (t % 2 == 0)
                    run(blocking_, 0, t);
                else
                    run(async_, 1, t);
            });
        }
    }
    ~Callers() { stop(); }
    Callers(const Callers&) = delete;
    Callers& operator=(const Callers&) = delete;

    void stop() {
        stop_ = true;
        for (auto& t : threads_) {
            if (t.joinable()) t.join();
        }
    }

    /// Waits until each path has completed `n` more hold cycles (false after `timeout`).
    bool wait_for_cycles(int n, std::chrono::milliseconds timeout = 10s) {
        const std::array<int, 2> until{cycles_[0] + n, cycles_[1] + n};
        const auto deadline = Clock::now() + timeout;
        while (cycles_[0] < until[0] || cycles_[1] < until[1]) {
            if (Clock::now() > deadline) return false;
            std::this_thread::sleep_for(5ms);
        }
        return true;
    }

    /// From now on, each path notes when a call started after now first succeeds.
    void mark() {
        std::lock_guard lock(mutex_);
        mark_ = Clock::now();
        resumed_ = {};
    }
    /// How long after mark() each path's calls succeeded again (nullopt: not yet).
    std::optional<Clock::duration> resumed_after(int path) {
        std::lock_guard lock(mutex_);
        if (!mark_ || !resumed_[static_cast<std::size_t>(path)]) return std::nullopt;
        return *resumed_[static_cast<std::size_t>(path)] - *mark_;
    }
    /// Waits until both paths have resumed after mark().
    bool wait_for_resume(std::chrono::milliseconds timeout) {
        const auto deadline = Clock::now() + timeout;
        while (!resumed_after(0) || !resumed_after(1)) {
            if (Clock::now() > deadline) return false;
            std::this_thread::sleep_for(5ms);
        }
        return true;
    }

    [[nodiscard]] int violations() const { return violations_; }
    [[nodiscard]] int retried() const { return retried_; }
    [[nodiscard]] int cycles(int path) const { return cycles_[static_cast<std::size_t>(path)]; }
    [[nodiscard]] std::vector<std::string> unexpected() {
        std::lock_guard lock(mutex_);
        return unexpected_;
    }
    [[nodiscard]] seatlock::SeatHoldStore<seatlock::RedisBackend>& store() { return blocking_; }
    [[nodiscard]] const std::string& event() const { return event_; }

private:
    void note(const seatlock::Failure& f) {
        if (retryable(f)) {
            ++retried_;
            return;
        }
        std::lock_guard lock(mutex_);
        unexpected_.push_back(f.message());
    }

    // Calls `step` until it answers anything but a retryable failure; a success of a call
    // started after the mark is the path's resumption.
    template <typename Step>
    auto until_done(int path, Step step) {
        for (;;) {
            const auto started = Clock::now();
            auto r = step();
            if (r) {
                std::lock_guard lock(mutex_);
                auto& resumed = resumed_[static_cast<std::size_t>(path)];
                if (mark_ && started >= *mark_ && !resumed) resumed = Clock::now();
            }
            if (r || !retryable(r.error())) return r;
            note(r.error());
            std::this_thread::sleep_for(2ms);
        }
    }

    template <typename Store>
    void run(Store& store, int path, int t) {
        std::mt19937 rng(static_cast<unsigned>(t) + 1u);
        const std::string holder = "buyer" + std::to_string(t);
        const std::optional<std::string> owner(holder);
        for (int i = 0; !stop_; ++i) {
            const std::string seat = "A-" + std::to_string(1 + rng() % seats);
            const std::string key = "k" + std::to_string(t) + "-" + std::to_string(i);
            auto hold = until_done(path, [&] {
                return store.hold(event_, holder, seatlock::named_seats("lower", {seat}),
                                  seatlock::HoldOptions{std::nullopt, key});
            });
            if (!hold) {
                if (!hold.is(seatlock::errc::seat_taken)) note(hold.error());
                continue;
            }
            {
                std::lock_guard lock(mutex_);
                if (!held_.emplace(seat, hold->token).second) ++violations_;
            }
            const bool buy = i % 3 == 0;
            const std::string order = "o" + key;
            if (buy) {
                auto confirmed = until_done(path, [&] { return store.confirm(hold->token, order); });
                if (!confirmed) note(confirmed.error());
            }
            {
                // Out of the callers' book before the store frees it: the other order
                // would let another caller's hold be counted twice by this check.
                std::lock_guard lock(mutex_);
                held_.erase(seat);
            }
            if (buy) {
                auto cancelled = until_done(path, [&] { return store.cancel(event_, order, owner); });
                if (!cancelled) note(cancelled.error());
            } else {
                auto released = until_done(path, [&] { return store.release(hold->token); });
                if (!released) note(released.error());
            }
            ++cycles_[static_cast<std::size_t>(path)];
        }
    }

    seatlock::SeatHoldStore<seatlock::RedisBackend> blocking_;
    seatlock::testing::AsyncStore<seatlock::RedisBackend> async_;
    const std::string event_;
    std::atomic<bool> stop_{false};
    std::array<std::atomic<int>, 2> cycles_{};
    std::atomic<int> violations_{0}, retried_{0};
    std::mutex mutex_;  // guards what follows
    std::map<std::string, std::string> held_;  // seat -> token, as the callers know it
    std::vector<std::string> unexpected_;
    std::optional<Clock::time_point> mark_;
    std::array<std::optional<Clock::time_point>, 2> resumed_;
    std::vector<std::thread> threads_;
};

double seconds(std::optional<Clock::duration> d) {
    return d ? std::chrono::duration<double>(*d).count() : -1.0;
}

// What every failover case checks once the callers have stopped.
void check_after_failover(Callers& callers, int new_primary, int slot) {
    CHECK(callers.violations() == 0);
    const auto unexpected = callers.unexpected();
    CHECK(unexpected.empty());
    for (const auto& u : unexpected) MESSAGE(u);
    for (int path = 0; path < 2; ++path) {
        CAPTURE(path);
        REQUIRE(callers.resumed_after(path));
        CHECK(*callers.resumed_after(path) < resume_bound);
    }
    MESSAGE("calls resumed after " << seconds(callers.resumed_after(0)) << " s (blocking), "
                                   << seconds(callers.resumed_after(1)) << " s (asynchronous); "
                                   << callers.cycles(0) << " + " << callers.cycles(1)
                                   << " hold cycles, " << callers.retried()
                                   << " retryable errors retried");
    // The node asked learns the new primary by gossip, within about a second of the
    // takeover: give it that long.
    const auto deadline = Clock::now() + 5s;
    while (primary_of(slot) != new_primary && Clock::now() < deadline) {
        std::this_thread::sleep_for(20ms);
    }
    CHECK(primary_of(slot) == new_primary);
    const auto state = callers.store().seats(callers.event(), "lower").value();
    CHECK(state.front().free == Callers::seats);
    CHECK(state.front().held == 0);
    CHECK(state.front().paid == 0);
}

}  // namespace

TEST_CASE("a killed primary's replica takes over: both APIs resume there within seconds") {
    const auto [id, shard] = event_on_a_replicated_shard("killed");
    const int slot = seatlock::redis_detail::hash_slot(id);
    const int replica = shard.replicas.front();
    seatlock::RedisBackend backend(cluster_options("killed"));
    Callers callers(backend, id);
    REQUIRE(callers.wait_for_cycles(30));

    pause_until_replicated(shard);
    callers.mark();
    cluster().kill(shard.primary);
    const bool resumed = callers.wait_for_resume(resume_bound + 5s);
    CHECK_MESSAGE(resumed, "calls did not resume on the promoted replica");
    // Calls go on there, on both paths.
    CHECK(callers.wait_for_cycles(30));
    callers.stop();
    CHECK(callers.retried() > 0);  // the callers did meet the dead primary
    check_after_failover(callers, replica, slot);
}

TEST_CASE("a replica taking over by CLUSTER FAILOVER: both APIs follow it within seconds") {
    const auto [id, shard] = event_on_a_replicated_shard("handover");
    const int slot = seatlock::redis_detail::hash_slot(id);
    const int replica = shard.replicas.front();
    seatlock::RedisBackend backend(cluster_options("handover"));
    Callers callers(backend, id);
    REQUIRE(callers.wait_for_cycles(30));

    // The old primary stops its clients until the replica has caught up and taken over;
    // then it answers MOVED. Calls started after the takeover must succeed. Redis gives
    // up a manual failover that has not completed in 5 s (a vote lost on a loaded
    // machine): ask again then, as an operator would.
    const auto is_primary = [&] {
        return text(RedisAdmin(replica).command({"ROLE"})->element[0]) == "master";
    };
    for (int attempt = 1; !is_primary(); ++attempt) {
        REQUIRE_MESSAGE(attempt <= 3, "the replica was not promoted after 3 CLUSTER FAILOVERs");
        RedisAdmin(replica).expect_ok({"CLUSTER", "FAILOVER"});
        const auto deadline = Clock::now() + 6s;
        while (!is_primary() && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
    }
    callers.mark();
    CHECK_MESSAGE(callers.wait_for_resume(resume_bound + 5s),
                  "calls did not follow the handover to the new primary");
    CHECK(callers.wait_for_cycles(30));
    callers.stop();
    check_after_failover(callers, replica, slot);
}

}  // namespace cluster_failover_test
