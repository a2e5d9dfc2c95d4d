// SPDX-License-Identifier: MIT
// api.hpp: the HTTP endpoints of the example server, as a function from a parsed
// request to a response. Routing, JSON bodies, who may act (the request's Identity,
// session.hpp) and the mapping of seatlock errors to status codes live here; connections, keep-alive and shutdown are
// http_server.hpp's.
//
//   GET    /healthz                       200 (liveness; 503 while the storage lost data)
//   GET    /readyz                        200, or 503 with the reason (Ticketing::not_ready)
//   GET    /events                        200 {"events": [...]}
//   GET    /events/{event}/seats[?zone=]  200 the seat map in the wire form (wire_form.hpp)
//   GET    /events/{event}/seats?since=V  200 the changes after version V; 410 when gone
//   GET    /events/{event}/stream         Server-Sent Events (http_server.hpp streams it)
//   POST   /events/{event}/holds          201 {"token", "seats", "expires_at", ...}
//   POST   /holds/{token}/extend          200 the hold
//   POST   /holds/{token}/confirm         200 the order
//   DELETE /holds/{token}                 204
//   POST   /orders/{order}/cancel         200 the order (the buyer's, or any with the
//                                         operator key: logged)
//   GET    /me/holds[?event=]             200 {"holds": [...]}   the session's buyer's
//   GET    /me/orders[?event=]            200 {"orders": [...]}
//   POST   /session                       201 {"buyer", "token", "expires_at"} + the cookie
//   GET    /session                       200 who the credentials name
//   DELETE /session                       204, the cookie cleared
//   POST   /rooms/{room}/join             201 the buyer's ticket (200 when joined before)
//   GET    /rooms/{room}/position         200 state, place, wait; once admitted, the
//                                         admission (and its cookie, rooms.hpp)
//   GET    /rooms/{room}/stream           Server-Sent Events of the buyer's position
//                                         (http_server.hpp), ending once admitted
//
// A hold on an event with a room needs the buyer's admission (rooms.hpp): 403
// not_admitted otherwise, naming the room's URLs.
//
// The calls on holds, orders and /me act for the request's buyer only: without one they
// are answered 401 (with WWW-Authenticate), and a cookie-authenticated write from another
// origin 403. A hold or an order of another buyer is 403 (not_owner), and nothing changes.
//   GET    /metrics                       200 Prometheus text
//   GET    /, /assets/{file}              the seat-map page (web_assets.hpp)
//   GET    /openapi.json                  200 the OpenAPI document (docs/openapi.yaml)
//
// Every GET answered 200 carries an ETag and is answered 304 Not Modified when
// If-None-Match names it: the page polls the seat map that way. The seat map's tag is
// its version; it is answered from the process's snapshot (seat_feed.hpp) with no
// storage call, and a 304 costs no encoding either. Other tags are a hash of the body.
// Every error is JSON: {"error": "<code>", "message": "...", ...}; see docs/ticketing-server.md.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <optional>
#include <seatlock/room_vocabulary.hpp>
#include <seatlock/vocabulary.hpp>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "metrics.hpp"
#include "rooms.hpp"
#include "seat_feed.hpp"
#include "session.hpp"
#include "ticketing.hpp"

namespace ticketing {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

/// What the router learnt of a request, for the access log (access_log.hpp).
struct RequestNote {
    std::string buyer;  ///< the buyer the request acted for; empty when it named none
};

/// A seat map stream to open: its event, and the version the viewer has (Last-Event-ID).
struct StreamStart {
    std::string event;
    std::optional<seatlock::EventVersion> last_event_id;
};

/// A room's position stream to open: the room and the buyer whose position it follows.
struct RoomStreamStart {
    const VenueRoom* room = nullptr;
    std::string buyer;
};

/// One frame of a room's position stream (Api::room_frame).
struct RoomFrame {
    std::string text;   ///< the SSE frame ("event: position", data: the position's JSON)
    bool last = false;  ///< the stream ends after it: admitted, or no longer waiting
    /// When to ask the room again: soon near the front, rarely far back (room_poll_after).
    std::chrono::milliseconds next{500};
};

/// How long a room stream waits before it asks the room again for `buyer`: a tenth of the
/// estimated wait, between 500 ms and 20 s, so that a line of a million costs the storage
/// little while the front moves at once; before the opening, until it (20 s at most) plus
/// up to 2 s spread by buyer, so that the whole line does not ask in the same instant.
std::chrono::milliseconds room_poll_after(const seatlock::QueuePosition& where, std::string_view buyer);

class Api {
public:
    /// All must outlive the Api; `rooms` may be none (no event has a room).
    Api(Ticketing& ticketing, Metrics& metrics, SeatFeed& feed, const Authenticator& auth,
        Rooms* rooms = nullptr)
        : ticketing_(&ticketing), metrics_(&metrics), feed_(&feed), auth_(&auth), rooms_(rooms) {}

    /// Who `request` comes from (Authenticator::identify): read once per request, before
    /// the rate limiter, which keys buyers by it.
    [[nodiscard]] Identity identify(const HttpRequest& request) const {
        return auth_->identify(request);
    }

    /// When `request` is GET /events/{event}/stream: the stream to open, or the error
    /// answer (unknown event, no snapshot yet). Nothing for any other request.
    std::optional<std::variant<StreamStart, HttpResponse>> stream_request(
        const HttpRequest& request) const;
    /// The process's seat feed.
    SeatFeed& feed() const { return *feed_; }

    /// When `request` is GET /rooms/{room}/stream: the stream to open for `identity`'s
    /// buyer, or the error answer (no buyer, unknown room). Nothing for any other request.
    std::optional<std::variant<RoomStreamStart, HttpResponse>> room_stream_request(
        const HttpRequest& request, const Identity& identity) const;
    /// The buyer's position in the room as a stream frame: "position" while waiting,
    /// "admitted" with the admission once admitted, "error" when the room's call failed.
    boost::asio::awaitable<RoomFrame> room_frame(const VenueRoom& room, std::string buyer);

    /// Answers one request: a coroutine that never blocks its thread (Ticketing's calls
    /// wait on timers, the storage's replies and the database's thread). Never throws:
    /// failures of the storage become 503 responses. The caller sets keep-alive and the
    /// payload size. `identity` is identify(request). What it learns of the request goes
    /// to `note` when given, which must outlive the coroutine.
    boost::asio::awaitable<HttpResponse> handle(HttpRequest request, Identity identity,
                                                RequestNote* note = nullptr);

    /// The template of the route `request`'s path is at, as docs/openapi.yaml names it
    /// (`/events/{event}/holds`), whatever its method; "other" for a path with no
    /// endpoint. A view of a static string: the label of the request's metrics and access
    /// log line, from a bounded set.
    static std::string_view route_label(const boost::beast::http::request_header<>& request);
    /// The request's method ("GET", ...; "other" for one HTTP does not define): a view of
    /// a static string.
    static std::string_view method_label(const boost::beast::http::request_header<>& request);

private:
    struct Call;
    struct Route;
    using Answer = boost::asio::awaitable<HttpResponse>;
    static std::span<const Route> route_table();
    Answer route(Call& call);

    Answer healthz(Call& call);
    Answer readyz(Call& call);
    Answer metrics(Call& call);
    Answer events(Call& call);
    Answer seats(Call& call);
    Answer hold(Call& call);
    Answer extend(Call& call);
    Answer confirm(Call& call);
    Answer release(Call& call);
    Answer cancel(Call& call);
    Answer my_holds(Call& call);
    Answer my_orders(Call& call);
    Answer page(Call& call);
    Answer asset(Call& call);
    Answer openapi(Call& call);
    Answer sign_in(Call& call);
    Answer session(Call& call);
    Answer sign_out(Call& call);
    Answer join_room(Call& call);
    Answer room_position(Call& call);

    // For a hold on an event with a room: the answer refusing it when the request carries
    // no admission of `user` to the room (Rooms::gate).
    std::optional<HttpResponse> admission_refusal(const Call& call, const std::string& user);
    // The room a /rooms/{room}/... call names; throws the 404 answer when it is not one of
    // the venue's.
    const VenueRoom& room_of(const Call& call) const;

    // The buyer the call acts for; throws the 401 or 403 answer when there is none.
    std::string buyer(const Call& call) const;

    HttpResponse failure(const Call& call, const seatlock::Failure& failure);

    Ticketing* ticketing_;
    Metrics* metrics_;
    SeatFeed* feed_;
    const Authenticator* auth_;
    Rooms* rooms_;
};

/// A JSON error response: {"error": code, "message": message}.
HttpResponse error_response(boost::beast::http::status status, std::string_view code,
                            std::string_view message);

/// The status code a seatlock error is answered with (e.g. seat_taken -> 409).
boost::beast::http::status status_for(const std::error_code& code);

}  // namespace ticketing
