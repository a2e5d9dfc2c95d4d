// SPDX-License-Identifier: MIT
// tests/unit/request_queue_test.cpp: the pipelined connection's protocol logic
// (src/redis/request_queue.hpp) without a socket or a server: requests in, bytes out,
// replies (parsed from RESP text) matched to requests, the time given as an input.
#include "request_queue.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resp_writer.hpp"
#include "seatlock_redis_scripts.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace request_queue_test {

namespace {

using namespace std::chrono_literals;
using seatlock::errc;
using seatlock::Result;
using seatlock::redis_detail::format_command;
using seatlock::redis_detail::ReplyPtr;
using seatlock::redis_detail::RequestQueue;
using Kind = RequestQueue::Kind;
using Verdict = RequestQueue::Verdict;
using Deadline = RequestQueue::Deadline;
using Clock = RequestQueue::Clock;

// One reply, parsed from its RESP text as the connection's reader would.
ReplyPtr reply(std::string_view resp) {
    std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(),
                                                                redisReaderFree);
    REQUIRE(redisReaderFeed(reader.get(), resp.data(), resp.size()) == REDIS_OK);
    void* raw = nullptr;
    REQUIRE(redisReaderGetReply(reader.get(), &raw) == REDIS_OK);
    REQUIRE(raw != nullptr);
    return ReplyPtr(static_cast<redisReply*>(raw));
}

std::string resp(std::vector<std::string_view> argv) {
    return format_command(argv);
}

RequestQueue::Request command(std::vector<std::string_view> argv, bool asking = false) {
    return {Kind::command, resp(argv), std::string(argv.front()), {}, 0, {}, asking};
}

RequestQueue::Request fcall(std::string_view function) {
    return {Kind::fcall, resp({"FCALL", function, "0"}), std::string(function), {}, 0, {}, false};
}

seatlock::RedisOptions options() {
    seatlock::RedisOptions o;
    o.command_timeout = 100ms;
    return o;
}

const Clock::time_point t0{};

}  // namespace

TEST_CASE("requests are written in order, in one buffer, and replies matched first in, first out") {
    const auto o = options();
    RequestQueue queue(o, "127.0.0.1:6379");
    CHECK(queue.idle());
    queue.push(command({"INCR", "a"}));
    queue.push(command({"INCR", "b"}));
    CHECK(queue.has_unwritten());
    std::string out;
    CHECK(queue.write(out, t0) == 2);
    CHECK(out == resp({"INCR", "a"}) + resp({"INCR", "b"}));
    CHECK_FALSE(queue.has_unwritten());
    CHECK(queue.written() == 2);

    auto first = queue.on_reply(reply(":1\r\n"));
    CHECK(first.verdict == Verdict::deliver);
    CHECK(first.request.what == "INCR");
    CHECK(first.reply->integer == 1);
    // An error reply is the server's answer, handed like any other.
    auto second = queue.on_reply(reply("-ERR wrong type\r\n"));
    CHECK(second.verdict == Verdict::deliver);
    CHECK(second.reply->type == REDIS_REPLY_ERROR);
    CHECK(queue.idle());
}

TEST_CASE("ASKING is written right before a request that needs it; its own reply is not handed") {
    const auto o = options();
    RequestQueue queue(o, "node");
    queue.push(command({"GET", "k"}, true));
    std::string out;
    CHECK(queue.write(out, t0) == 2);
    CHECK(out == resp({"ASKING"}) + resp({"GET", "k"}));
    CHECK(queue.on_reply(reply("+OK\r\n")).verdict == Verdict::none);
    auto answer = queue.on_reply(reply("$1\r\nv\r\n"));
    CHECK(answer.verdict == Verdict::deliver);
    CHECK(answer.request.what == "GET");
}

TEST_CASE("AUTH and SELECT go first, and their answers decide whether callers' requests may go") {
    auto o = options();
    o.user = "app";
    o.password = "pw";
    o.db = 3;
    RequestQueue queue(o, "127.0.0.1:6379");
    std::string out;
    CHECK(queue.write_handshake(out, t0) == 2);
    CHECK(out == resp({"AUTH", "app", "pw"}) + resp({"SELECT", "3"}));

    SUBCASE("both accepted") {
        CHECK(queue.on_reply(reply("+OK\r\n")).verdict == Verdict::handshake_step);
        CHECK(queue.on_reply(reply("+OK\r\n")).verdict == Verdict::handshake_done);
    }
    SUBCASE("AUTH refused: auth_failed, naming the user, never the password") {
        auto answer = queue.on_reply(reply("-WRONGPASS invalid username-password pair\r\n"));
        REQUIRE(answer.verdict == Verdict::handshake_refused);
        CHECK(answer.failure->is(errc::auth_failed));
        CHECK(answer.failure->detail.find("refused AUTH for user app") != std::string::npos);
        CHECK(answer.failure->detail.find("pw") == std::string::npos);
    }
    SUBCASE("SELECT refused: connection_failed") {
        CHECK(queue.on_reply(reply("+OK\r\n")).verdict == Verdict::handshake_step);
        auto answer = queue.on_reply(reply("-ERR DB index is out of range\r\n"));
        REQUIRE(answer.verdict == Verdict::handshake_refused);
        CHECK(answer.failure->is(errc::connection_failed));
    }
    SUBCASE("unanswered: what waited behind it is connection_failed") {
        queue.push(command({"PING"}));
        CHECK_FALSE(queue.take_written().has_value());  // AUTH and SELECT are the queue's own
        CHECK(queue.unanswered_handshake("no reply").is(errc::connection_failed));
        auto held = queue.take_unwritten();
        REQUIRE(held.has_value());
        CHECK(held->what == "PING");
    }
    CHECK(RequestQueue(options(), "x").write_handshake(out, t0) == 0);  // neither needed
}

TEST_CASE("over TLS without AUTH or SELECT, PING goes first and callers' requests wait for it") {
    auto o = options();
    o.tls.enabled = true;
    RequestQueue queue(o, "127.0.0.1:6380");
    std::string out;
    CHECK(queue.write_handshake(out, t0) == 1);
    CHECK(out == resp({"PING"}));
    SUBCASE("answered: callers' requests may go") {
        CHECK(queue.on_reply(reply("+PONG\r\n")).verdict == Verdict::handshake_done);
    }
    SUBCASE("refused for want of AUTH: auth_failed") {
        auto answer = queue.on_reply(reply("-NOAUTH Authentication required.\r\n"));
        REQUIRE(answer.verdict == Verdict::handshake_refused);
        CHECK(answer.failure->is(errc::auth_failed));
        CHECK(answer.failure->detail.find("refused PING") != std::string::npos);
    }
    SUBCASE("unanswered (a client certificate refused after the handshake): connection_failed") {
        queue.push(command({"GET", "k"}));
        CHECK_FALSE(queue.take_written().has_value());  // PING is the queue's own
        CHECK(queue.unanswered_handshake("tlsv13 alert certificate required")
                  .is(errc::connection_failed));
    }
    // With AUTH, AUTH is the handshake: no PING besides.
    o.password = "pw";
    std::string with_auth;
    CHECK(RequestQueue(o, "x").write_handshake(with_auth, t0) == 1);
    CHECK(with_auth == resp({"AUTH", "pw"}));
}

TEST_CASE("FCALLs answered 'Function not found' wait for one FUNCTION LOAD, then go again first") {
    const auto o = options();
    RequestQueue queue(o, "127.0.0.1:6379");
    queue.push(fcall("hold"));
    queue.push(fcall("release"));
    std::string out;
    CHECK(queue.write(out, t0) == 2);
    queue.push(command({"PING"}));  // sent meanwhile, after them

    const std::string not_found = "-ERR Function not found\r\n";
    CHECK(queue.on_reply(reply(not_found)).verdict == Verdict::none);
    CHECK(queue.on_reply(reply(not_found)).verdict == Verdict::none);
    out.clear();
    CHECK(queue.write(out, t0) == 2);  // one FUNCTION LOAD, ahead of the PING
    CHECK(out == resp({"FUNCTION", "LOAD", seatlock::redis_scripts::library}) + resp({"PING"}));
    CHECK(queue.on_reply(reply("+PONG\r\n")).verdict == Verdict::none);  // the load's answer...

    SUBCASE("loaded: the FCALLs go again, in their order") {
        CHECK(queue.on_reply(reply("+PONG\r\n")).verdict == Verdict::deliver);  // PING
        out.clear();
        CHECK(queue.write(out, t0) == 2);
        CHECK(out == resp({"FCALL", "hold", "0"}) + resp({"FCALL", "release", "0"}));
        // A second "Function not found" (a flush between load and call) loads again; a third
        // is the answer.
        CHECK(queue.on_reply(reply(not_found)).verdict == Verdict::none);
        CHECK(queue.on_reply(reply(":1\r\n")).verdict == Verdict::deliver);
        out.clear();
        CHECK(queue.write(out, t0) == 1);
        CHECK(queue.on_reply(reply("+OK\r\n")).verdict == Verdict::none);
        out.clear();
        CHECK(queue.write(out, t0) == 1);
        auto last = queue.on_reply(reply(not_found));
        CHECK(last.verdict == Verdict::deliver);
        CHECK(last.request.loads == 2);
    }
}

TEST_CASE("a refused FUNCTION LOAD fails the FCALLs waiting for it with the server's refusal") {
    const auto o = options();
    RequestQueue queue(o, "127.0.0.1:6379");
    queue.push(fcall("hold"));
    std::string out;
    queue.write(out, t0);
    CHECK(queue.on_reply(reply("-ERR Function not found\r\n")).verdict == Verdict::none);
    queue.write(out, t0);
    auto answer = queue.on_reply(reply("-ERR Error compiling function\r\n"));
    REQUIRE(answer.verdict == Verdict::load_refused);
    CHECK(answer.failure->is(errc::script_error));
    auto waiter = queue.take_load_waiter();
    REQUIRE(waiter.has_value());
    CHECK(waiter->what == "hold");
    CHECK_FALSE(queue.take_load_waiter().has_value());
    CHECK(queue.idle());
}

TEST_CASE(
    "the command timeout: later before the oldest deadline, overdue after, grace for a reply "
    "read") {
    const auto o = options();
    RequestQueue queue(o, "127.0.0.1:6379");
    CHECK(queue.on_timer(t0, [] { return false; }) == Deadline::none);
    queue.push(command({"INCR", "a"}));
    std::string out;
    queue.write(out, t0);
    queue.push(command({"INCR", "b"}));
    queue.write(out, t0 + 50ms);
    CHECK(queue.oldest_deadline() == t0 + 100ms);
    bool asked = false;
    auto waiting = [&] {
        asked = true;
        return false;
    };
    CHECK(queue.on_timer(t0 + 99ms, waiting) == Deadline::later);
    CHECK_FALSE(asked);  // the socket is looked at only once a deadline passed
    CHECK(queue.on_timer(t0 + 100ms, [] { return true; }) == Deadline::later);
    CHECK(queue.oldest_deadline() == t0 + 110ms);  // a short grace, not a new timeout
    CHECK(queue.on_timer(t0 + 110ms, waiting) == Deadline::overdue);
    CHECK(asked);
    // Answered: the next request's own deadline counts.
    CHECK(queue.on_reply(reply(":1\r\n")).verdict == Verdict::deliver);
    CHECK(queue.oldest_deadline() == t0 + 150ms);
}

TEST_CASE("a lost connection: written requests may have run, unwritten ones go on the next one") {
    const auto o = options();
    RequestQueue queue(o, "127.0.0.1:6379");
    queue.push(command({"INCR", "a"}, true));
    queue.push(fcall("hold"));
    std::string out;
    CHECK(queue.write(out, t0) == 3);
    queue.push(command({"INCR", "later"}));

    std::vector<std::string> lost;
    while (auto r = queue.take_written()) {
        const auto failure = queue.maybe_applied(*r, "the connection broke");
        CHECK(failure.is(errc::outcome_unknown));
        CHECK(failure.detail.find("may or may not have been applied") != std::string::npos);
        lost.push_back(r->named());
    }
    CHECK(lost == std::vector<std::string>{"INCR", "FCALL hold"});  // not the ASKING
    CHECK(queue.has_unwritten());
    queue.disconnected();
    out.clear();
    CHECK(queue.write(out, t0) == 1);
    CHECK(out == resp({"INCR", "later"}));
}

TEST_CASE("FCALLs waiting for a FUNCTION LOAD lost with its connection go again; nothing ran") {
    const auto o = options();
    RequestQueue queue(o, "127.0.0.1:6379");
    queue.push(fcall("hold"));
    std::string out;
    queue.write(out, t0);
    CHECK(queue.on_reply(reply("-ERR Function not found\r\n")).verdict == Verdict::none);

    SUBCASE("the load was written") {
        queue.write(out, t0);
        CHECK_FALSE(queue.take_written().has_value());  // the load is the queue's own
        out.clear();
        CHECK(queue.write(out, t0) == 1);
        CHECK(out == resp({"FCALL", "hold", "0"}));
    }
    SUBCASE("the load was not written: failing the unwritten fails its FCALLs too") {
        auto failed = queue.take_unwritten();
        REQUIRE(failed.has_value());
        CHECK(failed->what == "hold");
        CHECK_FALSE(queue.take_unwritten().has_value());
        CHECK(queue.idle());
    }
}

TEST_CASE("a reply that cannot be read fails the oldest caller's request, not the queue's own") {
    const auto o = options();
    RequestQueue queue(o, "127.0.0.1:6379");
    queue.push(command({"GET", "k"}, true));
    std::string out;
    queue.write(out, t0);
    CHECK_FALSE(queue.take_unreadable().has_value());  // ASKING first
    CHECK(queue.on_reply(reply("+OK\r\n")).verdict == Verdict::none);
    auto r = queue.take_unreadable();
    REQUIRE(r.has_value());
    CHECK(r->what == "GET");
}

TEST_CASE("an accepted FUNCTION LOAD says the library was loaded; one another client made first does not") {
    const auto o = options();
    for (const bool first : {true, false}) {
        CAPTURE(first);
        RequestQueue queue(o, "127.0.0.1:6379");
        queue.push(fcall("hold"));
        std::string out;
        queue.write(out, t0);
        auto not_found = queue.on_reply(reply("-ERR Function not found\r\n"));
        CHECK_FALSE(not_found.library_loaded);
        queue.write(out, t0);
        auto loaded = queue.on_reply(
            reply(first ? "$8\r\nseatlock\r\n" : "-ERR Library 'seatlock' already exists\r\n"));
        CHECK(loaded.verdict == Verdict::none);
        CHECK(loaded.library_loaded == first);
        queue.write(out, t0);
        auto answer = queue.on_reply(reply(":1\r\n"));
        CHECK(answer.verdict == Verdict::deliver);
        CHECK_FALSE(answer.library_loaded);
    }
}

}  // namespace request_queue_test
