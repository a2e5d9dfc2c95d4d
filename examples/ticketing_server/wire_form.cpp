// SPDX-License-Identifier: MIT
// wire_form.cpp: the encoders, written by hand into one string: a 60,000-seat map is one
// pass over its state strings, with no JSON tree in between.
#include "wire_form.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <map>
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
    // Each seat's last change, by zone and position: a seat held and released again in
    // between is sent once, free, and a busy sale's frames stay as small as the seats
    // that differ.
    std::vector<bool> touched(snapshot.zones.size(), false);
    std::unordered_map<std::uint64_t, const seatlock::SeatChange*> last;
    last.reserve(changes.size());
    int zone = -1;
    std::string_view zone_name;
    for (const auto& change : changes) {
        if (zone < 0 || change.zone != zone_name) {  // a step's changes share their zone
            zone = snapshot.zone_index(change.zone);
            zone_name = change.zone;
        }
        if (zone < 0) continue;
        const auto z = static_cast<std::size_t>(zone);
        touched[z] = true;
        if (change.seat.empty() || !snapshot.layouts[z]) continue;  // general admission: counts
        const auto found = snapshot.layouts[z]->index.find(change.seat);
        if (found == snapshot.layouts[z]->index.end()) continue;
        last.insert_or_assign(std::uint64_t{z} << 32 | found->second, &change);
    }
    std::vector<std::uint64_t> seats;
    seats.reserve(last.size());
    std::int64_t base = 0;
    for (const auto& [key, change] : last) {
        seats.push_back(key);
        if (change->state == seatlock::SeatState::held) {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                change->expires_at.time_since_epoch())
                                .count();
            if (base == 0 || ms < base) base = ms;
        }
    }
    std::sort(seats.begin(), seats.end());

    std::string out;
    out.reserve(128 + seats.size() * 6 + touched.size() * 24);
    out += "{\"event\":";
    append_json_string(out, snapshot.event);
    fmt::format_to(std::back_inserter(out), ",\"after\":{},\"version\":{},\"base\":{},\"changes\":[",
                   after, snapshot.version, base);
    // Per zone: [zone, [free positions], [paid positions], [[expires_at - base, held
    // positions...], ...]].
    std::vector<std::uint32_t> free, paid;
    std::map<std::int64_t, std::vector<std::uint32_t>> held;
    const auto flush_zone = [&](std::size_t z) {
        if (out.back() != '[') out += ',';
        out += '[';
        append_json_string(out, snapshot.zones[z]->zone);
        fmt::format_to(std::back_inserter(out), ",[{}],[{}],[", fmt::join(free, ","), fmt::join(paid, ","));
        bool first = true;
        for (const auto& [offset, positions] : held) {
            fmt::format_to(std::back_inserter(out), "{}[{},{}]", first ? "" : ",", offset,
                           fmt::join(positions, ","));
            first = false;
        }
        out += "]]";
        free.clear();
        paid.clear();
        held.clear();
    };
    for (std::size_t i = 0; i < seats.size(); ++i) {
        const auto z = static_cast<std::size_t>(seats[i] >> 32);
        const auto position = static_cast<std::uint32_t>(seats[i]);
        const auto& change = *last.at(seats[i]);
        switch (change.state) {
            case seatlock::SeatState::free: free.push_back(position); break;
            case seatlock::SeatState::paid: paid.push_back(position); break;
            case seatlock::SeatState::held:
                held[std::chrono::duration_cast<std::chrono::milliseconds>(
                         change.expires_at.time_since_epoch())
                         .count() -
                     base]
                    .push_back(position);
                break;
        }
        if (i + 1 == seats.size() || (seats[i + 1] >> 32) != z) flush_zone(z);
    }
    out += "],\"zones\":[";
    bool first = true;
    for (std::size_t i = 0; i < touched.size(); ++i) {
        if (!touched[i]) continue;
        if (!first) out += ',';
        first = false;
        const ZoneView& view = *snapshot.zones[i];
        out += '[';
        append_json_string(out, view.zone);
        fmt::format_to(std::back_inserter(out), ",{},{},{}]", view.free, view.held, view.paid);
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
