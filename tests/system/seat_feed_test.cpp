// SPDX-License-Identifier: MIT
// tests/system/seat_feed_test.cpp: the seat map served from the process's snapshot
// (examples/ticketing_server/seat_feed.hpp), over HTTP: a 304 and a full map cost no
// storage call, the wire form decodes to the seats' states, gzip, ?since=, and the
// Server-Sent Events stream (resume, heartbeat, a slow viewer cut off while another keeps
// receiving and sales go on, shutdown with streams open). The memory backend, and the
// feed's round trip once on Redis.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace seat_feed_test {

using namespace seatlock::testing;
using namespace std::chrono_literals;

namespace {

const std::string seats_url = "/events/demo-game/seats";
const std::string stream_url = "/events/demo-game/stream";

// ---- a Server-Sent Events client on a plain socket

struct SseEvent {
    std::string id;
    std::string event;
    std::string data;
    bool comment = false;
};

class SseClient {
public:
    // Connects and sends the request; `receive_buffer` > 0 sets SO_RCVBUF first (a viewer
    // that reads slowly, or not at all).
    SseClient(int port, const std::string& target,
              const std::optional<std::string>& last_event_id = std::nullopt,
              int receive_buffer = 0) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd_ < 0) throw std::runtime_error("socket failed");
        if (receive_buffer > 0)
            ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            ::close(fd_);
            throw std::runtime_error("connect failed");
        }
        std::string request = "GET " + target + " HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n";
        if (last_event_id) request += "Last-Event-ID: " + *last_event_id + "\r\n";
        request += "\r\n";
        if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(request.size()))
            throw std::runtime_error("send failed");
    }
    ~SseClient() { ::close(fd_); }
    SseClient(const SseClient&) = delete;
    SseClient& operator=(const SseClient&) = delete;

    // The response's head (status line and headers), waited for.
    std::string head(std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (head_.empty()) {
            const auto end = buffer_.find("\r\n\r\n");
            if (end != std::string::npos) {
                head_ = buffer_.substr(0, end + 4);
                buffer_.erase(0, end + 4);
                break;
            }
            if (!receive(deadline)) break;
        }
        return head_;
    }

    // The next event or comment; nullopt when none came within `timeout` or the stream
    // ended (closed() says which).
    std::optional<SseEvent> next(std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        if (head(timeout).empty()) return std::nullopt;
        for (;;) {
            const auto end = buffer_.find("\n\n");
            if (end != std::string::npos) {
                const std::string block = buffer_.substr(0, end + 1);
                buffer_.erase(0, end + 2);
                SseEvent event;
                bool any = false;
                std::size_t at = 0;
                while (at < block.size()) {
                    const auto eol = block.find('\n', at);
                    const std::string line = block.substr(at, eol - at);
                    at = eol + 1;
                    if (line.starts_with(":")) {
                        event.comment = true;
                        any = true;
                    } else if (line.starts_with("id: ")) {
                        event.id = line.substr(4);
                        any = true;
                    } else if (line.starts_with("event: ")) {
                        event.event = line.substr(7);
                        any = true;
                    } else if (line.starts_with("data: ")) {
                        event.data += line.substr(6);
                        any = true;
                    }
                }
                if (any && (event.comment || !event.data.empty())) return event;
                continue;  // "retry:" alone
            }
            if (!receive(deadline)) return std::nullopt;
        }
    }

    // The next event that is not a comment.
    std::optional<SseEvent> next_frame(std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left <= 0ms) return std::nullopt;
            auto event = next(left);
            if (!event || !event->comment) return event;
        }
    }

    [[nodiscard]] bool closed() const { return closed_; }

    // True when the server ends the stream within `timeout` (what it sent is skipped).
    bool ended_by_server(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!closed_) {
            buffer_.clear();
            if (!receive(deadline) && !closed_) return false;
        }
        return true;
    }

private:
    bool receive(std::chrono::steady_clock::time_point deadline) {
        if (closed_) return false;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left <= 0ms) return false;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
        char chunk[16384];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) {
            closed_ = true;
            return false;
        }
        buffer_.append(chunk, static_cast<std::size_t>(n));
        return true;
    }

    int fd_ = -1;
    std::string buffer_;
    std::string head_;
    bool closed_ = false;
};

std::string gunzip(const std::string& data) {
    z_stream stream{};
    REQUIRE(inflateInit2(&stream, 15 + 32) == Z_OK);
    std::string out;
    char chunk[65536];
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream.avail_in = static_cast<uInt>(data.size());
    int status = Z_OK;
    while (status == Z_OK) {
        stream.next_out = reinterpret_cast<Bytef*>(chunk);
        stream.avail_out = sizeof chunk;
        status = inflate(&stream, Z_NO_FLUSH);
        out.append(chunk, sizeof chunk - stream.avail_out);
    }
    inflateEnd(&stream);
    REQUIRE(status == Z_STREAM_END);
    return out;
}

std::string hold(HttpClient& client, const std::string& user, const std::string& zone,
                 const std::vector<std::string>& seats) {
    const auto reply = client.post("/events/demo-game/holds", seats_body(zone, seats), user);
    REQUIRE_MESSAGE(reply.status == 201, reply.body);
    return std::string(reply.json().at("token").as_string());
}

// zone -> seat -> state of a whole map in the wire form.
using States = std::map<std::string, std::map<std::string, std::string>>;

States states_of_map(const boost::json::value& map) {
    States out;
    for (const auto& zone : map.at("zones").as_array()) {
        if (zone.at("kind").as_string() != "named") continue;
        out[std::string(zone.at("zone").as_string())] = seat_states_of(zone.as_object());
    }
    return out;
}

// `states` with the changes of a ?since= answer or a "changes" frame applied; `map` names
// the zones' seats.
void apply_changes(States& states, const boost::json::value& map, const boost::json::value& changes) {
    for (const auto& change : wire_changes(map, changes)) states[change.zone][change.seat] = change.state;
}

std::uint64_t version_of(const HttpReply& reply) {
    return reply.json().at("version").to_number<std::uint64_t>();
}

}  // namespace

TEST_CASE("a 304 and a whole map cost no storage call and a 304 no encoding") {
    MemoryStorage storage;
    // The reader reads once at start and then only after this process's writes.
    TicketingServer server(on(storage, {"--feed-interval-ms", "60000"}));
    INFO(server.log());
    auto client = server.client();
    const auto first = client.get(seats_url);
    REQUIRE(first.status == 200);
    const std::string tag = first.header("ETag");
    CHECK(tag == "\"" + std::to_string(version_of(first)) + "\"");
    const auto calls = metric(client, "seatlock_ticketing_feed_storage_calls_total");
    const auto unchanged = metric(client, "seatlock_ticketing_seat_maps_unchanged_total");
    const auto sent = metric(client, "seatlock_ticketing_seat_maps_sent_total");
    for (int i = 0; i < 50; ++i) {
        const auto again = client.send("GET", seats_url, "", {{"If-None-Match", tag}});
        REQUIRE(again.status == 304);
        CHECK(again.body.empty());
        CHECK(again.header("ETag") == tag);
    }
    for (int i = 0; i < 20; ++i) {
        const auto whole = client.get(seats_url);
        REQUIRE(whole.status == 200);
        CHECK(whole.body == first.body);
    }
    CHECK(metric(client, "seatlock_ticketing_feed_storage_calls_total") == calls);
    CHECK(metric(client, "seatlock_ticketing_seat_maps_unchanged_total") == unchanged + 50);
    CHECK(metric(client, "seatlock_ticketing_seat_maps_sent_total") == sent + 20);

    // A write of this process wakes the reader: one call, and the buyer reads it at once.
    hold(client, "ann", "lower-1", {"C-4"});
    const auto after = client.send("GET", seats_url, "", {{"If-None-Match", tag}});
    REQUIRE(after.status == 200);
    CHECK(after.header("ETag") != tag);
    CHECK(states_of_map(after.json())["lower-1"]["C-4"] == "held");
    const auto reader_calls = metric(client, "seatlock_ticketing_feed_storage_calls_total") - calls;
    CHECK(reader_calls >= 1);
    CHECK(reader_calls <= 3);
}

TEST_CASE_TEMPLATE("the wire form decodes to the seats' states, and ?since= to the same changes",
                   Storage, SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();
    const auto before = client.get(seats_url);
    REQUIRE(before.status == 200);
    const auto v0 = version_of(before);
    States expected = states_of_map(before.json());
    CHECK(expected.at("lower-1").size() == 72);
    CHECK(expected.at("upper-1").at("H-16") == "free");

    const std::string ann = hold(client, "ann", "lower-1", {"A-1", "A-2"});
    const auto paid = client.post("/holds/" + ann + "/confirm", R"({"payment_id":"p-1"})", "ann");
    REQUIRE_MESSAGE(paid.status == 200, paid.body);
    const std::string bob = hold(client, "bob", "upper-1", {"H-16"});
    const std::string cat = hold(client, "cat", "lower-2", {"F-12"});
    CHECK(client.del("/holds/" + cat, "cat").status == 204);
    const auto ga = client.post("/events/demo-game/holds", R"({"zone":"bleachers-left","quantity":3})",
                                std::string("dan"));
    REQUIRE(ga.status == 201);
    expected["lower-1"]["A-1"] = expected["lower-1"]["A-2"] = "paid";
    expected["upper-1"]["H-16"] = "held";

    const auto now = client.get(seats_url);
    REQUIRE(now.status == 200);
    const auto map = now.json();
    CHECK(states_of_map(map) == expected);
    // The held seat's expiry is the hold's.
    const auto held = client.send("GET", "/me/holds?event=demo-game", "", {{"X-User-Id", "bob"}});
    REQUIRE(held.status == 200);
    for (const auto& zone : map.at("zones").as_array()) {
        if (zone.at("zone") == "upper-1") {
            const auto& holds = zone.at("holds").as_array();
            REQUIRE(holds.size() == 1);
            CHECK(holds[0].as_array().at(0).to_number<int>() == 8 * 16 - 1);  // H-16, last
            CHECK(holds[0].as_array().at(1).to_number<std::int64_t>() > 0);
        }
        if (zone.at("zone") == "bleachers-left") {
            CHECK(zone.at("held").to_number<int>() == 3);
            CHECK(zone.at("free").to_number<int>() == 197);
            CHECK_FALSE(zone.as_object().contains("states"));
        }
    }
    // One zone alone: the same seats.
    CHECK(seat_states(client, "demo-game", "upper-1") == expected.at("upper-1"));

    // The changes after v0 lead from the map at v0 to the map now.
    const auto since = client.get(seats_url + "?since=" + std::to_string(v0));
    REQUIRE_MESSAGE(since.status == 200, since.body);
    CHECK(since.json().at("after").to_number<std::uint64_t>() == v0);
    CHECK(version_of(since) == version_of(now));
    States applied = states_of_map(before.json());
    apply_changes(applied, before.json(), since.json());
    CHECK(applied == expected);
    const auto since_json = since.json();  // the loops read into it: not a temporary
    // Each seat once, at its last change: A-1 held then paid, F-12 held then released.
    std::map<std::string, int> mentions;
    for (const auto& change : wire_changes(before.json(), since_json)) {
        ++mentions[change.zone + "/" + change.seat];
        // A held seat's expiry is its hold's, as the map gives it.
        if (change.zone == "upper-1" && change.seat == "H-16") {
            CHECK(change.state == "held");
            for (const auto& zone : map.at("zones").as_array()) {
                if (zone.at("zone") == "upper-1")
                    CHECK(change.expires_at == zone.at("holds").as_array().at(0).as_array().at(1).to_number<std::int64_t>());
            }
        }
    }
    CHECK(mentions["upper-1/H-16"] == 1);
    CHECK(mentions["lower-1/A-1"] == 1);
    CHECK(mentions["lower-2/F-12"] == 1);
    bool bleachers = false;
    for (const auto& zone : since_json.at("zones").as_array())
        bleachers = bleachers || zone.as_array().at(0) == "bleachers-left";
    CHECK(bleachers);
    // Nothing after the latest version; a version ahead of the server is gone too.
    const auto none = client.get(seats_url + "?since=" + std::to_string(version_of(now)));
    REQUIRE(none.status == 200);
    CHECK(none.json().at("changes").as_array().empty());
    const auto ahead = client.get(seats_url + "?since=" + std::to_string(version_of(now) + 100));
    CHECK(ahead.status == 410);
    CHECK(ahead.json().at("version").to_number<std::uint64_t>() == version_of(now));
    CHECK(client.get(seats_url + "?since=x").status == 400);
    (void)bob;
}

TEST_CASE("changes no longer kept answer 410: the client reads the whole map") {
    MemoryStorage storage;
    TicketingServer server(on(storage, {"--feed-retained", "2"}));
    INFO(server.log());
    auto client = server.client();
    const auto v0 = version_of(client.get(seats_url));
    for (const std::string seat : {"A-1", "A-2", "A-3", "A-4"}) {
        const std::string token = hold(client, "eve", "lower-1", {seat});
        CHECK(client.del("/holds/" + token, "eve").status == 204);
    }
    const auto gone = client.get(seats_url + "?since=" + std::to_string(v0));
    CHECK(gone.status == 410);
    CHECK(gone.error() == "changes_trimmed");
    CHECK(gone.json().at("version").to_number<std::uint64_t>() > v0);
}

TEST_CASE("the whole map is tens of kilobytes for 60,000 seats, and gzip is smaller still") {
    // 60 sections of 40 rows of 25 seats.
    std::string zones;
    for (int s = 1; s <= 60; ++s) {
        std::string rows;
        for (int r = 1; r <= 40; ++r)
            rows += (r > 1 ? "," : "") + std::string(R"({"row":"R)") + std::to_string(r) +
                    R"(","seats":25})";
        zones += (s > 1 ? "," : "") + std::string(R"({"id":"s)") + std::to_string(s) +
                 R"(","rows":[)" + rows + "]}";
    }
    MemoryStorage storage;
    TicketingServer server(on(storage, {},
                              R"({"id":"stadium","name":"Stadium","zones":[)" + zones + "]}"));
    INFO(server.log());
    auto client = server.client();
    const auto held = client.post("/events/stadium/holds", seats_body("s7", {"R3-9"}), "fay");
    REQUIRE_MESSAGE(held.status == 201, held.body);

    const auto plain = client.get("/events/stadium/seats");
    REQUIRE(plain.status == 200);
    CAPTURE(plain.body.size());
    CHECK(plain.body.size() < 100 * 1024);
    CHECK(plain.header("Content-Encoding").empty());
    const auto map = plain.json();
    REQUIRE(map.at("zones").as_array().size() == 60);
    std::size_t seats = 0;
    for (const auto& zone : map.at("zones").as_array()) seats += seat_ids(zone.as_object()).size();
    CHECK(seats == 60000);
    CHECK(states_of_map(map)["s7"]["R3-9"] == "held");

    const auto packed = client.send("GET", "/events/stadium/seats", "",
                                    {{"Accept-Encoding", "gzip, deflate, br"}});
    REQUIRE(packed.status == 200);
    CHECK(packed.header("Content-Encoding") == "gzip");
    CHECK(packed.header("Vary") == "Accept-Encoding");
    CAPTURE(packed.body.size());
    CHECK(packed.body.size() < 20 * 1024);
    CHECK(gunzip(packed.body) == plain.body);
    CHECK(packed.header("ETag") != plain.header("ETag"));
    // Either tag of the version is that version.
    CHECK(client.send("GET", "/events/stadium/seats", "",
                      {{"Accept-Encoding", "gzip"}, {"If-None-Match", plain.header("ETag")}})
              .status == 304);
    // gzip;q=0 refuses it.
    const auto refused = client.send("GET", "/events/stadium/seats", "",
                                     {{"Accept-Encoding", "gzip;q=0, identity"}});
    CHECK(refused.header("Content-Encoding").empty());
    CHECK(refused.body == plain.body);
    // Any other weight takes it, whatever its case.
    CHECK(client.send("GET", "/events/stadium/seats", "", {{"Accept-Encoding", "identity, GZIP; q=0.5"}})
              .header("Content-Encoding") == "gzip");
}

TEST_CASE_TEMPLATE("the stream starts with the map, sends each change, and resumes after Last-Event-ID",
                   Storage, SEATLOCK_SYSTEM_STORAGES) {
    Storage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    auto client = server.client();

    SseClient viewer(server.port(), stream_url);
    const std::string head = viewer.head();
    CHECK(head.starts_with("HTTP/1.1 200"));
    CHECK(head.find("Content-Type: text/event-stream") != std::string::npos);
    const auto first = viewer.next_frame();
    REQUIRE(first);
    CHECK(first->event == "snapshot");
    const auto layout = boost::json::parse(first->data);
    States states = states_of_map(layout);
    CHECK(first->id == std::to_string(boost::json::parse(first->data).at("version").to_number<std::uint64_t>()));
    CHECK(metric(client, "seatlock_ticketing_stream_viewers") == 1);

    hold(client, "gil", "lower-2", {"B-7", "B-8"});
    std::string last_id;
    CHECK(eventually([&] {
        const auto frame = viewer.next_frame(200ms);
        if (!frame) return false;
        CHECK(frame->event == "changes");
        last_id = frame->id;
        apply_changes(states, layout, boost::json::parse(frame->data));
        return states["lower-2"]["B-8"] == "held";
    }));
    CHECK(states["lower-2"]["B-7"] == "held");

    // Missed while away: sent first on coming back with the last id seen.
    hold(client, "hal", "lower-2", {"C-1"});
    SseClient back(server.port(), stream_url, last_id);
    const auto resumed = back.next_frame();
    REQUIRE(resumed);
    CHECK(resumed->event == "changes");
    const auto changes = boost::json::parse(resumed->data);
    CHECK(std::to_string(changes.at("after").to_number<std::uint64_t>()) == last_id);
    apply_changes(states, layout, changes);
    CHECK(states["lower-2"]["C-1"] == "held");
    CHECK(states_of_map(client.get(seats_url).json()) == states);
}

TEST_CASE("a resume from a version no longer kept starts with the whole map") {
    MemoryStorage storage;
    TicketingServer server(on(storage, {"--feed-retained", "2"}));
    INFO(server.log());
    auto client = server.client();
    const auto v0 = version_of(client.get(seats_url));
    for (const std::string seat : {"D-1", "D-2", "D-3"}) hold(client, "ivy" + seat, "upper-1", {seat});
    REQUIRE(client.get(seats_url).status == 200);  // the snapshot has the three holds
    SseClient viewer(server.port(), stream_url, std::to_string(v0));
    const auto first = viewer.next_frame();
    REQUIRE(first);
    CHECK(first->event == "snapshot");
    CHECK(states_of_map(boost::json::parse(first->data))["upper-1"]["D-3"] == "held");
    // An id that is not a version: the whole map as well.
    SseClient odd(server.port(), stream_url, std::string("not-a-version"));
    const auto odd_first = odd.next_frame();
    REQUIRE(odd_first);
    CHECK(odd_first->event == "snapshot");
}

TEST_CASE("an idle stream gets a heartbeat comment at the configured interval") {
    MemoryStorage storage;
    TicketingServer server(on(storage, {"--stream-heartbeat-ms", "200"}));
    INFO(server.log());
    SseClient viewer(server.port(), stream_url);
    REQUIRE(viewer.next_frame());
    const auto started = std::chrono::steady_clock::now();
    int comments = 0;
    while (comments < 3) {
        const auto event = viewer.next(2s);
        REQUIRE(event);
        CHECK(event->comment);
        ++comments;
    }
    const auto took = std::chrono::steady_clock::now() - started;
    CHECK(took >= 400ms);
    CHECK(took < 2s);
    auto client = server.client();
    CHECK(metric(client, "seatlock_ticketing_stream_heartbeats_total") >= 3);
}

TEST_CASE("past the frame budget every viewer's frames come less often, each carrying what it missed") {
    MemoryStorage storage;
    // Ann holds and releases as fast as she can: the rate limits are raised out of the way.
    TicketingServer server(on(storage, {"--stream-frame-budget", "50", "--rate-buyer-writes",
                                        "1000000", "--rate-buyer-write-burst", "1000000"}));
    INFO(server.log());
    auto client = server.client();
    std::vector<std::unique_ptr<SseClient>> viewers;
    for (int v = 0; v < 25; ++v) {
        viewers.push_back(std::make_unique<SseClient>(server.port(), stream_url));
        REQUIRE(viewers.back()->next_frame());  // the map
    }
    REQUIRE(eventually([&] { return metric(client, "seatlock_ticketing_stream_viewers") == 25; }));
    // 25 viewers at 50 frames a second together: one frame each per 500 ms at most.
    const auto frames_before = metric(client, "seatlock_ticketing_stream_frames_total");
    std::atomic<bool> done{false};
    std::thread buyer([&] {
        auto mine = server.client();
        while (!done) {
            const auto held = mine.post("/events/demo-game/holds", seats_body("upper-1", {"A-1"}), "ann");
            if (held.status == 201)
                mine.del("/holds/" + std::string(held.json().at("token").as_string()), "ann");
        }
    });
    const auto started = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(2s);
    // Every viewer still follows: its next frame brings it to a version as recent as the
    // server's.
    const auto frames = metric(client, "seatlock_ticketing_stream_frames_total") - frames_before;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    done = true;
    buyer.join();
    MESSAGE(frames << " frames to 25 viewers in " << seconds << " s");
    CHECK(frames > 0);
    // At most one frame per viewer per 500 ms (and one more at the edges); without the
    // budget, one per 100 ms whenever the buyer moved the map on.
    CHECK(static_cast<double>(frames) <= 25.0 * (seconds / 0.5 + 1.0));
    const auto latest = version_of(client.get(seats_url));
    for (auto& viewer : viewers) {
        std::uint64_t seen = 0;
        CHECK(eventually([&] {
            while (const auto frame = viewer->next_frame(50ms)) seen = std::stoull(frame->id);
            return seen >= latest;
        }, 5s));
    }
}

TEST_CASE("a viewer that does not read is cut off; another keeps receiving and sales go on") {
    MemoryStorage storage;
    // Small buffers: frames name only the seats that differ, so a stalled viewer's bytes
    // pile up slowly.
    // The buyers hold and release as fast as they can: the rate limits are raised out of
    // the way.
    TicketingServer server(on(storage, {"--stream-buffer", "16384", "--stream-send-buffer", "4096",
                                        "--rate-buyer-writes", "1000000",
                                        "--rate-buyer-write-burst", "1000000"}));
    INFO(server.log());
    auto client = server.client();

    // Connects with a small receive buffer and never reads.
    SseClient stalled(server.port(), stream_url, std::nullopt, 4096);
    SseClient reader(server.port(), stream_url);
    REQUIRE(reader.next_frame());
    std::atomic<bool> done{false};
    std::atomic<int> frames_read{0};
    std::thread reading([&] {
        while (!done) {
            if (reader.next_frame(100ms)) ++frames_read;
            if (reader.closed()) return;
        }
    });
    std::atomic<int> sold{0}, failed{0};
    std::vector<std::thread> buyers;
    for (int b = 0; b < 6; ++b) {
        buyers.emplace_back([&, b] {
            auto mine = server.client();
            const std::string user = "buyer-" + std::to_string(b);
            const std::string zone = b % 2 == 0 ? "upper-1" : "lower-1";
            const std::string row(1, static_cast<char>('A' + b));
            while (!done) {
                const auto held = mine.post("/events/demo-game/holds",
                                            seats_body(zone, {row + "-1", row + "-2", row + "-3"}),
                                            user);
                if (held.status != 201) {
                    ++failed;
                    continue;
                }
                ++sold;
                if (mine.del("/holds/" + std::string(held.json().at("token").as_string()), user)
                        .status != 204)
                    ++failed;
            }
        });
    }
    const bool cut = eventually(
        [&] { return metric(client, "seatlock_ticketing_stream_cut_offs_total") >= 1; }, 30s);
    const int sold_at_cut = sold.load();
    const int frames_at_cut = frames_read.load();
    // After the cut-off: the other viewer still receives, and the buyers still buy.
    CHECK(eventually([&] { return frames_read.load() > frames_at_cut + 3; }, 5s));
    CHECK(eventually([&] { return sold.load() > sold_at_cut + 20; }, 5s));
    done = true;
    for (auto& t : buyers) t.join();
    reading.join();
    REQUIRE(cut);
    CHECK(failed == 0);
    CHECK(metric(client, "seatlock_ticketing_stream_cut_offs_total") == 1);
    CHECK(stalled.ended_by_server(10s));
    CHECK_FALSE(reader.closed());
    CHECK(eventually([&] { return metric(client, "seatlock_ticketing_stream_viewers") == 1; }));
}

TEST_CASE("SIGTERM with streams open stops the server promptly with exit code 0") {
    MemoryStorage storage;
    TicketingServer server(on(storage));
    INFO(server.log());
    std::vector<std::unique_ptr<SseClient>> viewers;
    for (int i = 0; i < 3; ++i) {
        viewers.push_back(std::make_unique<SseClient>(server.port(), stream_url));
        REQUIRE(viewers.back()->next_frame());
    }
    const auto signalled = std::chrono::steady_clock::now();
    CHECK(server.stop(SIGTERM, 10s) == 0);
    CHECK(std::chrono::steady_clock::now() - signalled < 3s);
    for (auto& viewer : viewers) CHECK(viewer->ended_by_server(1s));
    CHECK(server.log().find("stopped") != std::string::npos);
}

}  // namespace seat_feed_test
