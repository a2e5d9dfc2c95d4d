// SPDX-License-Identifier: MIT
// venue.cpp: the demo stadium, the venue file reader and the venue's view of the storage.
#include "venue.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <seatlock/backends/memory.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/waiting_room.hpp>
#include <set>
#include <sstream>

namespace ticketing {
namespace json = boost::json;
using seatlock::errc;
using seatlock::EventSpec;
using seatlock::Failure;
using seatlock::SeatSpec;
using seatlock::ZoneSpec;

namespace {

std::vector<SeatSpec> rows_of(std::string_view first_row, std::string_view last_row, int seats) {
    std::vector<SeatSpec> out;
    for (char row = first_row.front(); row <= last_row.front(); ++row) {
        for (int n = 1; n <= seats; ++n)
            out.push_back({fmt::format("{}-{}", row, n), std::string(1, row)});
    }
    return out;
}

// The reader throws this inside; parse_venue turns it into a Failure.
struct VenueError {
    std::string message;
};

[[noreturn]] void fail(std::string message) {
    throw VenueError{std::move(message)};
}

void only_keys(const json::object& object, std::string_view where,
               std::initializer_list<std::string_view> allowed) {
    for (const auto& [key, value] : object) {
        bool known = false;
        for (auto a : allowed) known = known || key == a;
        if (!known) fail(fmt::format("{}: unknown field '{}'", where, std::string_view(key)));
    }
}

const json::object& as_object(const json::value& v, std::string_view where) {
    if (!v.is_object()) fail(fmt::format("{} must be an object", where));
    return v.get_object();
}

const json::array& as_array(const json::value* v, std::string_view where) {
    if (!v || !v->is_array()) fail(fmt::format("{} must be an array", where));
    return v->get_array();
}

std::string as_string(const json::value* v, std::string_view where) {
    if (!v || !v->is_string()) fail(fmt::format("{} must be a string", where));
    return std::string(v->get_string());
}

std::int64_t as_count(const json::value* v, std::string_view where) {
    if (v && v->is_int64() && v->get_int64() > 0) return v->get_int64();
    if (v && v->is_uint64() &&
        v->get_uint64() <= static_cast<std::uint64_t>(seatlock::max_zone_places)) {
        return static_cast<std::int64_t>(v->get_uint64());
    }
    fail(fmt::format("{} must be a positive whole number", where));
}

std::vector<std::string> string_list(const json::value* v, std::string_view where) {
    std::vector<std::string> out;
    for (const auto& item : as_array(v, where)) out.push_back(as_string(&item, where));
    return out;
}

ZoneSpec read_zone(const json::value& v, std::string_view event) {
    const auto& z = as_object(v, fmt::format("a zone of event {}", event));
    const std::string id =
        as_string(z.if_contains("id"), fmt::format("zone id in event {}", event));
    const std::string where = fmt::format("zone {} of event {}", id, event);
    only_keys(z, where, {"id", "capacity", "seats", "rows"});
    const int kinds =
        int(z.contains("capacity")) + int(z.contains("seats")) + int(z.contains("rows"));
    if (kinds != 1) fail(where + " needs exactly one of capacity, seats or rows");
    if (z.contains("capacity")) {
        return ZoneSpec::general_admission(
            id, as_count(z.if_contains("capacity"), where + " capacity"));
    }
    std::vector<SeatSpec> seats;
    if (z.contains("seats")) {
        for (auto& seat : string_list(z.if_contains("seats"), where + " seats"))
            seats.push_back({seat, ""});
        return ZoneSpec::named(id, std::move(seats));
    }
    for (const auto& r : as_array(z.if_contains("rows"), where + " rows")) {
        const auto& row = as_object(r, where + " row");
        only_keys(row, where + " row", {"row", "seats"});
        const std::string name = as_string(row.if_contains("row"), where + " row name");
        const json::value* listed = row.if_contains("seats");
        if (listed && listed->is_array()) {
            for (auto& seat : string_list(listed, where + " row " + name))
                seats.push_back({seat, name});
            continue;
        }
        const auto count = as_count(listed, where + " row " + name + " seats");
        if (count > seatlock::max_zone_places) fail(where + " has too many seats");
        for (std::int64_t n = 1; n <= count; ++n)
            seats.push_back({fmt::format("{}-{}", name, n), name});
    }
    return ZoneSpec::named(id, std::move(seats));
}

// A positive whole number of seconds, as milliseconds.
seatlock::Millis as_seconds(const json::value* v, std::string_view where) {
    constexpr std::int64_t most = 10LL * 365 * 24 * 3600;  // ten years
    if (v && v->is_int64() && v->get_int64() > 0 && v->get_int64() <= most)
        return std::chrono::seconds(v->get_int64());
    fail(fmt::format("{} must be a whole number of seconds in [1, {}]", where, most));
}

// The room an event names ("room": {...}); its values are checked by WaitingRoom's rules.
VenueRoom read_room(const json::value& v, const std::string& event) {
    const std::string where = "the room of event " + event;
    const auto& r = as_object(v, where);
    only_keys(r, where,
              {"id", "opens_at", "admit_per_second", "max_active", "admission_ttl_s",
               "no_show_after_s"});
    VenueRoom room{as_string(r.if_contains("id"), where + ": id"), event, {}};
    if (!seatlock::is_valid_id(room.id))
        fail(fmt::format("{}: id '{}' must be 1 to 128 characters of [A-Za-z0-9._@+-]", where,
                         room.id));
    const std::string opens = as_string(r.if_contains("opens_at"), where + ": opens_at");
    const auto opens_at = parse_utc_time(opens);
    if (!opens_at)
        fail(fmt::format("{}: opens_at '{}' must be a UTC time as 2026-12-05T18:00:00Z", where,
                         opens));
    room.config.opens_at = *opens_at;
    const json::value* rate = r.if_contains("admit_per_second");
    if (!rate || !rate->is_number() || !(rate->to_number<double>() > 0) ||
        rate->to_number<double>() > seatlock::WaitingRoom<seatlock::AnyBackend>::max_admit_per_second)
        fail(where + ": admit_per_second must be a number in (0, 1000000]");
    room.config.admit_per_second = rate->to_number<double>();
    room.config.max_active =
        static_cast<std::uint64_t>(as_count(r.if_contains("max_active"), where + ": max_active"));
    room.config.admission_ttl = as_seconds(r.if_contains("admission_ttl_s"), where + ": admission_ttl_s");
    room.config.no_show_after = as_seconds(r.if_contains("no_show_after_s"), where + ": no_show_after_s");
    return room;
}

EventSpec read_event(const json::value& v, std::vector<VenueRoom>& rooms) {
    const auto& e = as_object(v, "an event");
    const std::string id = as_string(e.if_contains("id"), "event id");
    only_keys(e, "event " + id, {"id", "name", "zones", "room"});
    EventSpec spec{
        id, e.contains("name") ? as_string(e.if_contains("name"), "event name") : id, {}};
    for (const auto& zone : as_array(e.if_contains("zones"), "event " + id + " zones")) {
        spec.zones.push_back(read_zone(zone, id));
    }
    if (const json::value* room = e.if_contains("room")) {
        VenueRoom read = read_room(*room, id);
        // A room's admissions name the room, not the event: one event per room, so that an
        // admission to one event's line never opens another's seats.
        for (const auto& other : rooms) {
            if (other.id == read.id)
                fail(fmt::format("room {} is named by events {} and {}: one event per room",
                                 read.id, other.event, id));
        }
        rooms.push_back(std::move(read));
    }
    return spec;
}

// Every event by the rules SeatHoldStore::create_event applies, on a scratch memory
// store, so that the storage never sees part of a venue that cannot be created whole.
seatlock::Result<void> check_events(const std::vector<EventSpec>& events) {
    if (events.empty()) return Failure(errc::invalid_argument, "venue has no event");
    std::set<std::string> ids;
    for (const auto& event : events) {
        if (!ids.insert(event.id).second) {
            return Failure(errc::invalid_argument, "venue: event " + event.id + " defined twice");
        }
    }
    seatlock::MemoryBackend scratch;
    seatlock::SeatHoldStore store(scratch);
    for (const auto& event : events) {
        if (auto created = store.create_event(event); !created) {
            return Failure(errc::invalid_argument,
                           "venue: event " + event.id + ": " + created.error().detail);
        }
    }
    return {};
}

// See venue_view(). Runs every operation of the storage, narrowing those that name an
// event, on both paths (run, and async_run).
class VenueView : public seatlock::AnyBackend {
public:
    template <typename T>
    using Completion = seatlock::detail::Completion<T>;

    VenueView(seatlock::AnyBackend backend, std::set<std::string, std::less<>> events)
        : AnyBackend(std::move(backend)), events_(std::move(events)) {}

    template <seatlock::op::any_op O>
    seatlock::op::result_of<O> run(const O& o) {
        if (auto ok = allowed(o); !ok) return std::move(ok).error();
        if constexpr (std::is_same_v<O, seatlock::op::events>) {
            return ours(AnyBackend::run(o));
        } else {
            return AnyBackend::run(o);
        }
    }

    template <seatlock::op::any_op O>
    void async_run(const O& o, Completion<typename O::result_type> done) {
        if (auto ok = allowed(o); !ok) return done(std::move(ok).error());
        if constexpr (std::is_same_v<O, seatlock::op::events>) {
            AnyBackend::async_run(o, [this, done = std::move(done)](
                                         seatlock::Result<std::vector<EventSpec>> all) mutable {
                done(ours(std::move(all)));
            });
        } else {
            AnyBackend::async_run(o, std::move(done));
        }
    }

private:
    seatlock::Result<void> on_sale(std::string_view event) const {
        if (events_.contains(event)) return {};
        return Failure(errc::unknown_event,
                       fmt::format("no event {} in this server's venue", event),
                       {std::string(event)});
    }

    // A malformed token names no event: the backend refuses it as it always does.
    seatlock::Result<void> token_on_sale(std::string_view token) const {
        const auto event = seatlock::token_event(token);
        return event.empty() ? seatlock::Result<void>() : on_sale(event);
    }

    seatlock::Result<std::vector<EventSpec>> ours(
        seatlock::Result<std::vector<EventSpec>> all) const {
        if (all) std::erase_if(*all, [&](const EventSpec& e) { return !events_.contains(e.id); });
        return all;
    }

    // Whether the step may reach the storage: only for the events of this venue.
    seatlock::Result<void> allowed(const seatlock::op::create_event& o) const { return on_sale(o.spec.id); }
    seatlock::Result<void> allowed(const seatlock::op::hold& o) const { return on_sale(o.cmd.event); }
    seatlock::Result<void> allowed(const seatlock::op::confirm& o) const { return token_on_sale(o.cmd.token); }
    seatlock::Result<void> allowed(const seatlock::op::release& o) const { return token_on_sale(o.token); }
    seatlock::Result<void> allowed(const seatlock::op::extend& o) const { return token_on_sale(o.token); }
    seatlock::Result<void> allowed(const seatlock::op::cancel& o) const { return on_sale(o.event); }
    seatlock::Result<void> allowed(const seatlock::op::seats& o) const { return on_sale(o.event); }
    seatlock::Result<void> allowed(const seatlock::op::version& o) const { return on_sale(o.event); }
    seatlock::Result<void> allowed(const seatlock::op::changes& o) const { return on_sale(o.event); }
    template <typename O>
    seatlock::Result<void> allowed(const O&) const { return {}; }

    std::set<std::string, std::less<>> events_;
};

}  // namespace

std::vector<EventSpec> demo_venue() {
    EventSpec game{std::string(demo_event_id), "Harbor City Gulls vs. Mesa Ridge Roadrunners", {}};
    game.zones.push_back(ZoneSpec::named("lower-1", rows_of("A", "F", 12)));
    game.zones.push_back(ZoneSpec::named("lower-2", rows_of("A", "F", 12)));
    game.zones.push_back(ZoneSpec::named("upper-1", rows_of("A", "H", 16)));
    game.zones.push_back(ZoneSpec::general_admission("bleachers-left", 200));
    game.zones.push_back(ZoneSpec::general_admission("bleachers-right", 200));
    return {game};
}

seatlock::Result<Venue> parse_venue(std::string_view json_text) {
    boost::system::error_code ec;
    const json::value doc = json::parse(json_text, ec);
    if (ec) return Failure(errc::invalid_argument, "venue is not valid JSON: " + ec.message());
    try {
        Venue venue;
        const auto* list = doc.is_object() ? doc.get_object().if_contains("events") : nullptr;
        if (list) {
            only_keys(doc.get_object(), "venue", {"events"});
            for (const auto& event : as_array(list, "events"))
                venue.events.push_back(read_event(event, venue.rooms));
        } else {
            venue.events.push_back(read_event(doc, venue.rooms));
        }
        if (auto ok = check_events(venue.events); !ok) return std::move(ok).error();
        return venue;
    } catch (const VenueError& e) {
        return Failure(errc::invalid_argument, "venue: " + e.message);
    }
}

seatlock::Result<Venue> load_venue(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return Failure(errc::invalid_argument, "cannot read venue file " + path);
    std::ostringstream text;
    text << file.rdbuf();
    return parse_venue(text.str());
}

std::optional<seatlock::WallTime> parse_utc_time(std::string_view text) {
    // YYYY-MM-DDTHH:MM:SS[.f...]Z: the digits at fixed places, then the fraction.
    const auto digits = [&](std::size_t at, std::size_t n) -> std::optional<int> {
        if (at + n > text.size()) return std::nullopt;
        int value = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            if (text[i] < '0' || text[i] > '9') return std::nullopt;
            value = value * 10 + (text[i] - '0');
        }
        return value;
    };
    if (text.size() < 20 || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') ||
        text[13] != ':' || text[16] != ':')
        return std::nullopt;
    const auto year = digits(0, 4), month = digits(5, 2), day = digits(8, 2);
    const auto hour = digits(11, 2), minute = digits(14, 2), second = digits(17, 2);
    if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
    const std::chrono::year_month_day date{std::chrono::year(*year),
                                           std::chrono::month(static_cast<unsigned>(*month)),
                                           std::chrono::day(static_cast<unsigned>(*day))};
    if (!date.ok() || *year < 1970 || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
    std::size_t at = 19;
    std::int64_t millis = 0;
    if (text[at] == '.') {
        ++at;
        const std::size_t first = at;
        for (std::int64_t scale = 100; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
            millis += (text[at] - '0') * scale;
            scale /= 10;
        }
        if (at == first) return std::nullopt;
    }
    if (at + 1 != text.size() || (text[at] != 'Z' && text[at] != 'z')) return std::nullopt;
    const auto midnight = std::chrono::sys_days(date);
    return seatlock::WallTime(std::chrono::duration_cast<seatlock::Millis>(
        midnight.time_since_epoch() + std::chrono::hours(*hour) + std::chrono::minutes(*minute) +
        std::chrono::seconds(*second) + std::chrono::milliseconds(millis)));
}

seatlock::AnyBackend venue_view(seatlock::AnyBackend backend, const std::vector<EventSpec>& venue) {
    std::set<std::string, std::less<>> ids;
    for (const auto& event : venue) ids.insert(event.id);
    return seatlock::AnyBackend(std::make_shared<VenueView>(std::move(backend), std::move(ids)));
}

}  // namespace ticketing
