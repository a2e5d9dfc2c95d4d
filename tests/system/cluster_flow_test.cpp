// SPDX-License-Identifier: MIT
// tests/system/cluster_flow_test.cpp: two seatlock-ticketing processes on one Redis
// Cluster (3 primaries, a replica each; --redis-url redis+cluster://...) sharing one
// SQLite file, selling events that live on different primaries: what one server does,
// the other sees and can finish (confirm, cancel, release), and the same seats asked of
// both at once go to exactly one buyer.
#include "support/redis_cluster.hpp"
#include "support/system_test.hpp"

#include <algorithm>
#include <latch>
#include <thread>

using namespace seatlock::testing;

namespace {

RedisCluster& cluster() {
    static RedisCluster c;
    return c;
}

// `redis-cli -p <first node> <command>`'s raw answer, without its last newline.
std::string ask(const std::string& command, int port = 0) {
    const auto [status, output] =
        cluster().cli("-p " + std::to_string(port ? port : cluster().ports().front()) + " " + command);
    if (status != 0) throw std::runtime_error("redis-cli " + command + " failed: " + output);
    return output.substr(0, output.find('\n'));
}

// Event ids "<tag>-<n>", one in each third of the hash slots: one on each primary, as
// `redis-cli --cluster create` gives three primaries a third each. (Events are stored
// under their id as hash tag: the slot of the id is the event's.)
std::vector<std::string> ids_on_every_primary(const std::string& tag) {
    constexpr int third = 16384 / 3 + 1;
    std::vector<std::string> ids(3);
    for (int n = 0; ids[0].empty() || ids[1].empty() || ids[2].empty(); ++n) {
        const std::string id = tag + "-" + std::to_string(n);
        auto& slot_of_third = ids.at(static_cast<std::size_t>(std::stoi(ask("CLUSTER KEYSLOT " + id)) / third));
        if (slot_of_third.empty()) slot_of_third = id;
    }
    return ids;
}

// Primaries that keep at least one key.
int primaries_with_keys() {
    int n = 0;
    for (const int port : cluster().ports()) {
        if (ask("ROLE", port) == "master" && std::stoi(ask("DBSIZE", port)) > 0) ++n;
    }
    return n;
}

// Each event: "floor", rows A and B of 10 named seats, and "lawn", 40 places.
std::string venue(const std::vector<std::string>& ids) {
    boost::json::array events;
    for (const auto& id : ids) {
        const boost::json::array rows{{{"row", "A"}, {"seats", 10}}, {{"row", "B"}, {"seats", 10}}};
        events.push_back({{"id", id},
                          {"name", "Cluster " + id},
                          {"zones", boost::json::array{{{"id", "floor"}, {"rows", rows}},
                                                       {{"id", "lawn"}, {"capacity", 40}}}}});
    }
    return boost::json::serialize(boost::json::object{{"events", std::move(events)}});
}

// Two servers on the cluster with one venue; the second writes to the first's database.
struct TwoServers {
    explicit TwoServers(const std::vector<std::string>& ids)
        : first(options(ids, {})), second(options(ids, {"--db", first.db_path()})) {}

    static TicketingServer::Options options(const std::vector<std::string>& ids,
                                            std::vector<std::string> extra) {
        std::vector<std::string> args{"--backend", "redis", "--redis-url", cluster().url()};
        args.insert(args.end(), extra.begin(), extra.end());
        return {std::move(args), venue(ids)};
    }
    [[nodiscard]] std::string logs() const {
        return "--- server 1\n" + first.log() + "--- server 2\n" + second.log();
    }

    TicketingServer first;   // owns the database directory: destroyed last
    TicketingServer second;
};

std::string holds_url(const std::string& event) {
    return "/events/" + event + "/holds";
}

std::string token_of(const HttpReply& reply) {
    return std::string(reply.json().at("token").as_string());
}

}  // namespace

TEST_CASE("two servers on a Redis Cluster sell one inventory: hold, confirm, cancel, release") {
    const auto ids = ids_on_every_primary("flow");
    TwoServers servers(ids);
    INFO(servers.logs());
    auto one = servers.first.client();
    auto two = servers.second.client();

    // Both servers list the venue's events, kept on three primaries.
    for (auto* client : {&one, &two}) {
        const auto listed = client->get("/events");
        REQUIRE(listed.status == 200);
        const auto json = listed.json();
        std::vector<std::string> names;
        for (const auto& event : json.at("events").as_array())
            names.emplace_back(event.at("id").as_string());
        std::sort(names.begin(), names.end());
        auto expected = ids;
        std::sort(expected.begin(), expected.end());
        CHECK(names == expected);
    }
    CHECK(primaries_with_keys() == 3);

    for (const auto& id : ids) {
        CAPTURE(id);
        // Held on one, seen held on two, paid on two, seen paid on one.
        const auto held = one.post(holds_url(id), seats_body("floor", {"A-1", "A-2"}), "alice");
        REQUIRE_MESSAGE(held.status == 201, held.body);
        const std::string token = token_of(held);
        settle_seat_maps();
        auto states = seat_states(two, id, "floor");
        CHECK(states.at("A-1") == "held");
        CHECK(states.at("A-2") == "held");
        CHECK(states.at("A-3") == "free");
        const std::string payment = "pay-" + id;
        const auto paid = two.post("/holds/" + token + "/confirm",
                                   R"({"payment_id":")" + payment + R"("})", "alice");
        REQUIRE_MESSAGE(paid.status == 200, paid.body);
        CHECK(paid.json().at("status").as_string() == "paid");
        settle_seat_maps();
        CHECK(seat_states(one, id, "floor").at("A-1") == "paid");
        const auto taken = two.post(holds_url(id), seats_body("floor", {"A-2", "A-3"}), "bob");
        CHECK(taken.status == 409);
        CHECK(taken.error() == "seat_taken");

        // Cancelled on one: free on two.
        const auto cancelled = one.post("/orders/" + payment + "/cancel", "", "alice");
        REQUIRE_MESSAGE(cancelled.status == 200, cancelled.body);
        CHECK(cancelled.json().at("status").as_string() == "cancelled");
        settle_seat_maps();
        states = seat_states(two, id, "floor");
        CHECK(states.at("A-1") == "free");
        CHECK(states.at("A-2") == "free");
        CHECK(servers.first.db_text("SELECT status FROM orders WHERE order_id = ?", {payment}) ==
              "cancelled");

        // Held on two, released on one.
        const auto again = two.post(holds_url(id), seats_body("floor", {"B-5"}), "bob");
        REQUIRE_MESSAGE(again.status == 201, again.body);
        settle_seat_maps();
        CHECK(seat_states(one, id, "floor").at("B-5") == "held");
        CHECK(one.del("/holds/" + token_of(again), "bob").status == 204);
        settle_seat_maps();
        CHECK(seat_states(two, id, "floor").at("B-5") == "free");

        // General admission: places counted alike on both, assigned lowest first.
        const auto lawn = one.post(holds_url(id), R"({"zone":"lawn","quantity":3})", "carol");
        REQUIRE_MESSAGE(lawn.status == 201, lawn.body);
        CHECK(strings(lawn.json().at("seats")) == std::vector<std::string>{"1", "2", "3"});
        settle_seat_maps();
        auto counts = zone_counts(two, id, "lawn");
        CHECK(counts.at("held") == 3);
        CHECK(counts.at("free") == 37);
        const auto more = two.post(holds_url(id), R"({"zone":"lawn","quantity":2})", "dave");
        REQUIRE_MESSAGE(more.status == 201, more.body);
        CHECK(strings(more.json().at("seats")) == std::vector<std::string>{"4", "5"});
        CHECK(two.del("/holds/" + token_of(lawn), "carol").status == 204);
        settle_seat_maps();
        counts = zone_counts(one, id, "lawn");
        CHECK(counts.at("held") == 2);
        CHECK(counts.at("free") == 38);
    }
}

TEST_CASE("the same seats asked of both servers at once go to exactly one buyer") {
    const auto ids = ids_on_every_primary("race");
    TwoServers servers(ids);
    INFO(servers.logs());
    constexpr int per_server = 3;
    std::vector<HttpClient> clients;
    for (int i = 0; i < 2 * per_server; ++i)
        clients.push_back(i % 2 == 0 ? servers.first.client() : servers.second.client());

    for (const auto& id : ids) {
        for (int round = 1; round <= 9; ++round) {
            CAPTURE(id);
            CAPTURE(round);
            // Every buyer wants two seats, and every pair overlaps the first buyer's.
            const std::string first = "A-" + std::to_string(round);
            std::vector<HttpReply> replies(clients.size());
            std::latch ready(static_cast<std::ptrdiff_t>(clients.size()));
            std::vector<std::thread> buyers;
            for (std::size_t b = 0; b < clients.size(); ++b) {
                const std::string other = (b % 2 == 0 ? "B-" : "A-") + std::to_string(round + 1);
                buyers.emplace_back([&, b, other] {
                    const std::string body = seats_body("floor", {first, other});
                    ready.arrive_and_wait();
                    replies[b] = clients[b].post(holds_url(id), body,
                                                 "buyer-" + std::to_string(round) + "-" +
                                                     std::to_string(b));
                });
            }
            for (auto& buyer : buyers) buyer.join();

            std::vector<std::size_t> winners;
            for (std::size_t b = 0; b < replies.size(); ++b) {
                if (replies[b].status == 201) {
                    winners.push_back(b);
                } else {
                    CHECK_MESSAGE(replies[b].status == 409, replies[b].body);
                    CHECK(replies[b].error() == "seat_taken");
                }
            }
            REQUIRE(winners.size() == 1);
            const std::size_t winner = winners.front();
            // Both servers say the winner's seats are held, and the others' free.
            settle_seat_maps();
            for (auto* client : {&clients[0], &clients[1]}) {
                const auto states = seat_states(*client, id, "floor");
                CHECK(states.at(first) == "held");
                const bool a_side = winner % 2 != 0;
                CHECK(states.at("A-" + std::to_string(round + 1)) == (a_side ? "held" : "free"));
                CHECK(states.at("B-" + std::to_string(round + 1)) == (a_side ? "free" : "held"));
            }
            // Released through the server the winner did not use.
            auto& other_server = clients[winner % 2 == 0 ? 1 : 0];
            CHECK(other_server
                      .del("/holds/" + token_of(replies[winner]),
                           "buyer-" + std::to_string(round) + "-" + std::to_string(winner))
                      .status == 204);
        }
    }
    // Nothing is left held anywhere.
    settle_seat_maps();
    for (const auto& id : ids) {
        for (const auto& seat : seat_states(clients[1], id, "floor")) {
            CAPTURE(seat.first);
            CHECK(seat.second == "free");
        }
    }
}
