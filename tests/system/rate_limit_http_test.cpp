// SPDX-License-Identifier: MIT
// tests/system/rate_limit_http_test.cpp: the server's rate limits over HTTP
// (docs/ticketing-server.md, "Rate limits"). A buyer past their burst of writes gets 429
// with Retry-After and the JSON error, while another buyer's holds and a viewer's seat
// map go on; after Retry-After the buyer is served again; the refusals are counted in
// /metrics. Reads have a lane of their own, and the per-address limit counts all the
// buyers of one address together.
#include <chrono>
#include <future>
#include <thread>

#include "support/system_test.hpp"

namespace rate_limit_http_test {

using namespace seatlock::testing;

namespace {

const std::string holds_url = "/events/demo-game/holds";
const std::string seats_url = "/events/demo-game/seats?zone=lower-1";

HttpReply hold(HttpClient& client, const std::string& user, const std::string& seat) {
    return client.post(holds_url, seats_body("lower-1", {seat}), user);
}

HttpReply read_as(HttpClient& client, const std::string& target, const std::string& user) {
    return client.send("GET", target, "", {{"X-User-Id", user}});
}

std::int64_t refusals(HttpClient& client, const std::string& lane, const std::string& by) {
    return metric(client,
                  "seatlock_ticketing_rate_limited_total{lane=\"" + lane + "\",by=\"" + by + "\"}");
}

// The 429's headers and body, as docs/ticketing-server.md gives them.
void check_refusal(const HttpReply& reply, const std::string& lane, const std::string& by) {
    REQUIRE_MESSAGE(reply.status == 429, reply.body);
    const auto retry_after = std::stoi(reply.header("Retry-After"));
    CHECK(retry_after >= 1);
    CHECK(retry_after <= 2);
    const auto body = reply.json().as_object();
    CHECK(body.at("error").as_string() == "rate_limited");
    CHECK_FALSE(body.at("message").as_string().empty());
    CHECK(body.at("retry_safe").as_bool());
    CHECK(body.at("lane").as_string() == lane);
    CHECK(body.at("limited_by").as_string() == by);
}

}  // namespace

TEST_CASE("a buyer past the burst gets 429 with Retry-After; other buyers and viewers are served") {
    MemoryStorage storage;
    TicketingServer server(on(storage, {"--max-seats-per-buyer", "0", "--rate-buyer-writes", "1",
                                        "--rate-buyer-write-burst", "3"}));
    INFO(server.log());
    auto alice = server.client();

    // Alice's burst, then refusals, while Bob holds and a viewer reads the map on
    // connections of their own at the same time.
    auto others = std::async(std::launch::async, [&server] {
        auto bob = server.client();
        auto viewer = server.client();
        std::vector<int> statuses;
        for (int i = 1; i <= 3; ++i) {
            statuses.push_back(hold(bob, "bob", "B-" + std::to_string(i)).status);
            for (int j = 0; j < 5; ++j) statuses.push_back(viewer.get(seats_url).status);
        }
        return statuses;
    });
    std::vector<HttpReply> replies;
    for (int i = 1; i <= 6; ++i) replies.push_back(hold(alice, "alice", "A-" + std::to_string(i)));
    for (int i = 0; i < 3; ++i) CHECK_MESSAGE(replies[i].status == 201, replies[i].body);
    int refused = 0;
    for (std::size_t i = 3; i < replies.size(); ++i) {
        if (replies[i].status == 201) continue;  // a token came back meanwhile (a slow run)
        check_refusal(replies[i], "write", "buyer");
        ++refused;
    }
    CHECK(refused >= 2);
    const auto statuses = others.get();
    for (std::size_t i = 0; i < statuses.size(); ++i) {
        CAPTURE(i);
        CHECK(statuses[i] == (i % 6 == 0 ? 201 : 200));
    }

    // The refusals counted, by lane and key.
    CHECK(refusals(alice, "write", "buyer") == refused);

    // After Retry-After, Alice is served again.
    const auto last = hold(alice, "alice", "A-10");
    check_refusal(last, "write", "buyer");
    std::this_thread::sleep_for(std::chrono::seconds(std::stoi(last.header("Retry-After"))));
    const auto again = hold(alice, "alice", "A-10");
    CHECK_MESSAGE(again.status == 201, again.body);
    CHECK(refusals(alice, "write", "buyer") == refused + 1);
}

TEST_CASE("reads have a lane of their own: a buyer's reads past the burst leave their writes") {
    MemoryStorage storage;
    TicketingServer server(
        on(storage, {"--rate-buyer-reads", "1", "--rate-buyer-read-burst", "2"}));
    INFO(server.log());
    auto client = server.client();
    CHECK(read_as(client, "/me/holds", "alice").status == 200);
    CHECK(read_as(client, "/me/orders", "alice").status == 200);
    check_refusal(read_as(client, seats_url, "alice"), "read", "buyer");
    // The write lane is untouched, and so is another buyer's read lane.
    CHECK(hold(client, "alice", "A-1").status == 201);
    CHECK(read_as(client, "/me/holds", "bob").status == 200);
    // Never limited: health, readiness, metrics, the page.
    for (const std::string target : {"/healthz", "/readyz", "/metrics", "/"})
        for (int i = 0; i < 5; ++i) CHECK(read_as(client, target, "alice").status == 200);
    CHECK(refusals(client, "read", "buyer") == 1);
}

TEST_CASE("the per-address limit counts every buyer of one address together") {
    // Every test client comes from 127.0.0.1.
    MemoryStorage storage;
    TicketingServer server(
        on(storage, {"--rate-address-writes", "1", "--rate-address-write-burst", "4"}));
    INFO(server.log());
    auto alice = server.client();
    auto bob = server.client();
    CHECK(hold(alice, "alice", "A-1").status == 201);
    CHECK(hold(alice, "alice", "A-2").status == 201);
    CHECK(hold(bob, "bob", "B-1").status == 201);
    CHECK(hold(bob, "bob", "B-2").status == 201);
    // Bob is far from his own burst, but the address is out of writes.
    check_refusal(hold(bob, "bob", "B-3"), "write", "address");
    // Reads of the address are not limited by default.
    CHECK(alice.get(seats_url).status == 200);
    CHECK(refusals(bob, "write", "address") == 1);
}

}  // namespace rate_limit_http_test
