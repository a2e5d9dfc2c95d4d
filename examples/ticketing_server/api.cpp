// api.cpp: routes, request bodies and the JSON of responses.
#include "api.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <array>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <initializer_list>
#include <limits>
#include <seatlock/keys.hpp>

#include "log.hpp"

namespace ticketing {
namespace http = boost::beast::http;
namespace json = boost::json;
using seatlock::errc;

/// One request on its way through the router: the request, its decoded path segments
/// and query parameters, and the path parameters of the route it matched.
struct Api::Call {
    const HttpRequest& request;
    std::vector<std::string> path;
    std::vector<std::pair<std::string, std::string>> query;
    std::vector<std::string> params;
};

namespace {

constexpr std::int64_t max_extend_s = 2 * 3600;

// Bad input found while reading a request; handle() answers it. Thrown rather than
// returned so that handlers read as the happy path, with each input check one line.
struct BadInput {
    http::status status;
    std::string code;
    std::string message;
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
    return {{"token", hold.token},
            {"event", hold.event},
            {"zone", hold.zone},
            {"seats", to_json(hold.seats)},
            {"expires_at", iso_time(hold.expires_at)}};
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

const char* kind_name(seatlock::ZoneKind kind) {
    return kind == seatlock::ZoneKind::general_admission ? "general_admission" : "named";
}

json::object to_json(const seatlock::ZoneState& zone) {
    json::object out{{"zone", zone.zone},         {"kind", kind_name(zone.kind)},
                     {"capacity", zone.capacity}, {"free", zone.free},
                     {"held", zone.held},         {"paid", zone.paid}};
    if (zone.kind == seatlock::ZoneKind::named) {
        json::array seats;
        for (const auto& seat : zone.seats) {
            seats.push_back(
                json::object{{"id", seat.id}, {"row", seat.row}, {"state", to_string(seat.state)}});
        }
        out["seats"] = std::move(seats);
    }
    return out;
}

json::object to_json(const seatlock::EventSpec& event) {
    json::array zones;
    for (const auto& zone : event.zones) {
        json::object z{{"id", zone.id}, {"kind", kind_name(zone.kind)}};
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

// ---- reading requests

std::string buyer(const HttpRequest& request) {
    const auto header = request.find("X-User-Id");
    if (header == request.end()) {
        throw BadInput{http::status::unauthorized, "missing_user",
                       "name the buyer in the X-User-Id header"};
    }
    const std::string id(header->value());
    if (auto ok = seatlock::validate_id("user", id); !ok) bad_input(ok.error().detail);
    return id;
}

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

// Outcomes caused by the state of seats or holds, not by bad input: counted by kind.
bool is_conflict(errc e) {
    switch (e) {
        case errc::seat_taken:
        case errc::sold_out:
        case errc::limit_exceeded:
        case errc::active_hold_exists:
        case errc::hold_expired:
        case errc::hold_not_active:
        case errc::order_conflict:
        case errc::not_owner:
            return true;
        default:
            return false;
    }
}

}  // namespace

HttpResponse error_response(http::status status, std::string_view code, std::string_view message) {
    return error_with_details(status, code, message, json::object{});
}

http::status status_for(const std::error_code& code) {
    if (code.category() != seatlock::error_category()) return http::status::internal_server_error;
    switch (static_cast<errc>(code.value())) {
        case errc::invalid_argument:
            return http::status::bad_request;
        case errc::unknown_event:
        case errc::unknown_zone:
        case errc::unknown_seat:
        case errc::unknown_hold:
        case errc::unknown_order:
            return http::status::not_found;
        case errc::seat_taken:
        case errc::sold_out:
        case errc::active_hold_exists:
        case errc::hold_not_active:
        case errc::order_conflict:
        case errc::event_exists:
            return http::status::conflict;
        case errc::limit_exceeded:
            return http::status::unprocessable_entity;
        case errc::hold_expired:
            return http::status::gone;
        case errc::not_owner:
            return http::status::forbidden;
        // Contention and storage trouble: nothing was changed, try again shortly.
        case errc::lock_timeout:
        case errc::lock_busy:
        case errc::lock_not_owned:
        case errc::connection_failed:
        case errc::timeout:
        case errc::io_error:
        case errc::auth_failed:
        case errc::protocol_error:
        case errc::script_error:
        case errc::outcome_unknown:
            return http::status::service_unavailable;
    }
    return http::status::internal_server_error;
}

HttpResponse Api::failure(const Call& call, const seatlock::Failure& f) {
    const http::status status = status_for(f.code);
    if (f.code.category() != seatlock::error_category()) {
        log("{} {}: {}", std::string_view(call.request.method_string()),
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
    if (is_conflict(e)) metrics_->conflict(seatlock::to_string(e));
    auto response = error_with_details(status, seatlock::to_string(e), f.detail, std::move(extra));
    if (status == http::status::service_unavailable) response.set(http::field::retry_after, "1");
    return response;
}

HttpResponse Api::handle(const HttpRequest& request) {
    try {
        const std::string_view target(request.target().data(), request.target().size());
        const auto url = boost::urls::parse_origin_form(target);
        if (!url)
            return error_response(http::status::bad_request, "invalid_argument",
                                  "malformed request target");
        Call call{request, {}, {}, {}};
        for (auto segment : url->segments()) call.path.emplace_back(segment);
        for (auto param : url->params()) call.query.emplace_back(param.key, param.value);
        return route(call);
    } catch (const BadInput& e) {
        return error_response(e.status, e.code, e.message);
    } catch (const DatabaseError& e) {
        log("database: {}", e.what());
        auto response =
            error_response(http::status::service_unavailable, "database_unavailable", e.what());
        response.set(http::field::retry_after, "1");
        return response;
    } catch (const std::exception& e) {
        log("{} {} failed: {}", std::string_view(request.method_string()),
            std::string_view(request.target()), e.what());
        return error_response(http::status::internal_server_error, "internal_error", e.what());
    }
}

HttpResponse Api::route(Call& call) {
    using Handler = HttpResponse (Api::*)(Call&);
    struct Route {
        http::verb verb;
        std::array<std::string_view, 3> pattern;  // "*" matches one segment; "" ends it
        Handler handler;
    };
    static constexpr std::array<Route, 9> routes = {{
        {http::verb::get, {"healthz"}, &Api::healthz},
        {http::verb::get, {"metrics"}, &Api::metrics},
        {http::verb::get, {"events"}, &Api::events},
        {http::verb::get, {"events", "*", "seats"}, &Api::seats},
        {http::verb::post, {"events", "*", "holds"}, &Api::hold},
        {http::verb::post, {"holds", "*", "extend"}, &Api::extend},
        {http::verb::post, {"holds", "*", "confirm"}, &Api::confirm},
        {http::verb::delete_, {"holds", "*"}, &Api::release},
        {http::verb::post, {"orders", "*", "cancel"}, &Api::cancel},
    }};

    std::string allowed;
    for (const auto& route : routes) {
        std::vector<std::string> params;
        std::size_t n = 0;
        bool match = true;
        for (; n < route.pattern.size() && !route.pattern[n].empty(); ++n) {
            if (n >= call.path.size()) {
                match = false;
                break;
            }
            if (route.pattern[n] == "*")
                params.push_back(call.path[n]);
            else if (route.pattern[n] != call.path[n])
                match = false;
        }
        if (!match || n != call.path.size()) continue;
        if (route.verb != call.request.method()) {
            allowed += (allowed.empty() ? "" : ", ") + std::string(http::to_string(route.verb));
            continue;
        }
        call.params = std::move(params);
        return (this->*route.handler)(call);
    }
    if (!allowed.empty()) {
        auto response = error_response(
            http::status::method_not_allowed, "method_not_allowed",
            fmt::format("{} takes {}", std::string_view(call.request.target()), allowed));
        response.set(http::field::allow, allowed);
        return response;
    }
    return error_response(http::status::not_found, "not_found",
                          fmt::format("no endpoint {}", std::string_view(call.request.target())));
}

// ---- handlers

HttpResponse Api::healthz(Call&) {
    return json_response(http::status::ok, json::object{{"status", "ok"}});
}

HttpResponse Api::metrics(Call&) {
    HttpResponse response(http::status::ok, 11);
    response.set(http::field::content_type, "text/plain; version=0.0.4");
    response.body() = metrics_->render();
    return response;
}

HttpResponse Api::events(Call& call) {
    auto events = ticketing_->events();
    if (!events) return failure(call, events.error());
    json::array list;
    for (const auto& event : *events) list.push_back(to_json(event));
    return json_response(http::status::ok, json::object{{"events", std::move(list)}});
}

HttpResponse Api::seats(Call& call) {
    std::optional<std::string> zone;
    for (const auto& [key, value] : call.query) {
        if (key != "zone")
            bad_input(fmt::format("unknown query parameter '{}'; expected zone", key));
        zone = value;
    }
    auto zones = ticketing_->seats(call.params[0], zone);
    if (!zones) return failure(call, zones.error());
    json::array list;
    for (const auto& z : *zones) list.push_back(to_json(z));
    return json_response(http::status::ok,
                         json::object{{"event", call.params[0]}, {"zones", std::move(list)}});
}

HttpResponse Api::hold(Call& call) {
    const std::string user = buyer(call.request);
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

    auto hold = ticketing_->hold(user, call.params[0], request);
    if (!hold) return failure(call, hold.error());
    auto response = json_response(http::status::created, to_json(*hold));
    response.set(http::field::location, "/holds/" + hold->token);
    return response;
}

HttpResponse Api::extend(Call& call) {
    const std::string user = buyer(call.request);
    const json::object body = body_object(call.request, true);
    only_fields(body, {"ttl_s"});
    const std::int64_t ttl = integer_field(body, "ttl_s");
    if (ttl < 1 || ttl > max_extend_s)
        bad_input(fmt::format("ttl_s must be from 1 to {}", max_extend_s));
    auto hold = ticketing_->extend(user, call.params[0], std::chrono::seconds(ttl));
    if (!hold) return failure(call, hold.error());
    return json_response(http::status::ok, to_json(*hold));
}

HttpResponse Api::confirm(Call& call) {
    const std::string user = buyer(call.request);
    const json::object body = body_object(call.request, true);
    only_fields(body, {"payment_id"});
    auto order = ticketing_->confirm(user, call.params[0], string_field(body, "payment_id"));
    if (!order) return failure(call, order.error());
    return json_response(http::status::ok, to_json(*order));
}

HttpResponse Api::release(Call& call) {
    const std::string user = buyer(call.request);
    only_fields(body_object(call.request, false), {});
    if (auto released = ticketing_->release(user, call.params[0]); !released) {
        return failure(call, released.error());
    }
    return HttpResponse(http::status::no_content, 11);
}

HttpResponse Api::cancel(Call& call) {
    const std::string user = buyer(call.request);
    only_fields(body_object(call.request, false), {});
    auto order = ticketing_->cancel(user, call.params[0]);
    if (!order) return failure(call, order.error());
    return json_response(http::status::ok, to_json(*order));
}

}  // namespace ticketing
