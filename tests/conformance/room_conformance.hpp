// SPDX-License-Identifier: MIT
// tests/conformance/room_conformance.hpp: the waiting room's rules (docs/waiting-room.md)
// on every backend and through both APIs. Instantiate with SEATLOCK_ROOM_CONFORMANCE(Fixture).
//
// On fixtures with a real clock (memory, Redis) time passes for real: the cases that need
// it wait a second at most. The draw is a function of the room's seed, given here, so
// each case is deterministic on every backend.
#pragma once

#include "fixtures.hpp"

#include <seatlock/detail/room_table.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::testing {

using namespace std::chrono_literals;

inline AdmissionKey test_admission_key() {
    return AdmissionKey("0123456789abcdef0123456789abcdef-conformance");
}

/// A fixture, its waiting room (through the fixture's API), and shorthands.
template <typename F>
struct RoomWorld {
    F f;
    Room<F> room{f.backend(), test_admission_key()};

    /// A room configured with `opens_in` from the backend's now (negative: already open).
    RoomConfig config(Millis opens_in, double rate, std::uint64_t max_active,
                      Millis ttl = 10min, Millis no_show = 10min) {
        return RoomConfig{f.now() + opens_in, rate, max_active, ttl, no_show, "seed-1"};
    }
    QueueTicket join(const std::string& room_id, const std::string& visitor) {
        auto t = room.join(room_id, visitor);
        REQUIRE(t);
        return *t;
    }
    /// admit() until nobody is left in line (the rate and slots must allow it).
    std::vector<std::string> admit_all(const std::string& room_id) {
        std::vector<std::string> order;
        for (int step = 0; step < 1000; ++step) {
            auto r = room.admit(room_id);
            REQUIRE(r);
            order.insert(order.end(), r->admitted.begin(), r->admitted.end());
            if (r->waiting == 0) break;
        }
        return order;
    }
};

/// The upper tail of the chi-square distribution with `df` degrees of freedom at `x`:
/// Q(df/2, x/2), the regularized upper incomplete gamma function (a series, then a
/// continued fraction past a + 1, as in Numerical Recipes' gammq).
inline double chi_square_p(double x, double df) {
    const double a = df / 2, z = x / 2;
    const double log_front = a * std::log(z) - z - std::lgamma(a);
    if (z < a + 1) {
        double term = 1 / a, sum = term;
        for (int n = 1; n < 1000; ++n) {
            term *= z / (a + n);
            sum += term;
            if (term < sum * 1e-15) break;
        }
        return 1 - sum * std::exp(log_front);
    }
    double b = z + 1 - a, c = 1e300, d = 1 / b, h = d;
    for (int i = 1; i < 1000; ++i) {
        const double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (std::fabs(d) < 1e-300) d = 1e-300;
        c = b + an / c;
        if (std::fabs(c) < 1e-300) c = 1e-300;
        d = 1 / d;
        const double delta = d * c;
        h *= delta;
        if (std::fabs(delta - 1) < 1e-15) break;
    }
    return std::exp(log_front) * h;
}

}  // namespace seatlock::testing

TEST_CASE_TEMPLATE_DEFINE("the visitors who join before opening are drawn uniformly, the same on every backend",
                          F, room_draw_uniform) {
    using namespace seatlock;
    testing::RoomWorld<F> w;
    constexpr int arrivals = 10000, buckets = 10;
    // A fixed list of seeds: the draw is SHA-1 of seed and visitor, so each is deterministic.
    for (const std::string seed : {"draw-seed-1"}) {
        const std::string room = "draw-" + seed;
        auto c = w.config(1h, 1e6, 1000000);
        c.shuffle_seed = seed;
        REQUIRE(w.room.configure(room, c));
        int drawn = 0;
        for (int i = 0; i < arrivals; ++i) drawn += w.join(room, "v" + std::to_string(i)).in_draw;
        REQUIRE(drawn == arrivals);
        // Before opening nobody has a place, and nobody is admitted.
        auto before = w.room.position(QueueTicket{room, "v0"});
        REQUIRE(before);
        CHECK_FALSE(before->place.has_value());
        CHECK(before->waiting == arrivals);
        CHECK(before->estimated_wait > 50min);
        REQUIRE(w.room.admit(room));
        CHECK(w.room.admit(room)->admitted.empty());
        // The room opens now (its opening may move while it has not come).
        c.opens_at = w.f.now() - 1s;
        REQUIRE(w.room.configure(room, c));
        auto after = w.room.position(QueueTicket{room, "v0"});
        REQUIRE(after);
        REQUIRE(after->place.has_value());
        const auto order = w.admit_all(room);
        REQUIRE(order.size() == arrivals);

        // The order is the draw's: by SHA-1 of seed and visitor, on every backend.
        std::vector<std::pair<double, std::string>> keyed;
        for (int i = 0; i < arrivals; ++i) {
            const std::string v = "v" + std::to_string(i);
            keyed.emplace_back(detail::draw_key(seed, v), v);
        }
        std::sort(keyed.begin(), keyed.end());
        std::size_t same = 0;
        for (std::size_t i = 0; i < keyed.size(); ++i) same += keyed[i].second == order[i];
        CHECK(same == order.size());

        // Arrival decile x admission decile: independent when the draw is uniform.
        std::vector<std::vector<int>> table(buckets, std::vector<int>(buckets, 0));
        for (std::size_t place = 0; place < order.size(); ++place) {
            const int arrival = std::stoi(order[place].substr(1));
            ++table[static_cast<std::size_t>(arrival * buckets / arrivals)][place * buckets / arrivals];
        }
        const double expected = double(arrivals) / (buckets * buckets);
        double chi2 = 0;
        for (const auto& row : table)
            for (int n : row) chi2 += (n - expected) * (n - expected) / expected;
        const double p = testing::chi_square_p(chi2, (buckets - 1) * (buckets - 1));
        INFO("seed " << seed << ": chi-square " << chi2 << ", p = " << p);
        CHECK(p > 0.01);
    }
    // The p-value itself: the 99th percentile of chi-square with 81 degrees of freedom is 113.5.
    CHECK(testing::chi_square_p(113.5, 81) == doctest::Approx(0.01).epsilon(0.05));
    CHECK(testing::chi_square_p(81, 81) == doctest::Approx(0.48).epsilon(0.05));
}

TEST_CASE_TEMPLATE_DEFINE("after opening visitors are admitted in arrival order, after the draw", F,
                          room_arrival_order) {
    using namespace seatlock;
    testing::RoomWorld<F> w;
    auto c = w.config(1h, 1e6, 1000000);
    REQUIRE(w.room.configure("r", c));
    std::set<std::string> drawn;
    for (int i = 0; i < 30; ++i) drawn.insert(w.join("r", "early" + std::to_string(i)).visitor);
    c.opens_at = w.f.now() - 1s;
    REQUIRE(w.room.configure("r", c));
    std::vector<std::string> arrived;
    for (int i = 0; i < 200; ++i) {
        auto t = w.join("r", "late" + std::to_string(i));
        CHECK_FALSE(t.in_draw);
        arrived.push_back(t.visitor);
        if (i == 50) {
            auto p = w.room.position(t);
            REQUIRE(p);
            CHECK(p->place == std::optional<std::uint64_t>(30 + 51));
            CHECK(p->estimated_wait >= 1ms);
        }
    }
    const auto order = w.admit_all("r");
    REQUIRE(order.size() == 230);
    CHECK(std::set<std::string>(order.begin(), order.begin() + 30) == drawn);
    std::size_t inversions = 0;
    for (std::size_t i = 0; i < arrived.size(); ++i) inversions += order[30 + i] != arrived[i];
    CHECK(inversions == 0);
}

TEST_CASE_TEMPLATE_DEFINE("a visitor who joins twice has one place", F, room_join_idempotent) {
    using namespace seatlock;
    testing::RoomWorld<F> w;
    REQUIRE(w.room.configure("r", w.config(-1s, 1, 10)));
    const auto first = w.join("r", "amy");
    CHECK_FALSE(first.replayed);
    w.join("r", "bo");
    const auto again = w.join("r", "amy");
    CHECK(again.replayed);
    CHECK(again.joined_at == first.joined_at);
    auto p = w.room.position(again);
    REQUIRE(p);
    CHECK(p->place == std::optional<std::uint64_t>(1));
    CHECK(p->waiting == 2);
    CHECK(w.room.join("nowhere", "amy").is(errc::unknown_room));
    CHECK(w.room.position(QueueTicket{"r", "cy"}).is(errc::not_in_queue));
    CHECK(w.room.join("r", "a:b").is(errc::invalid_argument));
}

TEST_CASE_TEMPLATE_DEFINE("admissions follow admit_per_second within 5%", F, room_rate) {
    using namespace seatlock;
    testing::RoomWorld<F> w;
    constexpr double rate = 200;
    auto c = w.config(1h, rate, 1000000);
    REQUIRE(w.room.configure("r", c));
    for (int i = 0; i < 400; ++i) w.join("r", "v" + std::to_string(i));
    c.opens_at = w.f.now();
    REQUIRE(w.room.configure("r", c));
    std::size_t admitted = 0;
    const auto elapsed_s = [&] { return std::chrono::duration<double>(w.f.now() - c.opens_at).count(); };
    double before = 0;
    while (true) {
        before = elapsed_s();
        auto r = w.room.admit("r");
        REQUIRE(r);
        admitted += r->admitted.size();
        if (before >= 1.0) break;
        w.f.advance(20ms);
    }
    const double after = elapsed_s();
    INFO(admitted << " admitted in " << before << " to " << after << " s");
    CHECK(double(admitted) >= 0.95 * rate * before);
    CHECK(double(admitted) <= 1.05 * rate * after);
}

TEST_CASE_TEMPLATE_DEFINE("max_active is never exceeded by 4 admitters at once", F, room_max_active) {
    using namespace seatlock;
    testing::RoomWorld<F> w;
    constexpr std::uint64_t max_active = 25;
    REQUIRE(w.room.configure("r", w.config(-10s, 1000, max_active)));
    for (int i = 0; i < 300; ++i) w.join("r", "v" + std::to_string(i));
    std::atomic<int> holding{0}, most{0}, over{0};
    std::mutex mutex;
    std::multiset<std::string> admitted;
    auto admitter = [&] {
        testing::Room<F> room(w.f.backend(), testing::test_admission_key());
        for (int step = 0; step < 40; ++step) {
            auto r = room.admit("r", 10);
            if (!r) {
                ++over;
                continue;
            }
            if (r->active > max_active) ++over;
            const int now_holding = holding += static_cast<int>(r->admitted.size());
            int seen = most.load();
            while (now_holding > seen && !most.compare_exchange_weak(seen, now_holding)) {
            }
            for (const auto& v : r->admitted) {
                {
                    std::lock_guard lock(mutex);
                    admitted.insert(v);
                }
                if (!room.admission(QueueTicket{"r", v})) ++over;
                --holding;  // before the slot is freed: never above what the storage counts
                if (!room.finished(QueueTicket{"r", v})) ++over;
            }
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back(admitter);
    for (auto& t : threads) t.join();
    CHECK(over == 0);
    CHECK(most <= static_cast<int>(max_active));
    CHECK(admitted.size() >= max_active);
    CHECK(std::set<std::string>(admitted.begin(), admitted.end()).size() == admitted.size());
}

TEST_CASE_TEMPLATE_DEFINE("a no-show's slot goes to the next in line after no_show_after", F,
                          room_no_show) {
    using namespace seatlock;
    testing::RoomWorld<F> w;
    REQUIRE(w.room.configure("r", w.config(-1s, 1000, 2, 10min, 300ms)));
    const auto amy = w.join("r", "amy");
    const auto bo = w.join("r", "bo");
    const auto cy = w.join("r", "cy");
    const auto dee = w.join("r", "dee");
    auto first = w.room.admit("r");
    REQUIRE(first);
    CHECK(first->admitted == std::vector<std::string>{"amy", "bo"});
    CHECK(w.room.position(bo)->state == QueueState::admitted);
    REQUIRE(w.room.admission(amy));  // amy shows up; bo does not
    CHECK(w.room.position(amy)->state == QueueState::active);
    CHECK(w.room.admit("r")->admitted.empty());  // both slots taken
    w.f.advance(400ms);
    CHECK(w.room.position(bo)->state == QueueState::lapsed);
    auto second = w.room.admit("r");
    REQUIRE(second);
    CHECK(second->lapsed == 1);
    CHECK(second->admitted == std::vector<std::string>{"cy"});
    CHECK(second->active == 2);
    CHECK(w.room.admission(bo).is(errc::not_admitted));
    CHECK(w.room.position(amy)->state == QueueState::active);
    REQUIRE(w.room.finished(amy));
    REQUIRE(w.room.finished(amy));  // again: nothing changes
    CHECK(w.room.position(amy)->state == QueueState::finished);
    CHECK(w.room.admit("r")->admitted == std::vector<std::string>{"dee"});
    CHECK(w.room.position(dee)->state == QueueState::admitted);
}

TEST_CASE_TEMPLATE_DEFINE("a forged, expired or other room's admission token is refused", F,
                          room_admission_tokens) {
    using namespace seatlock;
    testing::RoomWorld<F> w;
    REQUIRE(w.room.configure("r", w.config(-1s, 1000, 10, 2min)));
    const auto amy = w.join("r", "amy");
    const auto bo = w.join("r", "bo");
    CHECK(w.room.admission(amy).is(errc::not_admitted));  // still waiting
    REQUIRE(w.room.admit("r", 1));
    auto a = w.room.admission(amy);
    REQUIRE(a);
    CHECK(a->room == "r");
    CHECK(a->visitor == "amy");
    CHECK(a->expires_at > w.f.now() + 1min);
    CHECK(a->expires_at <= w.f.now() + 2min);
    auto again = w.room.admission(amy);
    REQUIRE(again);
    CHECK(again->expires_at == a->expires_at);
    CHECK(w.room.admission(bo).is(errc::not_admitted));

    const auto now = w.f.now();
    auto checked = w.room.check(a->token, "r", now);
    REQUIRE(checked);
    CHECK(checked->visitor == "amy");
    CHECK(w.room.check(a->token, "r2", now).is(errc::not_admitted));
    CHECK(w.room.check(a->token, "r", a->expires_at).is(errc::not_admitted));
    std::string forged = a->token;
    forged.back() = forged.back() == '0' ? '1' : '0';
    CHECK(w.room.check(forged, "r", now).is(errc::not_admitted));
    std::string other_visitor = a->token;
    other_visitor.replace(other_visitor.find("amy"), 3, "bob");
    CHECK(w.room.check(other_visitor, "r", now).is(errc::not_admitted));
    const auto by_other_key = AdmissionKey(std::string(32, 'x')).sign("r", "amy", a->expires_at);
    REQUIRE(by_other_key);
    CHECK(w.room.check(by_other_key->token, "r", now).is(errc::not_admitted));
    CHECK(w.room.check("", "r", now).is(errc::not_admitted));
    CHECK(w.room.check("r:amy:x:y", "r", now).is(errc::not_admitted));
}

TEST_CASE_TEMPLATE_DEFINE("a room's configuration is checked and its draw cannot be redone", F,
                          room_configuration) {
    using namespace seatlock;
    testing::RoomWorld<F> w;
    auto c = w.config(-1s, 10, 5);
    CHECK(w.room.configure("a b", c).is(errc::invalid_argument));
    for (auto bad : {0.0, -1.0, 2e6, std::nan("")}) {
        auto b = c;
        b.admit_per_second = bad;
        CHECK(w.room.configure("r", b).is(errc::invalid_argument));
    }
    auto b = c;
    b.max_active = 0;
    CHECK(w.room.configure("r", b).is(errc::invalid_argument));
    b = c;
    b.no_show_after = 0ms;
    CHECK(w.room.configure("r", b).is(errc::invalid_argument));
    b = c;
    b.shuffle_seed = "with space";
    CHECK(w.room.configure("r", b).is(errc::invalid_argument));
    CHECK(w.room.admit("r").is(errc::unknown_room));  // nothing was stored

    REQUIRE(w.room.configure("r", c));
    REQUIRE(w.room.configure("r", c));  // again: every server may
    b = c;
    b.shuffle_seed = "another";
    CHECK(w.room.configure("r", b).is(errc::invalid_argument));
    b.shuffle_seed.reset();  // a seed drawn by this server: the stored one stays
    REQUIRE(w.room.configure("r", b));
    b = c;
    b.opens_at = w.f.now() + 1h;  // it has opened
    CHECK(w.room.configure("r", b).is(errc::invalid_argument));
    b = c;
    b.admit_per_second = 0.5;
    b.max_active = 7;
    REQUIRE(w.room.configure("r", b));
    w.join("r", "amy");
    w.join("r", "bo");
    CHECK(w.room.position(QueueTicket{"r", "bo"})->estimated_wait == 4s);
}

#define SEATLOCK_ROOM_CONFORMANCE(...)                                 \
    TEST_CASE_TEMPLATE_INVOKE(room_draw_uniform, __VA_ARGS__);        \
    TEST_CASE_TEMPLATE_INVOKE(room_arrival_order, __VA_ARGS__);       \
    TEST_CASE_TEMPLATE_INVOKE(room_join_idempotent, __VA_ARGS__);     \
    TEST_CASE_TEMPLATE_INVOKE(room_rate, __VA_ARGS__);                \
    TEST_CASE_TEMPLATE_INVOKE(room_max_active, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(room_no_show, __VA_ARGS__);             \
    TEST_CASE_TEMPLATE_INVOKE(room_admission_tokens, __VA_ARGS__);    \
    TEST_CASE_TEMPLATE_INVOKE(room_configuration, __VA_ARGS__)
