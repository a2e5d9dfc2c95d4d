// venue.cpp: the demo stadium and the venue file reader.
#include "venue.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <fstream>
#include <initializer_list>
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

EventSpec read_event(const json::value& v) {
    const auto& e = as_object(v, "an event");
    const std::string id = as_string(e.if_contains("id"), "event id");
    only_keys(e, "event " + id, {"id", "name", "zones"});
    EventSpec spec{
        id, e.contains("name") ? as_string(e.if_contains("name"), "event name") : id, {}};
    for (const auto& zone : as_array(e.if_contains("zones"), "event " + id + " zones")) {
        spec.zones.push_back(read_zone(zone, id));
    }
    return spec;
}

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

seatlock::Result<std::vector<EventSpec>> parse_venue(std::string_view json_text) {
    boost::system::error_code ec;
    const json::value doc = json::parse(json_text, ec);
    if (ec) return Failure(errc::invalid_argument, "venue is not valid JSON: " + ec.message());
    try {
        std::vector<EventSpec> events;
        const auto* list = doc.is_object() ? doc.get_object().if_contains("events") : nullptr;
        if (list) {
            only_keys(doc.get_object(), "venue", {"events"});
            for (const auto& event : as_array(list, "events")) events.push_back(read_event(event));
        } else {
            events.push_back(read_event(doc));
        }
        if (events.empty()) return Failure(errc::invalid_argument, "venue has no event");
        return events;
    } catch (const VenueError& e) {
        return Failure(errc::invalid_argument, "venue: " + e.message);
    }
}

seatlock::Result<std::vector<EventSpec>> load_venue(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return Failure(errc::invalid_argument, "cannot read venue file " + path);
    std::ostringstream text;
    text << file.rdbuf();
    return parse_venue(text.str());
}

}  // namespace ticketing
