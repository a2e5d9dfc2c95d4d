// SPDX-License-Identifier: MIT
// tests/conformance/change_feed_conformance.hpp: versioned seat maps and the change feed
// (SeatHoldStore::seats and changes) on every backend, and a randomized property test:
// applying the changes after version A to the map at A gives the map at B.
// Instantiate with SEATLOCK_CHANGE_FEED_CONFORMANCE(Fixture).
#pragma once

#include "hold_conformance.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace seatlock::testing {

// Expiries are compared to the millisecond on storage clocks; MemoryBackend translates
// its steady clock to wall time at each reading, so within a little.
inline bool near(WallTime a, WallTime b) {
    const auto d = a > b ? a - b : b - a;
    return d <= std::chrono::milliseconds(50);
}

/// Where two maps differ ("" when they do not): versions, zones, counts, seat states and
/// the expiries of held seats.
inline std::string difference(const SeatMap& a, const SeatMap& b) {
    std::ostringstream out;
    if (a.version != b.version) out << "version " << a.version << " != " << b.version << "; ";
    if (a.zones.size() != b.zones.size()) return out.str() + "zone count differs";
    for (std::size_t z = 0; z < a.zones.size(); ++z) {
        const ZoneState& x = a.zones[z];
        const ZoneState& y = b.zones[z];
        if (x.zone != y.zone || x.kind != y.kind || x.capacity != y.capacity) out << "zone " << z << " differs; ";
        if (x.free != y.free || x.held != y.held || x.paid != y.paid) {
            out << x.zone << " counts " << x.free << '/' << x.held << '/' << x.paid << " != " << y.free
                << '/' << y.held << '/' << y.paid << "; ";
        }
        if (x.seats.size() != y.seats.size()) {
            out << x.zone << " seat count differs; ";
            continue;
        }
        for (std::size_t s = 0; s < x.seats.size(); ++s) {
            const SeatStatus& p = x.seats[s];
            const SeatStatus& q = y.seats[s];
            if (p.id != q.id || p.row != q.row || p.state != q.state ||
                (p.state == SeatState::held && !near(p.expires_at, q.expires_at))) {
                out << x.zone << ':' << p.id << ' ' << to_string(p.state) << " != " << q.id << ' '
                    << to_string(q.state) << "; ";
            }
        }
    }
    return out.str();
}

/// Every change after `after` up to `until` (inclusive), in pages of `limit`.
template <typename S>
std::vector<SeatChange> changes_between(S& store, const std::string& event, EventVersion after,
                                        EventVersion until, std::size_t limit) {
    std::vector<SeatChange> out;
    EventVersion at = after;
    for (int pages = 0; pages < 100000; ++pages) {
        auto page = store.changes(event, at, limit);
        REQUIRE(page);
        CHECK(page->version >= at);
        for (const auto& c : page->changes) {
            CHECK(c.version > at);
            CHECK(c.version <= page->version);
            if (c.version <= until) out.push_back(c);
        }
        if (!page->more || page->version >= until) break;
        CHECK(page->version > at);
        at = page->version;
    }
    return out;
}

/// The changes logged by exactly the step that raised the version to `v`.
template <typename S>
std::vector<SeatChange> step_changes(S& store, EventVersion v) {
    auto page = store.changes("game1", v - 1, 1000);
    REQUIRE(page);
    std::vector<SeatChange> out;
    for (const auto& c : page->changes) {
        if (c.version == v) out.push_back(c);
    }
    return out;
}

inline SeatChange named_change(EventVersion v, std::string seat, SeatState state, std::int64_t free,
                               std::int64_t held, std::int64_t paid, WallTime expires = {}) {
    return SeatChange{v, "lower", std::move(seat), state, expires, free, held, paid};
}

inline bool same_change(const SeatChange& a, const SeatChange& b) {
    return a.version == b.version && a.zone == b.zone && a.seat == b.seat && a.state == b.state &&
           near(a.expires_at, b.expires_at) && a.free == b.free && a.held == b.held && a.paid == b.paid;
}

inline std::string describe(const std::vector<SeatChange>& cs) {
    std::ostringstream out;
    for (const auto& c : cs) {
        out << "{v" << c.version << ' ' << c.zone << ':' << c.seat << ' ' << to_string(c.state) << ' '
            << c.free << '/' << c.held << '/' << c.paid << "} ";
    }
    return out.str();
}

/// The steps' changes as expected (in any order within the step).
inline bool same_changes(std::vector<SeatChange> got, std::vector<SeatChange> want) {
    auto by_seat = [](const SeatChange& a, const SeatChange& b) { return a.seat < b.seat; };
    std::sort(got.begin(), got.end(), by_seat);
    std::sort(want.begin(), want.end(), by_seat);
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (!same_change(got[i], want[i])) return false;
    }
    return true;
}

}  // namespace seatlock::testing

TEST_CASE_TEMPLATE_DEFINE("every kind of step logs its changes under the version it raised", F,
                          change_feed_steps) {
    using namespace seatlock::testing;
    using seatlock::SeatState;
    HoldWorld<F> w;
    auto start = w.store.seats("game1");
    REQUIRE(start);
    CHECK(start->version == w.store.check_version("game1").value());
    auto empty = w.store.changes("game1", start->version);
    REQUIRE(empty);
    CHECK(empty->changes.empty());
    CHECK_FALSE(empty->more);
    CHECK(empty->version == start->version);

    auto a = w.store.hold("game1", "amy", named_seats("lower", {"A-1", "A-2"}));
    REQUIRE(a);
    auto got = step_changes(w.store, a->version);
    CHECK_MESSAGE(same_changes(got, {named_change(a->version, "A-1", SeatState::held, 10, 2, 0, a->expires_at),
                                     named_change(a->version, "A-2", SeatState::held, 10, 2, 0, a->expires_at)}),
                  describe(got));

    auto ga = w.store.hold("game1", "bo", seatlock::quantity("bleachers", 3));
    REQUIRE(ga);
    got = step_changes(w.store, ga->version);
    CHECK_MESSAGE(same_changes(got, {seatlock::SeatChange{ga->version, "bleachers", "", SeatState::free, {}, 97, 3, 0}}),
                  describe(got));

    auto longer = w.store.extend(a->token, 20min);
    REQUIRE(longer);
    got = step_changes(w.store, longer->version);
    CHECK_MESSAGE(same_changes(got, {named_change(longer->version, "A-1", SeatState::held, 10, 2, 0, longer->expires_at),
                                     named_change(longer->version, "A-2", SeatState::held, 10, 2, 0, longer->expires_at)}),
                  describe(got));
    // A general-admission hold's extension changes no count: nothing is logged.
    auto ga_longer = w.store.extend(ga->token, 20min);
    REQUIRE(ga_longer);
    CHECK(step_changes(w.store, ga_longer->version).empty());

    auto paid = w.store.confirm(a->token, "pay-amy");
    REQUIRE(paid);
    got = step_changes(w.store, paid->version);
    CHECK_MESSAGE(same_changes(got, {named_change(paid->version, "A-1", SeatState::paid, 10, 0, 2),
                                     named_change(paid->version, "A-2", SeatState::paid, 10, 0, 2)}),
                  describe(got));
    // A retry raises the version and changes no seat.
    auto again = w.store.confirm(a->token, "pay-amy");
    REQUIRE(again);
    CHECK(again->version == paid->version + 1);
    CHECK(step_changes(w.store, again->version).empty());

    auto b = w.store.hold("game1", "cy", named_seats("lower", {"B-1"}));
    REQUIRE(b);
    auto released = w.store.release(b->token);
    REQUIRE(released);
    got = step_changes(w.store, *released);
    CHECK_MESSAGE(same_changes(got, {named_change(*released, "B-1", SeatState::free, 10, 0, 2)}), describe(got));

    auto ga_released = w.store.release(ga->token);
    REQUIRE(ga_released);
    got = step_changes(w.store, *ga_released);
    CHECK_MESSAGE(same_changes(got, {seatlock::SeatChange{*ga_released, "bleachers", "", SeatState::free, {}, 100, 0, 0}}),
                  describe(got));

    auto cancelled = w.store.cancel("game1", "pay-amy");
    REQUIRE(cancelled);
    got = step_changes(w.store, cancelled->version);
    CHECK_MESSAGE(same_changes(got, {named_change(cancelled->version, "A-1", SeatState::free, 12, 0, 0),
                                     named_change(cancelled->version, "A-2", SeatState::free, 12, 0, 0)}),
                  describe(got));

    // A refusal logs nothing and raises nothing.
    CHECK(w.store.hold("game1", "dee", named_seats("lower", {"Z-9"})).is(errc::unknown_seat));

    // The map at the start and every change since give the map now.
    auto all = changes_between(w.store, "game1", start->version, ~seatlock::EventVersion{0}, 3);
    auto now = w.store.seats("game1");
    REQUIRE(now);
    seatlock::SeatMap replayed = *start;
    seatlock::apply(replayed, all, now->version);
    CHECK_MESSAGE(difference(replayed, *now).empty(), difference(replayed, *now));

    // Past the event's version: a caller's mistake.
    CHECK(w.store.changes("game1", now->version + 1).is(errc::invalid_argument));
    CHECK(w.store.changes("game1", 0, 0).is(errc::invalid_argument));
    CHECK(w.store.changes("nothing-here", 0).is(errc::unknown_event));
    auto one_zone = w.store.seats("game1", std::string("bleachers"));
    REQUIRE(one_zone);
    CHECK(one_zone->version == now->version);
    REQUIRE(one_zone->zones.size() == 1);
    CHECK(one_zone->zones[0].free == 100);
}

TEST_CASE_TEMPLATE_DEFINE("a page of changes never splits a step, and goes on where it ended", F,
                          change_feed_pages) {
    using namespace seatlock::testing;
    HoldWorld<F> w;
    const auto start = w.store.seats("game1").value().version;
    auto two = w.store.hold("game1", "amy", named_seats("lower", {"A-1", "A-2"}));
    auto one = w.store.hold("game1", "bo", named_seats("lower", {"B-1"}));
    REQUIRE(two);
    REQUIRE(one);
    auto first = w.store.changes("game1", start, 1);
    REQUIRE(first);
    CHECK(first->changes.size() == 2);  // one step, whole
    CHECK(first->more);
    CHECK(first->version == two->version);
    auto second = w.store.changes("game1", first->version, 1);
    REQUIRE(second);
    REQUIRE(second->changes.size() == 1);
    CHECK(second->changes[0].seat == "B-1");
    CHECK_FALSE(second->more);
    CHECK(second->version == one->version);
}

TEST_CASE_TEMPLATE_DEFINE("a hold that runs out is logged by the sweep that expires it, and a late confirm retakes its seats", F,
                          change_feed_expiry) {
    using namespace seatlock::testing;
    using seatlock::SeatState;
    HoldWorld<F> w;
    auto h = w.store.hold("game1", "amy", named_seats("lower", {"A-3"}), seatlock::Millis(200));
    REQUIRE(h);
    // Until the sweep has run, a snapshot may show the seat held with its expiry passed;
    // the seat map carries the expiry for viewers to act on.
    auto map = w.store.seats("game1", std::string("lower")).value();
    CHECK(map.zones[0].seats[2].state == SeatState::held);
    CHECK(near(map.zones[0].seats[2].expires_at, h->expires_at));
    w.f.advance(400ms);
    // Any call sweeps first: this one too.
    auto page = w.store.changes("game1", h->version);
    REQUIRE(page);
    CHECK(page->version == h->version + 1);
    CHECK_MESSAGE(same_changes(page->changes, {named_change(h->version + 1, "A-3", SeatState::free, 12, 0, 0)}),
                  describe(page->changes));
    auto late = w.store.confirm_late(h->token, "pay-late");
    REQUIRE(late);
    auto got = step_changes(w.store, late->version);
    CHECK_MESSAGE(same_changes(got, {named_change(late->version, "A-3", SeatState::paid, 11, 0, 1)}), describe(got));

    // A general-admission hold that runs out: its zone's counts.
    auto ga = w.store.hold("game1", "bo", seatlock::quantity("bleachers", 2), seatlock::Millis(200));
    REQUIRE(ga);
    w.f.advance(400ms);
    auto swept = w.store.changes("game1", ga->version);
    REQUIRE(swept);
    CHECK_MESSAGE(same_changes(swept->changes, {seatlock::SeatChange{ga->version + 1, "bleachers", "", SeatState::free, {}, 100, 0, 0}}),
                  describe(swept->changes));
}

TEST_CASE_TEMPLATE_DEFINE("a trimmed log answers changes_trimmed, and a reader resumes from a fresh map", F,
                          change_feed_trimmed) {
    using namespace seatlock::testing;
    F f;
    auto backend = f.backend_with_log_limit(3);
    Store<F> store(*backend, test_policy());
    REQUIRE(store.create_event(test_event("small-log")));
    auto start = store.seats("small-log");
    REQUIRE(start);
    std::vector<seatlock::EventVersion> versions;
    for (const char* seat : {"A-1", "A-2", "A-3", "A-4", "A-5"}) {
        auto h = store.hold("small-log", std::string("holder-") + seat, named_seats("lower", {seat}));
        REQUIRE(h);
        versions.push_back(h->version);
    }
    // The log keeps the last 3 steps: the changes after the version just before them.
    auto trimmed = store.changes("small-log", start->version);
    CHECK(trimmed.is(errc::changes_trimmed));
    CHECK(trimmed.code() == seatlock::condition::not_found);
    CHECK(store.changes("small-log", versions[0]).is(errc::changes_trimmed));
    auto kept = store.changes("small-log", versions[1]);
    REQUIRE(kept);
    CHECK(kept->changes.size() == 3);
    // Resume: a fresh map, then the changes after its version.
    auto map = store.seats("small-log");
    REQUIRE(map);
    CHECK(map->version == versions.back());
    auto none = store.changes("small-log", map->version);
    REQUIRE(none);
    CHECK(none->changes.empty());
    auto more = store.hold("small-log", "late-comer", named_seats("lower", {"B-6"}));
    REQUIRE(more);
    auto next = store.changes("small-log", map->version);
    REQUIRE(next);
    REQUIRE(next->changes.size() == 1);
    CHECK(next->changes[0].seat == "B-6");
    seatlock::SeatMap replayed = *map;
    seatlock::apply(replayed, next->changes, next->version);
    auto now = store.seats("small-log");
    REQUIRE(now);
    CHECK_MESSAGE(difference(replayed, *now).empty(), difference(replayed, *now));
}

TEST_CASE_TEMPLATE_DEFINE("recovery: restored orders are logged, and showing the event starts the log afresh", F,
                          change_feed_recovery) {
    using namespace seatlock::testing;
    using seatlock::SeatState;
    HoldWorld<F> w;
    auto h = w.store.hold("game1", "amy", named_seats("lower", {"A-1"}));
    REQUIRE(h);
    auto o = w.store.confirm(h->token, "pay-amy");
    REQUIRE(o);
    // restore_order on a shown event (an order the storage never lost elsewhere): logged.
    const std::string token = "game1.0123456789abcdef0123456789abcdef";
    auto restored = w.store.restore_order({"game1", "pay-bo", "bo", "lower", {"B-2"}, token, w.f.now()});
    REQUIRE(restored);
    auto got = step_changes(w.store, restored->version);
    CHECK_MESSAGE(same_changes(got, {named_change(restored->version, "B-2", SeatState::paid, 10, 0, 2)}),
                  describe(got));
    const auto before = w.store.seats("game1").value().version;
    // The storage loses everything; the event is recovered from the records.
    w.f.lose_data();
    REQUIRE(w.store.recover_event(test_event()).value() == seatlock::Recovery::created);
    REQUIRE(w.store.restore_order({"game1", "pay-amy", "amy", "lower", {"A-1"}, h->token, w.f.now()}));
    REQUIRE(w.store.restore_order({"game1", "pay-bo", "bo", "lower", {"B-2"}, token, w.f.now()}));
    auto shown = w.store.finish_recovery("game1");
    REQUIRE(shown);
    CHECK(*shown > before);
    // A reader from before the loss cannot go on from its version: it reads the map again.
    CHECK(w.store.changes("game1", before).is(errc::changes_trimmed));
    auto map = w.store.seats("game1");
    REQUIRE(map);
    CHECK(map->version == *shown);
    CHECK(map->zones[0].seats[0].state == SeatState::paid);
    CHECK(map->zones[0].seats[7].state == SeatState::paid);
    auto after = w.store.changes("game1", map->version);
    REQUIRE(after);
    CHECK(after->changes.empty());
}

// A reader whose copy is of the history before a recovery, at a version the recovered event
// has reached again with other steps, must not be given those steps: applied to its copy
// they would give a map the storage never had.
TEST_CASE_TEMPLATE_DEFINE("recovery: a reader of the history before it gets changes_trimmed at any version", F,
                          change_feed_history) {
    using namespace seatlock::testing;
    using seatlock::SeatState;
    HoldWorld<F> w;
    auto before = w.store.seats("game1");
    REQUIRE(before);
    CHECK(before->history != 0);
    // Going on from a map's position, then from a page's, stays on the history.
    auto a = w.store.hold("game1", "amy", named_seats("lower", {"A-1"}));
    REQUIRE(a);
    auto page = w.store.changes("game1", before->position());
    REQUIRE(page);
    CHECK(page->history == before->history);
    CHECK(page->position() == seatlock::FeedPosition{a->version, before->history});
    seatlock::SeatMap copy = *before;
    seatlock::apply(copy, *page);
    CHECK(copy.position() == page->position());
    REQUIRE(w.store.release(a->token));
    REQUIRE(w.store.changes("game1", copy.position()));
    auto read = w.store.hold("game1", "amy", named_seats("lower", {"A-2", "A-3"}));
    REQUIRE(read);
    auto old = w.store.seats("game1");  // the reader's copy: held
    REQUIRE(old);

    // The storage loses everything; another process, which never saw the event, recovers it
    // with no order to restore, and shows it at a version below the reader's.
    w.f.lose_data();
    seatlock::testing::Store<F> other(w.f.backend(), test_policy());
    REQUIRE(other.recover_event(test_event()).value() == seatlock::Recovery::created);
    auto shown = other.finish_recovery("game1");
    REQUIRE(shown);
    REQUIRE(*shown < old->version);
    // Its steps bring the event to the reader's version and past it.
    REQUIRE(other.hold("game1", "bo", named_seats("lower", {"B-1"})));
    while (other.seats("game1").value().version <= old->version + 1) {
        auto h = other.hold("game1", "cy", named_seats("lower", {"B-2"}));
        REQUIRE(h);
        REQUIRE(other.release(h->token));
    }
    auto now = w.store.seats("game1");
    REQUIRE(now);
    CHECK(now->history != old->history);
    CHECK(now->zones[0].seats[1].state == SeatState::free);  // the reader's copy has it held
    // The reader is told to read the map again; from the new map it goes on.
    CHECK(w.store.changes("game1", old->position()).is(errc::changes_trimmed));
    CHECK(w.store.changes("game1", seatlock::FeedPosition{now->version, old->history})
              .is(errc::changes_trimmed));
    auto next = w.store.changes("game1", now->position());
    REQUIRE(next);
    CHECK(next->changes.empty());
    CHECK(next->history == now->history);
    // Without a history, a version is taken as the current history's: the page names it.
    auto any = w.store.changes("game1", old->version);
    REQUIRE(any);
    CHECK(any->history == now->history);
}

TEST_CASE_TEMPLATE_DEFINE("property: the changes after version A applied to the map at A give the map at B", F,
                          change_feed_property) {
    using namespace seatlock::testing;
    HoldWorld<F> w;
    std::mt19937 rng(20261204u);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    std::vector<seatlock::Hold> holds;
    std::vector<std::string> orders;
    std::vector<seatlock::SeatMap> maps{w.store.seats("game1").value()};
    const char* rows[] = {"A", "B"};
    for (int step = 0; step < 300; ++step) {
        const std::string holder = "h" + std::to_string(pick(6));
        switch (pick(9)) {
            case 0:
            case 1: {
                std::vector<std::string> seats;
                const int n = 1 + pick(2);
                const int first = 1 + pick(5);
                const char* row = rows[pick(2)];
                for (int i = 0; i < n; ++i) seats.push_back(std::string(row) + "-" + std::to_string(first + i));
                auto h = w.store.hold("game1", holder, named_seats("lower", seats), seatlock::Millis(100 + pick(300)));
                if (h) holds.push_back(*h);
                break;
            }
            case 2: {
                auto h = w.store.hold("game1", holder, seatlock::quantity("bleachers", 1 + pick(3)),
                                      seatlock::Millis(100 + pick(300)));
                if (h) holds.push_back(*h);
                break;
            }
            case 3:
                if (!holds.empty()) (void)w.store.release(holds[static_cast<std::size_t>(pick(static_cast<int>(holds.size())))].token);
                break;
            case 4:
                if (!holds.empty()) {
                    const std::string order = "pay-" + std::to_string(step);
                    const auto& h = holds[static_cast<std::size_t>(pick(static_cast<int>(holds.size())))];
                    auto o = pick(2) ? w.store.confirm(h.token, order) : w.store.confirm_late(h.token, order);
                    if (o) orders.push_back(order);
                }
                break;
            case 5:
                if (!orders.empty()) (void)w.store.cancel("game1", orders[static_cast<std::size_t>(pick(static_cast<int>(orders.size())))]);
                break;
            case 6:
                if (!holds.empty()) {
                    (void)w.store.extend(holds[static_cast<std::size_t>(pick(static_cast<int>(holds.size())))].token,
                                         seatlock::Millis(100 + pick(300)));
                }
                break;
            case 7: w.f.advance(seatlock::Millis(pick(150))); break;
            default: maps.push_back(w.store.seats("game1").value()); break;
        }
    }
    maps.push_back(w.store.seats("game1").value());
    int pairs = 0;
    for (std::size_t i = 0; i < maps.size(); ++i) {
        for (std::size_t j = i + 1; j < maps.size(); ++j) {
            const seatlock::SeatMap& a = maps[i];
            const seatlock::SeatMap& b = maps[j];
            if (a.version >= b.version) continue;
            const std::size_t limit = 1 + static_cast<std::size_t>(pick(6));
            auto between = changes_between(w.store, "game1", a.version, b.version, limit);
            seatlock::SeatMap replayed = a;
            seatlock::apply(replayed, between, b.version);
            const std::string diff = difference(replayed, b);
            CHECK_MESSAGE(diff.empty(), "from version ", a.version, " to ", b.version, ": ", diff);
            ++pairs;
        }
    }
    MESSAGE(std::string(F::name), ": ", maps.size(), " maps, ", pairs, " pairs replayed");
    CHECK(pairs > 10);
}

#define SEATLOCK_CHANGE_FEED_CONFORMANCE(...)                             \
    TEST_CASE_TEMPLATE_INVOKE(change_feed_steps, __VA_ARGS__);            \
    TEST_CASE_TEMPLATE_INVOKE(change_feed_pages, __VA_ARGS__);            \
    TEST_CASE_TEMPLATE_INVOKE(change_feed_expiry, __VA_ARGS__);           \
    TEST_CASE_TEMPLATE_INVOKE(change_feed_trimmed, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(change_feed_recovery, __VA_ARGS__);         \
    TEST_CASE_TEMPLATE_INVOKE(change_feed_history, __VA_ARGS__);          \
    TEST_CASE_TEMPLATE_INVOKE(change_feed_property, __VA_ARGS__)
