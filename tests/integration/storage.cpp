// SPDX-License-Identifier: MIT
// The Redis storage layout's own mechanisms, which the conformance suite cannot see
// through the API: the event's "due" field that lets nearly every call skip the sweep,
// the timer that forgets an acknowledged expired hold, the hashes that remember released
// holds, holds larger than the chunks the functions split commands and seat lists into,
// the functions' memo of key names, the held counts and seat expiries the change log
// takes from the event hash, and the change log's approximate trimming.
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"
#include "support/redis_setup.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace storage_test {

namespace {

using namespace std::chrono_literals;
using seatlock::testing::no_limit;
using seatlock::testing::options_for;
using seatlock::SeatState;

const std::string event_key = "seatlock:event:{game1}";
const std::string deadlines_key = "seatlock:deadlines:{game1}";

std::vector<seatlock::SeatSpec> seats(const std::string& row, int count) {
    std::vector<seatlock::SeatSpec> out;
    for (int n = 1; n <= count; ++n) out.push_back({row + "-" + std::to_string(n), row});
    return out;
}

struct World {
    seatlock::testing::RedisServer server;
    seatlock::testing::RedisAdmin admin{server.port()};
    seatlock::RedisBackend backend{options_for(server)};
    seatlock::SeatHoldStore<seatlock::RedisBackend> store{backend, no_limit()};

    explicit World(int named_seats = 30, int places = 100) {
        store
            .create_event({"game1",
                           "Storage",
                           {seatlock::ZoneSpec::named("lower", seats("A", named_seats)),
                            seatlock::ZoneSpec::general_admission("bleachers", places)}})
            .value();
    }

    /// The event's "due" field as a number; -1 when absent.
    long long due() {
        auto reply = admin.command({"HGET", event_key, "due"});
        if (reply->type == REDIS_REPLY_NIL) return -1;
        return std::stoll(std::string(reply->str, reply->len));
    }
    /// The server's clock in ms.
    long long now_ms() {
        auto reply = admin.command({"TIME"});
        return std::stoll(reply->element[0]->str) * 1000 + std::stoll(reply->element[1]->str) / 1000;
    }
    /// The score of `member` in the deadlines set; -1 when absent.
    long long deadline(const std::string& member) {
        auto reply = admin.command({"ZSCORE", deadlines_key, member});
        if (reply->type == REDIS_REPLY_NIL) return -1;
        return std::stoll(std::string(reply->str, reply->len));
    }
    std::vector<std::string> expired_tokens() {
        std::vector<std::string> out;
        const auto expired = store.expired(1000, 0ms).value();
        for (const auto& e : expired) out.push_back(e.token);
        std::sort(out.begin(), out.end());
        return out;
    }
    SeatState state(const std::string& seat) {
        const auto zones = store.seats("game1", "lower").value();
        for (const auto& s : zones.front().seats)
            if (s.id == seat) return s.state;
        FAIL("no seat " << seat);
        return SeatState::free;
    }
};

}  // namespace

TEST_CASE("due is the earliest deadline: a short hold after a long one still expires on time") {
    World w;
    CHECK(w.due() == -1);  // no timer yet
    auto long_hold = w.store.hold("game1", "patient", seatlock::named_seats("lower", {"A-1"}), 10min)
                         .value();
    const long long long_deadline = w.deadline(long_hold.token);
    CHECK(w.due() == long_deadline);
    auto short_hold =
        w.store.hold("game1", "hasty", seatlock::named_seats("lower", {"A-2"}), 100ms).value();
    const long long short_deadline = w.deadline(short_hold.token);
    CHECK(short_deadline < long_deadline);
    CHECK(w.due() == short_deadline);  // lowered by the second hold

    std::this_thread::sleep_for(250ms);
    // Any call on the event runs the sweep: the short hold expired, the long one did not.
    CHECK(w.state("A-2") == SeatState::free);
    CHECK(w.state("A-1") == SeatState::held);
    CHECK(w.expired_tokens() == std::vector<std::string>{short_hold.token});
    CHECK(w.due() == long_deadline);  // moved on to the earliest timer left

    // Releasing the last hold takes its timer away; "due" may stay where it was (no later
    // than any timer, as there is none), and the next sweep that finds nothing clears it.
    REQUIRE(w.store.release(long_hold.token));
    CHECK(w.deadline(long_hold.token) == -1);
    CHECK(w.due() == long_deadline);
    w.admin.command({"HSET", event_key, "due", "1"});
    CHECK(w.state("A-1") == SeatState::free);
    CHECK(w.due() == -1);
}

TEST_CASE("a released hold leaves the event hash for its minute's hash; a keyed one stays with a timer") {
    World w;
    auto plain = w.store.hold("game1", "plain", seatlock::named_seats("lower", {"A-1"})).value();
    seatlock::HoldOptions keyed_options;
    keyed_options.idempotency_key = "intent-1";
    auto keyed = w.store.hold("game1", "keyed", seatlock::named_seats("lower", {"A-2"}), keyed_options)
                     .value();
    const long long before = w.now_ms();
    REQUIRE(w.store.release(plain.token));
    const long long after = w.now_ms();
    REQUIRE(w.store.release(keyed.token));

    // Without a key: no record, no timer, no counter; the time of the release under the
    // token's hex digits in the hash of the minute of the release, which Redis deletes 2
    // minutes after that minute.
    const std::string hex = plain.token.substr(plain.token.size() - 32);
    auto hashes = w.admin.command({"KEYS", "seatlock:released:{game1}:*"});
    REQUIRE(hashes->elements == 1);
    const std::string released(hashes->element[0]->str, hashes->element[0]->len);
    const long long minute = std::stoll(released.substr(released.rfind(':') + 1));
    CHECK(w.admin.text({"HGET", event_key, "rb"}) == std::to_string(minute));
    CHECK(w.admin.integer({"HLEN", released}) == 1);
    const long long released_at = std::stoll(w.admin.text({"HGET", released, hex}));
    CHECK(released_at >= before);
    CHECK(released_at <= after);
    CHECK(minute == released_at / 60'000);
    CHECK(w.admin.integer({"PEXPIRETIME", released}) == (minute + 1) * 60'000 + 120'000);
    CHECK(w.admin.integer({"HEXISTS", event_key, "h:" + plain.token}) == 0);
    CHECK(w.admin.integer({"HEXISTS", event_key, "u:plain"}) == 0);
    CHECK(w.deadline(plain.token) == -1);
    CHECK(w.store.release(plain.token));  // a retry
    CHECK(w.store.confirm(plain.token, "order-p").is(seatlock::errc::hold_not_active));
    CHECK(w.store.extend(plain.token, 1min).is(seatlock::errc::hold_not_active));

    // Remembered for 2 minutes exactly, whichever minute's hash holds the release.
    const auto remember = [&](long long at) {
        for (long long m = minute - 4; m <= minute + 1; ++m)
            w.admin.command({"DEL", "seatlock:released:{game1}:" + std::to_string(m)});
        w.admin.command({"HSET", "seatlock:released:{game1}:" + std::to_string(at / 60'000), hex,
                         std::to_string(at)});
    };
    remember(w.now_ms() - 119'000);
    CHECK(w.store.release(plain.token));
    CHECK(w.store.confirm(plain.token, "order-p").is(seatlock::errc::hold_not_active));
    remember(w.now_ms() - 121'000);
    CHECK(w.store.release(plain.token).is(seatlock::errc::unknown_hold));
    CHECK(w.store.confirm(plain.token, "order-p").is(seatlock::errc::unknown_hold));

    // With a key: the record, status released, until its timer 2 minutes out; a replay
    // of the key finds it whole.
    CHECK(w.admin.text({"HGET", event_key, "h:" + keyed.token}).starts_with("released=intent-1 "));
    CHECK(w.deadline(keyed.token) > 0);
    auto replay = w.store.hold("game1", "keyed", seatlock::named_seats("lower", {"A-2"}), keyed_options)
                      .value();
    CHECK(replay.replayed);
    CHECK(replay.status == seatlock::HoldStatus::released);

    // Once the memory is over, each is unknown, and the keyed hold's key is free again.
    w.admin.command({"ZADD", deadlines_key, "1", keyed.token});
    w.admin.command({"HSET", event_key, "due", "1"});
    CHECK(w.store.release(plain.token).is(seatlock::errc::unknown_hold));
    CHECK(w.store.confirm(plain.token, "order-p").is(seatlock::errc::unknown_hold));
    CHECK(w.store.release(keyed.token).is(seatlock::errc::unknown_hold));
    CHECK(w.admin.integer({"HEXISTS", event_key, "k:keyed:intent-1"}) == 0);
    auto again = w.store.hold("game1", "keyed", seatlock::named_seats("lower", {"A-2"}), keyed_options)
                     .value();
    CHECK_FALSE(again.replayed);
}

TEST_CASE("an acknowledged expired hold is forgotten by its timer, a late-confirmed one is kept") {
    World w;
    auto forgotten =
        w.store.hold("game1", "gone", seatlock::named_seats("lower", {"A-3"}), 50ms).value();
    auto paid_late =
        w.store.hold("game1", "late", seatlock::named_seats("lower", {"A-4"}), 50ms).value();
    std::this_thread::sleep_for(150ms);
    const std::vector<std::string> both{forgotten.token, paid_late.token};
    auto expected = both;
    std::sort(expected.begin(), expected.end());
    REQUIRE(w.expired_tokens() == expected);
    REQUIRE(w.store.ack_expired(both));
    REQUIRE(w.store.confirm_late(paid_late.token, "order-late"));

    // Each acknowledged hold has a timer an hour out, and "due" is no later than it.
    const long long forget_at = w.deadline("f:" + forgotten.token);
    REQUIRE(forget_at > 0);
    CHECK(w.deadline("f:" + paid_late.token) > 0);
    CHECK(w.due() <= forget_at);
    CHECK(w.admin.integer({"HEXISTS", event_key, "h:" + forgotten.token}) == 1);

    // Bring the hour forward: the next call forgets the expired hold only.
    w.admin.command({"ZADD", deadlines_key, "1", "f:" + forgotten.token});
    w.admin.command({"ZADD", deadlines_key, "1", "f:" + paid_late.token});
    w.admin.command({"HSET", event_key, "due", "1"});
    CHECK(w.state("A-3") == SeatState::free);
    CHECK(w.admin.integer({"HEXISTS", event_key, "h:" + forgotten.token}) == 0);
    CHECK(w.admin.integer({"HEXISTS", event_key, "h:" + paid_late.token}) == 1);
    CHECK(w.store.confirm(forgotten.token, "order-gone").is(seatlock::errc::unknown_hold));
    CHECK(w.store.confirm(paid_late.token, "order-late").value().id == "order-late");
    CHECK(w.admin.integer({"ZCARD", deadlines_key}) == 0);
    CHECK(w.due() == -1);  // no timer left
}

TEST_CASE("holds larger than one command chunk: named, best available, general admission") {
    World w(5000, 5000);
    std::vector<std::string> wanted;
    for (int n = 1; n <= 2500; ++n) wanted.push_back("A-" + std::to_string(2 * n));
    auto named = w.store.hold("game1", "bulk", seatlock::named_seats("lower", wanted)).value();
    CHECK(named.seats == wanted);
    auto best = w.store.hold("game1", "bulk", seatlock::best_available("lower", 2000)).value();
    CHECK(best.seats.size() == 2000);
    auto ga = w.store.hold("game1", "bulk", seatlock::quantity("bleachers", 3000)).value();
    CHECK(ga.seats.size() == 3000);
    auto zones = w.store.seats("game1").value();
    REQUIRE(zones.size() == 2);
    CHECK(zones[0].held == 4500);
    CHECK(zones[1].held == 3000);

    // Released, paid and cancelled back in full.
    REQUIRE(w.store.release(named.token));
    auto order = w.store.confirm(best.token, "bulk-order").value();
    CHECK(order.seats == best.seats);
    REQUIRE(w.store.release(ga.token));
    zones = w.store.seats("game1").value();
    CHECK(zones[0].free == 3000);
    CHECK(zones[0].paid == 2000);
    CHECK(zones[1].free == 5000);
    auto cancelled = w.store.cancel("game1", "bulk-order").value();
    CHECK(cancelled.cancelled);
    zones = w.store.seats("game1").value();
    CHECK(zones[0].free == 5000);
    CHECK(zones[0].held == 0);
    CHECK(zones[0].paid == 0);
    // Nothing of the holder is left: its counters are gone with its seats.
    CHECK(w.admin.integer({"HEXISTS", event_key, "u:bulk"}) == 0);
    CHECK(w.admin.integer({"HEXISTS", event_key, "v:bulk"}) == 0);

    // The same seats again, the whole zone at once, in zone order.
    auto all = w.store.hold("game1", "bulk", seatlock::best_available("lower", 5000)).value();
    CHECK(all.seats.front() == "A-1");
    CHECK(all.seats.back() == "A-5000");
}

TEST_CASE("the functions' memo of key names forgets past 1,000 events or zones and keeps working") {
    World w;
    for (int e = 0; e < 1005; ++e) {
        const std::string id = "memo" + std::to_string(e);
        REQUIRE(w.store.create_event(
            {id, "Memo", {seatlock::ZoneSpec::general_admission("floor", 2)}}));
        auto h = w.store.hold(id, "m", seatlock::quantity("floor", 1));
        REQUIRE_MESSAGE(h, id << ": " << h.error().message());
        CHECK(w.admin.integer({"ZCARD", "seatlock:deadlines:{" + id + "}"}) == 1);
    }
    // Zone names too, however many a caller makes up.
    for (int z = 0; z < 1005; ++z) {
        CHECK(w.store.hold("memo1", "m", seatlock::quantity("zone" + std::to_string(z), 1))
                  .is(seatlock::errc::unknown_zone));
    }
    CHECK(w.store.hold("memo1", "m", seatlock::quantity("floor", 1)));
    // Events seen before the memo started afresh are named right again.
    auto h = w.store.hold("memo0", "m", seatlock::quantity("floor", 1)).value();
    CHECK(h.seats == std::vector<std::string>{"2"});
    CHECK(w.admin.integer({"ZCARD", "seatlock:deadlines:{memo0}"}) == 2);
    REQUIRE(w.store.release(h.token));
    // The released hold's timer and record are gone, and it is remembered in a hash of its
    // own event; the other hold's timer is as it was.
    CHECK(w.admin.integer({"ZCARD", "seatlock:deadlines:{memo0}"}) == 1);
    CHECK(w.admin.integer({"HEXISTS", "seatlock:event:{memo0}", "h:" + h.token}) == 0);
    CHECK(w.admin.command({"KEYS", "seatlock:released:{memo0}:*"})->elements == 1);
}

namespace {

long long ms_of(seatlock::WallTime t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

/// The event hash's field `field` as a number; -1 when absent.
long long field_of(World& w, const std::string& field) {
    auto reply = w.admin.command({"HGET", event_key, field});
    if (reply->type == REDIS_REPLY_NIL) return -1;
    return std::stoll(std::string(reply->str, reply->len));
}

/// Checks that the held counts the writes keep (c:<zone>) are those of the zones' sets (the
/// map counts them from there), and that the last step's logged counts are the map's (the
/// changes after `before`, the version before it).
void check_counts(World& w, seatlock::EventVersion before, const char* step) {
    CAPTURE(step);
    const auto map = w.store.seats("game1").value();
    REQUIRE(map.zones.size() == 2);
    for (const auto& zone : map.zones) {
        CAPTURE(zone.zone);
        const long long kept = field_of(w, "c:" + zone.zone);
        if (kept >= 0) CHECK(kept == zone.held);
    }
    const auto page = w.store.changes("game1", before).value();
    REQUIRE(page.version == map.version);
    for (const auto& change : page.changes) {
        if (change.version != page.version) continue;  // an earlier step's counts
        for (const auto& zone : map.zones) {
            if (zone.zone != change.zone) continue;
            CAPTURE(zone.zone);
            CHECK(change.free == zone.free);
            CHECK(change.held == zone.held);
            CHECK(change.paid == zone.paid);
        }
    }
}

}  // namespace

TEST_CASE("the change log's counts come from each zone's held count, which every step keeps; held seats' expiries are fields") {
    World w;
    auto v = [&] { return w.store.seats("game1").value().version; };
    auto before = v();
    auto a = w.store.hold("game1", "amy", seatlock::named_seats("lower", {"A-1", "A-2"})).value();
    check_counts(w, before, "hold");
    CHECK(field_of(w, "c:lower") == 2);
    // A held seat's expiry is the field x:<zone>:<seat>, as seats() answers it.
    const long long a_expires = field_of(w, "x:lower:A-1");
    CHECK(a_expires == ms_of(a.expires_at));
    CHECK(field_of(w, "x:lower:A-2") == a_expires);
    before = v();
    auto ga = w.store.hold("game1", "bo", seatlock::quantity("bleachers", 3)).value();
    check_counts(w, before, "general-admission hold");
    CHECK(field_of(w, "c:bleachers") == 3);
    before = v();
    REQUIRE(w.store.release(ga.token));
    check_counts(w, before, "general-admission release");
    before = v();
    auto b = w.store.hold("game1", "cy", seatlock::best_available("lower", 2)).value();
    check_counts(w, before, "best available");
    before = v();
    auto extended = w.store.extend(b.token, 20min).value();
    check_counts(w, before, "extend");
    CHECK(field_of(w, "x:lower:" + b.seats[0]) == ms_of(extended.expires_at));
    before = v();
    REQUIRE(w.store.confirm(a.token, "pay-amy"));
    check_counts(w, before, "confirm");
    CHECK(field_of(w, "x:lower:A-1") == -1);  // no longer held: no expiry
    CHECK(field_of(w, "x:lower:A-2") == -1);
    before = v();
    REQUIRE(w.store.release(b.token));
    check_counts(w, before, "release");
    CHECK(field_of(w, "x:lower:" + b.seats[0]) == -1);
    CHECK(field_of(w, "c:lower") == 0);
    before = v();
    REQUIRE(w.store.cancel("game1", "pay-amy"));
    check_counts(w, before, "cancel");
    // The expiry sweep.
    before = v();
    auto short_hold = w.store.hold("game1", "dee", seatlock::named_seats("lower", {"A-5"}), 100ms).value();
    auto short_ga = w.store.hold("game1", "dee", seatlock::quantity("bleachers", 2), 100ms).value();
    CHECK(field_of(w, "c:lower") == 1);
    std::this_thread::sleep_for(250ms);
    check_counts(w, before, "expiry");
    CHECK(field_of(w, "c:lower") == 0);
    CHECK(field_of(w, "c:bleachers") == 0);
    CHECK(field_of(w, "x:lower:A-5") == -1);
    (void)short_hold;
    (void)short_ga;

    // An event stored before the held counts existed has none: each zone is counted from its
    // sets by the first step that holds or frees seats there, which writes the count.
    auto e = w.store.hold("game1", "eve", seatlock::named_seats("lower", {"A-7", "A-8", "A-9"})).value();
    auto f = w.store.hold("game1", "fay", seatlock::quantity("bleachers", 4)).value();
    w.admin.command({"HDEL", event_key, "c:lower", "c:bleachers"});
    before = v();
    auto g = w.store.hold("game1", "gus", seatlock::named_seats("lower", {"A-10"})).value();
    check_counts(w, before, "hold without a held count");
    CHECK(field_of(w, "c:lower") == 4);
    CHECK(field_of(w, "c:bleachers") == -1);  // not touched yet
    before = v();
    REQUIRE(w.store.release(f.token));
    check_counts(w, before, "release without a held count");
    CHECK(field_of(w, "c:bleachers") == 0);
    w.admin.command({"HDEL", event_key, "c:lower"});
    before = v();
    REQUIRE(w.store.confirm(e.token, "pay-eve"));
    check_counts(w, before, "confirm without a held count");
    CHECK(field_of(w, "c:lower") == 1);
    REQUIRE(w.store.release(g.token));
    CHECK(field_of(w, "c:lower") == 0);
}

TEST_CASE("the change log is trimmed approximately, and answers as if it kept exactly its last log_limit steps") {
    seatlock::testing::RedisServer server;
    seatlock::testing::RedisAdmin admin{server.port()};
    auto options = options_for(server);
    options.change_log_limit = 5;
    seatlock::RedisBackend backend{options};
    seatlock::SeatHoldStore<seatlock::RedisBackend> store{backend, no_limit()};
    store.create_event({"game1", "Trim", {seatlock::ZoneSpec::named("lower", seats("A", 400))}}).value();
    std::vector<seatlock::EventVersion> versions;
    std::vector<std::string> tokens;
    for (int n = 1; n <= 400; ++n) {
        auto h = store.hold("game1", "h" + std::to_string(n), seatlock::named_seats("lower", {"A-" + std::to_string(n)}));
        REQUIRE(h);
        versions.push_back(h->version);
        tokens.push_back(h->token);
    }
    // Redis keeps more than 5 entries (it trims whole nodes of the stream), and far fewer
    // than every step.
    const long long stored = admin.integer({"XLEN", "seatlock:changes:{game1}"});
    CHECK(stored > 5);
    CHECK(stored < 400);
    // The last 5 steps are there; the step before them, though still stored, is not answered.
    auto kept = store.changes("game1", versions[394]);
    REQUIRE(kept);
    CHECK(kept->changes.size() == 5);
    CHECK(kept->changes.front().seat == "A-396");
    CHECK(store.changes("game1", versions[393]).is(seatlock::errc::changes_trimmed));
    CHECK(store.changes("game1", versions[400 - stored]).is(seatlock::errc::changes_trimmed));
    CHECK(store.changes("game1", versions[0]).is(seatlock::errc::changes_trimmed));
    // A step that logs nothing (a retried release) raises the version all the same: the
    // bound counts logged steps.
    REQUIRE(store.release(tokens.back()));
    REQUIRE(store.release(tokens.back()));
    CHECK(store.changes("game1", versions[394]).is(seatlock::errc::changes_trimmed));
    auto last = store.changes("game1", versions[395]);
    REQUIRE(last);
    CHECK(last->changes.size() == 5);
    CHECK(last->changes.back().seat == "A-400");
    CHECK(last->changes.back().state == SeatState::free);
}

}  // namespace storage_test
