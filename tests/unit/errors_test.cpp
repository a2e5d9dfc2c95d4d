// Errors and results: codes, messages, and exceptions only on request.
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

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
