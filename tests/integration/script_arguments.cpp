// SPDX-License-Identifier: MIT
// The library's functions, called directly through hiredis with malformed arguments, answer with
// an error and change nothing: not even the sweep of an overdue hold runs, because every
// argument is checked before the first write.
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>
#include <seatlock_redis_scripts.hpp>

#include <thread>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace script_arguments_test {

namespace {

using namespace std::chrono_literals;
using seatlock::redis_scripts::Script;
using Args = std::vector<std::string>;

const std::string token_a = "game1.0123456789abcdef0123456789abcdef";
const std::string owner = "0123456789abcdef0123456789abcdef";

std::string key(const std::string& kind, const std::string& rest = "") {
    return "seatlock:" + kind + ":{game1}" + (rest.empty() ? "" : ":" + rest);
}
Args event_keys() {
    return {key("event"), key("paid"), key("deadlines"), key("expired")};
}
Args plus(Args a, const Args& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
Args with(Args a, std::size_t i, std::string value) {
    a.at(i) = std::move(value);
    return a;
}
Args without_last(Args a) {
    a.pop_back();
    return a;
}

/// A server with an event, a live hold, an overdue hold, an order and a lock in it.
struct World {
    seatlock::testing::RedisServer server;
    seatlock::testing::RedisAdmin admin{server.port()};
    std::map<std::string, std::string> before;

    World() {
        seatlock::RedisOptions o;
        o.port = server.port();
        seatlock::RedisBackend backend(o);
        seatlock::SeatHoldStore store(backend);
        std::vector<seatlock::SeatSpec> seats;
        for (int n = 1; n <= 6; ++n) seats.push_back({"A-" + std::to_string(n), "A"});
        store
            .create_event({"game1",
                           "Scripts",
                           {seatlock::ZoneSpec::named("lower", seats),
                            seatlock::ZoneSpec::general_admission("bleachers", 10)}})
            .value();
        store.hold("game1", "live", seatlock::named_seats("lower", {"A-1"})).value();
        auto paid = store.hold("game1", "payer", seatlock::quantity("bleachers", 2)).value();
        store.confirm(paid.token, "order-1").value();
        const std::vector<std::string> lock{"game1:A-1"};
        backend.run(seatlock::op::acquire_locks{lock, owner, 5min}).value();
        // Last, so that no call on the event sweeps it before the tests run.
        store.hold("game1", "overdue", seatlock::named_seats("lower", {"A-2"}), 50ms).value();
        std::this_thread::sleep_for(100ms);  // the second hold is now overdue
        before = admin.snapshot();
    }

    /// Runs `script` by FCALL and checks that the server refused it as malformed.
    void rejects(const Script& script, const Args& keys, const Args& args) {
        Args command{"FCALL", std::string(script.function), std::to_string(keys.size())};
        command = plus(plus(command, keys), args);
        auto reply = admin.command(command);
        const std::string message =
            reply->type == REDIS_REPLY_ERROR ? std::string(reply->str, reply->len) : "";
        std::string call;
        for (std::size_t i = 2; i < command.size(); ++i) call += " " + command[i];
        CHECK_MESSAGE(
            message.find("malformed argument") != std::string::npos,
            script.name << call << " answered: " << (message.empty() ? "no error" : message));
    }

    bool unchanged() { return admin.snapshot() == before; }
};

}  // namespace

TEST_CASE("hold.lua rejects malformed arguments and changes nothing") {
    World w;
    const Args keys = plus(event_keys(), {key("free", "lower"), key("seats", "lower")});
    const Args args{"seatlock", "game1", "alice", token_a, "lower", "seats",
                    "1",        "60000", "3",     "0",     "10000", "",     "A-5"};
    for (const char* ttl : {"abc", "0", "-5", "1e3", "99999999999999999999", ""}) {
        w.rejects(seatlock::redis_scripts::hold, keys, with(args, 7, ttl));
    }
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 6, "0"));     // no seat
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 6, "2"));     // count != seats given
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 12, "A:5"));  // seat id with ':'
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 12, "{A-5}"));            // braces
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 11, "key with space"));   // bad key
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 11, "k=1"));
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 10, "0"));  // log limit
    w.rejects(seatlock::redis_scripts::hold, keys, plus(with(args, 6, "2"), {"A-5"}));  // twice
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 2, "al ice"));
    w.rejects(seatlock::redis_scripts::hold, keys,
              with(args, 3, "game2.0123456789abcdef0123456789abcdef"));
    w.rejects(seatlock::redis_scripts::hold, keys,
              with(args, 3, "game1.0123456789ABCDEF0123456789ABCDEF"));
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 3, "game1.0123"));
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 5, "everything"));
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 8, "-1"));
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 9, "2"));
    w.rejects(seatlock::redis_scripts::hold, keys, with(args, 0, "seat{lock}"));
    w.rejects(seatlock::redis_scripts::hold, keys, without_last(args));
    w.rejects(seatlock::redis_scripts::hold, keys, {});
    w.rejects(seatlock::redis_scripts::hold, with(keys, 4, key("free", "upper")), args);
    w.rejects(seatlock::redis_scripts::hold, without_last(keys), args);
    const Args quantity{"seatlock", "game1", "alice", token_a, "bleachers",
                        "quantity", "2",     "60000", "3",     "0",    "10000", ""};
    w.rejects(seatlock::redis_scripts::hold, keys, plus(quantity, {"extra"}));
    w.rejects(seatlock::redis_scripts::hold, keys, with(quantity, 6, "1000001"));
    CHECK(w.unchanged());
}

TEST_CASE("confirm.lua rejects malformed arguments and changes nothing") {
    World w;
    const Args keys = event_keys();
    const Args args{"seatlock", "game1", token_a, "order-9", "0", "3", "10000"};
    w.rejects(seatlock::redis_scripts::confirm, keys, with(args, 3, "order 9"));
    w.rejects(seatlock::redis_scripts::confirm, keys, with(args, 4, "yes"));
    w.rejects(seatlock::redis_scripts::confirm, keys, with(args, 5, "many"));
    w.rejects(seatlock::redis_scripts::confirm, keys, with(args, 2, "nonsense"));
    w.rejects(seatlock::redis_scripts::confirm, keys, with(args, 6, "many"));
    w.rejects(seatlock::redis_scripts::confirm, keys, plus(args, {"more"}));
    w.rejects(seatlock::redis_scripts::confirm, plus(keys, {key("order", "order-8")}), args);
    w.rejects(seatlock::redis_scripts::confirm, with(keys, 1, key("held")), args);
    CHECK(w.unchanged());
}

TEST_CASE("release.lua and extend.lua reject malformed arguments and change nothing") {
    World w;
    const Args keys = event_keys();
    w.rejects(seatlock::redis_scripts::release, keys, {"seatlock", "game1", token_a, "10000", "extra"});
    w.rejects(seatlock::redis_scripts::release, keys, {"seatlock", "game 1", token_a, "10000"});
    w.rejects(seatlock::redis_scripts::release, keys, {"seatlock", "game1", "game1.xyz", "10000"});
    w.rejects(seatlock::redis_scripts::release, keys, {"seatlock", "game1", token_a, "1000001"});
    const Args extend{"seatlock", "game1", token_a, "60000", "7200000", "10000"};
    w.rejects(seatlock::redis_scripts::extend, keys, with(extend, 3, "0"));
    w.rejects(seatlock::redis_scripts::extend, keys, with(extend, 4, "x"));
    w.rejects(seatlock::redis_scripts::extend, keys, without_last(extend));
    w.rejects(seatlock::redis_scripts::extend, with(keys, 0, key("event") + "x"), extend);
    CHECK(w.unchanged());
}

TEST_CASE("cancel.lua, seats_page.lua, changes.lua, expired.lua and ack_expired.lua reject malformed arguments") {
    World w;
    const Args cancel_keys = event_keys();
    w.rejects(seatlock::redis_scripts::cancel, cancel_keys,
              {"seatlock", "game1", "order-1", "1", "", "10000"});
    w.rejects(seatlock::redis_scripts::cancel, cancel_keys,
              {"seatlock", "game1", "order-1", "0", "payer", "10000"});
    w.rejects(seatlock::redis_scripts::cancel, cancel_keys,
              {"seatlock", "game1", "order-1", "2", "payer", "10000"});
    w.rejects(seatlock::redis_scripts::seats_page, event_keys(), {"seatlock", "game1", "10000", "low er"});
    w.rejects(seatlock::redis_scripts::seats_page, event_keys(), {"seatlock", "game1", "10000"});
    w.rejects(seatlock::redis_scripts::seats_page, event_keys(), {"seatlock", "game1", "x", "lower"});
    w.rejects(seatlock::redis_scripts::seats_page, event_keys(),
              {"seatlock", "game1", "10000", "lower", "A-1", "A 2"});
    {
        Args many{"seatlock", "game1", "10000", "lower"};
        for (int i = 0; i <= 1000; ++i) many.push_back("S-" + std::to_string(i));
        w.rejects(seatlock::redis_scripts::seats_page, event_keys(), many);
    }
    w.rejects(seatlock::redis_scripts::changes, event_keys(), {"seatlock", "game1", "0", "0", "10000"});
    w.rejects(seatlock::redis_scripts::changes, event_keys(), {"seatlock", "game1", "x", "10", "10000"});
    w.rejects(seatlock::redis_scripts::changes, event_keys(), {"seatlock", "game1", "0", "10"});
    w.rejects(seatlock::redis_scripts::expired, event_keys(), {"seatlock", "game1", "0", "1000", "10000"});
    w.rejects(seatlock::redis_scripts::expired, event_keys(), {"seatlock", "game1", "10", "-1", "10000"});
    w.rejects(seatlock::redis_scripts::ack_expired, event_keys(), {"seatlock", "game1"});
    w.rejects(seatlock::redis_scripts::ack_expired, event_keys(),
              {"seatlock", "game1", token_a, "game2.0123456789abcdef0123456789abcdef"});
    CHECK(w.unchanged());
}

TEST_CASE("restore_order.lua and event_show.lua reject malformed arguments and change nothing") {
    World w;
    const Args keys = plus(event_keys(), {key("free", "lower"), key("seats", "lower")});
    const Args args{"seatlock", "game1",         "order-r", "alice", "lower",
                    token_a,    "1767225600000", "10000",   "1",     "A-5"};
    w.rejects(seatlock::redis_scripts::restore_order, keys, with(args, 6, "-1"));    // paid at
    w.rejects(seatlock::redis_scripts::restore_order, keys, with(args, 8, "0"));     // no seat
    w.rejects(seatlock::redis_scripts::restore_order, keys, with(args, 8, "2"));     // count
    w.rejects(seatlock::redis_scripts::restore_order, keys, with(args, 9, "A:5"));   // seat id
    w.rejects(seatlock::redis_scripts::restore_order, keys, with(args, 7, ""));      // log limit
    w.rejects(seatlock::redis_scripts::restore_order, keys, with(args, 3, "al ice"));
    w.rejects(seatlock::redis_scripts::restore_order, keys,
              with(args, 5, "game2.0123456789abcdef0123456789abcdef"));
    w.rejects(seatlock::redis_scripts::restore_order, without_last(keys), args);
    w.rejects(seatlock::redis_scripts::restore_order, with(keys, 4, key("free", "upper")), args);
    w.rejects(seatlock::redis_scripts::event_show, {key("event")}, {"seatlock", "game 1"});
    w.rejects(seatlock::redis_scripts::event_show, {key("paid")}, {"seatlock", "game1"});
    w.rejects(seatlock::redis_scripts::event_show, {key("event")}, {"seatlock", "game1", "x"});
    CHECK(w.unchanged());
}

TEST_CASE("event_create.lua and events.lua reject malformed arguments and change nothing") {
    World w;
    const Args keys{"seatlock:event:{game5}", "seatlock:free:{game5}:z", "seatlock:seats:{game5}:z"};
    const Args named{"seatlock", "game5", "Game", "1", "z", "named", "2", "S-1", "R", "S-2", "R"};
    w.rejects(seatlock::redis_scripts::event_create, keys, with(named, 3, "2"));    // zone count
    w.rejects(seatlock::redis_scripts::event_create, keys, with(named, 5, "vip"));  // kind
    w.rejects(seatlock::redis_scripts::event_create, keys, with(named, 6, "0"));    // no seat
    w.rejects(seatlock::redis_scripts::event_create, keys, with(named, 9, "S-1"));  // seat twice
    w.rejects(seatlock::redis_scripts::event_create, keys, with(named, 8, "R 1"));  // row id
    w.rejects(seatlock::redis_scripts::event_create, keys, with(named, 2, std::string(300, 'x')));
    w.rejects(seatlock::redis_scripts::event_create, keys, plus(named, {"S-3", "R"}));
    w.rejects(seatlock::redis_scripts::event_create, without_last(keys), named);
    const Args ga{"seatlock", "game5", "Game", "1", "z", "general_admission", "1000001"};
    w.rejects(seatlock::redis_scripts::event_create, keys, ga);
    w.rejects(seatlock::redis_scripts::event_create, keys, with(ga, 6, "-1"));
    const Args two_zones{
        "seatlock",          "game5", "Game", "2", "z", "general_admission", "5", "z",
        "general_admission", "5"};
    w.rejects(seatlock::redis_scripts::event_create,
              plus(keys, {"seatlock:free:{game5}:z", "seatlock:seats:{game5}:z"}),
              two_zones);
    w.rejects(seatlock::redis_scripts::events, {"seatlock:other"}, {"seatlock"});
    CHECK(w.unchanged());
}

TEST_CASE("the lock scripts reject malformed arguments and change nothing") {
    World w;
    const Args keys{"seatlock:lock:{game1}:A-9", "seatlock:fence:{game1}"};
    const Args args{owner, "60000", "1"};
    w.rejects(seatlock::redis_scripts::lock_acquire, keys, with(args, 0, "not-hex"));
    w.rejects(seatlock::redis_scripts::lock_acquire, keys, with(args, 0, owner + "0"));
    w.rejects(seatlock::redis_scripts::lock_acquire, keys, with(args, 1, "0"));
    w.rejects(seatlock::redis_scripts::lock_acquire, keys,
              with(args, 2, "2"));  // no fence key left
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"seatlock:lock:{game1}:A-9", "seatlock:fence:{game2}"}, args);
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"seatlock:lock:{game1}:A-9", "seatlock:fence:{game1}", "seatlock:fence:{game1}"},
              args);
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"seatlock:game1:A-9", "seatlock:fence:{game1}"}, args);
    // A key's group is the braces after its first ":lock:", whole.
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"seatlock:lock:{game12}:A-9", "seatlock:fence:{game1}"}, args);
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"seatlock:lock:{game2}:lock:{game1}:A-9", "seatlock:fence:{game1}"}, args);
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"seatlock:lock:{game1}:A-9", "seatlock:lock:{game2}:A-9", "seatlock:fence:{game1}"},
              with(args, 2, "2"));
    // A lock key starts with its fence key's prefix, which has no braces.
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"other:lock:{game1}:A-9", "seatlock:fence:{game1}"}, args);
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"x{y}:lock:{game1}:A-9", "x{y}:fence:{game1}"}, args);
    // Several groups: every fence key is used, and every lock key has its own.
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"seatlock:lock:{game1}:A-9", "seatlock:fence:{game1}", "seatlock:fence:{game3}"},
              args);
    w.rejects(seatlock::redis_scripts::lock_acquire,
              {"seatlock:lock:{game1}:A-9", "other:lock:{game2}:A-9", "seatlock:fence:{game1}",
               "seatlock:fence:{game2}"},
              with(args, 2, "2"));
    // Twice: what the script remembers of a fence key it refused changes nothing.
    for (int i = 0; i < 2; ++i) {
        w.rejects(seatlock::redis_scripts::lock_acquire,
                  {"seatlock:lock:{game1}:A-9", "seatlock:fence:game1"}, args);
    }
    w.rejects(seatlock::redis_scripts::lock_release, {"seatlock:lock:{game1}:A-1"}, {"nope"});
    w.rejects(seatlock::redis_scripts::lock_release, {"plain-key"}, {owner});
    w.rejects(seatlock::redis_scripts::lock_release, {"seatlock:lock:{game1:A-1"}, {owner});
    w.rejects(seatlock::redis_scripts::lock_release,
              {"seatlock:lock:{game1}:A-1", "seatlock:lock:{ga{me1}:A-1"}, {owner});
    w.rejects(seatlock::redis_scripts::lock_release, {}, {owner});
    w.rejects(seatlock::redis_scripts::lock_extend, {"seatlock:lock:{game1}:A-1"}, {owner, "-1"});
    w.rejects(seatlock::redis_scripts::lock_extend, {"seatlock:lock:{game1}:A-1"}, {owner});
    CHECK(w.unchanged());
}

TEST_CASE("the waiting room's functions reject malformed arguments and change nothing") {
    World w;
    {
        seatlock::RedisOptions o;
        o.port = w.server.port();
        seatlock::RedisBackend backend(o);
        seatlock::WaitingRoom room(backend, seatlock::AdmissionKey(std::string(32, 'k')));
        room.configure("room1", {std::chrono::system_clock::now() - 1s, 10, 5, 1min, 1min, "seed"}).value();
        room.join("room1", "amy").value();
        room.join("room1", "bo").value();
        room.admit("room1").value();
    }
    w.before = w.admin.snapshot();
    namespace scripts = seatlock::redis_scripts;
    const Args keys{"seatlock:room:{room1}", "seatlock:line:{room1}", "seatlock:active:{room1}"};
    const Args configure{"seatlock", "room1", "1000", "10", "5", "60000", "60000", "seed", "0"};
    w.rejects(scripts::room_configure, keys, with(configure, 1, "room 1"));
    w.rejects(scripts::room_configure, keys, with(configure, 2, "-5"));
    for (const char* rate : {"0", "-1", "x", "2000000", "nan", "inf"})
        w.rejects(scripts::room_configure, keys, with(configure, 3, rate));
    w.rejects(scripts::room_configure, keys, with(configure, 4, "0"));
    w.rejects(scripts::room_configure, keys, with(configure, 5, "0"));
    w.rejects(scripts::room_configure, keys, with(configure, 6, "0"));
    w.rejects(scripts::room_configure, keys, with(configure, 7, "a seed"));
    w.rejects(scripts::room_configure, keys, with(configure, 8, "2"));
    w.rejects(scripts::room_configure, keys, without_last(configure));
    w.rejects(scripts::room_configure, with(keys, 1, "seatlock:line:{room2}"), configure);
    w.rejects(scripts::room_configure, without_last(keys), configure);
    for (const Script* script : {&scripts::room_join, &scripts::room_position, &scripts::room_admission,
                                 &scripts::room_finished}) {
        const Args args{"seatlock", "room1", "amy"};
        w.rejects(*script, keys, with(args, 2, "a:my"));
        w.rejects(*script, keys, with(args, 1, "room2"));
        w.rejects(*script, keys, with(args, 0, "other"));
        w.rejects(*script, keys, without_last(args));
        w.rejects(*script, {keys[0], keys[2], keys[1]}, args);
    }
    w.rejects(scripts::room_admit, keys, {"seatlock", "room1", "0"});
    w.rejects(scripts::room_admit, keys, {"seatlock", "room1", "1001"});
    w.rejects(scripts::room_admit, keys, {"seatlock", "room1"});
    CHECK(w.unchanged());
}

TEST_CASE("well-formed calls through the same path do change state (the harness can see it)") {
    World w;
    auto reply = w.admin.command(
        plus({"FCALL", std::string(seatlock::redis_scripts::release.function), "4"},
             plus(event_keys(), {"seatlock", "game1", token_a, "10000"})));
    REQUIRE(reply->type ==
            REDIS_REPLY_ARRAY);  // a refusal (unknown hold), yet the overdue hold was swept
    CHECK_FALSE(w.unchanged());
}

TEST_CASE(
    "a malformed command handed to RedisBackend directly is script_error with the server's "
    "message") {
    World w;
    seatlock::RedisOptions o;
    o.port = w.server.port();
    seatlock::RedisBackend backend(o);
    // SeatHoldStore would refuse this holder id; the backend trusts its caller, the script does
    // not.
    seatlock::HoldCommand cmd{"game1",
                              "bad holder",
                              token_a,
                              seatlock::named_seats("lower", {"A-5"}),
                              std::chrono::minutes(1),
                              {3, false},
                              {}};
    auto h = backend.run(seatlock::op::hold{cmd});
    REQUIRE(h.is(seatlock::errc::script_error));
    CHECK(h.error().detail.find("malformed argument: holder id") != std::string::npos);
    CHECK(w.unchanged());
}

}  // namespace script_arguments_test
