// SPDX-License-Identifier: MIT
// api.cpp: routes, request bodies and the JSON of responses.
#include "api.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <initializer_list>
#include <limits>
#include <optional>
#include <seatlock/keys.hpp>

#include "log.hpp"
#include "web_assets.hpp"
#include "wire_form.hpp"

namespace ticketing {
namespace http = boost::beast::http;
namespace json = boost::json;
using seatlock::errc;

/// One request on its way through the router: the request, its decoded path segments
/// and query parameters, and the path parameters of the route it matched.
struct Api::Call {
    const HttpRequest& request;
    const Identity& identity;
    std::vector<std::string> path;
    std::vector<std::pair<std::string, std::string>> query;
    std::vector<std::string> params;
    // Whether the client may send the same request again after a 5xx: false only for a
    // hold without an Idempotency-Key whose outcome is unknown (a retry could hold twice).
    bool retry_safe = true;
    // Where the buyer is noted for the access log, if anywhere (handle()'s caller):
    // Api::buyer notes the one it finds.
    RequestNote* note = nullptr;
};

namespace {

// The most an extend asks the library for. The library caps an extension at the hold's
// creation + max_hold_lifetime (--max-hold-lifetime, a day at most) and never refuses a
// longer one; a year is far past that cap, so clamping changes no answer, and it keeps
// ttl_s in milliseconds, and the storage's now + ttl, far from overflow.
constexpr std::int64_t extend_clamp_s = 366LL * 24 * 3600;

// Bad input found while reading a request; handle() answers it. Thrown rather than
// returned so that handlers read as the happy path, with each input check one line.
struct BadInput {
    http::status status;
    std::string code;
    std::string message;
    std::string challenge = {};  // a 401's WWW-Authenticate
};

[[noreturn]] void bad_input(std::string message) {
    throw BadInput{http::status::bad_request, "invalid_argument", std::move(message)};
}

HttpResponse json_response(http::status status, const json::value& body) {
    HttpResponse response(status, 11);
    response.set(http::field::content_type, "application/json");
    response.body() = json::serialize(body) + "\n";
    return response;
}

HttpResponse error_with_details(http::status status, std::string_view code,
                                std::string_view message, json::object extra) {
    json::object body;
    body["error"] = code;
    body["message"] = message;
    for (auto& [key, value] : extra) body[key] = std::move(value);
    return json_response(status, body);
}

std::string iso_time(seatlock::WallTime t) {
    const std::int64_t ms = to_unix_ms(t);
    const std::int64_t seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z",
                       fmt::gmtime(static_cast<std::time_t>(seconds)), ms - seconds * 1000);
}

json::array to_json(const std::vector<std::string>& items) {
    json::array array;
    for (const auto& item : items) array.emplace_back(item);
    return array;
}

json::object to_json(const seatlock::Hold& hold) {
    json::object out{{"token", hold.token},
                     {"event", hold.event},
                     {"zone", hold.zone},
                     {"seats", to_json(hold.seats)},
                     {"expires_at", iso_time(hold.expires_at)},
                     {"status", seatlock::to_string(hold.status)}};
    if (!hold.order_id.empty()) out["order_id"] = hold.order_id;
    // The seat map's version that shows this step (its ETag, a stream frame's id).
    if (hold.version != 0) out["version"] = hold.version;
    return out;
}

json::object to_json(const seatlock::Order& order) {
    return {{"order_id", order.id},
            {"event", order.event},
            {"zone", order.zone},
            {"seats", to_json(order.seats)},
            {"hold_token", order.hold_token},
            {"status", order.cancelled ? "cancelled" : "paid"},
            {"paid_at", iso_time(order.paid_at)}};
}

json::object to_json(const seatlock::EventSpec& event) {
    json::array zones;
    for (const auto& zone : event.zones) {
        json::object z{{"id", zone.id}, {"kind", to_string(zone.kind)}};
        if (zone.kind == seatlock::ZoneKind::general_admission) {
            z["capacity"] = zone.capacity;
        } else {
            json::array rows;
            for (const auto& seat : zone.seats) {
                if (!seat.row.empty() && (rows.empty() || rows.back().as_string() != seat.row)) {
                    rows.emplace_back(seat.row);
                }
            }
            z["seats"] = zone.seats.size();
            z["rows"] = std::move(rows);
        }
        zones.push_back(std::move(z));
    }
    return {{"id", event.id}, {"name", event.name}, {"zones", std::move(zones)}};
}

// An event's room as GET /events lists it: where its buyers join and wait.
json::object room_summary(const VenueRoom& room) {
    return {{"id", room.id},
            {"opens_at", iso_time(room.config.opens_at)},
            {"join_url", "/rooms/" + room.id + "/join"},
            {"queue_url", "/rooms/" + room.id + "/position"},
            {"stream_url", "/rooms/" + room.id + "/stream"}};
}

json::object to_json(const PendingReservation& row) {
    return {
        {"token", row.token},
        {"event", row.event},
        {"zone", row.zone},
        {"seats", to_json(row.seats)},
        {"expires_at", iso_time(seatlock::WallTime(std::chrono::milliseconds(row.expires_at_ms)))},
        {"status", "held"}};
}

json::object to_json(const OrderRecord& order) {
    return {{"order_id", order.order_id},
            {"event", order.event},
            {"zone", order.zone},
            {"seats", to_json(order.seats)},
            {"hold_token", order.hold_token},
            {"status", order.cancelled ? "cancelled" : "paid"},
            {"paid_at", iso_time(seatlock::WallTime(std::chrono::milliseconds(order.paid_at_ms)))}};
}

// {"<name>": [each item as JSON]}: the buyer's lists.
template <typename Items>
json::object listing(std::string_view name, const Items& items) {
    json::array list;
    for (const auto& item : items) list.push_back(to_json(item));
    return {{name, std::move(list)}};
}

// ---- conditional requests (RFC 9110 section 13.1.2)

// A strong validator of a response: the FNV-1a hash of its body. Two processes serving
// the same state answer the same tag, so a page may poll any of them.
std::string entity_tag(std::string_view body) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const char c : body) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return fmt::format("\"{:016x}\"", hash);
}

// Calls `element` with each element of the comma-separated lists in the request's `field`
// lines, trimmed; true as soon as `element` answers true.
template <typename Element>
bool any_list_element(const HttpRequest& request, http::field field, Element&& element) {
    const auto [first, last] = request.equal_range(field);
    for (auto line = first; line != last; ++line) {
        std::string_view list(line->value().data(), line->value().size());
        while (!list.empty()) {
            const auto comma = list.find(',');
            const std::string_view item = trim_blanks(list.substr(0, comma));
            list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
            if (!item.empty() && element(item)) return true;
        }
    }
    return false;
}

// Whether If-None-Match names `tag` (or is "*"). GET compares weakly: W/"x" matches "x".
bool none_match_names(const HttpRequest& request, std::string_view tag) {
    return any_list_element(request, http::field::if_none_match, [tag](std::string_view item) {
        if (item.starts_with("W/")) item.remove_prefix(2);
        return item == "*" || item == tag;
    });
}

// A successful GET gets its ETag, and becomes 304 without a body when the client has it.
// no-cache: a browser may keep the answer but must ask again before using it.
HttpResponse conditional(const HttpRequest& request, HttpResponse response) {
    if (request.method() != http::verb::get || response.result() != http::status::ok)
        return response;
    if (response.count(http::field::etag) != 0) return response;  // tagged by its handler
    if (response.count(http::field::set_cookie) != 0) return response;  // one client's own
    const std::string tag = entity_tag(response.body());
    response.set(http::field::etag, tag);
    response.set(http::field::cache_control, "no-cache");
    if (!none_match_names(request, tag)) return response;
    HttpResponse unchanged(http::status::not_modified, response.version());
    for (const auto field : {http::field::etag, http::field::cache_control})
        unchanged.set(field, response[field]);
    return unchanged;
}

// Whether Accept-Encoding takes gzip (a q of 0 refuses it).
bool accepts_gzip(const HttpRequest& request) {
    bool refused = false;
    const bool named = any_list_element(request, http::field::accept_encoding, [&](std::string_view item) {
        std::string_view params;
        if (const auto semi = item.find(';'); semi != std::string_view::npos) {
            params = item.substr(semi + 1);
            item = trim_blanks(item.substr(0, semi));
        }
        if (!boost::beast::iequals(item, "gzip") && item != "*") return false;
        // "gzip;q=0" refuses it; any other weight takes it.
        if (const auto q = params.find("q="); q != std::string_view::npos) {
            const std::string weight(params.substr(q + 2));
            refused = std::strtod(weight.c_str(), nullptr) <= 0.0;
        }
        return true;
    });
    return named && !refused;
}

// A version from a query parameter or header; nullopt when it is not a whole number.
std::optional<seatlock::EventVersion> parse_version(std::string_view text) {
    if (text.empty() || text.size() > 19) return std::nullopt;
    seatlock::EventVersion value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<seatlock::EventVersion>(c - '0');
    }
    return value;
}

// The seat map's entity tags: its version, "-gzip" for the compressed copy (a strong tag
// names one representation).
std::string version_tag(seatlock::EventVersion version, bool gzipped) {
    return fmt::format("\"{}{}\"", version, gzipped ? "-gzip" : "");
}

// ---- reading requests

json::object body_object(const HttpRequest& request, bool required) {
    const std::string& body = request.body();
    if (body.empty()) {
        if (required) bad_input("this call needs a JSON object body");
        return {};
    }
    boost::system::error_code ec;
    json::value value = json::parse(body, ec);
    if (ec) bad_input("body is not valid JSON: " + ec.message());
    if (!value.is_object()) bad_input("body must be a JSON object");
    return std::move(value.get_object());
}

void only_fields(const json::object& body, std::initializer_list<std::string_view> allowed) {
    for (const auto& [key, value] : body) {
        bool known = false;
        for (auto name : allowed) known = known || key == name;
        if (known) continue;
        std::string expected;
        for (auto name : allowed) expected += (expected.empty() ? "" : ", ") + std::string(name);
        bad_input(fmt::format("unknown field '{}'{}{}", std::string_view(key),
                              expected.empty() ? "; this call takes none" : "; expected ",
                              expected));
    }
}

std::string string_field(const json::object& body, std::string_view name) {
    const json::value* value = body.if_contains(name);
    if (!value) bad_input(fmt::format("field '{}' is required", name));
    if (!value->is_string()) bad_input(fmt::format("field '{}' must be a string", name));
    return std::string(value->get_string());
}

std::int64_t integer_field(const json::object& body, std::string_view name) {
    const json::value* value = body.if_contains(name);
    if (!value) bad_input(fmt::format("field '{}' is required", name));
    if (value->is_int64()) return value->get_int64();
    if (value->is_uint64() && value->get_uint64() <= std::numeric_limits<std::int64_t>::max()) {
        return static_cast<std::int64_t>(value->get_uint64());
    }
    bad_input(fmt::format("field '{}' must be a whole number", name));
}

// The optional ?event= of the buyer's listings; no other parameter.
std::optional<std::string> event_filter(
    const std::vector<std::pair<std::string, std::string>>& query) {
    std::optional<std::string> event;
    for (const auto& [key, value] : query) {
        if (key != "event")
            bad_input(fmt::format("unknown query parameter '{}'; expected event", key));
        event = value;
    }
    return event;
}

std::vector<std::string> string_list_field(const json::object& body, std::string_view name) {
    const json::value* value = body.if_contains(name);
    if (!value || !value->is_array())
        bad_input(fmt::format("field '{}' must be an array of ids", name));
    std::vector<std::string> items;
    for (const auto& item : value->get_array()) {
        if (!item.is_string()) bad_input(fmt::format("field '{}' must be an array of ids", name));
        items.emplace_back(item.get_string());
    }
    return items;
}

}  // namespace

std::string Api::buyer(const Call& call) const {
    const Identity& who = call.identity;
    switch (who.kind) {
        case Identity::Kind::buyer:
            if (call.request.method() != http::verb::get) {
                if (auto why = auth_->cross_origin(call.request, who))
                    throw BadInput{http::status::forbidden, "cross_origin", *why};
            }
            if (call.note) call.note->buyer = who.buyer;
            return who.buyer;
        case Identity::Kind::operator_:
            throw BadInput{http::status::forbidden, "operator_key",
                           "the operator key acts only on POST /orders/{order}/cancel; a buyer "
                           "signs in with POST /session"};
        case Identity::Kind::refused:
            if (who.refusal_code == "invalid_argument") bad_input(who.refusal);
            throw BadInput{http::status::unauthorized, who.refusal_code, who.refusal,
                           "Bearer realm=\"seatlock\", error=\"invalid_token\""};
        case Identity::Kind::anonymous:
            break;
    }
    throw BadInput{http::status::unauthorized, "unauthenticated",
                   "sign in first: POST /session, then send the session cookie or "
                   "Authorization: Bearer <token>",
                   "Bearer realm=\"seatlock\""};
}

HttpResponse error_response(http::status status, std::string_view code, std::string_view message) {
    return error_with_details(status, code, message, json::object{});
}

http::status status_for(const std::error_code& code) {
    using seatlock::condition;
    if (code.category() != seatlock::error_category()) return http::status::internal_server_error;
    // Contention and storage trouble first: nothing was changed, try again shortly.
    if (code == condition::busy || code == condition::storage_unavailable)
        return http::status::service_unavailable;
    if (code == errc::limit_exceeded) return http::status::unprocessable_entity;
    if (code == condition::bad_input) return http::status::bad_request;
    if (code == condition::not_found) return http::status::not_found;
    if (code == condition::forbidden) return http::status::forbidden;
    if (code == condition::expired) return http::status::gone;
    if (code == condition::conflict) return http::status::conflict;
    return http::status::internal_server_error;
}

HttpResponse Api::failure(const Call& call, const seatlock::Failure& f) {
    const http::status status = status_for(f.code);
    if (f.code.category() != seatlock::error_category()) {
        log_error("{} {}: {}", std::string_view(call.request.method_string()),
                  std::string_view(call.request.target()), f.code.message() + ": " + f.detail);
        return error_response(status, "internal_error", f.detail);
    }
    const auto e = static_cast<errc>(f.code.value());
    json::object extra;
    if ((e == errc::seat_taken || e == errc::unknown_seat || e == errc::hold_expired) &&
        !f.items.empty()) {
        extra["seats"] = to_json(f.items);
    }
    if (e == errc::limit_exceeded) {
        extra["limit"] = f.limit;
        extra["current"] = f.current;
    }
    if (e == errc::sold_out && f.current >= 0) extra["available"] = f.current;
    // Outcomes caused by the state of seats or holds, not by bad input: counted by kind.
    if (f.code == seatlock::condition::conflict) metrics_->conflict(seatlock::to_string(e));
    if (status == http::status::service_unavailable) {
        // A hold whose outcome is unknown, or made but not replicated, is a second hold
        // when sent again without a key.
        const bool safe =
            call.retry_safe || (e != errc::outcome_unknown && e != errc::not_replicated);
        extra["retry_safe"] = safe;
        if (!safe) {
            extra["message"] = f.detail +
                               (e == errc::not_replicated ? "; the hold was made"
                                                          : "; the hold may have been made") +
                               ": send an Idempotency-Key to make retries safe";
        }
    }
    auto response = error_with_details(status, seatlock::to_string(e), f.detail, std::move(extra));
    if (status == http::status::service_unavailable) response.set(http::field::retry_after, "1");
    return response;
}

Api::Answer Api::handle(HttpRequest request, Identity identity, RequestNote* note) {
    // What went wrong, answered after the catch (a handler may not co_await, and the
    // answer is plain data anyway).
    std::optional<HttpResponse> refused;
    try {
        const std::string_view target(request.target().data(), request.target().size());
        const auto url = boost::urls::parse_origin_form(target);
        if (!url) {
            co_return error_response(http::status::bad_request, "invalid_argument",
                                     "malformed request target");
        }
        Call call{request, identity, {}, {}, {}};
        call.note = note;
        for (auto segment : url->segments()) call.path.emplace_back(segment);
        for (auto param : url->params()) call.query.emplace_back(param.key, param.value);
        auto response = co_await route(call);
        co_return conditional(request, std::move(response));
    } catch (const BadInput& e) {
        refused = error_response(e.status, e.code, e.message);
        if (!e.challenge.empty()) refused->set(http::field::www_authenticate, e.challenge);
    } catch (const DatabaseError& e) {
        log_warn("database: {}", e.what());
        refused = error_with_details(http::status::service_unavailable, "database_unavailable",
                                     e.what(), json::object{{"retry_safe", true}});
        refused->set(http::field::retry_after, "1");
    } catch (const std::exception& e) {
        log_error("{} {} failed: {}", std::string_view(request.method_string()),
                  std::string_view(request.target()), e.what());
        refused = error_response(http::status::internal_server_error, "internal_error", e.what());
    }
    co_return std::move(*refused);
}

// The router's table: each route's method, its template (as docs/openapi.yaml names the
// path: a `{name}` segment matches any one segment, handed to the handler) and handler.
// The template is also the route's label in the metrics and the access log.
struct Api::Route {
    http::verb verb;
    std::string_view path;
    Answer (Api::*handler)(Call&);
};

std::span<const Api::Route> Api::route_table() {
    static const std::array<Route, 20> routes = {{
        {http::verb::get, "/", &Api::page},
        {http::verb::get, "/assets/{file}", &Api::asset},
        {http::verb::get, "/healthz", &Api::healthz},
        {http::verb::get, "/readyz", &Api::readyz},
        {http::verb::get, "/metrics", &Api::metrics},
        {http::verb::get, "/events", &Api::events},
        {http::verb::get, "/events/{event}/seats", &Api::seats},
        {http::verb::post, "/events/{event}/holds", &Api::hold},
        {http::verb::post, "/holds/{token}/extend", &Api::extend},
        {http::verb::post, "/holds/{token}/confirm", &Api::confirm},
        {http::verb::delete_, "/holds/{token}", &Api::release},
        {http::verb::post, "/orders/{order}/cancel", &Api::cancel},
        {http::verb::get, "/me/holds", &Api::my_holds},
        {http::verb::get, "/me/orders", &Api::my_orders},
        {http::verb::get, "/openapi.json", &Api::openapi},
        {http::verb::post, "/session", &Api::sign_in},
        {http::verb::get, "/session", &Api::session},
        {http::verb::delete_, "/session", &Api::sign_out},
        {http::verb::post, "/rooms/{room}/join", &Api::join_room},
        {http::verb::get, "/rooms/{room}/position", &Api::room_position},
    }};
    return routes;
}

namespace {

// Whether the decoded segments `path` fit `route_path` (a template of the table); its
// `{name}` segments' values are added to `params` when given.
bool path_matches(std::string_view route_path, const std::vector<std::string>& path,
                  std::vector<std::string>* params) {
    std::size_t n = 0;
    // After the leading '/': "/" has no segment.
    for (std::string_view rest = route_path.substr(1); !rest.empty(); ++n) {
        const auto slash = rest.find('/');
        const auto segment = rest.substr(0, slash);
        if (n >= path.size()) return false;
        if (segment.starts_with('{')) {
            if (params) params->push_back(path[n]);
        } else if (segment != path[n]) {
            return false;
        }
        rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    }
    return n == path.size();
}

}  // namespace

std::string_view Api::route_label(const http::request_header<>& request) {
    const std::string_view target(request.target().data(), request.target().size());
    const auto url = boost::urls::parse_origin_form(target);
    if (!url) return "other";
    std::vector<std::string> path;
    for (auto segment : url->segments()) path.emplace_back(segment);
    if (path.size() == 3 && path[0] == "events" && path[2] == "stream")
        return "/events/{event}/stream";
    if (path.size() == 3 && path[0] == "rooms" && path[2] == "stream")
        return "/rooms/{room}/stream";
    for (const auto& route : route_table())
        if (path_matches(route.path, path, nullptr)) return route.path;
    return "other";
}

std::string_view Api::method_label(const http::request_header<>& request) {
    const auto verb = request.method();
    if (verb == http::verb::unknown) return "other";
    const auto name = http::to_string(verb);
    return {name.data(), name.size()};
}

Api::Answer Api::route(Call& call) {
    std::string allowed;
    for (const auto& route : route_table()) {
        std::vector<std::string> params;
        if (!path_matches(route.path, call.path, &params)) continue;
        if (route.verb != call.request.method()) {
            allowed += (allowed.empty() ? "" : ", ") + std::string(http::to_string(route.verb));
            continue;
        }
        call.params = std::move(params);
        co_return co_await (this->*route.handler)(call);
    }
    if (!allowed.empty()) {
        auto response = error_response(
            http::status::method_not_allowed, "method_not_allowed",
            fmt::format("{} takes {}", std::string_view(call.request.target()), allowed));
        response.set(http::field::allow, allowed);
        co_return response;
    }
    co_return error_response(
        http::status::not_found, "not_found",
        fmt::format("no endpoint {}", std::string_view(call.request.target())));
}

// ---- handlers

Api::Answer Api::healthz(Call&) {
    if (auto trouble = ticketing_->trouble()) {
        auto response =
            json_response(http::status::service_unavailable,
                          json::object{{"status", "storage_lost"}, {"reason", *trouble}});
        response.set(http::field::retry_after, "1");
        co_return response;
    }
    co_return json_response(http::status::ok, json::object{{"status", "ok"}});
}

Api::Answer Api::readyz(Call&) {
    if (auto why = ticketing_->not_ready()) {
        auto response = json_response(http::status::service_unavailable,
                                      json::object{{"status", "not_ready"}, {"reason", *why}});
        response.set(http::field::retry_after, "1");
        co_return response;
    }
    co_return json_response(http::status::ok, json::object{{"status", "ready"}});
}

Api::Answer Api::metrics(Call&) {
    HttpResponse response(http::status::ok, 11);
    response.set(http::field::content_type, "text/plain; version=0.0.4");
    response.body() = metrics_->render();
    co_return response;
}

Api::Answer Api::events(Call& call) {
    auto events = co_await ticketing_->events();
    if (!events) co_return failure(call, events.error());
    json::array list;
    for (const auto& event : *events) {
        json::object item = to_json(event);
        if (const VenueRoom* room = rooms_ ? rooms_->of_event(event.id) : nullptr)
            item["room"] = room_summary(*room);
        list.push_back(std::move(item));
    }
    co_return json_response(http::status::ok, json::object{{"events", std::move(list)}});
}

Api::Answer Api::seats(Call& call) {
    std::optional<std::string> zone;
    std::optional<std::string> since_text;
    for (const auto& [key, value] : call.query) {
        if (key == "zone")
            zone = value;
        else if (key == "since")
            since_text = value;
        else
            bad_input(fmt::format("unknown query parameter '{}'; expected zone or since", key));
    }
    const std::string& event = call.params[0];
    if (auto ok = seatlock::validate_id("event", event); !ok) bad_input(ok.error().detail);
    if (!feed_->knows(event)) {
        co_return failure(call, seatlock::Failure(errc::unknown_event,
                                                  "no event " + event + " on sale here"));
    }
    // A buyer reads their own writes: the snapshot is waited for until it covers the
    // writes this process answered (the reader is woken by them).
    auto snapshot = co_await feed_->fresh(event, std::chrono::milliseconds(500));
    if (!snapshot) {
        auto response = error_with_details(
            http::status::service_unavailable, "storage_unavailable",
            "the seat map of " + event + " has not been read from the storage yet",
            json::object{{"retry_safe", true}});
        response.set(http::field::retry_after, "1");
        co_return response;
    }
    if (snapshot->repairs < ticketing_->repairs()) {
        // Not read again since this server repaired the venue (the storage failed meanwhile):
        // it may miss sales restored by the repair, and show their seats free.
        auto response = error_with_details(
            http::status::service_unavailable, "storage_unavailable",
            "the seat map of " + event + " has not been read again since the storage was repaired",
            json::object{{"retry_safe", true}});
        response.set(http::field::retry_after, "1");
        co_return response;
    }
    if (since_text) {
        if (zone) bad_input("give zone or since, not both");
        const auto after = parse_version(*since_text);
        if (!after) bad_input("since must be a version (a whole number)");
        const ChangesSince found = feed_->since(event, *after);
        if (found.outcome != ChangesSince::Outcome::ok) {
            const bool trimmed = found.outcome == ChangesSince::Outcome::trimmed;
            co_return error_with_details(
                http::status::gone, trimmed ? "changes_trimmed" : "version_unknown",
                trimmed ? fmt::format("the changes after version {} are no longer kept: read "
                                      "the whole map again",
                                      *after)
                        : fmt::format("version {} is ahead of this server's {}: read the whole "
                                      "map again",
                                      *after, found.snapshot->version),
                json::object{{"version", found.snapshot->version}});
        }
        HttpResponse response(http::status::ok, 11);
        response.set(http::field::content_type, "application/json");
        response.set(http::field::cache_control, "no-cache");
        response.set(http::field::etag, version_tag(found.snapshot->version, false));
        response.body() = encode_changes(*found.snapshot, *after, found.changes);
        co_return response;
    }
    int only = -1;
    if (zone) {
        only = snapshot->zone_index(*zone);
        if (only < 0) {
            co_return failure(call, seatlock::Failure(errc::unknown_zone,
                                                      "no zone " + *zone + " in event " + event));
        }
    }
    const bool gzipped = !zone && accepts_gzip(call.request);
    const std::string tag = version_tag(snapshot->version, gzipped);
    HttpResponse response(http::status::ok, 11);
    response.set(http::field::etag, tag);
    response.set(http::field::cache_control, "no-cache");
    response.set(http::field::vary, "Accept-Encoding");
    // The version is the validator: either representation's tag of it matches.
    if (none_match_names(call.request, version_tag(snapshot->version, false)) ||
        none_match_names(call.request, version_tag(snapshot->version, true))) {
        metrics_->seat_map_served(true);
        response.result(http::status::not_modified);
        co_return response;
    }
    metrics_->seat_map_served(false);
    response.set(http::field::content_type, "application/json");
    if (zone) {
        response.body() = encode_map(*snapshot, only);
    } else if (gzipped) {
        response.set(http::field::content_encoding, "gzip");
        response.body() = snapshot->full().gzip;
    } else {
        response.body() = snapshot->full().body;
    }
    co_return response;
}

namespace {

// The id of `GET /<collection>/{id}/stream` (the seat map's and a room's streams), a 400
// for one with a query (`no_query` says why), or nothing for any other request.
std::optional<std::variant<std::string, HttpResponse>> stream_target(const HttpRequest& request,
                                                                     std::string_view collection,
                                                                     std::string_view no_query) {
    if (request.method() != http::verb::get) return std::nullopt;
    const std::string_view target(request.target().data(), request.target().size());
    const auto url = boost::urls::parse_origin_form(target);
    if (!url) return std::nullopt;
    std::vector<std::string> path;
    for (auto segment : url->segments()) path.emplace_back(segment);
    if (path.size() != 3 || path[0] != collection || path[2] != "stream") return std::nullopt;
    if (!url->params().empty()) return error_response(http::status::bad_request, "invalid_argument", no_query);
    return std::move(path[1]);
}

}  // namespace

std::optional<std::variant<StreamStart, HttpResponse>> Api::stream_request(
    const HttpRequest& request) const {
    auto id = stream_target(request, "events", "the stream takes no query parameters (resume with Last-Event-ID)");
    if (!id) return std::nullopt;
    if (auto* refusal = std::get_if<HttpResponse>(&*id)) return std::move(*refusal);
    StreamStart start{std::get<std::string>(std::move(*id)), std::nullopt};
    if (!feed_->knows(start.event)) {
        return error_response(http::status::not_found, "unknown_event",
                              "no event " + start.event + " on sale here");
    }
    if (!feed_->current(start.event)) {
        auto response = error_with_details(
            http::status::service_unavailable, "storage_unavailable",
            "the seat map of " + start.event + " has not been read from the storage yet",
            json::object{{"retry_safe", true}});
        response.set(http::field::retry_after, "1");
        return response;
    }
    // A Last-Event-ID that is not a version is ignored: the stream starts with the map.
    if (const auto last = request.find("Last-Event-ID"); last != request.end()) {
        start.last_event_id = parse_version(std::string_view(last->value().data(), last->value().size()));
    }
    return start;
}

Api::Answer Api::hold(Call& call) {
    const std::string user = buyer(call);
    const json::object body = body_object(call.request, true);
    only_fields(body, {"zone", "seats", "quantity", "best_available"});
    const std::string zone = string_field(body, "zone");
    const int asks = int(body.contains("seats")) + int(body.contains("quantity")) +
                     int(body.contains("best_available"));
    if (asks != 1) bad_input("give exactly one of seats, quantity or best_available");
    seatlock::HoldRequest request;
    if (body.contains("seats"))
        request = seatlock::named_seats(zone, string_list_field(body, "seats"));
    else if (body.contains("quantity"))
        request = seatlock::quantity(zone, integer_field(body, "quantity"));
    else
        request = seatlock::best_available(zone, integer_field(body, "best_available"));

    std::string key;
    if (const auto header = call.request.find("Idempotency-Key"); header != call.request.end()) {
        key = std::string(header->value());
        if (auto ok = seatlock::validate_id("Idempotency-Key", key); !ok)
            bad_input(ok.error().detail);
    }
    call.retry_safe = !key.empty();
    if (rooms_) {
        if (auto refused = admission_refusal(call, user)) co_return std::move(*refused);
    }
    auto hold = co_await ticketing_->hold(user, call.params[0], request, key);
    feed_->note_write();  // whatever the answer: the storage may have changed
    if (!hold) co_return failure(call, hold.error());
    // A replay answers what the first request made, as it stands now.
    auto response =
        json_response(hold->replayed ? http::status::ok : http::status::created, to_json(*hold));
    response.set(http::field::location, "/holds/" + hold->token);
    if (hold->replayed) response.set("Idempotent-Replayed", "true");
    co_return response;
}

Api::Answer Api::extend(Call& call) {
    const std::string user = buyer(call);
    const json::object body = body_object(call.request, true);
    only_fields(body, {"ttl_s"});
    const std::int64_t ttl = integer_field(body, "ttl_s");
    if (ttl < 1) bad_input("ttl_s must be a positive number of seconds");
    const seatlock::Millis asked =
        std::chrono::seconds(ttl < extend_clamp_s ? ttl : extend_clamp_s);
    auto hold = co_await ticketing_->extend(user, call.params[0], asked);
    feed_->note_write();  // whatever the answer: the storage may have changed
    if (!hold) co_return failure(call, hold.error());
    co_return json_response(http::status::ok, to_json(*hold));
}

Api::Answer Api::confirm(Call& call) {
    const std::string user = buyer(call);
    const json::object body = body_object(call.request, true);
    only_fields(body, {"payment_id"});
    const std::string payment_id = string_field(body, "payment_id");
    auto order = co_await ticketing_->confirm(user, call.params[0], payment_id);
    feed_->note_write();  // whatever the answer: the storage may have changed
    if (!order) co_return failure(call, order.error());
    co_return json_response(http::status::ok, to_json(*order));
}

Api::Answer Api::release(Call& call) {
    const std::string user = buyer(call);
    only_fields(body_object(call.request, false), {});
    auto released = co_await ticketing_->release(user, call.params[0]);
    feed_->note_write();  // whatever the answer: the storage may have changed
    if (!released) co_return failure(call, released.error());
    co_return HttpResponse(http::status::no_content, 11);
}

Api::Answer Api::cancel(Call& call) {
    // The operator cancels any order (a refund the buyer cannot ask for themselves); every
    // attempt is logged, with its outcome.
    const bool by_operator = call.identity.kind == Identity::Kind::operator_;
    std::optional<std::string> user;
    if (!by_operator) user = buyer(call);
    only_fields(body_object(call.request, false), {});
    const std::string order_id = call.params[0];
    auto order = co_await ticketing_->cancel(user, order_id);
    feed_->note_write();  // whatever the answer: the storage may have changed
    if (by_operator) {
        if (order)
            log("operator key: order {} of buyer {} cancelled (seats {} of {} free again)",
                order_id, order->holder, fmt::join(order->seats, ","), order->zone);
        else
            log("operator key: cancelling order {} failed: {}", order_id, order.error().detail);
    }
    if (!order) co_return failure(call, order.error());
    co_return json_response(http::status::ok, to_json(*order));
}

// ---- waiting rooms

namespace {

// The admission a request carries: X-Admission-Token (API clients), else the cookie (the
// page; the browser sends the event's own, its Path being the event's holds).
std::optional<std::string_view> admission_token(const HttpRequest& request) {
    if (const auto header = request.find(admission_header); header != request.end())
        return std::string_view(header->value().data(), header->value().size());
    return cookie_value(request, admission_cookie);
}

// Where a room's buyer joins and follows the line: the 403's details and the answers'.
json::object room_links(const VenueRoom& room) {
    return {{"room", room.id},
            {"join_url", "/rooms/" + room.id + "/join"},
            {"queue_url", "/rooms/" + room.id + "/position"},
            {"stream_url", "/rooms/" + room.id + "/stream"}};
}

json::object to_json(const VenueRoom& room, const seatlock::QueuePosition& where) {
    json::object out{{"room", room.id},
                     {"event", room.event},
                     {"state", seatlock::to_string(where.state)},
                     {"waiting", where.waiting},
                     {"estimated_wait_s", static_cast<double>(where.estimated_wait.count()) / 1000.0},
                     {"opens_at", iso_time(where.opens_at)}};
    if (where.place) out["place"] = *where.place;
    if (where.state == seatlock::QueueState::admitted || where.state == seatlock::QueueState::active)
        out["deadline"] = iso_time(where.deadline);
    return out;
}

json::object to_json(const seatlock::Admission& admitted) {
    return {{"token", admitted.token}, {"expires_at", iso_time(admitted.expires_at)}};
}

bool is_admitted(seatlock::QueueState state) {
    return state == seatlock::QueueState::admitted || state == seatlock::QueueState::active;
}

}  // namespace

std::optional<HttpResponse> Api::admission_refusal(const Call& call, const std::string& user) {
    const HoldGate gate = rooms_->gate(call.params[0], user, admission_token(call.request));
    switch (gate.outcome) {
        case HoldGate::Outcome::open:
        case HoldGate::Outcome::admitted:
            return std::nullopt;
        case HoldGate::Outcome::fail_open:
            log_debug("hold on event {} by {} without an admission: room {} fails open",
                      call.params[0], user, gate.room->id);
            return std::nullopt;
        case HoldGate::Outcome::refused:
            return error_with_details(
                http::status::forbidden, "not_admitted",
                fmt::format("holds on event {} need an admission from room {}: {}", call.params[0],
                            gate.room->id, gate.why),
                room_links(*gate.room));
        case HoldGate::Outcome::unavailable:
            break;
    }
    json::object extra = room_links(*gate.room);
    extra["retry_safe"] = true;
    auto response = error_with_details(
        http::status::service_unavailable, "room_unavailable",
        fmt::format("holds on event {} need an admission from room {}, whose storage fails now: "
                    "{}",
                    call.params[0], gate.room->id, gate.why),
        std::move(extra));
    response.set(http::field::retry_after, "1");
    return response;
}

const VenueRoom& Api::room_of(const Call& call) const {
    const std::string& id = call.params[0];
    if (auto ok = seatlock::validate_id("room", id); !ok) bad_input(ok.error().detail);
    const VenueRoom* room = rooms_ ? rooms_->find(id) : nullptr;
    if (!room) throw BadInput{http::status::not_found, "unknown_room", "no room " + id + " here"};
    return *room;
}

Api::Answer Api::join_room(Call& call) {
    const std::string user = buyer(call);
    const VenueRoom& room = room_of(call);
    only_fields(body_object(call.request, false), {});
    auto ticket = co_await rooms_->join(room, user);
    if (!ticket) co_return failure(call, ticket.error());
    json::object body = room_links(room);
    body["event"] = room.event;
    body["buyer"] = user;
    body["joined_at"] = iso_time(ticket->joined_at);
    body["in_draw"] = ticket->in_draw;
    body["replayed"] = ticket->replayed;
    co_return json_response(ticket->replayed ? http::status::ok : http::status::created, body);
}

Api::Answer Api::room_position(Call& call) {
    const std::string user = buyer(call);
    const VenueRoom& room = room_of(call);
    if (!call.query.empty()) bad_input("this call takes no query parameters");
    auto where = co_await rooms_->position(room, user);
    if (!where) co_return failure(call, where.error());
    std::optional<seatlock::Admission> admitted;
    if (is_admitted(where->state)) {
        auto collected = co_await rooms_->admission(room, user);
        if (collected) {
            admitted = std::move(*collected);
        } else if (collected.is(errc::not_admitted)) {
            // Lapsed between the two calls: where the buyer stands now.
            where = co_await rooms_->position(room, user);
            if (!where) co_return failure(call, where.error());
        } else {
            co_return failure(call, collected.error());
        }
    }
    json::object body = to_json(room, *where);
    if (admitted) body["admission"] = to_json(*admitted);
    auto response = json_response(http::status::ok, body);
    response.set(http::field::cache_control, "no-store");
    if (admitted) {
        const auto left = std::chrono::duration_cast<std::chrono::seconds>(
            admitted->expires_at - std::chrono::system_clock::now());
        response.set(http::field::set_cookie,
                     fmt::format("{}={}; Path=/events/{}/holds; Max-Age={}; HttpOnly; "
                                 "SameSite=Strict{}",
                                 admission_cookie, admitted->token, room.event,
                                 std::max<std::int64_t>(left.count(), 1),
                                 auth_->settings().behind_tls_proxy ? "; Secure" : ""));
    }
    co_return response;
}

std::optional<std::variant<RoomStreamStart, HttpResponse>> Api::room_stream_request(
    const HttpRequest& request, const Identity& identity) const {
    auto id = stream_target(request, "rooms", "the stream takes no query parameters");
    if (!id) return std::nullopt;
    if (auto* refusal = std::get_if<HttpResponse>(&*id)) return std::move(*refusal);
    const std::string& room_id = std::get<std::string>(*id);
    const VenueRoom* room = rooms_ ? rooms_->find(room_id) : nullptr;
    if (!room) return error_response(http::status::not_found, "unknown_room", "no room " + room_id + " here");
    if (identity.kind == Identity::Kind::refused && identity.refusal_code == "invalid_argument")
        return error_response(http::status::bad_request, "invalid_argument", identity.refusal);
    if (identity.kind != Identity::Kind::buyer) {
        // The same answers as the other calls that act for a buyer (Api::buyer).
        const bool refused = identity.kind == Identity::Kind::refused;
        auto response = error_response(
            http::status::unauthorized, refused ? std::string_view(identity.refusal_code) : std::string_view("unauthenticated"),
            refused ? std::string_view(identity.refusal)
                    : std::string_view("sign in first: POST /session, then send the session "
                                       "cookie or Authorization: Bearer <token>"));
        response.set(http::field::www_authenticate, "Bearer realm=\"seatlock\"");
        return response;
    }
    return RoomStreamStart{room, identity.buyer};
}

std::chrono::milliseconds room_poll_after(const seatlock::QueuePosition& where, std::string_view buyer) {
    using std::chrono::milliseconds;
    constexpr milliseconds soonest{500}, latest{20'000}, spread{2'000};
    if (where.state != seatlock::QueueState::waiting) return soonest;
    if (!where.place) {  // before the opening: estimated_wait is the time until it
        const auto offset = milliseconds(static_cast<std::int64_t>(std::hash<std::string_view>{}(buyer) %
                                                                    static_cast<std::size_t>(spread.count())));
        return std::clamp(where.estimated_wait + offset, soonest, latest);
    }
    return std::clamp(where.estimated_wait / 10, soonest, latest);
}

boost::asio::awaitable<RoomFrame> Api::room_frame(const VenueRoom& room, std::string buyer) {
    const auto frame = [](std::string_view name, const json::object& body) {
        return fmt::format("event: {}\ndata: {}\n\n", name, json::serialize(body));
    };
    const auto error_frame = [&](const seatlock::Failure& f) {
        return frame("error", json::object{{"error", seatlock::to_string(static_cast<errc>(f.code.value()))},
                                           {"message", f.detail}});
    };
    auto where = co_await rooms_->position(room, buyer);
    if (!where) {
        // A storage error passes (the stream asks again); any other ends the stream.
        const bool lasting = where.error().code != seatlock::condition::storage_unavailable;
        co_return RoomFrame{error_frame(where.error()), lasting};
    }
    if (!is_admitted(where->state)) {
        const bool over = where->state != seatlock::QueueState::waiting;
        co_return RoomFrame{frame("position", to_json(room, *where)), over, room_poll_after(*where, buyer)};
    }
    auto admitted = co_await rooms_->admission(room, buyer);
    if (!admitted) {
        const bool lasting = admitted.error().code != seatlock::condition::storage_unavailable;
        co_return RoomFrame{error_frame(admitted.error()), lasting};
    }
    json::object body = to_json(room, *where);
    body["admission"] = to_json(*admitted);
    co_return RoomFrame{frame("admitted", body), true};
}

// ---- sessions

Api::Answer Api::sign_in(Call& call) {
    // A site may not sign its visitors in to this server (login CSRF).
    if (auth_->foreign_origin(call.request)) {
        co_return error_response(http::status::forbidden, "cross_origin",
                                 "a session is asked for from this server's own page (Origin)");
    }
    const json::object body = body_object(call.request, true);
    only_fields(body, {"buyer"});
    const std::string name = string_field(body, "buyer");
    if (auto ok = seatlock::validate_id("buyer", name); !ok) bad_input(ok.error().detail);
    if (!auth_->settings().open_sign_in && !auth_->is_operator(call.request)) {
        co_return error_response(http::status::forbidden, "sign_in_closed",
                                 "this server gives sessions only to a client with the operator "
                                 "key (--sign-in operator)");
    }
    const auto session = auth_->issue(name);
    const std::string token = auth_->token(session);
    auto response = json_response(
        http::status::created,
        json::object{{"buyer", name},
                     {"token", token},
                     {"expires_at", iso_time(seatlock::WallTime(std::chrono::seconds(session.expires_s)))}});
    response.set(http::field::set_cookie,
                 auth_->cookie(token, auth_->settings().session_ttl.count()));
    response.set(http::field::cache_control, "no-store");
    co_return response;
}

Api::Answer Api::session(Call& call) {
    if (call.identity.kind == Identity::Kind::operator_) {
        co_return json_response(http::status::ok, json::object{{"operator", true}});
    }
    // No credentials is an answer too (the page asks at start): nobody.
    if (call.identity.kind == Identity::Kind::anonymous) {
        co_return json_response(http::status::ok, json::object{{"buyer", nullptr}});
    }
    const std::string name = buyer(call);  // credentials that do not check: 401
    json::object body{{"buyer", name}};
    if (call.identity.expires_s > 0)
        body["expires_at"] = iso_time(seatlock::WallTime(std::chrono::seconds(call.identity.expires_s)));
    co_return json_response(http::status::ok, body);
}

Api::Answer Api::sign_out(Call& call) {
    if (auth_->foreign_origin(call.request)) {
        co_return error_response(http::status::forbidden, "cross_origin",
                                 "a session is ended from this server's own page (Origin)");
    }
    only_fields(body_object(call.request, false), {});
    // Tokens are not kept: one stays valid until it expires; this forgets the cookie.
    HttpResponse response(http::status::no_content, 11);
    response.set(http::field::set_cookie, auth_->cookie("", 0));
    co_return response;
}

Api::Answer Api::my_holds(Call& call) {
    const std::string user = buyer(call);
    auto holds = co_await ticketing_->holds_of(user, event_filter(call.query));
    if (!holds) co_return failure(call, holds.error());
    co_return json_response(http::status::ok, listing("holds", *holds));
}

Api::Answer Api::my_orders(Call& call) {
    const std::string user = buyer(call);
    auto orders = co_await ticketing_->orders_of(user, event_filter(call.query));
    if (!orders) co_return failure(call, orders.error());
    co_return json_response(http::status::ok, listing("orders", *orders));
}

namespace {

HttpResponse asset_response(const WebAsset& asset) {
    HttpResponse response(http::status::ok, 11);
    response.set(http::field::content_type, asset.content_type);
    // The page's scripts and styles are its own files only.
    response.set("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                 "base-uri 'none'; frame-ancestors 'none'");
    response.set("X-Content-Type-Options", "nosniff");
    response.body() = std::string(asset.body);
    return response;
}

}  // namespace

Api::Answer Api::page(Call& call) {
    for (const auto& asset : web_assets()) {
        if (asset.path == "index.html") co_return asset_response(asset);
    }
    co_return error_response(http::status::not_found, "not_found",
                             fmt::format("no page at {}", std::string_view(call.request.target())));
}

Api::Answer Api::openapi(Call&) {
    HttpResponse response(http::status::ok, 11);
    response.set(http::field::content_type, "application/json");
    response.body() = std::string(api_documents().front().body);
    co_return response;
}

Api::Answer Api::asset(Call& call) {
    for (const auto& asset : web_assets()) {
        if (asset.path == call.params[0] && asset.path != "index.html")
            co_return asset_response(asset);
    }
    co_return error_response(http::status::not_found, "not_found",
                             fmt::format("no asset {}", call.params[0]));
}

}  // namespace ticketing
