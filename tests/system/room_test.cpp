// SPDX-License-Identifier: MIT
// tests/system/room_test.cpp: waiting rooms in the ticketing server (rooms.hpp). Buyers
// who join an event's room before it opens are admitted in turns of max_active, each can
// buy, and their payments free the slots for the next; holds without an admission are
// refused, as are forged, expired, another buyer's and another room's admissions; the
// position stream ends with the admission; a room whose storage (a Redis of its own) stops
// lets holds through with --room-fail-open and says so in /metrics, and refuses them
// without it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seatlock/admission.hpp>
#include <set>

#include "support/system_test.hpp"
#include "api.hpp"
#include "support/temp_files.hpp"
#include "venue.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace room_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;

namespace {

// An instant as the venue file writes it: "2026-12-05T18:00:00Z" (whole seconds, rounded up).
std::string utc(std::chrono::system_clock::time_point t) {
    const auto seconds = std::chrono::ceil<std::chrono::seconds>(t.time_since_epoch()).count();
    const std::time_t when = static_cast<std::time_t>(seconds);
    std::tm parts{};
    ::gmtime_r(&when, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

std::string room_json(const std::string& id, std::chrono::system_clock::time_point opens,
                      int max_active, int admit_per_second = 5000) {
    return R"({"id": ")" + id + R"(", "opens_at": ")" + utc(opens) + R"(", "admit_per_second": )" +
           std::to_string(admit_per_second) + R"(, "max_active": )" + std::to_string(max_active) +
           R"(, "admission_ttl_s": 60, "no_show_after_s": 30})";
}

std::string event_json(const std::string& id, int capacity,
                       const std::optional<std::string>& room) {
    return R"({"id": ")" + id + R"(", "zones": [{"id": "floor", "capacity": )" +
           std::to_string(capacity) + "}]" + (room ? R"(, "room": )" + *room : "") + "}";
}

// The flags of every server here: buyers poll and buy faster than the rate limits allow.
std::vector<std::string> unlimited() {
    return {"--rate-buyer-reads", "0", "--rate-buyer-writes", "0"};
}

const std::string one_seat = R"({"zone": "floor", "quantity": 1})";

HttpReply hold_with(HttpClient& client, const std::string& event, const std::string& buyer,
                    std::vector<std::pair<std::string, std::string>> headers = {}) {
    headers.emplace_back("X-User-Id", buyer);
    headers.emplace_back("Content-Type", "application/json");
    return client.send("POST", "/events/" + event + "/holds", one_seat, headers);
}

HttpReply position(HttpClient& client, const std::string& room, const std::string& buyer) {
    return client.send("GET", "/rooms/" + room + "/position", "", {{"X-User-Id", buyer}});
}

// A refusal of a hold for want of an admission: 403 not_admitted, naming the room's line.
void check_not_admitted(const HttpReply& reply, const std::string& room) {
    CHECK_MESSAGE(reply.status == 403, reply.body);
    CHECK(reply.error() == "not_admitted");
    const auto body = reply.json().as_object();
    CHECK(body.at("room").as_string() == room);
    CHECK(body.at("queue_url").as_string() == "/rooms/" + room + "/position");
    CHECK(body.at("join_url").as_string() == "/rooms/" + room + "/join");
}

// Holds one seat with `token` and pays it: true when both succeed.
bool buy(HttpClient& client, const std::string& event, const std::string& buyer,
         const std::string& token) {
    const auto held = hold_with(client, event, buyer, {{"X-Admission-Token", token}});
    if (held.status != 201) {
        MESSAGE(buyer << ": hold answered " << held.status << " " << held.body);
        return false;
    }
    const std::string hold = std::string(held.json().at("token").as_string());
    const auto paid = client.post("/holds/" + hold + "/confirm",
                                  R"({"payment_id": "pay-)" + buyer + R"("})", buyer);
    if (paid.status != 200)
        MESSAGE(buyer << ": confirm answered " << paid.status << " " << paid.body);
    return paid.status == 200;
}

// Everything a GET sends until the server closes the connection (or `timeout` passes).
std::string read_stream(int port, const std::string& target, const std::string& buyer,
                        std::chrono::milliseconds timeout) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    const std::string request = "GET " + target + " HTTP/1.1\r\nHost: test\r\nX-User-Id: " + buyer +
                                "\r\nAccept: text/event-stream\r\n\r\n";
    REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size()));
    std::string received;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left <= 0ms) break;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        char chunk[4096];
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) {
            received += "\n<closed>";
            break;
        }
        received.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return received;
}

}  // namespace

TEST_CASE("a venue's rooms are read with its events, and a bad one is refused naming it") {
    const auto opens = std::chrono::system_clock::now() + 1h;
    const auto venue = [&](const std::string& room) {
        return R"({"events": [)" + event_json("gig", 10, room) + "]}";
    };
    const auto parsed = ticketing::parse_venue(venue(room_json("gig-line", opens, 7, 12)));
    REQUIRE_MESSAGE(parsed.has_value(), parsed.error().detail);
    REQUIRE(parsed->rooms.size() == 1);
    const auto& room = parsed->rooms.front();
    CHECK(room.id == "gig-line");
    CHECK(room.event == "gig");
    CHECK(room.config.max_active == 7);
    CHECK(room.config.admit_per_second == 12);
    CHECK(room.config.admission_ttl == std::chrono::seconds(60));
    CHECK(room.config.no_show_after == std::chrono::seconds(30));
    CHECK(std::chrono::floor<std::chrono::seconds>(room.config.opens_at) ==
          std::chrono::ceil<std::chrono::seconds>(opens));
    CHECK(ticketing::parse_utc_time("2026-12-05T18:00:00.250Z") ==
          seatlock::WallTime(std::chrono::milliseconds(1796493600250)));

    const std::string good = room_json("gig-line", opens, 7);
    const auto with = [&](const std::string& from, const std::string& to) {
        std::string text = good;
        text.replace(text.find(from), from.size(), to);
        return text;
    };
    const std::vector<std::pair<std::string, std::string>> bad = {
        {with("\"gig-line\"", "\"gig:line\""), "id 'gig:line'"},
        {with(utc(opens), "tomorrow"), "opens_at 'tomorrow'"},
        {with(utc(opens), "2026-02-30T10:00:00Z"), "opens_at"},
        {with("\"admit_per_second\": 5000", "\"admit_per_second\": 0"), "admit_per_second"},
        {with("\"max_active\": 7", "\"max_active\": 0"), "max_active"},
        {with("\"admission_ttl_s\": 60", "\"admission_ttl_s\": -1"), "admission_ttl_s"},
        {with("\"no_show_after_s\": 30", "\"no_show_after_s\": \"30\""), "no_show_after_s"},
        {with("\"no_show_after_s\": 30", "\"no_show_after_s\": 30, \"seed\": \"x\""),
         "unknown field 'seed'"},
        {R"({"id": "gig-line"})", "opens_at"},
    };
    for (const auto& one : bad) {
        const std::string& text = one.first;
        const std::string& says = one.second;
        CAPTURE(text);
        const auto refused = ticketing::parse_venue(venue(text));
        REQUIRE_FALSE(refused.has_value());
        CHECK(refused.error().code == seatlock::errc::invalid_argument);
        CHECK_MESSAGE(refused.error().detail.find("room of event gig") != std::string::npos,
                      refused.error().detail);
        CHECK_MESSAGE(refused.error().detail.find(says) != std::string::npos,
                      refused.error().detail);
    }
    // One event per room.
    const auto twice = ticketing::parse_venue(R"({"events": [)" + event_json("gig", 10, good) +
                                              ", " + event_json("gig-2", 10, good) + "]}");
    REQUIRE_FALSE(twice.has_value());
    CHECK(twice.error().detail.find("room gig-line is named by events gig and gig-2") !=
          std::string::npos);
}

TEST_CASE(
    "buyers who joined before opening are admitted max_active at a time, and each "
    "payment lets the next in") {
    constexpr int buyers = 2000;
    constexpr int max_active = 250;
    const std::string room = "onsale-line";
    // Time for the server to start and every buyer to join before the room opens.
    const auto opens = std::chrono::system_clock::now() + (sanitized_build ? 10s : 4s);
    const std::string venue =
        R"({"events": [)" + event_json("onsale", buyers + 10, room_json(room, opens, max_active)) +
        "]}";
    TicketingServer server(on(MemoryStorage{}, unlimited(), venue));
    auto client = server.client();
    const auto name = [](int i) { return "buyer-" + std::to_string(i); };
    const std::string active_gauge =
        R"(seatlock_ticketing_room_visitors{room="onsale-line",state="active"})";

    for (int i = 0; i < buyers; ++i) {
        const auto joined = client.post("/rooms/" + room + "/join", "", name(i));
        REQUIRE_MESSAGE(joined.status == 201, joined.body);
        if (i == 0) {
            const auto body = joined.json().as_object();
            CHECK(body.at("in_draw").as_bool());
            CHECK(body.at("event").as_string() == "onsale");
        }
    }
    REQUIRE_MESSAGE(std::chrono::system_clock::now() < opens,
                    "the joins took longer than the time left before opening");
    // Joining again is the same ticket.
    const auto again = client.post("/rooms/" + room + "/join", "", name(0));
    CHECK(again.status == 200);
    CHECK(again.json().at("replayed").as_bool());
    // Before opening: no place yet, the wait is the time to opening; no hold.
    const auto before = position(client, room, name(0));
    REQUIRE_MESSAGE(before.status == 200, before.body);
    CHECK(before.json().at("state").as_string() == "waiting");
    CHECK(before.json().as_object().if_contains("place") == nullptr);
    CHECK(before.json().at("estimated_wait_s").to_number<double>() > 0);
    check_not_admitted(hold_with(client, "onsale", name(0)), room);

    // Once open, every buyer has a place: the line's order.
    REQUIRE(eventually(
        [&] {
            return position(client, room, name(0)).json().as_object().contains("place") ||
                   position(client, room, name(0)).json().at("state") != "waiting";
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(opens -
                                                              std::chrono::system_clock::now()) +
            10s));
    // The first admit steps let max_active in; then the line stands still until someone
    // finishes, and the places read now are one order.
    REQUIRE(eventually([&] { return metric(client, active_gauge) == max_active; }, 5s));
    std::vector<std::pair<std::int64_t, std::string>> line;  // place (0: admitted), buyer
    for (int i = 0; i < buyers; ++i) {
        const auto where = position(client, room, name(i)).json().as_object();
        line.emplace_back(where.contains("place") ? where.at("place").to_number<std::int64_t>() : 0,
                          name(i));
    }
    std::sort(line.begin(), line.end());

    // Waves: the front of the line is admitted, max_active at most; they buy; the next come.
    std::size_t front = 0;
    int waves = 0;
    const auto deadline = std::chrono::steady_clock::now() + (sanitized_build ? 180s : 60s);
    while (front < line.size() && std::chrono::steady_clock::now() < deadline) {
        const std::string first = line[front].second;
        REQUIRE_MESSAGE(
            eventually(
                [&] { return position(client, room, first).json().at("state") != "waiting"; }, 10s),
            "nobody admitted after " << front << " bought");
        // The admitted ones are the front of the line: collect their admissions in order.
        std::vector<std::pair<std::string, std::string>> admitted;  // buyer, token
        std::size_t next = front;
        for (; next < line.size(); ++next) {
            const auto where = position(client, room, line[next].second);
            REQUIRE_MESSAGE(where.status == 200, where.body);
            const auto body = where.json().as_object();
            if (!body.contains("admission")) {
                CHECK(body.at("state").as_string() == "waiting");
                break;
            }
            CHECK(where.header("Set-Cookie").find("Path=/events/onsale/holds") !=
                  std::string::npos);
            admitted.emplace_back(line[next].second,
                                  std::string(body.at("admission").at("token").as_string()));
        }
        CHECK(admitted.size() <= static_cast<std::size_t>(max_active));
        if (waves == 0) {
            // Nobody finished yet: the slots are all taken, and the next buyer waits.
            CHECK(admitted.size() == static_cast<std::size_t>(max_active));
            REQUIRE(next < line.size());
            std::this_thread::sleep_for(300ms);  // three admit steps: still no slot
            CHECK(position(client, room, line[next].second).json().at("state") == "waiting");
            check_not_admitted(hold_with(client, "onsale", line[next].second), room);
        }
        for (const auto& one : admitted) REQUIRE(buy(client, "onsale", one.first, one.second));
        front = next;
        ++waves;
    }
    CHECK(front == line.size());
    CHECK(waves >= buyers / max_active);
    CHECK(zone_counts(client, "onsale", "floor")["paid"] == buyers);
    // Everyone paid: the room's slots are free again.
    CHECK(position(client, room, name(0)).json().at("state") == "finished");
}

TEST_CASE(
    "a hold needs the buyer's own admission to the event's room: forged, expired, "
    "another buyer's and another room's are refused") {
    TempFiles files;
    const std::string secret(48, 'k');
    const std::string key_file = files.write("admission.key", secret + "\n");
    const auto opened = std::chrono::system_clock::now() - 1h;
    const std::string venue = R"({"events": [)" +
                              event_json("gig", 20, room_json("gig-line", opened, 5)) + ", " +
                              event_json("other-gig", 20, room_json("other-line", opened, 5)) +
                              ", " + event_json("open-gig", 20, std::nullopt) + "]}";
    auto flags = unlimited();
    flags.insert(flags.end(), {"--admission-key-file", key_file});
    TicketingServer server(on(MemoryStorage{}, flags, venue));
    auto client = server.client();

    const seatlock::AdmissionKey key(secret);
    const seatlock::AdmissionKey other_key(std::string(48, 'z'));
    const auto later = std::chrono::system_clock::now() + 10min;
    const auto token = [](const seatlock::Result<seatlock::Admission>& a) {
        return a.value().token;
    };
    // No admission at all, then each wrong one.
    check_not_admitted(hold_with(client, "gig", "ann"), "gig-line");
    const std::vector<std::pair<std::string, std::string>> refused = {
        {"forged", token(other_key.sign("gig-line", "ann", later))},
        {"expired", token(key.sign("gig-line", "ann", std::chrono::system_clock::now() - 1s))},
        {"another buyer's", token(key.sign("gig-line", "bob", later))},
        {"another room's", token(key.sign("other-line", "ann", later))},
        {"malformed", "gig-line:ann:garbage"},
    };
    for (const auto& wrong : refused) {
        const std::string& what = wrong.first;
        const std::string& bad = wrong.second;
        CAPTURE(what);
        const auto reply = hold_with(client, "gig", "ann", {{"X-Admission-Token", bad}});
        check_not_admitted(reply, "gig-line");
        // The same refusal through the cookie.
        check_not_admitted(
            hold_with(client, "gig", "ann", {{"Cookie", "seatlock_admission=" + bad}}), "gig-line");
    }
    // An admission signed with the shared key is accepted by any server that has it.
    CHECK(hold_with(client, "gig", "ann",
                    {{"X-Admission-Token", token(key.sign("gig-line", "ann", later))}})
              .status == 201);
    // An event without a room needs none.
    CHECK(hold_with(client, "open-gig", "ann").status == 201);

    // The rooms' own answers.
    CHECK(position(client, "no-such-line", "ann").error() == "unknown_room");
    CHECK(position(client, "gig-line", "carl").error() == "not_in_queue");
    CHECK(client.post("/rooms/no-such-line/join", "", std::string("carl")).status == 404);

    // The page's way: join, be admitted, the cookie carries the admission to the holds.
    REQUIRE(client.post("/rooms/gig-line/join", "", std::string("carl")).status == 201);
    HttpReply admitted;
    REQUIRE(eventually([&] {
        admitted = position(client, "gig-line", "carl");
        return admitted.json().as_object().contains("admission");
    }));
    const std::string cookie = admitted.header("Set-Cookie");
    CHECK(cookie.find("HttpOnly") != std::string::npos);
    const std::string value = cookie.substr(0, cookie.find(';'));
    const auto held = hold_with(client, "gig", "carl", {{"Cookie", value}});
    REQUIRE_MESSAGE(held.status == 201, held.body);
    // An admission of this room opens no other event.
    check_not_admitted(hold_with(client, "other-gig", "carl", {{"Cookie", value}}), "other-line");
    // Released, with no other hold on the event: the buyer is finished, the slot free.
    const std::string hold = std::string(held.json().at("token").as_string());
    CHECK(client.del("/holds/" + hold, std::string("carl")).status == 204);
    CHECK(position(client, "gig-line", "carl").json().at("state") == "finished");
}

TEST_CASE(
    "the position stream sends the buyer's place and heartbeats, then the admission, and "
    "ends") {
    const auto opens = std::chrono::system_clock::now() + 2s;
    const std::string venue =
        R"({"events": [)" + event_json("gig", 20, room_json("gig-line", opens, 5)) + "]}";
    // Heartbeats between the position frames (one every 500 ms at most).
    TicketingServer server(on(MemoryStorage{}, {"--stream-heartbeat-ms", "100"}, venue));
    auto client = server.client();
    REQUIRE(client.post("/rooms/gig-line/join", "", std::string("dana")).status == 201);
    const std::string stream = read_stream(server.port(), "/rooms/gig-line/stream", "dana", 15s);
    CAPTURE(stream);
    CHECK(stream.starts_with("HTTP/1.1 200 OK"));
    CHECK(stream.find("Content-Type: text/event-stream") != std::string::npos);
    const auto waiting = stream.find("event: position\ndata: {");
    const auto admitted = stream.find("event: admitted\ndata: {");
    CHECK(waiting != std::string::npos);
    REQUIRE(admitted != std::string::npos);
    CHECK(waiting < admitted);
    CHECK(stream.find("\n: heartbeat\n") < admitted);
    CHECK(stream.find("\"token\":\"gig-line:dana:", admitted) != std::string::npos);
    CHECK(stream.ends_with("<closed>"));
    // A buyer who never joined: the stream says so and ends.
    const std::string stranger = read_stream(server.port(), "/rooms/gig-line/stream", "erin", 5s);
    CHECK(stranger.find("event: error\ndata: {\"error\":\"not_in_queue\"") != std::string::npos);
    CHECK(stranger.ends_with("<closed>"));
    CHECK(client.get("/rooms/no-such-line/stream").status == 404);
}

TEST_CASE("a position stream asks the room soon near the front, rarely far back, and spreads the opening") {
    using ticketing::room_poll_after;
    seatlock::QueuePosition where;
    where.state = seatlock::QueueState::waiting;
    where.place = 1;
    where.estimated_wait = 1s;  // a tenth of the wait, between 500 ms and 20 s
    CHECK(room_poll_after(where, "ann") == 500ms);
    where.estimated_wait = 100s;
    CHECK(room_poll_after(where, "ann") == 10s);
    where.estimated_wait = 10h;
    CHECK(room_poll_after(where, "ann") == 20s);
    where.state = seatlock::QueueState::admitted;
    CHECK(room_poll_after(where, "ann") == 500ms);
    // Before the opening (no place): until it, 20 s at most, plus up to 2 s by buyer.
    where.state = seatlock::QueueState::waiting;
    where.place.reset();
    where.estimated_wait = 1h;
    CHECK(room_poll_after(where, "ann") == 20s);
    where.estimated_wait = 3s;
    std::set<std::chrono::milliseconds::rep> asked;
    for (int n = 0; n < 100; ++n) {
        const auto after = room_poll_after(where, "buyer-" + std::to_string(n));
        CHECK(after >= 3s);
        CHECK(after < 5s);
        asked.insert(after.count());
    }
    CHECK(asked.size() > 50);  // spread, not all at once
    CHECK(room_poll_after(where, "ann") == room_poll_after(where, "ann"));
}

#ifdef SEATLOCK_SYSTEM_TEST_REDIS
TEST_CASE(
    "a room whose storage stops lets holds through with --room-fail-open, counted, and "
    "refuses them without it") {
    RedisServer redis;
    const auto opened = std::chrono::system_clock::now() - 1h;
    const std::string venue =
        R"({"events": [)" + event_json("gig", 20, room_json("gig-line", opened, 5)) + "]}";
    // The seats in memory, the room in a Redis of its own, which stops.
    TicketingServer open_server(
        on(MemoryStorage{}, {"--room-redis-url", redis.url(), "--room-fail-open"}, venue));
    TicketingServer closed_server(on(MemoryStorage{}, {"--room-redis-url", redis.url()}, venue));
    auto open_client = open_server.client();
    auto closed_client = closed_server.client();
    const std::string failing_open = R"(seatlock_ticketing_room_failing_open{room="gig-line"})";
    const std::string failing = R"(seatlock_ticketing_room_storage_failing{room="gig-line"})";
    CHECK(metric(open_client, failing_open) == 0);
    check_not_admitted(hold_with(open_client, "gig", "ann"), "gig-line");

    redis.stop();
    REQUIRE(eventually([&] { return metric(open_client, failing_open) == 1; }, 15s));
    const auto let_in = hold_with(open_client, "gig", "ann");
    CHECK_MESSAGE(let_in.status == 201, let_in.body);
    CHECK(metric(open_client, "seatlock_ticketing_room_fail_open_holds_total") == 1);

    REQUIRE(eventually([&] { return metric(closed_client, failing) == 1; }, 15s));
    CHECK(metric(closed_client, failing_open) == 0);
    const auto refused = hold_with(closed_client, "gig", "bob");
    CHECK(refused.status == 503);
    CHECK(refused.error() == "room_unavailable");
    CHECK(metric(closed_client, "seatlock_ticketing_room_fail_open_holds_total") == 0);

    // The storage back, empty: admissions are needed again, and the servers configure the
    // room again, so that buyers can join its line.
    redis.restart();
    REQUIRE(eventually([&] { return metric(open_client, failing_open) == 0; }, 15s));
    check_not_admitted(hold_with(open_client, "gig", "carl"), "gig-line");
    CHECK(eventually([&] { return open_client.post("/rooms/gig-line/join", "", std::string("carl")).status == 201; },
                     15s));

    // A server started while the room's storage is down starts, failing open, and
    // configures the room once the storage answers.
    redis.stop();
    TicketingServer late(on(MemoryStorage{}, {"--room-redis-url", redis.url(), "--room-fail-open"}, venue));
    auto late_client = late.client();
    CHECK(metric(late_client, failing_open) == 1);
    CHECK(hold_with(late_client, "gig", "dana").status == 201);
    redis.restart();
    CHECK(eventually([&] { return late_client.post("/rooms/gig-line/join", "", std::string("erin")).status == 201; },
                     15s));
    CHECK(metric(late_client, failing_open) == 0);
}
#endif

}  // namespace room_test
