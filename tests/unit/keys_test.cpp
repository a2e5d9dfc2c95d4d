// SPDX-License-Identifier: MIT
// Ids, lock groups and hold tokens.
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace keys_test {

TEST_CASE("ids allow letters, digits and ._@+- up to 128 characters") {
    CHECK(seatlock::is_valid_id("A-12"));
    CHECK(seatlock::is_valid_id("alice@example.com"));
    CHECK(seatlock::is_valid_id(std::string(128, 'x')));
    CHECK_FALSE(seatlock::is_valid_id(""));
    CHECK_FALSE(seatlock::is_valid_id(std::string(129, 'x')));
    for (const char* bad : {"a b", "a:b", "a{b", "a}b", "a\tb", "a/b", "caf\xc3\xa9"}) {
        CHECK_FALSE(seatlock::is_valid_id(bad));
    }
    auto r = seatlock::validate_id("seat", "A:1");
    REQUIRE(r.is(seatlock::errc::invalid_argument));
    CHECK(r.error().detail.find("seat id 'A:1'") != std::string::npos);
}

TEST_CASE("a lock key's group is the part before its first colon") {
    CHECK(seatlock::lock_group("game42:A-12") == "game42");
    CHECK(seatlock::lock_group("game42:lower:A-12") == "game42");
    CHECK(seatlock::lock_group("standalone") == "standalone");
    CHECK(seatlock::is_valid_lock_key("order:77/payment"));
    CHECK_FALSE(seatlock::is_valid_lock_key("{tag}"));
    CHECK_FALSE(seatlock::is_valid_lock_key("with space"));
}

TEST_CASE("a hold token names its event before 32 hex digits") {
    CHECK(seatlock::token_event("game1.0123456789abcdef0123456789abcdef") == "game1");
    CHECK(seatlock::token_event("a.b.0123456789abcdef0123456789abcdef") == "a.b");
    CHECK(seatlock::token_event("game1.0123456789ABCDEF0123456789abcdef").empty());
    CHECK(seatlock::token_event("game1-0123456789abcdef0123456789abcdef").empty());
    CHECK(seatlock::token_event(".0123456789abcdef0123456789abcdef").empty());
    CHECK(seatlock::token_event("short").empty());
}

TEST_CASE("owner and hold tokens are 128 random bits, never repeated") {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        auto t = seatlock::detail::random_hex128();
        CHECK(t.size() == 32);
        CHECK(t.find_first_not_of("0123456789abcdef") == std::string::npos);
        seen.insert(t);
    }
    CHECK(seen.size() == 1000);
}

}  // namespace keys_test
