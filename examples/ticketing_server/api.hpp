// api.hpp: the HTTP endpoints of DESIGN.md section 6, as a function from a parsed
// request to a response. Routing, JSON bodies, the X-User-Id buyer and the mapping of
// seatlock errors to status codes live here; connections, keep-alive and shutdown are
// http_server.hpp's.
//
//   GET    /healthz                       200
//   GET    /events                        200 {"events": [...]}
//   GET    /events/{event}/seats[?zone=]  200 {"event", "zones": [...]}
//   POST   /events/{event}/holds          201 {"token", "seats", "expires_at", ...}
//   POST   /holds/{token}/extend          200 the hold
//   POST   /holds/{token}/confirm         200 the order
//   DELETE /holds/{token}                 204
//   POST   /orders/{order}/cancel         200 the order
//   GET    /metrics                       200 Prometheus text
//
// Every error is JSON: {"error": "<code>", "message": "...", ...}; see docs/ticketing.md.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "metrics.hpp"
#include "ticketing.hpp"

namespace ticketing {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

class Api {
public:
    /// Both must outlive the Api.
    Api(Ticketing& ticketing, Metrics& metrics) : ticketing_(&ticketing), metrics_(&metrics) {}

    /// Answers one request. Never throws: failures of the storage become 503 responses.
    /// The caller sets keep-alive and the payload size.
    HttpResponse handle(const HttpRequest& request);

private:
    struct Call;
    HttpResponse route(Call& call);

    HttpResponse healthz(Call& call);
    HttpResponse metrics(Call& call);
    HttpResponse events(Call& call);
    HttpResponse seats(Call& call);
    HttpResponse hold(Call& call);
    HttpResponse extend(Call& call);
    HttpResponse confirm(Call& call);
    HttpResponse release(Call& call);
    HttpResponse cancel(Call& call);

    HttpResponse failure(const Call& call, const seatlock::Failure& failure);

    Ticketing* ticketing_;
    Metrics* metrics_;
};

/// A JSON error response: {"error": code, "message": message}.
HttpResponse error_response(boost::beast::http::status status, std::string_view code,
                            std::string_view message);

/// The status code a seatlock error is answered with (e.g. seat_taken -> 409).
boost::beast::http::status status_for(const std::error_code& code);

}  // namespace ticketing
