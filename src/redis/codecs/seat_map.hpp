// SPDX-License-Identifier: MIT
// src/redis/codecs/seat_map.hpp: the Redis encodings and replies of the seat map and the
// change feed: seats (lua/seats_page.lua, in pieces) and changes (lua/changes.lua). See
// codec.hpp.
//
// A whole map of a large venue in one function call would hold Redis for as long as it
// takes to list every seat, and Redis serves nothing else meanwhile. So seats() reads it
// in pieces, each one short call: the event's stored layout (HGET of its spec: zones,
// seat ids, rows, in order), then per zone the counts and up to `page_seats` seats'
// states per call, each piece with the version it is at. Writes may land between pieces:
// the changes after the oldest piece's version (the change log) then bring every piece
// to one version, each seat and each zone's counts taking only the changes later than
// the piece that read them. A log trimmed meanwhile (more steps than it keeps, during
// one read), or pieces of two histories of the event (a recovery between them), start the
// read again, a few times at most.
#pragma once

#include <seatlock/detail/event_history.hpp>
#include <seatlock/keys.hpp>

#include "../codec.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace seatlock::redis_detail {

namespace seat_map_codec {

/// Seats per seats_page call: short calls on any venue (docs/redis.md, "The seat map").
inline constexpr std::size_t page_seats = 50;
/// Changes per changes call at most, whatever limit changes() was given (a page with
/// `more` set), and while a map is brought to one version: short calls on any log.
inline constexpr std::size_t changes_per_call = 50;
/// How many times a read starts again after the log was trimmed under it (or the event
/// recovered under it).
inline constexpr int read_attempts = 3;

// A small reader of the spec event_create.lua stores (cjson of {name, {{id, kind,
// capacity, {seat ids}, {rows}}, ...}}): arrays, strings, numbers; cjson writes an empty
// table as {}. Throws BadReply on anything else.
class SpecParser {
public:
    explicit SpecParser(std::string_view text) : t_(text) {}

    std::vector<ZoneSpec> zones() {
        expect('[');
        skip_string();  // the name
        expect(',');
        std::vector<ZoneSpec> out;
        if (empty_list()) return out;
        do {
            expect('[');
            ZoneSpec zone;
            zone.id = string();
            expect(',');
            zone.kind = kind_of(string());
            expect(',');
            zone.capacity = integer();
            expect(',');
            std::vector<std::string> ids = strings();
            expect(',');
            std::vector<std::string> rows = strings();
            expect(']');
            if (ids.size() != rows.size()) throw BadReply("spec: seats and rows differ in length");
            zone.seats.reserve(ids.size());
            for (std::size_t i = 0; i < ids.size(); ++i) {
                zone.seats.push_back({std::move(ids[i]), std::move(rows[i])});
            }
            out.push_back(std::move(zone));
        } while (next_item());
        return out;
    }

private:
    void ws() {
        while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
    }
    char peek() {
        ws();
        if (i_ >= t_.size()) throw BadReply("spec: cut short");
        return t_[i_];
    }
    void expect(char c) {
        if (peek() != c) throw BadReply(std::string("spec: expected '") + c + "'");
        ++i_;
    }
    // After '[' of a list: true (and past its end) when it is empty; "{}" is an empty list.
    bool empty_list() {
        if (peek() == '{') {
            ++i_;
            expect('}');
            return true;
        }
        expect('[');
        if (peek() == ']') {
            ++i_;
            return true;
        }
        return false;
    }
    // After an item: true past a ',', false past the list's ']'.
    bool next_item() {
        const char c = peek();
        ++i_;
        if (c == ',') return true;
        if (c == ']') return false;
        throw BadReply("spec: expected ',' or ']'");
    }
    std::int64_t integer() {
        ws();
        std::int64_t n = 0;
        const std::size_t start = i_;
        while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') n = n * 10 + (t_[i_++] - '0');
        if (i_ == start) throw BadReply("spec: expected a number");
        return n;
    }
    std::string string() {
        expect('"');
        std::string out;
        while (true) {
            if (i_ >= t_.size()) throw BadReply("spec: unterminated string");
            const char c = t_[i_++];
            if (c == '"') return out;
            if (c != '\\') {
                out.push_back(c);
                continue;
            }
            if (i_ >= t_.size()) throw BadReply("spec: unterminated escape");
            const char e = t_[i_++];
            switch (e) {
                case 'n': out.push_back('\n'); break;
                case 't': out.push_back('\t'); break;
                case 'r': out.push_back('\r'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'u': {
                    // Ids are ASCII; a name's \u escapes are skipped with the name.
                    if (i_ + 4 > t_.size()) throw BadReply("spec: short \\u escape");
                    out.push_back(static_cast<char>(std::stoi(std::string(t_.substr(i_, 4)), nullptr, 16)));
                    i_ += 4;
                    break;
                }
                default: out.push_back(e);  // " \ /
            }
        }
    }
    void skip_string() { (void)string(); }
    std::vector<std::string> strings() {
        std::vector<std::string> out;
        if (empty_list()) return out;
        do out.push_back(string());
        while (next_item());
        return out;
    }

    std::string_view t_;
    std::size_t i_ = 0;
};

// An event's history as the functions answer it: its decimal digits.
inline EventHistory history_in(std::string_view digits) {
    EventHistory h = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), h);
    if (error != std::errc{} || end != digits.data() + digits.size()) throw BadReply("a bad history");
    return h;
}

// What seats_page.lua answers.
struct Piece {
    EventVersion version = 0;
    EventHistory history = 0;
    std::int64_t free = 0, held = 0, paid = 0;
    std::vector<std::pair<SeatState, std::int64_t>> states;  // state, expires_ms
};

inline Call<Piece> page_call(const Context& c, const std::string& event, const std::string& zone,
                             const std::vector<SeatSpec>& seats, std::size_t from, std::size_t count) {
    using A = redis_scripts::args::seats_page;
    auto args = arguments<A>(count);
    args[A::prefix] = c.keys.prefix();
    args[A::event] = event;
    args[A::log_limit] = c.log_limit;
    args[A::zone] = zone;
    for (std::size_t i = from; i < from + count; ++i) args.push_back(seats[i].id);  // A::seats
    return make_call<Piece>(
        redis_scripts::seats_page, c.event_keys(event), std::move(args),
        standard<Piece>(redis_scripts::seats_page, [count](const Reader& r) {
            Piece p;
            const auto v = r.integer(1);
            if (v < 0) throw BadReply("a negative version");
            p.version = static_cast<EventVersion>(v);
            p.free = r.integer(2);
            p.held = r.integer(3);
            p.paid = r.integer(4);
            p.history = history_in(r.text(6));
            const Reader states = r.array(5);
            if (states.size() != 2 * count) throw BadReply("not one state per seat asked");
            p.states.reserve(count);
            for (std::size_t i = 0; i < states.size(); i += 2) {
                const auto state = states.integer(i);
                if (state < 0 || state > 2) throw BadReply("bad seat state");
                p.states.emplace_back(static_cast<SeatState>(state), states.integer(i + 1));
            }
            return p;
        }));
}

// The MessagePack of a slot-seat pair list (common_records.lua's pack_pairs, Lua's
// cmsgpack): one value after the other, a slot (an unsigned integer, or its digits as a
// string when it came from a Redis reply) then a seat id (a string). Calls `seat` with
// each pair's seat id.
template <typename Seat>
void unpack_seats(std::string_view b, Seat&& seat) {
    std::size_t i = 0;
    const auto take = [&](std::size_t n) {
        if (n > b.size() - i) throw BadReply("change log: cut short seats");
        std::uint64_t x = 0;
        for (std::size_t k = 0; k < n; ++k) x = x << 8 | static_cast<unsigned char>(b[i++]);
        return x;
    };
    bool is_seat = false;
    for (; i < b.size(); is_seat = !is_seat) {
        const auto tag = static_cast<unsigned char>(b[i++]);
        std::uint64_t length = 0;
        if (tag <= 0x7f || (tag >= 0xcc && tag <= 0xcf)) {  // an unsigned integer
            if (is_seat) throw BadReply("change log: a number for a seat id");
            if (tag >= 0xcc) take(std::size_t{1} << (tag - 0xcc));
            continue;
        }
        if (tag >= 0xa0 && tag <= 0xbf) length = tag & 0x1f;
        else if (tag == 0xd9) length = take(1);
        else if (tag == 0xda) length = take(2);
        else if (tag == 0xdb) length = take(4);
        else throw BadReply("change log: unexpected MessagePack tag");
        if (length > b.size() - i) throw BadReply("change log: cut short string");
        if (is_seat) seat(b.substr(i, length));
        i += length;
    }
    if (is_seat) throw BadReply("change log: a slot without its seat");
}

// One group of a log entry (changes.lua): its head "<zone> <held> <paid> <state>
// <expires>" and its seats; the zone's counts alone when it has none.
inline void add_group(std::vector<SeatChange>& out, EventVersion version, const redisReply* head,
                      const redisReply* seats,
                      const std::unordered_map<std::string, std::int64_t>& capacities) {
    if (!head || !seats || head->type != REDIS_REPLY_STRING || seats->type != REDIS_REPLY_STRING) {
        throw BadReply("bad change log group");
    }
    const std::string_view text(head->str, head->len);
    std::array<std::string_view, 5> word;
    std::size_t at = 0;
    for (auto& w : word) {
        const auto end = std::min(text.find(' ', at), text.size());
        if (at >= text.size() || end == at) throw BadReply("bad change log group head");
        w = text.substr(at, end - at);
        at = end + 1;
    }
    const auto number = [](std::string_view w) {
        std::int64_t n = 0;
        const auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), n);
        if (ec != std::errc{} || p != w.data() + w.size() || n < 0) throw BadReply("bad change log number");
        return n;
    };
    SeatChange ch;
    ch.version = version;
    ch.zone = std::string(word[0]);
    const auto capacity = capacities.find(ch.zone);
    if (capacity == capacities.end()) throw BadReply("change log: a zone without its capacity");
    ch.held = number(word[1]);
    ch.paid = number(word[2]);
    ch.free = capacity->second - ch.held - ch.paid;
    const auto state = number(word[3]);
    if (state > 2) throw BadReply("bad seat state");
    ch.state = static_cast<SeatState>(state);
    if (ch.state == SeatState::held) ch.expires_at = wall(number(word[4]));
    if (seats->len == 0) {
        ch.state = SeatState::free;
        ch.expires_at = {};
        out.push_back(std::move(ch));
        return;
    }
    unpack_seats({seats->str, seats->len}, [&](std::string_view seat) {
        SeatChange c = ch;
        c.seat = std::string(seat);
        out.push_back(std::move(c));
    });
}

inline Call<ChangePage> changes_call(const Context& c, const op::changes& o) {
    using A = redis_scripts::args::changes;
    auto args = arguments<A>();
    args[A::prefix] = c.keys.prefix();
    args[A::event] = o.event;
    args[A::after] = std::to_string(o.after);
    args[A::history] = o.history ? std::to_string(*o.history) : std::string();  // '': any
    // 0 stays 0: the function refuses it as changes() does on every backend.
    args[A::limit] = std::to_string(std::min(o.limit, changes_per_call));
    args[A::log_limit] = c.log_limit;
    return make_call<ChangePage>(
        redis_scripts::changes, c.event_keys(o.event), std::move(args),
        standard<ChangePage>(redis_scripts::changes, [](const Reader& r) {
            ChangePage page;
            page.history = history_in(r.text(5));
            const auto v = r.integer(1);
            if (v < 0) throw BadReply("a negative version");
            page.version = static_cast<EventVersion>(v);
            page.more = r.integer(2) == 1;
            const Reader zones = r.array(3);
            if (zones.size() % 2 != 0) throw BadReply("zone capacities are not pairs");
            std::unordered_map<std::string, std::int64_t> capacities;
            for (std::size_t i = 0; i < zones.size(); i += 2) capacities.emplace(zones.text(i), zones.integer(i + 1));
            const Reader entries = r.array(4);
            std::size_t i = 0;
            while (i < entries.size()) {
                const auto ev = entries.integer(i);
                const auto groups = entries.integer(i + 1);
                if (ev < 1 || groups < 1 || i + 2 + 2 * static_cast<std::size_t>(groups) > entries.size()) {
                    throw BadReply("bad change log entry");
                }
                i += 2;
                for (std::int64_t g = 0; g < groups; ++g, i += 2) {
                    add_group(page.changes, static_cast<EventVersion>(ev), entries.at(i), entries.at(i + 1),
                              capacities);
                }
            }
            return page;
        }));
}

// One read of a map: the layout, the pieces, then the changes that bring them to one
// version (see the head of this file).
template <typename Exec, typename Done>
struct MapRead : std::enable_shared_from_this<MapRead<Exec, Done>> {
    MapRead(Exec e, const op::seats& o, Done d) : exec(std::move(e)), step(o), done(std::move(d)) {}
    Exec exec;
    op::seats step;
    Done done;
    int attempt = 0;

    SeatMap map;
    // Per zone of the map: the version of each page of its seats, and of its counts.
    std::vector<std::vector<EventVersion>> page_versions;
    std::vector<EventVersion> counts_versions;
    std::size_t zone = 0, page = 0;
    EventVersion lowest = 0, highest = 0;
    std::optional<EventHistory> history;  // the first piece's: every piece must be of it

    void start() {
        ++attempt;
        exec.command({"HGET", exec.context().keys.event_key("event", step.event), "spec"},
                     [read = this->shared_from_this()](Result<ReplyPtr> spec) {
                         if (!spec) return read->done(std::move(spec).error());
                         read->laid_out(spec->get());
                     });
    }

    void laid_out(const redisReply* reply) {
        if (!reply || reply->type == REDIS_REPLY_NIL) {
            return done(Failure(errc::unknown_event, "no event " + step.event, {step.event}));
        }
        if (reply->type != REDIS_REPLY_STRING) {
            return done(Failure(errc::protocol_error, "unexpected reply to HGET of an event's spec"));
        }
        std::vector<ZoneSpec> zones;
        try {
            zones = SpecParser({reply->str, reply->len}).zones();
        } catch (const BadReply& e) {
            return done(Failure(errc::protocol_error, std::string("unreadable event spec: ") + e.what()));
        } catch (const std::exception& e) {
            return done(Failure(errc::protocol_error, std::string("unreadable event spec: ") + e.what()));
        }
        map = SeatMap{};
        page_versions.clear();
        counts_versions.clear();
        for (auto& z : zones) {
            if (step.zone && *step.zone != z.id) continue;
            ZoneState st;
            st.zone = z.id;
            st.kind = z.kind;
            st.capacity = z.kind == ZoneKind::general_admission
                              ? z.capacity
                              : static_cast<std::int64_t>(z.seats.size());
            st.seats.reserve(z.seats.size());
            for (auto& seat : z.seats) st.seats.push_back({std::move(seat.id), std::move(seat.row), {}, {}});
            map.zones.push_back(std::move(st));
            page_versions.emplace_back();
            counts_versions.push_back(0);
        }
        if (step.zone && map.zones.empty()) {
            return done(Failure(errc::unknown_zone, "event " + step.event + " has no zone " + *step.zone,
                                {*step.zone}));
        }
        zone = page = 0;
        lowest = ~EventVersion{0};
        highest = 0;
        history.reset();
        next_piece();
    }

    void next_piece() {
        while (zone < map.zones.size()) {
            const std::size_t n = map.zones[zone].seats.size();
            // Every zone is read at least once (its counts); a named zone page by page.
            if (page == 0 || page * page_seats < n) break;
            ++zone;
            page = 0;
        }
        if (zone >= map.zones.size()) return catch_up();
        const ZoneState& z = map.zones[zone];
        const std::size_t from = page * page_seats;
        const std::size_t count = std::min(page_seats, z.seats.size() - std::min(from, z.seats.size()));
        std::vector<SeatSpec> ids;
        ids.reserve(count);
        for (std::size_t i = from; i < from + count; ++i) ids.push_back({z.seats[i].id, {}});
        exec.call(page_call(exec.context(), step.event, z.zone, ids, 0, count),
                  [read = this->shared_from_this(), from](Result<Piece> piece) {
                      if (!piece) return read->done(std::move(piece).error());
                      read->read_piece(*piece, from);
                  });
    }

    void read_piece(const Piece& piece, std::size_t from) {
        if (!history) history = piece.history;
        if (*history != piece.history) {  // recovered since the first piece: read it again
            if (attempt < read_attempts) return start();
            return done(Failure(errc::changes_trimmed, "event " + step.event +
                                                           " was recovered while its seats were read"));
        }
        ZoneState& z = map.zones[zone];
        if (piece.version >= counts_versions[zone]) {
            z.free = piece.free;
            z.held = piece.held;
            z.paid = piece.paid;
            counts_versions[zone] = piece.version;
        }
        for (std::size_t i = 0; i < piece.states.size(); ++i) {
            SeatStatus& s = z.seats[from + i];
            s.state = piece.states[i].first;
            s.expires_at = s.state == SeatState::held ? wall(piece.states[i].second) : WallTime{};
        }
        page_versions[zone].push_back(piece.version);
        lowest = std::min(lowest, piece.version);
        highest = std::max(highest, piece.version);
        ++page;
        next_piece();
    }

    // Every piece at one version already, or the changes after the oldest one.
    void catch_up() {
        map.history = history.value_or(0);
        if (lowest >= highest) {
            map.version = highest;
            return done(std::move(map));
        }
        fetch(lowest);
    }

    void fetch(EventVersion after) {
        exec.call(changes_call(exec.context(), op::changes{step.event, after, map.history, changes_per_call}),
                  [read = this->shared_from_this()](Result<ChangePage> page) {
                      if (page.is(errc::changes_trimmed) && read->attempt < read_attempts) {
                          return read->start();
                      }
                      if (!page) return read->done(std::move(page).error());
                      read->apply_page(*page);
                  });
    }

    void apply_page(const ChangePage& page) {
        std::unordered_map<std::string_view, std::size_t> zones;
        for (std::size_t z = 0; z < map.zones.size(); ++z) zones.emplace(map.zones[z].zone, z);
        for (const SeatChange& c : page.changes) {
            auto it = zones.find(c.zone);
            if (it == zones.end()) continue;
            const std::size_t z = it->second;
            ZoneState& st = map.zones[z];
            if (c.version > counts_versions[z]) {
                st.free = c.free;
                st.held = c.held;
                st.paid = c.paid;
                counts_versions[z] = c.version;
            }
            if (c.seat.empty()) continue;
            auto& index = seat_index(z);
            auto seat = index.find(c.seat);
            if (seat == index.end()) continue;
            // Only what happened after the piece that read the seat.
            if (c.version <= page_versions[z][seat->second / page_seats]) continue;
            SeatStatus& s = st.seats[seat->second];
            s.state = c.state;
            s.expires_at = c.state == SeatState::held ? c.expires_at : WallTime{};
        }
        // A page ends between steps: once past every piece, the map is at its version.
        if (page.version < highest && page.more) return fetch(page.version);
        map.version = std::max(page.version, highest);
        done(std::move(map));
    }

    std::unordered_map<std::string_view, std::size_t>& seat_index(std::size_t z) {
        if (seat_indexes.size() < map.zones.size()) seat_indexes.resize(map.zones.size());
        auto& index = seat_indexes[z];
        if (index.empty()) {
            const auto& seats = map.zones[z].seats;
            index.reserve(seats.size());
            for (std::size_t i = 0; i < seats.size(); ++i) index.emplace(seats[i].id, i);
        }
        return index;
    }
    std::vector<std::unordered_map<std::string_view, std::size_t>> seat_indexes;
};

}  // namespace seat_map_codec

template <>
struct Codec<op::seats> {
    template <typename Exec, typename Done>
    static void run(Exec exec, const op::seats& o, Done done) {
        if (!is_valid_id(o.event)) {
            return done(Failure(errc::unknown_event, "no event " + o.event, {o.event}));
        }
        if (o.zone && !is_valid_id(*o.zone)) {
            return done(Failure(errc::unknown_zone, "event " + o.event + " has no zone " + *o.zone,
                                {*o.zone}));
        }
        std::make_shared<seat_map_codec::MapRead<Exec, Done>>(std::move(exec), o, std::move(done))
            ->start();
    }
};

template <>
struct Codec<op::changes> {
    static Result<Call<ChangePage>> call(const Context& c, const op::changes& o) {
        if (!is_valid_id(o.event)) return Failure(errc::unknown_event, "no event " + o.event, {o.event});
        if (o.after > max_script_version) {
            return Failure(errc::invalid_argument,
                           "version " + std::to_string(o.after) + " is beyond what Redis counts");
        }
        return seat_map_codec::changes_call(c, o);
    }
};

}  // namespace seatlock::redis_detail
