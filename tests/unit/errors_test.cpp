// Errors and results: codes, messages, and exceptions only on request.
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

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
          errc::unknown_order}},
        {condition::conflict,
         {errc::seat_taken, errc::sold_out, errc::limit_exceeded, errc::active_hold_exists,
          errc::hold_expired, errc::hold_not_active, errc::order_conflict, errc::not_owner,
          errc::event_exists}},
        {condition::expired, {errc::hold_expired, errc::lock_not_owned}},
        {condition::forbidden, {errc::not_owner}},
        {condition::busy, {errc::lock_busy, errc::lock_timeout, errc::lock_not_owned}},
        {condition::storage_unavailable,
         {errc::connection_failed, errc::timeout, errc::io_error, errc::auth_failed,
          errc::protocol_error, errc::script_error, errc::outcome_unknown, errc::storage_lost,
          errc::not_replicated}},
        {condition::retry_safe,
         {errc::lock_busy, errc::lock_timeout, errc::lock_not_owned, errc::connection_failed,
          errc::timeout, errc::io_error, errc::outcome_unknown, errc::storage_lost}},
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
