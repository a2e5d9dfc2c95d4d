// SPDX-License-Identifier: MIT
// tests/system/shutdown_test.cpp: SIGTERM and SIGINT stop the server cleanly (exit 0)
// while clients are busy, and promptly: requests being handled are still answered, but
// connections idle or waiting for the rest of a request are closed at once.
#include <atomic>
#include <csignal>
#include <thread>

#include "support/raw_connection.hpp"
#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace shutdown_test {

using namespace seatlock::testing;

namespace {

// Clients that hold and release bleacher places in a loop until the server goes away;
// checks what they were answered while it was up.
void stops_cleanly_under_load(int signal) {
    TicketingServer server(TicketingServer::Options{{"--backend", "memory"}, std::nullopt});
    INFO(server.log());
    std::atomic<bool> done{false};
    std::atomic<int> answered{0}, server_errors{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < 8; ++i) {
        clients.emplace_back([&, i] {
            for (int r = 0; !done; ++r) {
                try {
                    auto client = server.client();
                    const std::string buyer = "fan-" + std::to_string(i) + "-" + std::to_string(r);
                    auto held = client.post("/events/demo-game/holds",
                                            R"({"zone":"bleachers-right","quantity":1})", buyer);
                    if (held.status >= 500) ++server_errors;
                    if (held.status == 201) {
                        const std::string token(held.json().at("token").as_string());
                        if (client.del("/holds/" + token, buyer).status >= 500) ++server_errors;
                    }
                    ++answered;
                } catch (const std::exception&) {
                    // Refused or closed connections: the server is stopping.
                }
            }
        });
    }
    CHECK(eventually([&] { return answered.load() > 50; }));
    const int exit_code = server.stop(signal);
    done = true;
    for (auto& c : clients) c.join();
    CHECK(exit_code == 0);
    CHECK(server_errors == 0);
    CHECK(server.log().find("stopped") != std::string::npos);
}

}  // namespace

TEST_CASE("SIGTERM with requests in flight stops the server with exit code 0") {
    stops_cleanly_under_load(SIGTERM);
}

TEST_CASE("SIGINT stops the server with exit code 0") {
    stops_cleanly_under_load(SIGINT);
}

TEST_CASE("connections idle or partway through a request do not hold up SIGTERM") {
    TicketingServer server(TicketingServer::Options{{"--backend", "memory"}, std::nullopt});
    INFO(server.log());
    const std::string body = R"({"zone":"lower-2","seats":["A-1"]})";
    const std::string head =
        "POST /events/demo-game/holds HTTP/1.1\r\nHost: test\r\nX-User-Id: late\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n";
    RawConnection idle(server.port());
    RawConnection half_header(server.port());
    half_header.send(head.substr(0, 20));
    RawConnection half_body(server.port());
    half_body.send(head + body.substr(0, 10));
    // Time for the server to read what was sent.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));

    const auto signalled = std::chrono::steady_clock::now();
    const int exit_code = server.stop(SIGTERM, std::chrono::seconds(5));
    const auto took = std::chrono::steady_clock::now() - signalled;
    CHECK(exit_code == 0);
    CHECK(took < std::chrono::seconds(2));
    // Nothing was done for the unfinished request: its connection ends without an answer.
    CHECK(half_body.closed_by_server(std::chrono::seconds(1)));
    CHECK(half_header.closed_by_server(std::chrono::seconds(1)));
    CHECK(idle.closed_by_server(std::chrono::seconds(1)));
}

}  // namespace shutdown_test
