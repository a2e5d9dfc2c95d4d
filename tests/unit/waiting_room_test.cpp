// SPDX-License-Identifier: MIT
// What WaitingRoom adds to its backend's steps: the checks before a step is sent, the
// retry after a lost reply, the key's rules. (The room's rules themselves are the
// conformance suite's: tests/conformance/room_conformance.hpp.)
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <string>

namespace waiting_room_test {

using namespace std::chrono_literals;
using seatlock::FakeBackend;
namespace op = seatlock::op;

seatlock::AdmissionKey key() { return seatlock::AdmissionKey(std::string(32, 'k')); }

seatlock::RoomConfig open_room(const FakeBackend& fake) {
    return {fake.now() - 1s, 100, 10, 5min, 1min, "seed"};
}

TEST_CASE("a join whose reply was lost is sent again and answers the first ticket") {
    FakeBackend fake;
    seatlock::WaitingRoom room(fake, key());
    REQUIRE(room.configure("r", open_room(fake)));
    fake.inject({op::id<op::join_room>, FakeBackend::FaultKind::lose_reply});
    auto ticket = room.join("r", "amy");
    REQUIRE(ticket);
    CHECK(ticket->replayed);  // the first attempt was applied
    CHECK(fake.count(op::id<op::join_room>) == 2);
    CHECK(room.position(*ticket)->waiting == 1);
}

TEST_CASE("a step that failed before it was applied is not sent again") {
    FakeBackend fake;
    seatlock::WaitingRoom room(fake, key());
    REQUIRE(room.configure("r", open_room(fake)));
    fake.inject({op::id<op::admit>, FakeBackend::FaultKind::fail_before});
    CHECK(room.admit("r").is(seatlock::errc::io_error));
    CHECK(fake.count(op::id<op::admit>) == 1);
}

TEST_CASE("bad input is refused before anything is sent") {
    FakeBackend fake;
    seatlock::WaitingRoom room(fake, key());
    CHECK(room.join("r", "").is(seatlock::errc::invalid_argument));
    CHECK(room.position({"r:1", "amy"}).is(seatlock::errc::invalid_argument));
    CHECK(room.admit("r", 0).is(seatlock::errc::invalid_argument));
    CHECK(room.admit("r", 1001).is(seatlock::errc::invalid_argument));
    auto config = open_room(fake);
    config.admission_ttl = -1s;
    CHECK(room.configure("r", config).is(seatlock::errc::invalid_argument));
    config = open_room(fake);
    config.opens_at = seatlock::WallTime(-1s);
    CHECK(room.configure("r", config).is(seatlock::errc::invalid_argument));
    CHECK(fake.calls().empty());
    CHECK_THROWS_AS(seatlock::AdmissionKey(std::string(31, 'k')), seatlock::Error);
    CHECK_THROWS_AS(seatlock::WaitingRoom(fake, key(), -1), seatlock::Error);
}

TEST_CASE("an admission token is signed by the key and carries room, visitor and expiry") {
    const auto expires = seatlock::WallTime(1'800'000'000'000ms);
    auto signed_ = key().sign("r", "amy", expires);
    REQUIRE(signed_);
    CHECK(signed_->token.rfind("r:amy:1800000000000:", 0) == 0);
    auto checked = key().verify(signed_->token, "r", expires - 1ms);
    REQUIRE(checked);
    CHECK(checked->visitor == "amy");
    CHECK(checked->expires_at == expires);
    CHECK(key().verify(signed_->token, "r", expires).is(seatlock::errc::not_admitted));
    CHECK(key().sign("r", "a my", expires).is(seatlock::errc::invalid_argument));
}

}  // namespace waiting_room_test
