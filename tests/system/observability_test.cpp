// SPDX-License-Identifier: MIT
// tests/system/observability_test.cpp: what an operator sees of the server
// (docs/ticketing-server.md, "Metrics" and "Logs"): the latency histogram by route
// template and method, the seat gauges following holds, releases and sales, build_info;
// the access log's JSON line per request with its request id, echoed as X-Request-Id
// (the client's own when valid, a new one otherwise), and the levels that filter lines.
#include <boost/json.hpp>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/raw_connection.hpp"
#include "support/system_test.hpp"
#include "support/temp_files.hpp"

namespace observability_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;

namespace {

const std::string holds_url = "/events/demo-game/holds";

// The JSON lines of a log (the access log's), in order; other lines are skipped.
std::vector<boost::json::object> access_lines(const std::string& log) {
    std::vector<boost::json::object> lines;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
        if (!line.starts_with('{')) continue;
        lines.push_back(boost::json::parse(line).as_object());
    }
    return lines;
}

// The access line of request `id`; throws when there is none, or more than one.
boost::json::object line_of(const std::string& log, const std::string& id) {
    std::vector<boost::json::object> found;
    for (auto& line : access_lines(log))
        if (line.at("request_id").as_string() == id) found.push_back(std::move(line));
    if (found.size() != 1) {
        throw std::runtime_error(std::to_string(found.size()) + " access lines of " + id +
                                 " in:\n" + log);
    }
    return found.front();
}

// A seat gauge of demo-game.
std::int64_t seats(HttpClient& client, const std::string& state) {
    return metric(client, "seatlock_ticketing_seats{event=\"demo-game\",state=\"" + state + "\"}");
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("the latency histogram is labelled by route template and method, never by the path") {
    MemoryStorage storage;
    TicketingServer server(on(storage));
    auto client = server.client();
    REQUIRE(client.post(holds_url, seats_body("lower-1", {"A-1"}), "alice").status == 201);
    REQUIRE(client.get("/events/demo-game/seats?zone=lower-1").status == 200);
    REQUIRE(client.get("/events/no-such-event/seats").status == 404);
    REQUIRE(client.get("/no/such/path").status == 404);
    REQUIRE(client.get("/another-missing-path").status == 404);
    REQUIRE(client.send("PUT", holds_url, "", {}).status == 405);

    const auto count = [&](const std::string& labels) {
        return metric(client,
                      "seatlock_ticketing_http_request_duration_seconds_count{" + labels + "}");
    };
    CHECK(count(R"(route="/events/{event}/holds",method="POST")") == 1);
    CHECK(count(R"(route="/events/{event}/seats",method="GET")") == 2);
    CHECK(count(R"(route="/events/{event}/holds",method="PUT")") == 1);
    // Every path with no endpoint is one series.
    CHECK(count(R"(route="other",method="GET")") == 2);
    const std::string body = client.get("/metrics").body;
    const std::string histogram = "seatlock_ticketing_http_request_duration_seconds";
    CHECK(contains(
        body, histogram + R"(_bucket{route="/events/{event}/holds",method="POST",le="+Inf"} 1)"));
    // The scrape before this one is counted too; the event and the paths never show.
    CHECK(contains(body, histogram + R"(_count{route="/metrics",method="GET"})"));
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with(histogram)) continue;
        CAPTURE(line);
        CHECK(line.find("demo-game") == std::string::npos);
        CHECK(line.find("no-such") == std::string::npos);
        CHECK(line.find("missing") == std::string::npos);
    }
}

TEST_CASE("the seat gauges follow the holds, releases and sales of an event; build_info is 1") {
    MemoryStorage storage;
    TicketingServer server(on(storage));
    auto client = server.client();
    const auto free = seats(client, "free");
    CHECK(free > 0);
    CHECK(seats(client, "held") == 0);
    CHECK(seats(client, "paid") == 0);
    CHECK(metric(client, "seatlock_ticketing_event_version{event=\"demo-game\"}") >= 0);

    const auto held = client.post(holds_url, seats_body("lower-1", {"A-1", "A-2"}), "alice");
    REQUIRE(held.status == 201);
    CHECK(eventually([&] { return seats(client, "held") == 2; }));
    CHECK(seats(client, "free") == free - 2);

    const auto token = std::string(held.json().at("token").as_string());
    const auto other = client.post(holds_url, seats_body("lower-1", {"B-1"}), "bob");
    REQUIRE(other.status == 201);
    CHECK(eventually([&] { return seats(client, "held") == 3; }));
    REQUIRE(
        client.del("/holds/" + std::string(other.json().at("token").as_string()), "bob").status ==
        204);
    CHECK(eventually([&] { return seats(client, "held") == 2; }));
    CHECK(seats(client, "free") == free - 2);

    REQUIRE(client.post("/holds/" + token + "/confirm", R"({"payment_id":"pay-obs-1"})", "alice")
                .status == 200);
    CHECK(eventually([&] { return seats(client, "paid") == 2; }));
    CHECK(seats(client, "held") == 0);
    CHECK(seats(client, "free") == free - 2);

    const std::string body = client.get("/metrics").body;
    const std::regex build_info(R"(\nseatlock_ticketing_build_info\{version="\d+\.\d+\.\d+",)"
                                R"(compiler="(gcc|clang) [\d.]+"\} 1\n)");
    CHECK(std::regex_search(body, build_info));
}

TEST_CASE(
    "every request has one access line, its id echoed as X-Request-Id: the client's own or a new "
    "one") {
    MemoryStorage storage;
    TicketingServer server(on(storage));
    auto client = server.client();

    const auto given = client.send("POST", holds_url, seats_body("lower-1", {"A-1"}),
                                   {{"X-User-Id", "alice"}, {"X-Request-Id", "lb-7f3a:42"}});
    REQUIRE(given.status == 201);
    CHECK(given.header("X-Request-Id") == "lb-7f3a:42");
    const auto first = client.get("/events/demo-game/seats?zone=lower-1");
    const auto second = client.get("/nowhere");
    const std::string first_id = first.header("X-Request-Id");
    const std::string second_id = second.header("X-Request-Id");
    CHECK_FALSE(first_id.empty());
    CHECK_FALSE(second_id.empty());
    CHECK(first_id != second_id);

    // Each line is written before its answer is sent.
    const std::string log = server.log();
    const auto hold = line_of(log, "lb-7f3a:42");
    CHECK(hold.at("level").as_string() == "info");
    CHECK(hold.at("method").as_string() == "POST");
    CHECK(hold.at("route").as_string() == "/events/{event}/holds");
    CHECK(hold.at("path").as_string() == holds_url);
    CHECK(hold.at("status").as_int64() == 201);
    CHECK(hold.at("buyer").as_string() == "alice");
    CHECK(hold.at("bytes").as_int64() == static_cast<std::int64_t>(given.body.size()));
    CHECK(hold.at("duration_us").as_int64() >= 0);
    CHECK(hold.at("client").as_string() == "127.0.0.1");
    CHECK(std::regex_match(std::string(hold.at("time").as_string()),
                           std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));

    const auto map = line_of(log, first_id);
    CHECK(map.at("route").as_string() == "/events/{event}/seats");
    CHECK(map.at("path").as_string() == "/events/demo-game/seats?zone=lower-1");
    CHECK(map.at("status").as_int64() == 200);
    CHECK_FALSE(map.contains("buyer"));  // a viewer names none
    const auto missing = line_of(log, second_id);
    CHECK(missing.at("route").as_string() == "other");
    CHECK(missing.at("status").as_int64() == 404);
    CHECK(missing.at("bytes").as_int64() == static_cast<std::int64_t>(second.body.size()));
}

TEST_CASE(
    "an X-Request-Id too long, or with a control character, space or non-ASCII byte, is replaced, "
    "not echoed") {
    MemoryStorage storage;
    TicketingServer server(on(storage));
    auto client = server.client();

    const std::string longest(128, 'x');
    CHECK(client.send("GET", "/events", "", {{"X-Request-Id", longest}}).header("X-Request-Id") ==
          longest);
    const std::string too_long(129, 'y');
    const auto replaced = client.send("GET", "/events", "", {{"X-Request-Id", too_long}});
    CHECK(replaced.status == 200);
    const auto id = replaced.header("X-Request-Id");
    CHECK_FALSE(id.empty());
    CHECK(id.size() <= 128);
    CHECK(id.find('y') == std::string::npos);
    CHECK(line_of(server.log(), id).at("status").as_int64() == 200);

    // Bytes HttpClient would not send: over a raw connection.
    const std::vector<std::string> bad_ids = {"a\tb", "a b", "id-\x01", "caf\xc3\xa9"};
    for (const auto& bad : bad_ids) {
        CAPTURE(bad);
        RawConnection raw(server.port());
        raw.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: " + bad +
                 "\r\nConnection: close\r\n\r\n");
        const auto reply = raw.read_reply();
        REQUIRE(reply.has_value());
        const auto echoed = reply->header("X-Request-Id");
        CHECK_FALSE(echoed.empty());
        CHECK(echoed.find(bad) == std::string::npos);
        for (const char c : echoed) CHECK((c > ' ' && c <= '~'));
        for (const auto& line : access_lines(server.log()))
            CHECK(line.at("request_id").as_string() != bad);
    }
    // An answer to a request that cannot be read carries one too.
    RawConnection raw(server.port());
    raw.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: twice\r\nX-Request-Id: r-1\r\n\r\n");
    const auto refused = raw.read_reply();
    REQUIRE(refused.has_value());
    CHECK(refused->status == 400);
    CHECK(refused->header("X-Request-Id") == "r-1");
}

TEST_CASE("--log-level filters the lines: probes and scrapes are debug, other answers info") {
    MemoryStorage storage;
    SUBCASE("info, the default: no probe lines") {
        TicketingServer server(on(storage));
        auto client = server.client();
        const auto probe = client.get("/healthz").header("X-Request-Id");
        const auto events = client.get("/events").header("X-Request-Id");
        const std::string log = server.log();
        CHECK(log.find(probe) == std::string::npos);
        CHECK(line_of(log, events).at("level").as_string() == "info");
        CHECK(log.find(" seatlock-ticketing info: listening on") != std::string::npos);
    }
    SUBCASE("debug: probe lines too") {
        TicketingServer server(on(storage, {"--log-level", "debug"}));
        auto client = server.client();
        const auto probe = client.get("/healthz").header("X-Request-Id");
        const auto scrape = client.get("/metrics").header("X-Request-Id");
        CHECK(line_of(server.log(), probe).at("level").as_string() == "debug");
        CHECK(line_of(server.log(), scrape).at("route").as_string() == "/metrics");
    }
    SUBCASE("warn: no info lines, but the one that says where the server listens") {
        TicketingServer server(on(storage, {"--log-level", "warn"}));
        auto client = server.client();
        REQUIRE(client.post(holds_url, seats_body("lower-1", {"A-1"}), "alice").status == 201);
        REQUIRE(client.get("/events").status == 200);
        const std::string log = server.log();
        CHECK(access_lines(log).empty());
        std::istringstream lines(log);
        for (std::string line; std::getline(lines, line);) {
            CAPTURE(line);
            if (line.find(" info: ") != std::string::npos)
                CHECK(line.find("listening on") != std::string::npos);
        }
    }
}

TEST_CASE("--access-log off writes no line; --access-log FILE appends them there, not to stderr") {
    MemoryStorage storage;
    SUBCASE("off") {
        TicketingServer server(on(storage, {"--access-log", "off"}));
        auto client = server.client();
        REQUIRE(client.get("/events").status == 200);
        CHECK(access_lines(server.log()).empty());
    }
    SUBCASE("a file") {
        TempFiles files;
        const auto path = files.path("access.jsonl");
        TicketingServer server(on(storage, {"--access-log", path}));
        auto client = server.client();
        const auto id = client.get("/events").header("X-Request-Id");
        CHECK(access_lines(server.log()).empty());
        CHECK(line_of(read_file(path), id).at("route").as_string() == "/events");
    }
}

}  // namespace observability_test
