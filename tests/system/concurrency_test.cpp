// SPDX-License-Identifier: MIT
// tests/system/concurrency_test.cpp: many buyers at once, over real connections. No seat
// may end in two holds or orders, the 3-seat limit holds under concurrent requests, and
// a general-admission zone never sells more places than it has.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace concurrency_test {

using namespace seatlock::testing;

namespace {

// In the first two cases a buyer sends as fast as it can, past the per-buyer rate limits'
// defaults: the limits are raised far out of the way (the limiter still counts every
// request).
const std::vector<std::string> unthrottled = {
    "--rate-buyer-writes", "1000000", "--rate-buyer-write-burst", "1000000",
    "--rate-buyer-reads",  "1000000", "--rate-buyer-read-burst",  "1000000"};

// 20 seats in two rows: small, so that 50 buyers fight over them.
const std::string race_venue = R"({"events": [{"id": "race", "name": "Race", "zones": [
    {"id": "box", "rows": [{"row": "A", "seats": 10}, {"row": "B", "seats": 10}]},
    {"id": "floor", "capacity": 25}]}]})";

struct Outcome {
    std::string buyer;
    int status = 0;
    std::vector<std::string> asked;
    boost::json::value body;
};

// Runs `work(i, client)` on `n` threads at once, each with its own connection.
template <typename Work>
void in_parallel(const TicketingServer& server, int n, Work work) {
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            auto client = server.client();
            ++ready;
            while (ready.load() < n) std::this_thread::yield();  // start together
            work(i, client);
        });
    }
    for (auto& t : threads) t.join();
}

}  // namespace

TEST_CASE_TEMPLATE("concurrent buyers never get the same seat", Storage, SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage, unthrottled, race_venue));
    INFO(server.log());
    constexpr int clients = 50;
    constexpr int requests = 20;

    std::mutex mutex;
    std::vector<Outcome> outcomes;
    std::vector<std::string> errors;
    in_parallel(server, clients, [&](int i, HttpClient& client) {
        std::minstd_rand random(static_cast<unsigned>(i + 1));
        const std::string buyer = "buyer-" + std::to_string(i);
        for (int r = 0; r < requests; ++r) {
            // One or two seats of the 20, picked at random: overlapping with other buyers.
            std::vector<std::string> seats;
            const int n = 1 + static_cast<int>(random() % 2);
            while (static_cast<int>(seats.size()) < n) {
                const auto k = random() % 20;
                std::string seat =
                    std::string(1, k < 10 ? 'A' : 'B') + "-" + std::to_string(k % 10 + 1);
                if (std::find(seats.begin(), seats.end(), seat) == seats.end())
                    seats.push_back(seat);
            }
            try {
                auto reply = client.post("/events/race/holds", seats_body("box", seats), buyer);
                Outcome outcome{buyer, reply.status, seats, reply.json()};
                // Pay for every other hold, so seats end both held and paid.
                if (reply.status == 201 && r % 2 == 0) {
                    const std::string token(outcome.body.at("token").as_string());
                    const auto paid = client.post("/holds/" + token + "/confirm",
                                                  R"({"payment_id":"pay-)" + std::to_string(i) +
                                                      "-" + std::to_string(r) + "\"}",
                                                  buyer);
                    if (paid.status != 200) {
                        std::lock_guard lock(mutex);
                        errors.push_back("confirm answered " + paid.body);
                    }
                    outcome.body.as_object()["paid"] = true;
                }
                std::lock_guard lock(mutex);
                outcomes.push_back(std::move(outcome));
            } catch (const std::exception& e) {
                std::lock_guard lock(mutex);
                errors.push_back(e.what());
            }
        }
    });

    CHECK(errors.empty());
    REQUIRE(outcomes.size() == clients * requests);
    std::map<std::string, std::string> owner;           // seat -> buyer whose 201 has it
    std::map<std::string, std::string> expected_state;  // seat -> held / paid
    std::map<std::string, std::size_t> seats_of_buyer;
    int created = 0, taken = 0;
    for (const auto& o : outcomes) {
        INFO(o.status, " ", boost::json::serialize(o.body));
        if (o.status == 201) {
            ++created;
            const auto seats = strings(o.body.at("seats"));
            CHECK(seats == o.asked);
            for (const auto& seat : seats) {
                CHECK_MESSAGE(owner.emplace(seat, o.buyer).second, "seat ", seat, " granted twice");
                expected_state[seat] = o.body.as_object().contains("paid") ? "paid" : "held";
            }
            seats_of_buyer[o.buyer] += seats.size();
        } else if (o.status == 409) {
            ++taken;
            CHECK(o.body.at("error").as_string() == "seat_taken");
        } else if (o.status == 422) {
            CHECK(o.body.at("error").as_string() == "limit_exceeded");
            CHECK(o.body.at("limit").as_int64() == 3);
            const auto current = o.body.at("current").as_int64();
            CHECK(current <= 3);
            CHECK(current + static_cast<std::int64_t>(o.asked.size()) > 3);
        } else {
            FAIL("unexpected status ", o.status);
        }
    }
    for (const auto& buyer : seats_of_buyer) {
        CHECK_MESSAGE(buyer.second <= 3, buyer.first, " got ", buyer.second, " seats");
    }
    // The run really raced: seats were both granted and refused as taken. (Whether a
    // buyer at the limit asking for taken seats hears 409 or 422 first is the backend's
    // choice; the next test pins the limit itself.)
    CHECK(created > 0);
    CHECK(taken > 0);

    auto client = server.client();
    for (const auto& seat : seat_states(client, "race", "box")) {
        const auto expected =
            expected_state.count(seat.first) ? expected_state[seat.first] : "free";
        CHECK_MESSAGE(seat.second == expected, "seat ", seat.first);
    }
    CHECK(server.db_count("SELECT count(*) FROM pending_reservations") +
              server.db_count("SELECT count(*) FROM orders") ==
          created);
}

TEST_CASE_TEMPLATE("one buyer's concurrent holds stop at three seats", Storage,
                   SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage, unthrottled, race_venue));
    INFO(server.log());
    std::atomic<int> created{0}, limited{0}, other{0};
    in_parallel(server, 20, [&](int i, HttpClient& client) {
        const std::string seat =
            std::string(1, i < 10 ? 'A' : 'B') + "-" + std::to_string(i % 10 + 1);
        const auto reply = client.post("/events/race/holds", seats_body("box", {seat}), "greedy");
        if (reply.status == 201)
            ++created;
        else if (reply.status == 422 && reply.error() == "limit_exceeded")
            ++limited;
        else
            ++other;
    });
    CHECK(created == 3);
    CHECK(limited == 17);
    CHECK(other == 0);
    auto client = server.client();
    CHECK(zone_counts(client, "race", "box").at("held") == 3);
}

TEST_CASE_TEMPLATE(
    "a general-admission zone of N places grants exactly N of 2N concurrent requests", Storage,
    SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage, {}, race_venue));
    INFO(server.log());
    constexpr int capacity = 25;
    std::mutex mutex;
    std::set<std::string> places;
    std::atomic<int> created{0}, sold_out{0}, other{0};
    in_parallel(server, 2 * capacity, [&](int i, HttpClient& client) {
        const auto reply = client.post("/events/race/holds", R"({"zone":"floor","quantity":1})",
                                       "fan-" + std::to_string(i));
        if (reply.status == 201) {
            ++created;
            std::lock_guard lock(mutex);
            for (const auto& place : strings(reply.json().at("seats"))) places.insert(place);
        } else if (reply.status == 409 && reply.error() == "sold_out") {
            ++sold_out;
        } else {
            ++other;
        }
    });
    CHECK(created == capacity);
    CHECK(sold_out == capacity);
    CHECK(other == 0);
    std::set<std::string> all;
    for (int n = 1; n <= capacity; ++n) all.insert(std::to_string(n));
    CHECK(places == all);
    auto client = server.client();
    const auto counts = zone_counts(client, "race", "floor");
    CHECK(counts.at("held") == capacity);
    CHECK(counts.at("free") == 0);
}

}  // namespace concurrency_test
