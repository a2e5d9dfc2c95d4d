// SPDX-License-Identifier: MIT
// wire_form.cpp: the encoders, written by hand into one string: a 60,000-seat map is one
// pass over its state strings, with no JSON tree in between.
#include "wire_form.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <stdexcept>
#include <unordered_map>

namespace ticketing {

char state_char(seatlock::SeatState state) {
    switch (state) {
        case seatlock::SeatState::free: return 'f';
        case seatlock::SeatState::held: return 'h';
        case seatlock::SeatState::paid: return 'p';
    }
    return 'f';
}

void append_json_string(std::string& out, std::string_view text) {
    out += '"';
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
            out += c;
        }
    }
    out += '"';
}

ZoneLayout make_layout(const std::vector<seatlock::SeatStatus>& seats) {
    ZoneLayout layout;
    layout.ids.reserve(seats.size());
    layout.index.reserve(seats.size());
    std::string& rows = layout.rows_json;
    rows += '[';
    std::size_t at = 0;
    while (at < seats.size()) {
        // One row: the seats that follow with the same row name.
        std::size_t end = at;
        while (end < seats.size() && seats[end].row == seats[at].row) ++end;
        const std::string& row = seats[at].row;
        bool numbered = !row.empty();
        for (std::size_t i = at; numbered && i < end; ++i) {
            numbered = seats[i].id == fmt::format("{}-{}", row, i - at + 1);
        }
        if (at != 0) rows += ',';
        rows += '[';
        append_json_string(rows, row);
        if (numbered) {
            fmt::format_to(std::back_inserter(rows), ",{}]", end - at);
        } else {
            rows += ",[";
            for (std::size_t i = at; i < end; ++i) {
                if (i != at) rows += ',';
                append_json_string(rows, seats[i].id);
            }
            rows += "]]";
        }
        at = end;
    }
    rows += ']';
    for (const auto& seat : seats) {
        layout.index.emplace(seat.id, static_cast<std::uint32_t>(layout.ids.size()));
        layout.ids.push_back(seat.id);
    }
    return layout;
}

namespace {

void append_zone(std::string& out, const ZoneView& zone, const ZoneLayout* layout) {
    out += "{\"zone\":";
    append_json_string(out, zone.zone);
    const bool named = zone.kind == seatlock::ZoneKind::named;
    fmt::format_to(std::back_inserter(out),
                   ",\"kind\":\"{}\",\"capacity\":{},\"free\":{},\"held\":{},\"paid\":{}",
                   to_string(zone.kind), zone.capacity, zone.free, zone.held, zone.paid);
    if (named) {
        out += ",\"rows\":";
        out += layout ? layout->rows_json : std::string("[]");
        out += ",\"states\":\"";
        out += zone.states;
        out += "\",\"holds\":[";
        bool first = true;
        for (const auto& [position, expires_ms] : zone.expires) {
            if (!first) out += ',';
            first = false;
            fmt::format_to(std::back_inserter(out), "[{},{}]", position, expires_ms);
        }
        out += ']';
    }
    out += '}';
}

}  // namespace

std::string encode_map(const Snapshot& snapshot, int only) {
    std::string out;
    std::size_t size = 64;
    for (const auto& zone : snapshot.zones) size += zone->states.size() + 96;
    for (const auto& layout : snapshot.layouts) size += layout ? layout->rows_json.size() : 0;
    out.reserve(size);
    out += "{\"event\":";
    append_json_string(out, snapshot.event);
    fmt::format_to(std::back_inserter(out), ",\"version\":{},\"zones\":[", snapshot.version);
    bool first = true;
    for (std::size_t i = 0; i < snapshot.zones.size(); ++i) {
        if (only >= 0 && static_cast<std::size_t>(only) != i) continue;
        if (!first) out += ',';
        first = false;
        append_zone(out, *snapshot.zones[i], snapshot.layouts[i].get());
    }
    out += "]}";
    return out;
}

std::string encode_changes(const Snapshot& snapshot, seatlock::EventVersion after,
                           const std::vector<seatlock::SeatChange>& changes) {
    std::string out;
    out.reserve(96 + changes.size() * 40);
    out += "{\"event\":";
    append_json_string(out, snapshot.event);
    fmt::format_to(std::back_inserter(out), ",\"after\":{},\"version\":{},\"changes\":[", after,
                   snapshot.version);
    std::vector<bool> touched(snapshot.zones.size(), false);
    // Each seat's last change: a seat held and released again in between is sent as free,
    // once, and a busy sale's frames stay as small as the seats that differ.
    std::unordered_map<std::string, std::size_t> last;
    last.reserve(changes.size());
    std::string key;
    for (std::size_t i = 0; i < changes.size(); ++i) {
        if (changes[i].seat.empty()) continue;
        key.assign(changes[i].zone).append(1, '\0').append(changes[i].seat);
        last.insert_or_assign(key, i);
    }
    bool first = true;
    for (std::size_t i = 0; i < changes.size(); ++i) {
        const auto& change = changes[i];
        const int zone = snapshot.zone_index(change.zone);
        if (zone >= 0) touched[static_cast<std::size_t>(zone)] = true;
        if (change.seat.empty()) continue;  // a general-admission count: in "zones" below
        key.assign(change.zone).append(1, '\0').append(change.seat);
        if (last.find(key)->second != i) continue;  // changed again later in this list
        if (!first) out += ',';
        first = false;
        fmt::format_to(std::back_inserter(out), "[{},", change.version);
        append_json_string(out, change.zone);
        out += ',';
        append_json_string(out, change.seat);
        const std::int64_t expires =
            change.state == seatlock::SeatState::held
                ? std::chrono::duration_cast<std::chrono::milliseconds>(
                      change.expires_at.time_since_epoch())
                      .count()
                : 0;
        fmt::format_to(std::back_inserter(out), ",\"{}\",{}]", state_char(change.state), expires);
    }
    out += "],\"zones\":[";
    first = true;
    for (std::size_t i = 0; i < touched.size(); ++i) {
        if (!touched[i]) continue;
        if (!first) out += ',';
        first = false;
        const ZoneView& zone = *snapshot.zones[i];
        out += '[';
        append_json_string(out, zone.zone);
        fmt::format_to(std::back_inserter(out), ",{},{},{}]", zone.free, zone.held, zone.paid);
    }
    out += "]}";
    return out;
}

std::string sse_frame(seatlock::EventVersion version, std::string_view kind,
                      std::string_view json) {
    std::string out;
    out.reserve(json.size() + kind.size() + 40);
    fmt::format_to(std::back_inserter(out), "id: {}\nevent: {}\ndata: ", version, kind);
    out += json;
    out += "\n\n";
    return out;
}

std::string gzip(std::string_view data) {
    z_stream stream{};
    // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
    if (deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        throw std::runtime_error("zlib: deflateInit2 failed");
    }
    std::string out(deflateBound(&stream, static_cast<uLong>(data.size())), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream.avail_in = static_cast<uInt>(data.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    const int done = deflate(&stream, Z_FINISH);
    out.resize(stream.total_out);
    deflateEnd(&stream);
    if (done != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
    return out;
}

}  // namespace ticketing
