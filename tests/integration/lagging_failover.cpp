// SPDX-License-Identifier: MIT
// A Redis that comes back with older data: the primary dies, and the replica promoted in
// its place missed the last confirms. Under buyers who hold and pay seats of one event
// through one SeatHoldStore, behind Redis Sentinel and on a Redis Cluster, the store must
// say so (storage_lost, "went back to older data") instead of selling those seats again;
// the application then repairs the event from its own records of paid orders
// (recover_event, restore_order of every one, finish_recovery), and in the end no seat is
// in two orders and every order a confirm answered is paid in storage. Late buyers, who
// come after the kill and ask for seats sold during the cut (free in the promoted replica's
// older seat map), get none: a hold the older data took is displaced by the restored order
// and reported expired.
//
// How the replica is made to lag. It does not replicate from its primary directly but
// through LaggingLink, a TCP proxy written below. The proxy forwards bytes both ways until
// cut(); from then on, on a replication link (a connection whose client sent REPLCONF or
// PSYNC), it reads what the primary sends and drops it, while it still forwards the
// replica's REPLCONF ACKs and keeps both sockets open. So the replica misses exactly the
// writes the primary applies after the cut, and does not know it: no byte of its primary
// arrives, yet its link stays "up" (a replica declares it down only after repl-timeout,
// 60 s, of silence), and the primary, which gets its acknowledgements, keeps it listed
// online. When the primary is killed (SIGKILL) the proxy keeps the replica's side open too:
// nothing tells the replica that its primary is gone.
//
// Why Sentinel promotes it. The sentinels find the primary down after
// down-after-milliseconds (1 s), agree (quorum 2 of 3), elect a leader, and the leader
// picks a replica that answers, whose INFO is fresh (refreshed every second once the
// primary is down), whose replica-priority is not 0, and whose link to the primary has not
// been down for longer than the replica-validity bound (10 x down-after-milliseconds plus
// the time the primary has been down). Ours reports master_link_status:up, so it passes;
// it is the only replica, so its smaller replication offset loses to nobody. One thing must
// not happen before: a sentinel that sees a replica replicate from another address than
// the primary's (the proxy's) points it at the primary itself once failover-timeout has
// passed (+fix-slave-config), which would end the lag. This setup's failover-timeout is
// 60 s, longer than the test. (It is also half the wait before a failover whose election
// failed is tried again: if no sentinel has promoted the replica 10 s after the kill, the
// test forces it with SENTINEL FAILOVER, which needs no election and picks the same
// replica, and says so.)
//
// On a Redis Cluster a replica cannot be told to replicate from an address (REPLICAOF is
// refused in cluster mode): it replicates from the address its primary announces. So the
// primary announces the proxy's port (cluster-announce-port) and its replica reconnects
// through the proxy; clients that learn the slot map reach the primary through it as well,
// but only the replication link is cut. After the kill the other primaries flag the
// primary failed after cluster-node-timeout (1 s), and its replica may stand for election:
// its data age (the time since the last byte of its primary, less the node timeout) is
// far below repl-ping-replica-period + cluster-node-timeout x
// cluster-replica-validity-factor (10 s + 10 s). If it has not taken over 8 s after the
// kill, the test makes it (CLUSTER FAILOVER TAKEOVER, no agreement needed), and says so.
//
// Either way the test checks that the replica that took over really missed what the
// primary sold during the cut (its event version and paid orders, read just before the
// kill), so that it cannot pass without a rollback to detect.
#include "support/redis_admin.hpp"
#include "support/redis_setup.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_sentinel.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/redis/key_layout.hpp>

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace lagging_failover_test {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using seatlock::errc;
using seatlock::testing::no_limit;
using seatlock::testing::RedisAdmin;
using seatlock::testing::RedisCluster;
using seatlock::testing::RedisSentinel;
using Store = seatlock::SeatHoldStore<seatlock::RedisBackend>;

constexpr const char* prefix = "lagging";
constexpr const char* zone = "floor";

double seconds_since(Clock::time_point from, Clock::time_point to = Clock::now()) {
    return std::chrono::duration<double>(to - from).count();
}

/// The first few of `lines`, for a failure's message.
std::string join(const std::vector<std::string>& lines) {
    std::string out;
    for (std::size_t i = 0; i < lines.size() && i < 10; ++i) out += "\n  " + lines[i];
    return lines.size() > 10 ? out + "\n  ..." : out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

/// Waits until `done()`, for at most `limit`; whether it came.
template <typename Done>
bool wait_until(Done done, Clock::duration limit) {
    for (const auto until = Clock::now() + limit;; std::this_thread::sleep_for(10ms)) {
        if (done()) return true;
        if (Clock::now() > until) return false;
    }
}

// ---------------------------------------------------------------------------------------
// The proxy between a replica and its primary.

/// A TCP proxy on a loopback port of its own, in front of the server on `upstream_port`:
/// one thread per connection forwards bytes both ways, until cut() (see the top of the
/// file). Connections made through it end when either side closes them, except a cut
/// replication link, which stays open on the replica's side when the primary goes.
class LaggingLink {
public:
    explicit LaggingLink(int upstream_port) : upstream_port_(upstream_port) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr = loopback(0);
        socklen_t len = sizeof addr;
        if (listener_ < 0 ||
            ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(listener_, 64) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            if (listener_ >= 0) ::close(listener_);
            throw std::runtime_error("LaggingLink: cannot listen on a loopback port");
        }
        port_ = ntohs(addr.sin_port);
        acceptor_ = std::thread([this] { accept_connections(); });
    }
    ~LaggingLink() {
        stop_ = true;
        acceptor_.join();
        std::vector<std::thread> pumps;
        {
            std::lock_guard lock(mutex_);
            pumps.swap(pumps_);
        }
        for (auto& t : pumps) t.join();
    }
    LaggingLink(const LaggingLink&) = delete;
    LaggingLink& operator=(const LaggingLink&) = delete;

    [[nodiscard]] int port() const { return port_; }

    /// From now on, what the primary sends on replication links is read and dropped.
    /// Everything it writes after this returns is missing from the replica.
    void cut() { cut_ = true; }
    /// No new connections (the server behind is gone): connecting is refused, as it is to
    /// a dead node. The connections already made stay as they are.
    void refuse_new() { refusing_ = true; }

    /// How many replication links went through (a replica's handshake seen).
    [[nodiscard]] int replication_links() const { return replication_links_; }
    /// Bytes of the primary dropped since the cut.
    [[nodiscard]] long long dropped() const { return dropped_; }

private:
    static sockaddr_in loopback(int port) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        return addr;
    }

    static void no_delay(int fd) {
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }

    static bool send_all(int fd, const char* data, std::size_t size) {
        while (size > 0) {
            const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            data += n;
            size -= static_cast<std::size_t>(n);
        }
        return true;
    }

    void accept_connections() {
        while (!stop_ && !refusing_) {
            pollfd ready{listener_, POLLIN, 0};
            if (::poll(&ready, 1, 20) <= 0) continue;
            const int down = ::accept(listener_, nullptr, nullptr);
            if (down < 0) continue;
            const int up = ::socket(AF_INET, SOCK_STREAM, 0);
            const sockaddr_in to = loopback(upstream_port_);
            if (up < 0 || ::connect(up, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
                if (up >= 0) ::close(up);
                ::close(down);
                continue;
            }
            no_delay(down);
            no_delay(up);
            std::lock_guard lock(mutex_);
            pumps_.emplace_back([this, down, up] { pump(down, up); });
        }
        ::close(listener_);
    }

    // Moves the bytes of one connection: `down` the client's side (the replica), `up` the
    // server's (the primary).
    void pump(int down, int up) {
        bool replication = false;
        std::string head;  // the client's first bytes, where a replica's handshake shows
        char buffer[16384];
        while (!stop_) {
            pollfd fds[2] = {{down, POLLIN, 0}, {up, POLLIN, 0}};  // up is -1 once gone
            const int ready = ::poll(fds, 2, 20);
            if (ready < 0 && errno != EINTR) break;
            if (ready <= 0) continue;
            if (fds[0].revents != 0) {
                const ssize_t n = ::read(down, buffer, sizeof buffer);
                if (n <= 0) break;  // the client left: the connection ends
                if (!replication && head.size() < 4096) {
                    head.append(buffer, static_cast<std::size_t>(n));
                    if (head.find("REPLCONF") != std::string::npos ||
                        head.find("PSYNC") != std::string::npos) {
                        replication = true;
                        ++replication_links_;
                    }
                }
                if (up >= 0 && !send_all(up, buffer, static_cast<std::size_t>(n))) {
                    if (!(replication && cut_)) break;
                    ::close(up);
                    up = -1;
                }
            }
            if (up >= 0 && fds[1].revents != 0) {
                const ssize_t n = ::read(up, buffer, sizeof buffer);
                const bool lagging = replication && cut_;
                if (n <= 0) {
                    if (!lagging) break;
                    // The primary is gone; its replica must not hear of it.
                    ::close(up);
                    up = -1;
                    continue;
                }
                if (lagging) {
                    dropped_ += n;
                    continue;
                }
                if (!send_all(down, buffer, static_cast<std::size_t>(n))) break;
            }
        }
        ::close(down);
        if (up >= 0) ::close(up);
    }

    const int upstream_port_;
    int listener_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false}, cut_{false}, refusing_{false};
    std::atomic<int> replication_links_{0};
    std::atomic<long long> dropped_{0};
    std::mutex mutex_;  // guards pumps_
    std::vector<std::thread> pumps_;
    std::thread acceptor_;
};

// ---------------------------------------------------------------------------------------
// What the storage holds, read behind the backend's back.

/// The event's version as the node on `port` has it (a replica answers too; a Cluster
/// replica after READONLY).
long long version_at(int port, const std::string& event, bool cluster_replica = false) {
    RedisAdmin node(port);
    if (cluster_replica) node.expect_ok({"READONLY"});
    const seatlock::redis_detail::KeyLayout keys(prefix);
    const auto r = node.command({"HGET", keys.event_key("event", event), "ver"});
    return r->type == REDIS_REPLY_STRING ? std::stoll(std::string(r->str, r->len)) : 0;
}

/// "zone:seat" -> order id of every paid seat of the event on the node on `port`.
std::map<std::string, std::string> paid_at(int port, const std::string& event,
                                           bool cluster_replica = false) {
    RedisAdmin node(port);
    if (cluster_replica) node.expect_ok({"READONLY"});
    const seatlock::redis_detail::KeyLayout keys(prefix);
    const auto r = node.command({"HGETALL", keys.event_key("paid", event)});
    std::map<std::string, std::string> out;
    for (std::size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        out[std::string(r->element[i]->str, r->element[i]->len)] =
            std::string(r->element[i + 1]->str, r->element[i + 1]->len);
    }
    return out;
}

// ---------------------------------------------------------------------------------------
// The application: its records of paid orders, and its repair of the event.

/// 200 named seats: rows A to J of 20.
seatlock::EventSpec venue(const std::string& id) {
    std::vector<seatlock::SeatSpec> seats;
    for (char row = 'A'; row <= 'J'; ++row) {
        for (int n = 1; n <= 20; ++n)
            seats.push_back({std::string(1, row) + "-" + std::to_string(n), std::string(1, row)});
    }
    return {id, "Final", {seatlock::ZoneSpec::named(zone, seats)}};
}

/// Where the run is: each recorded order says in which stage its confirm was sent and in
/// which it was answered.
enum class Stage { before_cut, cut, failing_over };

/// The application's side: what a ticketing server keeps in its own database (every order
/// a confirm answered), what it shows buyers as sold, and its repair of the event when the
/// store says the storage went back. Counts what the buyers meet.
class BoxOffice {
public:
    struct Record {
        seatlock::Order order;
        Stage sent;
        Stage answered;
        Clock::time_point at;
    };

    BoxOffice(Store& store, seatlock::EventSpec spec) : store_(store), spec_(std::move(spec)) {
        for (const auto& seat : spec_.zones.front().seats) unsold_.push_back(seat.id);
    }

    Store& store() { return store_; }
    const seatlock::EventSpec& spec() const { return spec_; }
    Stage stage() const { return stage_; }
    void enter(Stage s) { stage_ = s; }

    /// `n` seats that the records do not show sold, at random (fewer when fewer are left).
    std::vector<std::string> pick(std::mt19937& rng, std::size_t n) {
        std::lock_guard lock(mutex_);
        std::vector<std::string> out;
        std::sample(unsold_.begin(), unsold_.end(), std::back_inserter(out), n, rng);
        return out;
    }

    /// A confirm answered with this order: into the records.
    void record(const seatlock::Order& order, Stage sent) {
        std::lock_guard lock(mutex_);
        records_.push_back({order, sent, stage_, Clock::now()});
        for (const auto& seat : order.seats) std::erase(unsold_, seat);
    }

    std::vector<Record> records() {
        std::lock_guard lock(mutex_);
        return records_;
    }
    /// How many orders were confirmed so far, by `filter`.
    template <typename Filter>
    std::size_t count(Filter filter) {
        std::lock_guard lock(mutex_);
        return static_cast<std::size_t>(std::count_if(records_.begin(), records_.end(), filter));
    }
    /// Waits until `count(filter)` reaches n; false after `timeout`.
    template <typename Filter>
    bool wait_for(std::size_t n, Filter filter, Clock::duration timeout) {
        return wait_until([&] { return count(filter) >= n; }, timeout);
    }

    /// The highest version the records hold.
    seatlock::EventVersion records_version() {
        std::lock_guard lock(mutex_);
        seatlock::EventVersion v = 0;
        for (const auto& r : records_) v = std::max(v, r.order.version);
        return v;
    }

    /// Called with every storage_lost a buyer meets.
    void saw_storage_lost(const seatlock::Failure& f) {
        if (f.detail.find("went back to older data") != std::string::npos) {
            if (rollbacks_++ == 0) {
                std::lock_guard lock(mutex_);
                first_rollback_ = Clock::now();
                first_rollback_detail_ = f.detail;
            }
        } else if (other_lost_++ == 0) {
            std::lock_guard lock(mutex_);
            first_other_lost_detail_ = f.detail;
        }
    }

    /// Repairs the event from the records, when it needs it: the store fenced it, or the
    /// storage is below the records. One repair at a time: the others wait here, and then
    /// find it done.
    void repair() {
        std::lock_guard one_at_a_time(repair_mutex_);
        const std::string& id = spec_.id;
        if (!store_.fenced(id)) {
            auto now = store_.check_version(id, records_version());
            if (now || !now.is(errc::storage_lost)) return;  // repaired, or not reachable yet
        }
        const auto started = Clock::now();
        auto recovered = until_answered([&] { return store_.recover_event(spec_); });
        if (!recovered) {
            problem("recover_event: " + recovered.error().message());
            return;
        }
        ++recoveries_[static_cast<int>(*recovered)];
        for (const auto& r : records()) {
            const auto& o = r.order;
            auto restored = until_answered([&] {
                return store_.restore_order(seatlock::RestoreCommand{
                    o.event, o.id, o.holder, o.zone, o.seats, o.hold_token, o.paid_at});
            });
            if (restored) {
                ++restored_;
            } else {
                problem("restore_order " + o.id + ": " + restored.error().message());
            }
        }
        // Shown again even when an order could not be restored: the problems are the
        // test's failures, and the buyers must not wait for ever.
        auto shown = until_answered([&] { return store_.finish_recovery(id, records_version()); });
        if (!shown) {
            problem("finish_recovery: " + shown.error().message());
            return;
        }
        std::lock_guard lock(mutex_);
        if (repairs_++ == 0) first_repair_ = Clock::now();
        repair_seconds_.push_back(seconds_since(started));
    }

    void problem(const std::string& what) {
        std::lock_guard lock(mutex_);
        problems_.push_back(what);
    }
    std::vector<std::string> problems() {
        std::lock_guard lock(mutex_);
        return problems_;
    }

    int rollbacks() const { return rollbacks_; }
    int other_lost() const { return other_lost_; }
    int repairs() const { return repairs_; }
    int recoveries(seatlock::Recovery r) const { return recoveries_[static_cast<int>(r)]; }
    int restored() const { return restored_; }
    std::optional<Clock::time_point> first_rollback() {
        std::lock_guard lock(mutex_);
        return rollbacks_ > 0 ? std::optional(first_rollback_) : std::nullopt;
    }
    std::string first_rollback_detail() {
        std::lock_guard lock(mutex_);
        return first_rollback_detail_;
    }
    std::string first_other_lost_detail() {
        std::lock_guard lock(mutex_);
        return first_other_lost_detail_;
    }
    std::optional<Clock::time_point> first_repair() {
        std::lock_guard lock(mutex_);
        return repairs_ > 0 ? std::optional(first_repair_) : std::nullopt;
    }
    std::vector<double> repair_seconds() {
        std::lock_guard lock(mutex_);
        return repair_seconds_;
    }

    std::atomic<int> transport_errors{0}, seats_taken{0}, holds_lost{0}, confirms_refused{0},
        gave_up{0};

    /// Calls `step` until it answers something else than a transport error, for up to
    /// 20 s (the failover takes seconds).
    template <typename Step>
    auto until_answered(Step step) -> decltype(step()) {
        const auto give_up = Clock::now() + 20s;
        for (;;) {
            auto r = step();
            if (r || r.is(errc::storage_lost) || !(r.code() == seatlock::condition::retry_safe) ||
                Clock::now() > give_up)
                return r;
            ++transport_errors;
            std::this_thread::sleep_for(10ms);
        }
    }

private:
    Store& store_;
    const seatlock::EventSpec spec_;
    std::atomic<Stage> stage_{Stage::before_cut};
    std::mutex repair_mutex_;
    std::mutex mutex_;  // guards what follows
    std::vector<std::string> unsold_;
    std::vector<Record> records_;
    std::vector<std::string> problems_;
    Clock::time_point first_rollback_{}, first_repair_{};
    std::string first_rollback_detail_, first_other_lost_detail_;
    std::vector<double> repair_seconds_;
    std::atomic<int> rollbacks_{0}, other_lost_{0}, repairs_{0}, restored_{0};
    std::array<std::atomic<int>, 3> recoveries_{};
};

/// What one attempt to buy came to.
enum class Outcome {
    paid,
    seat_taken,
    hold_displaced,  // applied on the older data, then its seats went to a restored order
    hold_gone,       // went with the older data
    failed,          // anything else: a problem of the test's
};

/// Calls `step` until it answers something else than "retry": transport errors are retried
/// as they are; on storage_lost the application repairs the event first. For up to 20 s.
template <typename Step>
auto persist(BoxOffice& office, Step step) -> decltype(step()) {
    const auto give_up = Clock::now() + 20s;
    for (;;) {
        auto r = office.until_answered(step);
        if (!r.is(errc::storage_lost)) return r;
        office.saw_storage_lost(r.error());
        if (Clock::now() > give_up) {
            ++office.gave_up;
            return r;
        }
        office.repair();
    }
}

/// One buyer's attempt: hold `seats` (an idempotency key of its own), then pay them (an
/// order id of its own); a paid order goes into the records.
Outcome attempt(BoxOffice& office, const std::string& holder, const std::string& tag,
                const std::vector<std::string>& seats) {
    Store& store = office.store();
    auto hold = persist(office, [&] {
        return store.hold(office.spec().id, holder, seatlock::named_seats(zone, seats),
                          seatlock::HoldOptions{std::nullopt, "key-" + tag});
    });
    if (!hold) {
        if (hold.is(errc::seat_taken)) {
            ++office.seats_taken;
            return Outcome::seat_taken;
        }
        office.problem("hold " + tag + ": " + hold.error().message());
        return Outcome::failed;
    }
    // A hold replayed by its key after a repair may have lost its seats to a paid order.
    if (hold->status == seatlock::HoldStatus::expired) {
        ++office.holds_lost;
        return Outcome::hold_displaced;
    }
    if (hold->status != seatlock::HoldStatus::held &&
        hold->status != seatlock::HoldStatus::confirmed) {
        office.problem("hold " + tag + " replayed as " + seatlock::to_string(hold->status));
        return Outcome::failed;
    }
    const Stage sent = office.stage();
    auto order = persist(office, [&] { return store.confirm(hold->token, "order-" + tag); });
    if (order) {
        office.record(*order, sent);
        return Outcome::paid;
    }
    if (order.is(errc::hold_expired)) {
        ++office.confirms_refused;
        return Outcome::hold_displaced;
    }
    if (order.is(errc::unknown_hold)) {
        ++office.confirms_refused;
        return Outcome::hold_gone;
    }
    office.problem("confirm " + tag + ": " + order.error().message());
    return Outcome::failed;
}

/// Buyers, each a thread with a holder id of its own: think, pick 1 or 2 seats the
/// application's seat map shows unsold, and buy them (attempt). seat_taken sends the buyer
/// to other seats.
class Buyers {
public:
    Buyers(BoxOffice& office, int count) : office_(office) {
        for (int n = 0; n < count; ++n) threads_.emplace_back([this, n] { buy(n); });
    }
    ~Buyers() { stop(); }
    Buyers(const Buyers&) = delete;
    Buyers& operator=(const Buyers&) = delete;

    void stop() {
        stop_ = true;
        for (auto& t : threads_) {
            if (t.joinable()) t.join();
        }
    }

private:
    void buy(int n) {
        std::mt19937 rng(static_cast<unsigned>(n) * 7919u + 17u);
        std::uniform_int_distribution<int> think_ms(100, 600);
        const std::string holder = "buyer" + std::to_string(n);
        for (int i = 0; !stop_; ++i) {
            for (auto until = Clock::now() + std::chrono::milliseconds(think_ms(rng));
                 !stop_ && Clock::now() < until;) {
                std::this_thread::sleep_for(10ms);
            }
            if (stop_) break;
            const auto seats = office_.pick(rng, 1 + rng() % 2);
            if (seats.empty()) break;  // sold out
            (void)attempt(office_, holder, holder + "-" + std::to_string(i), seats);
        }
    }

    BoxOffice& office_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

/// Buyers who come after the kill and ask each for one seat sold during the cut, which the
/// promoted replica's older seat map shows free. None may get it: their holds are refused
/// (seat_taken, once the order is restored), or applied on the older data and then
/// displaced by the restored order.
class LateBuyers {
public:
    LateBuyers(BoxOffice& office, std::vector<std::string> seats) : outcomes_(seats.size()) {
        for (std::size_t n = 0; n < seats.size(); ++n) {
            threads_.emplace_back([this, &office, n, seat = seats[n]] {
                const std::string holder = "late" + std::to_string(n);
                outcomes_[n] = attempt(office, holder, holder, {seat});
            });
        }
    }
    ~LateBuyers() { join(); }
    LateBuyers(const LateBuyers&) = delete;
    LateBuyers& operator=(const LateBuyers&) = delete;

    /// Each late buyer's outcome, once all are done.
    const std::vector<Outcome>& outcomes() {
        join();
        return outcomes_;
    }

private:
    void join() {
        for (auto& t : threads_) {
            if (t.joinable()) t.join();
        }
    }

    std::vector<Outcome> outcomes_;
    std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------------------------------
// The scenario, the same behind Sentinel and on a Cluster.

/// What differs between the two: how the storage is reached, and failed over.
struct Failover {
    std::string name;
    seatlock::RedisOptions options;
    std::string event;
    int buyers = 50;
    LaggingLink* link = nullptr;
    int primary = 0;             // the event's primary (a port its admin connection reaches)
    int replica = 0;             // its replica, behind the link
    bool cluster = false;        // reading the replica needs READONLY
    std::function<void()> kill;  // SIGKILL of the primary
    std::function<std::string()> promote;  // waits until the replica is the primary; how it went
    std::function<int()> primary_now;      // the port of the event's primary now
};

// Orders to confirm before the cut, during it, and after the repair. The orders of the
// cut put the replica about two versions per order behind (a hold and a confirm each): more
// than the calls in flight when it takes over (one per buyer, late buyers included). So
// every one of those is answered at or below a version the store saw, and none can pass
// for a write on current data before the store has fenced the event. (With a smaller lag,
// the answers beyond it carry versions above every one seen: only the earlier answers,
// checked first, then stand between them and a sale.)
constexpr std::size_t orders_before_cut = 20;
constexpr std::size_t orders_during_cut = 40;
constexpr std::size_t orders_after_repair = 10;
constexpr std::size_t late_buyers = 5;

void sell_through_a_lagging_failover(const Failover& f) {
    const auto started = Clock::now();
    seatlock::RedisBackend backend(f.options);
    Store store(backend, no_limit());
    const auto spec = venue(f.event);
    auto created = store.create_event(spec);
    REQUIRE_MESSAGE(created, created.error().message());
    BoxOffice office(store, spec);
    auto during_cut = [](const BoxOffice::Record& r) {
        return r.sent == Stage::cut && r.answered == Stage::cut;
    };

    Buyers buyers(office, f.buyers);
    REQUIRE_MESSAGE(office.wait_for(
                        orders_before_cut, [](const auto&) { return true; }, 20s),
                    "the buyers did not confirm " << orders_before_cut << " orders in 20 s");
    REQUIRE(f.link->replication_links() >= 1);

    // The cut: from here the primary sells alone.
    f.link->cut();
    office.enter(Stage::cut);
    const auto cut_at = Clock::now();
    REQUIRE_MESSAGE(office.wait_for(orders_during_cut, during_cut, 20s),
                    "the buyers did not confirm " << orders_during_cut << " orders during the cut");

    // What the replica has, which the failover will keep: less than the primary.
    const long long replica_version = version_at(f.replica, f.event, f.cluster);
    const auto on_replica = paid_at(f.replica, f.event, f.cluster);
    office.enter(Stage::failing_over);
    const long long primary_version = version_at(f.primary, f.event);
    f.kill();
    const auto killed_at = Clock::now();
    f.link->refuse_new();
    const auto lag_bytes = f.link->dropped();

    // Late buyers ask for seats sold during the cut, from now on.
    std::vector<std::string> sold_in_cut;
    for (const auto& r : office.records()) {
        if (during_cut(r) && sold_in_cut.size() < late_buyers)
            sold_in_cut.push_back(r.order.seats.front());
    }
    LateBuyers late(office, sold_in_cut);

    // Every order confirmed during the cut is missing from the replica, and the versions
    // tell the same: the replica about to take over really lags.
    std::set<std::string> orders_on_replica;
    for (const auto& [seat, order] : on_replica) orders_on_replica.insert(order);
    std::size_t missing_on_replica = 0, cut_orders = 0, cut_orders_on_replica = 0;
    for (const auto& r : office.records()) {
        if (r.answered == Stage::failing_over) continue;  // after the reads
        const bool there = orders_on_replica.count(r.order.id) > 0;
        if (!there) ++missing_on_replica;
        if (during_cut(r)) {
            ++cut_orders;
            if (there) ++cut_orders_on_replica;
        }
    }
    CHECK_MESSAGE(replica_version < primary_version,
                  "the replica is at version " << replica_version << ", the primary at "
                                               << primary_version << ": no lag to fail over to");
    CHECK(cut_orders >= orders_during_cut);
    CHECK_MESSAGE(cut_orders_on_replica == 0,
                  "orders confirmed during the cut reached the replica");
    CHECK(missing_on_replica >= cut_orders);

    // Nothing of what the primary sent since the cut reached the replica (the link dropped
    // it), and nothing else feeds it: it takes over with exactly what was read above.
    CHECK(lag_bytes > 0);

    const std::string how = f.promote();
    const auto promoted_at = Clock::now();
    CHECK_MESSAGE(f.primary_now() == f.replica, "the lagging replica is not the primary now");

    // The buyers meet the older data, and the application repairs the event.
    CHECK_MESSAGE(wait_until([&] { return office.repairs() > 0; }, 30s),
                  "the event was not repaired within 30 s of the promotion");
    CHECK_MESSAGE(office.rollbacks() > 0,
                  "no call answered that the storage went back to older data");
    const auto first_repair = office.first_repair();
    // Sales go on after it.
    const auto after_repair = [&](const BoxOffice::Record& r) {
        return first_repair && r.at > *first_repair;
    };
    CHECK_MESSAGE(office.wait_for(orders_after_repair, after_repair, 15s),
                  "sales did not resume after the repair");
    buyers.stop();
    const auto late_outcomes = late.outcomes();

    // A fence the last calls set (an answer of the older data arriving late) is repaired
    // as the application would before it sells again.
    if (store.fenced(f.event)) office.repair();
    CHECK_FALSE(store.fenced(f.event));
    const auto records = office.records();

    // No seat in two orders.
    std::map<std::string, std::string> sold;  // seat -> order
    std::vector<std::string> twice;
    for (const auto& r : records) {
        for (const auto& seat : r.order.seats) {
            auto [it, first] = sold.emplace(seat, r.order.id);
            if (!first) twice.push_back(seat + " in " + it->second + " and " + r.order.id);
        }
    }
    CHECK_MESSAGE(twice.empty(), twice.size() << " seats sold twice: " << join(twice));

    // No confirmed order lost: each is paid in storage, its seats paid by it, and a retry
    // of its confirm answers it.
    const auto zones = store.seats(f.event, zone);
    REQUIRE_MESSAGE(zones, zones.error().message());
    std::map<std::string, seatlock::SeatState> state;
    for (const auto& s : zones->front().seats) state[s.id] = s.state;
    const auto paid = paid_at(f.primary_now(), f.event);
    std::vector<std::string> lost;
    for (const auto& r : records) {
        const auto& o = r.order;
        for (const auto& seat : o.seats) {
            if (state[seat] != seatlock::SeatState::paid)
                lost.push_back(seat + " of " + o.id + " is not paid");
            const auto it = paid.find(std::string(zone) + ":" + seat);
            if (it == paid.end() || it->second != o.id)
                lost.push_back(seat + " of " + o.id + " is paid by " +
                               (it == paid.end() ? "nobody" : it->second));
        }
        auto again = office.until_answered([&] { return store.confirm(o.hold_token, o.id); });
        if (!again) {
            lost.push_back("confirm of " + o.id + " again: " + again.error().message());
        } else if (again->id != o.id || sorted(again->seats) != sorted(o.seats) ||
                   again->cancelled) {
            lost.push_back("confirm of " + o.id + " again answers order " + again->id);
        }
    }
    CHECK_MESSAGE(lost.empty(), lost.size() << " confirmed seats or orders lost: " << join(lost));
    const auto problems = office.problems();
    CHECK_MESSAGE(problems.empty(), problems.size() << " unexpected answers: " << join(problems));
    CHECK(office.recoveries(seatlock::Recovery::rolled_back) >= 1);
    CHECK(office.recoveries(seatlock::Recovery::created) == 0);

    // No late buyer got a seat sold during the cut. One whose hold the older data took
    // lost it to the restored order, and the hold is reported expired.
    std::map<Outcome, int> late_count;
    for (const auto outcome : late_outcomes) ++late_count[outcome];
    CHECK(late_count[Outcome::paid] == 0);
    CHECK(late_count[Outcome::failed] == 0);
    CHECK(late_count[Outcome::hold_gone] == 0);
    CHECK(late_count[Outcome::seat_taken] + late_count[Outcome::hold_displaced] ==
          static_cast<int>(sold_in_cut.size()));
    const auto expired = office.until_answered([&] { return store.expired(1000); });
    REQUIRE_MESSAGE(expired, expired.error().message());
    std::set<std::string> expired_holders;
    for (const auto& e : *expired) expired_holders.insert(e.holder);
    for (std::size_t n = 0; n < late_outcomes.size(); ++n) {
        if (late_outcomes[n] != Outcome::hold_displaced) continue;
        CHECK_MESSAGE(expired_holders.count("late" + std::to_string(n)) == 1,
                      "late" << n << "'s displaced hold is not reported expired");
    }
    // The store's view of the storage is its own records' or above.
    CHECK(store.check_version(f.event, office.records_version()));

    std::size_t seats_recorded = 0;
    for (const auto& r : records) seats_recorded += r.order.seats.size();
    std::ostringstream repairs;
    for (double s : office.repair_seconds()) repairs << " " << s << " s";
    const auto first_rollback = office.first_rollback();
    MESSAGE(f.name << ": " << f.buyers << " buyers; " << records.size() << " confirms ("
                   << seats_recorded << " seats; storage has " << paid.size() << " paid), "
                   << cut_orders << " during the cut (" << lag_bytes
                   << " replication bytes dropped); the replica took over at version "
                   << replica_version << " of " << primary_version << ", missing "
                   << missing_on_replica << " confirmed orders; promoted " << how << " "
                   << seconds_since(killed_at, promoted_at) << " s after the kill; "
                   << office.rollbacks() << " storage_lost answers saying it went back (first "
                   << (first_rollback ? seconds_since(killed_at, *first_rollback) : -1.0)
                   << " s after the kill), " << office.other_lost() << " other storage_lost; "
                   << office.repairs() << " repairs (" << repairs.str() << " ), "
                   << office.restored() << " orders restored; " << office.transport_errors.load()
                   << " transport errors retried, " << office.seats_taken.load() << " seat_taken, "
                   << office.holds_lost.load() << " holds lost to the rollback, "
                   << office.confirms_refused.load() << " confirms refused, "
                   << office.gave_up.load()
                   << " calls given up; late buyers: " << late_count[Outcome::hold_displaced]
                   << " holds displaced by restored orders, " << late_count[Outcome::seat_taken]
                   << " refused seat_taken; cut for " << seconds_since(cut_at, killed_at) << " s, "
                   << seconds_since(started) << " s in all");
    if (first_rollback) MESSAGE("first detection: " << office.first_rollback_detail());
    if (office.other_lost() > 0)
        MESSAGE("first other storage_lost: " << office.first_other_lost_detail());
}

// ---------------------------------------------------------------------------------------
// Cluster helpers.

/// The port of the primary serving `slot`, as the first node that answers says (not
/// `except`: a node may name itself by its own port, not the one it announces).
int owner_of(const RedisCluster& cluster, long long slot, int except = 0) {
    for (const int port : cluster.ports()) {
        if (port == except) continue;
        std::unique_ptr<RedisAdmin> node;
        try {
            node = std::make_unique<RedisAdmin>(port);
        } catch (const std::exception&) {
            continue;  // killed
        }
        const auto slots = node->command({"CLUSTER", "SLOTS"});
        if (slots->type != REDIS_REPLY_ARRAY) continue;
        for (std::size_t i = 0; i < slots->elements; ++i) {
            const redisReply* range = slots->element[i];
            if (slot >= range->element[0]->integer && slot <= range->element[1]->integer)
                return static_cast<int>(range->element[2]->element[1]->integer);
        }
    }
    return -1;
}

std::string info_field(int port, std::string_view section, const std::string& name) {
    const std::string info = RedisAdmin(port).text({"INFO", section});
    const auto at = info.find(name + ":");
    if (at == std::string::npos) return {};
    const auto from = at + name.size() + 1;
    return info.substr(from, info.find_first_of("\r\n", from) - from);
}

/// Whether the replica of `primary` has all it was sent: a write of its own in `event`'s
/// slot (which the primary serves), then WAIT (which counts from its connection's writes).
bool replica_in_sync(int primary, const std::string& event) {
    RedisAdmin node(primary);
    node.expect_ok({"SET", "{" + event + "}:in-sync", "1"});
    return node.integer({"WAIT", "1", "200"}) == 1;
}

}  // namespace

TEST_CASE(
    "behind Sentinel, a failover to a replica that missed the last confirms is detected and "
    "repaired: nothing sold twice, nothing lost") {
    std::unique_ptr<LaggingLink> link;
    RedisSentinel::Layout layout;
    layout.failover_timeout = 60s;
    layout.replica_source = [&link](int primary) {
        link = std::make_unique<LaggingLink>(primary);
        return link->port();
    };
    RedisSentinel setup(layout);  // settled: the replica in sync through the link
    const int primary = setup.primary_port();
    const int replica = setup.data_ports().back();
    REQUIRE(primary == setup.data_ports().front());

    Failover f;
    f.name = "Sentinel";
    f.options = seatlock::testing::options_for(setup.url(), prefix, 300ms, 2s);
    f.event = "final";
    f.buyers = 50;
    f.link = link.get();
    f.primary = primary;
    f.replica = replica;
    f.kill = [&] { setup.kill(primary); };
    f.promote = [&]() -> std::string {
        const auto named = [&] {
            try {
                return setup.primary_port() == replica;
            } catch (const std::exception&) {
                return false;
            }
        };
        const auto wait = [&](std::chrono::seconds limit) {
            for (const auto until = Clock::now() + limit; Clock::now() < until;
                 std::this_thread::sleep_for(20ms)) {
                if (named()) return true;
            }
            return false;
        };
        if (wait(10s)) return "by the sentinels";
        setup.failover();  // see the top of the file: an election that failed
        REQUIRE_MESSAGE(wait(15s),
                        "the sentinels did not promote the replica, even by SENTINEL FAILOVER");
        return "by SENTINEL FAILOVER, after the sentinels' own failover failed";
    };
    f.primary_now = [&] { return setup.primary_port(); };
    sell_through_a_lagging_failover(f);
}

TEST_CASE(
    "on a Redis Cluster, a failover to a replica that missed the last confirms is detected and "
    "repaired: nothing sold twice, nothing lost") {
    RedisCluster cluster(1000ms);
    const std::string event = "final";
    const long long slot =
        RedisAdmin(cluster.ports().front()).integer({"CLUSTER", "KEYSLOT", event});
    const int primary = owner_of(cluster, slot);
    REQUIRE(primary > 0);
    // Its replica, once in sync.
    int replica = 0;
    for (const auto until = Clock::now() + 20s; replica == 0 && Clock::now() < until;) {
        const std::string slave = info_field(primary, "replication", "slave0");  // ip=,port=,state=
        if (slave.find("state=online") != std::string::npos && replica_in_sync(primary, event)) {
            replica = std::stoi(slave.substr(slave.find("port=") + 5));
        } else {
            std::this_thread::sleep_for(20ms);
        }
    }
    REQUIRE_MESSAGE(replica != 0, "the event's primary has no replica in sync after 20 s");

    // The primary announces the link's port: its replica reconnects through the link.
    LaggingLink link(primary);
    RedisAdmin(primary).expect_ok(
        {"CONFIG", "SET", "cluster-announce-port", std::to_string(link.port())});
    bool through_link = false;
    for (const auto until = Clock::now() + 20s; !through_link && Clock::now() < until;) {
        through_link =
            info_field(replica, "replication", "master_port") == std::to_string(link.port()) &&
            info_field(replica, "replication", "master_link_status") == "up" &&
            link.replication_links() >= 1 && replica_in_sync(primary, event) &&
            owner_of(cluster, slot, primary) == link.port();
        if (!through_link) std::this_thread::sleep_for(20ms);
    }
    REQUIRE_MESSAGE(through_link,
                    "the replica on port " << replica << " does not replicate through the link");

    Failover f;
    f.name = "Cluster";
    f.options = seatlock::testing::options_for(cluster.url(), prefix, 500ms, 2s);
    f.event = event;
    f.buyers = 30;
    f.link = &link;
    f.primary = primary;
    f.replica = replica;
    f.cluster = true;
    f.kill = [&] { cluster.kill(primary); };
    f.promote = [&]() -> std::string {
        const auto is_primary = [&] {
            const auto role = RedisAdmin(replica).command({"ROLE"});
            return role->type == REDIS_REPLY_ARRAY &&
                   std::string(role->element[0]->str, role->element[0]->len) == "master";
        };
        const auto wait = [&](std::chrono::seconds limit, auto done) {
            for (const auto until = Clock::now() + limit; Clock::now() < until;
                 std::this_thread::sleep_for(20ms)) {
                if (done()) return true;
            }
            return false;
        };
        std::string how = "by the cluster's own failover";
        if (!wait(8s, is_primary)) {
            RedisAdmin(replica).expect_ok({"CLUSTER", "FAILOVER", "TAKEOVER"});
            REQUIRE_MESSAGE(wait(10s, is_primary),
                            "the replica did not take over, even by CLUSTER FAILOVER TAKEOVER");
            how = "by CLUSTER FAILOVER TAKEOVER, the cluster's own failover too slow";
        }
        // The nodes clients ask learn it by gossip.
        wait(10s, [&] { return owner_of(cluster, slot) == replica; });
        return how;
    };
    f.primary_now = [&] { return owner_of(cluster, slot); };
    sell_through_a_lagging_failover(f);
}

}  // namespace lagging_failover_test
