// tests/system/shutdown_test.cpp: SIGTERM and SIGINT stop the server cleanly (exit 0)
// while clients are busy, and a request already under way is still answered.
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <csignal>
#include <thread>

#include "system_test.hpp"

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

TEST_CASE("a request partly sent when SIGTERM arrives is still answered") {
    namespace asio = boost::asio;
    TicketingServer server(TicketingServer::Options{{"--backend", "memory"}, std::nullopt});
    INFO(server.log());
    asio::io_context ioc;
    asio::ip::tcp::socket socket(ioc);
    socket.connect(
        {asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(server.port())});

    const std::string body = R"({"zone":"lower-2","seats":["A-1"]})";
    const std::string head =
        "POST /events/demo-game/holds HTTP/1.1\r\nHost: test\r\nX-User-Id: late\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n";
    asio::write(socket, asio::buffer(head + body.substr(0, 10)));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));

    std::atomic<int> exit_code{-2};
    std::thread stopper([&] { exit_code = server.stop(SIGTERM); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    asio::write(socket, asio::buffer(body.substr(10)));

    std::string reply;
    boost::system::error_code ec;
    asio::read(socket, asio::dynamic_buffer(reply), ec);  // until the server closes
    stopper.join();
    CHECK(reply.starts_with("HTTP/1.1 201"));
    CHECK(reply.find("Connection: close") != std::string::npos);
    CHECK(exit_code == 0);
}
