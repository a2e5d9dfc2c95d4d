// SPDX-License-Identifier: MIT
// Errors and results: codes, messages, and exceptions only on request.
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace errors_test {

TEST_CASE("errc values are std::error_code values of the seatlock category") {
    std::error_code code = seatlock::errc::seat_taken;
    CHECK(code.category().name() == std::string("seatlock"));
    CHECK(code.message() == "seat_taken");
    CHECK(code == seatlock::errc::seat_taken);
    CHECK(code != seatlock::errc::sold_out);
}

TEST_CASE("a failed Result throws seatlock::Error only when its value is asked for") {
    seatlock::Result<int> failed = seatlock::Failure(seatlock::errc::sold_out, "zone z has 0 free places");
    CHECK_FALSE(failed);
    CHECK(failed.is(seatlock::errc::sold_out));
    CHECK(failed.error().message() == "sold_out: zone z has 0 free places");
    try {
        (void)failed.value();
        FAIL("value() did not throw");
    } catch (const seatlock::Error& e) {
        CHECK(e.code() == seatlock::errc::sold_out);
        CHECK(std::string(e.what()).find("zone z has 0 free places") != std::string::npos);
    }
    seatlock::Result<int> ok = 7;
    CHECK(ok.value() == 7);
    CHECK_FALSE(ok.code());
}

TEST_CASE("Result<void> carries success or a failure") {
    seatlock::Result<void> ok;
    CHECK(ok);
    CHECK_NOTHROW(ok.value());
    seatlock::Result<void> bad = seatlock::Failure(seatlock::errc::unknown_event, "no event x");
    CHECK(bad.is(seatlock::errc::unknown_event));
    CHECK_THROWS_AS(bad.value(), seatlock::Error);
}

TEST_CASE("each error condition matches exactly its codes") {
    using seatlock::condition;
    using seatlock::errc;
    const std::map<condition, std::set<errc>> groups = {
        {condition::bad_input, {errc::invalid_argument}},
        {condition::not_found,
         {errc::unknown_event, errc::unknown_zone, errc::unknown_seat, errc::unknown_hold,
          errc::unknown_order, errc::changes_trimmed, errc::unknown_room, errc::not_in_queue}},
        {condition::conflict,
         {errc::seat_taken, errc::sold_out, errc::limit_exceeded, errc::active_hold_exists,
          errc::hold_expired, errc::hold_not_active, errc::order_conflict, errc::not_owner,
          errc::event_exists}},
        {condition::expired, {errc::hold_expired, errc::lock_not_owned}},
        {condition::forbidden, {errc::not_owner, errc::not_admitted}},
        {condition::busy, {errc::lock_busy, errc::lock_timeout, errc::lock_not_owned}},
        {condition::storage_unavailable,
         {errc::connection_failed, errc::timeout, errc::io_error, errc::auth_failed,
          errc::protocol_error, errc::script_error, errc::outcome_unknown, errc::storage_lost,
          errc::not_replicated}},
        {condition::retry_safe,
         {errc::lock_busy, errc::lock_timeout, errc::connection_failed, errc::timeout,
          errc::io_error, errc::outcome_unknown, errc::storage_lost}},
    };
    for (const auto& entry : groups) {
        const condition group = entry.first;
        for (errc e : seatlock::all_errcs) {
            const std::error_code code = e;
            INFO(seatlock::to_string(e) << " in " << seatlock::to_string(group));
            CHECK((code == group) == (entry.second.count(e) == 1));
        }
    }
    // Codes of other categories are in no group.
    CHECK_FALSE(std::make_error_code(std::errc::timed_out) == condition::retry_safe);
    CHECK(std::error_condition(condition::conflict).message() == "conflict");
}

TEST_CASE("every errc has a name of its own") {
    std::set<std::string> names;
    for (seatlock::errc e : seatlock::all_errcs) {
        const std::string name = seatlock::to_string(e);
        CHECK(name != "unknown_error");
        CHECK(names.insert(name).second);
    }
    CHECK(names.size() == std::size(seatlock::all_errcs));
}

TEST_CASE("Error::what() is exactly \"<code>: <detail>\", as Failure::message() reads") {
    const seatlock::Error error(seatlock::errc::seat_taken, "seats A-1, A-2 of zone lower are held");
    CHECK(std::string(error.what()) == "seat_taken: seats A-1, A-2 of zone lower are held");
    CHECK(error.code() == seatlock::errc::seat_taken);
    const seatlock::Error copy = error;  // a copy (as a catch by value makes) reads the same
    CHECK(std::string(copy.what()) == std::string(error.what()));
    const std::system_error& base = error;  // what() is virtual: the same through the base
    CHECK(std::string(base.what()) == "seat_taken: seats A-1, A-2 of zone lower are held");

    // Thrown by value(): the Failure's message, word for word.
    seatlock::Result<int> failed = seatlock::Failure(seatlock::errc::sold_out, "zone z has 0 free places");
    CHECK_THROWS_WITH_AS((void)failed.value(), "sold_out: zone z has 0 free places", seatlock::Error);
    CHECK_THROWS_WITH_AS(seatlock::Result<void>(failed).value(),
                         "sold_out: zone z has 0 free places", seatlock::Error);
    CHECK(failed.error().message() == "sold_out: zone z has 0 free places");

    // A code of another category reads its own message first.
    const seatlock::Error other(std::make_error_code(std::errc::timed_out), "no reply");
    CHECK(std::string(other.what()) == std::make_error_code(std::errc::timed_out).message() + ": no reply");
}

TEST_CASE("error() of a success throws seatlock::Error invalid_argument, for Result<T> and Result<void>") {
    const std::string what =
        "invalid_argument: Result::error() called on a success: there is no failure (check "
        "has_value() first)";
    seatlock::Result<int> value = 7;
    CHECK_THROWS_WITH_AS((void)value.error(), what.c_str(), seatlock::Error);
    CHECK_THROWS_WITH_AS((void)std::move(value).error(), what.c_str(), seatlock::Error);
    seatlock::Result<void> done;
    CHECK_THROWS_WITH_AS((void)done.error(), what.c_str(), seatlock::Error);
    CHECK_THROWS_WITH_AS((void)std::move(done).error(), what.c_str(), seatlock::Error);
    try {
        (void)seatlock::Result<std::string>(std::string("x")).error();
        FAIL("error() of a success did not throw");
    } catch (const seatlock::Error& e) {
        CHECK(e.code() == seatlock::errc::invalid_argument);
        CHECK(e.code() == seatlock::condition::bad_input);
    }
    // The value is untouched, and the calls that ask rather than take stay quiet.
    CHECK(value.value() == 7);
    CHECK_FALSE(value.code());
    CHECK_FALSE(value.is(seatlock::errc::invalid_argument));
    CHECK_FALSE(done.code());
    CHECK_FALSE(done.is(seatlock::errc::invalid_argument));
    // A failure's error() is the failure.
    seatlock::Result<int> failed = seatlock::Failure(seatlock::errc::unknown_hold, "no hold h");
    CHECK(failed.error().detail == "no hold h");
    seatlock::Result<void> refused = seatlock::Failure(seatlock::errc::unknown_hold, "no hold h");
    CHECK(std::move(refused).error().detail == "no hold h");
}

TEST_CASE("lock_not_owned is not retry_safe: an unlock or extend of a lost lease never succeeds") {
    const std::error_code code = seatlock::errc::lock_not_owned;
    CHECK_FALSE(code == seatlock::condition::retry_safe);
    CHECK(code == seatlock::condition::busy);
    CHECK(code == seatlock::condition::expired);
    // The codes beside it stay retry_safe: the key may be free on the next try.
    CHECK(std::error_code(seatlock::errc::lock_busy) == seatlock::condition::retry_safe);
    CHECK(std::error_code(seatlock::errc::lock_timeout) == seatlock::condition::retry_safe);

    // Why: the same unlock again answers the same, however often it is sent.
    seatlock::FakeBackend fake;
    seatlock::LockOptions options;
    options.lease = std::chrono::milliseconds(200);
    seatlock::LockManager locks(fake, options);
    auto guard = locks.try_lock("game1:A-1");
    REQUIRE(guard);
    fake.advance(std::chrono::milliseconds(300));
    for (int attempt = 0; attempt < 3; ++attempt) {
        auto unlocked = guard->unlock();
        REQUIRE(unlocked.is(seatlock::errc::lock_not_owned));
        CHECK_FALSE(unlocked.code() == seatlock::condition::retry_safe);
    }
    CHECK(guard->extend(std::chrono::seconds(1)).is(seatlock::errc::lock_not_owned));
}

}  // namespace errors_test
