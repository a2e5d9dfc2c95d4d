// SPDX-License-Identifier: MIT
// tests/system/extend_test.cpp: POST /holds/{token}/extend takes any positive ttl_s and
// leaves the cap to seatlock: a hold never lives past its creation + the maximum hold
// lifetime (2 hours), and asking for more is answered with the capped end, not refused.
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace extend_test {

using namespace seatlock::testing;

namespace {

constexpr std::int64_t max_lifetime_ms = 2 * 3600 * 1000;
constexpr std::int64_t hold_ttl_ms = 600 * 1000;  // the server's default hold
// The memory backend times holds by the steady clock and reports them in wall-clock
// time: two instants of one hold may differ by a millisecond or so in its answers.
constexpr std::int64_t clock_slack_ms = 50;


struct HeldSeat {
    HttpClient client;
    std::string extend_url;
    std::int64_t created_ms = 0;  // the hold's start, from its first expiry

    explicit HeldSeat(const TicketingServer& server) : client(server.client()) {
        const auto held =
            client.post("/events/demo-game/holds", seats_body("lower-1", {"C-1"}), "erin");
        REQUIRE_MESSAGE(held.status == 201, held.body);
        extend_url = "/holds/" + std::string(held.json().at("token").as_string()) + "/extend";
        created_ms = unix_ms(held.json().at("expires_at")) - hold_ttl_ms;
    }

    HttpReply extend(const std::string& ttl_s) {
        return client.post(extend_url, R"({"ttl_s":)" + ttl_s + "}", "erin");
    }
};

}  // namespace

TEST_CASE_TEMPLATE("an extend past the maximum hold lifetime is capped, not refused", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    HeldSeat hold(server);
    for (const std::string ttl_s : {"9000", "86400", "9223372036854775807"}) {
        CAPTURE(ttl_s);
        const auto reply = hold.extend(ttl_s);
        REQUIRE_MESSAGE(reply.status == 200, reply.body);
        const auto capped_at = hold.created_ms + max_lifetime_ms;
        CHECK(std::abs(unix_ms(reply.json().at("expires_at")) - capped_at) <= clock_slack_ms);
    }
    CHECK(seat_states(hold.client, "demo-game", "lower-1").at("C-1") == "held");
}

TEST_CASE_TEMPLATE("an extend within the lifetime moves the expiry to now + ttl_s", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    HeldSeat hold(server);
    const auto reply = hold.extend("3600");
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    const auto expires = unix_ms(reply.json().at("expires_at"));
    CHECK(expires >= hold.created_ms + 3600 * 1000 - clock_slack_ms);
    CHECK(expires < hold.created_ms + max_lifetime_ms - clock_slack_ms);
}

TEST_CASE("an extend by less than one second is refused with 400") {
    TicketingServer server(TicketingServer::Options{{"--backend", "memory"}, std::nullopt});
    INFO(server.log());
    HeldSeat hold(server);
    for (const std::string ttl_s : {"0", "-1", "-9223372036854775808"}) {
        CAPTURE(ttl_s);
        const auto reply = hold.extend(ttl_s);
        CHECK(reply.status == 400);
        CHECK(reply.error() == "invalid_argument");
    }
}

}  // namespace extend_test
