// SPDX-License-Identifier: MIT
// benchmarks/viewer_parts_test.cpp: the viewers scenario's pieces that need no server
// (ctest bench_viewer_parts).
#include "viewer_parts.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

using namespace seatlock::bench;
using namespace std::chrono_literals;

namespace {

std::vector<SseEvent> parse_in_pieces(const std::string& text, std::size_t piece) {
    SseParser parser;
    std::vector<SseEvent> events;
    for (std::size_t at = 0; at < text.size(); at += piece) {
        parser.feed(std::string_view(text).substr(at, piece),
                    [&](const SseEvent& e) { events.push_back(e); });
    }
    return events;
}

}  // namespace

TEST_CASE("SseParser: ids, types and data sizes, whatever the pieces the bytes come in") {
    const std::string big(100'000, 'x');
    const std::string text = "retry: 1000\n\nid: 42\nevent: snapshot\ndata: {\"v\":42}\n\n"
                             ": heartbeat\n\n"
                             "id:45\r\nevent:changes\r\ndata:" + big + "\r\ndata: b\r\n\r\n"
                             "id: 46\rdata: c\r\r";
    for (std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{4096},
                              text.size()}) {
        CAPTURE(piece);
        const auto events = parse_in_pieces(text, piece);
        REQUIRE(events.size() == 4);
        CHECK(events[0].id.empty());  // retry alone
        CHECK(events[1].id == "42");
        CHECK(events[1].type == "snapshot");
        CHECK(events[1].data_bytes == std::string(" {\"v\":42}").size() + 1);
        CHECK(events[2].id == "45");
        CHECK(events[2].type == "changes");
        CHECK(events[2].data_bytes == big.size() + 1 + std::string(" b").size() + 1);
        CHECK(events[3].id == "46");
        CHECK(events[3].type.empty());
    }
    SseParser parser;
    int seen = 0;
    parser.feed(text, [&](const SseEvent&) { ++seen; });
    CHECK(parser.comments() == 1);
    CHECK(parser.events() == 4);
    // An event is only complete at its blank line.
    SseParser partial;
    partial.feed("id: 7\ndata: x\n", [&](const SseEvent&) { FAIL("not complete yet"); });
    bool done = false;
    partial.feed("\n", [&](const SseEvent& e) { done = e.id == "7"; });
    CHECK(done);
}

TEST_CASE("version_of_etag and json_number") {
    CHECK(version_of_etag("\"42\"") == 42u);
    CHECK(version_of_etag("\"42-gzip\"") == 42u);
    CHECK(version_of_etag("W/\"7\"") == 7u);
    CHECK_FALSE(version_of_etag("\"abc\""));
    CHECK_FALSE(version_of_etag("\"42-br\""));
    CHECK_FALSE(version_of_etag("42"));
    CHECK_FALSE(version_of_etag("\"\""));
    CHECK(json_number(R"({"token":"version","version": 17,"seats":["a"]})", "version") == 17u);
    CHECK(json_number(R"({"a":1,"version":0})", "version") == 0u);
    CHECK_FALSE(json_number(R"({"token":"abc"})", "version"));
    CHECK_FALSE(json_number(R"({"version":"x"})", "version"));
}

TEST_CASE("StalenessBook: one sample per probe and viewer, from the hold's answer") {
    using Clock = StalenessBook::Clock;
    StalenessBook book(10ms);
    const int a = book.add_viewer();
    const int b = book.add_viewer();
    const auto t0 = Clock::now();
    book.received(a, 5, t0);  // before the phase: never counted
    book.start();
    book.hold_answered(10, t0 + 1ms);
    book.hold_answered(11, t0 + 2ms);   // too soon after the last probe: not one
    book.hold_answered(9, t0 + 30ms);   // a lower version: not one
    book.hold_answered(20, t0 + 40ms);
    CHECK(book.probes() == 2);
    book.received(a, 12, t0 + 6ms);    // probe 10: 5 ms
    book.received(a, 25, t0 + 140ms);  // probe 20: 100 ms
    book.received(b, 21, t0 + 1000ms);  // both probes: 999 ms and 960 ms
    book.finish(t0 + 2000ms);
    const auto s = book.samples();
    CHECK(s.count() == 4);
    CHECK(book.missed() == 0);
    CHECK(s.quantile_us(0.25) == doctest::Approx(5'000).epsilon(0.1));
    CHECK(s.quantile_us(0.5) == doctest::Approx(100'000).epsilon(0.1));
    CHECK(s.quantile_us(1.0) == doctest::Approx(999'000).epsilon(0.1));
}

TEST_CASE("StalenessBook: a viewer ahead of the answer sees it at once; a missed probe counts") {
    using Clock = StalenessBook::Clock;
    StalenessBook book(1ms);
    const int ahead = book.add_viewer();
    const int behind = book.add_viewer();
    const auto t0 = Clock::now();
    book.start();
    book.received(ahead, 30, t0);  // the frame came before the hold's answer
    book.hold_answered(30, t0 + 5ms);
    book.received(behind, 29, t0 + 10ms);
    book.stop_probing();
    book.hold_answered(40, t0 + 20ms);  // after the phase: not a probe
    CHECK(book.probes() == 1);
    book.finish(t0 + 505ms);
    const auto s = book.samples();
    CHECK(s.count() == 2);
    CHECK(book.missed() == 1);
    CHECK(s.quantile_us(0.5) == 0);
    CHECK(s.quantile_us(1.0) == doctest::Approx(500'000).epsilon(0.1));
}

TEST_CASE("venue_json: the 60,000-seat stadium as the server's venue file") {
    const VenueShape shape;
    CHECK(shape.seat_count() == 60'000);
    const auto doc = boost::json::parse(venue_json(shape));
    const auto& event = doc.at("events").as_array().at(0).as_object();
    CHECK(event.at("id").as_string() == "stadium");
    const auto& zones = event.at("zones").as_array();
    REQUIRE(zones.size() == 60);
    std::set<std::string> ids;
    std::int64_t seats = 0;
    for (const auto& zone : zones) {
        ids.insert(std::string(zone.at("id").as_string()));
        const auto& rows = zone.at("rows").as_array();
        CHECK(rows.size() == 40);
        for (const auto& row : rows) seats += row.at("seats").as_int64();
    }
    CHECK(ids.size() == 60);
    CHECK(ids.count("s01") == 1);
    CHECK(ids.count("s60") == 1);
    CHECK(seats == 60'000);
    const auto path = std::filesystem::temp_directory_path() / "seatlock-bench-venue-test.json";
    write_venue_file(path.string(), shape);
    std::ifstream in(path);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == venue_json(shape));
    std::filesystem::remove(path);
}
