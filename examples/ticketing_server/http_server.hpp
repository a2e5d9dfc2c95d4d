// SPDX-License-Identifier: MIT
// http_server.hpp: HttpServer, Boost.Beast HTTP/1.1 over Boost.Asio. Keep-alive
// connections, each on one of the server's io_contexts (given in turn); every request is
// answered by Api::handle, a coroutine spawned on its connection's strand, so a request
// that waits (for a lock, Redis or the database) holds no thread meanwhile.
//
// A request's header is checked before its body is read (RFC 9110, RFC 9112): a body
// framed by anything but Content-Length or a final chunked coding, both framings at
// once, a missing or repeated Host, or an expectation other than 100-continue is
// refused, and the connection closed. A client that expects 100-continue is told to go
// on once its header passed.
//
// Every answer carries the request's id as X-Request-Id (access_log.hpp: the request's own
// when valid, a new one otherwise), and is counted in the metrics and written to the
// access log under its route's template and its method (Api::route_label, method_label).
// A stream's access line is written when it ends, with all the bytes it sent.
//
// GET /events/{id}/stream turns its connection into a Server-Sent Events stream of the
// seat map (docs/ticketing-server.md, "The stream"): the first frame is the whole map
// (or, with a Last-Event-ID the process still has the changes after, those changes),
// then one frame of changes whenever the event's snapshot moves on, at most one per
// `coalesce`, each with `id: <version>`; a comment line every `heartbeat` keeps an idle
// stream open through proxies. The frames not yet taken by the socket wait in the
// viewer's buffer; a viewer whose buffer passes `buffer_limit` bytes is cut off
// (closed), so a slow viewer costs only its own buffer: writes never wait, on any thread.
//
// GET /rooms/{room}/stream turns its connection into a Server-Sent Events stream of the
// buyer's position in a waiting room (Api::room_frame): a frame when the position read
// every 500 ms changed, the same heartbeat, and the end after the frame that carries the
// admission (docs/ticketing-server.md, "Waiting rooms").
//
// stop() is the clean shutdown: no new connections; idle connections and those still
// receiving a request are closed at once; a request being handled is still answered
// (with "Connection: close") before its connection closes. wait_idle() then tells when
// the last connection is gone.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "access_log.hpp"
#include "api.hpp"
#include "metrics.hpp"
#include "rate_limit.hpp"

namespace ticketing {

/// What one connection may send, and how long it may stay silent.
struct HttpLimits {
    std::size_t body_limit = 64 * 1024;     ///< larger bodies get 413
    std::size_t header_limit = 16 * 1024;   ///< larger headers get 431
    std::chrono::seconds idle_timeout{30};  ///< a connection silent this long is closed
    /// Seat map streams: frames at most this often per viewer (changes in between are
    /// sent together).
    std::chrono::milliseconds coalesce{100};
    /// Seat map streams: the frames a second all of this process's streams may take
    /// together. With more viewers than that at one frame per `coalesce`, every viewer's
    /// period grows alike (viewers / frame_budget seconds): frames carry more changes
    /// each, and the server keeps up instead of queueing them.
    std::size_t frame_budget = 25000;
    /// Seat map streams: a comment after this long without a frame.
    std::chrono::milliseconds heartbeat{15000};
    /// Seat map streams: a viewer with more unsent bytes than this is cut off.
    std::size_t buffer_limit = 256 * 1024;
    /// Seat map streams: the socket's send buffer (SO_SNDBUF), so that a stalled viewer
    /// holds a bounded amount of kernel memory too.
    int send_buffer = 64 * 1024;
    /// The per-buyer and per-address token buckets every request passes first
    /// (rate_limit.hpp); none: no limits. Must outlive the io_contexts' handlers.
    RateLimiter* rate_limiter = nullptr;
    /// Where each answered request's line goes (access_log.hpp); none: no access log. Must
    /// outlive the io_contexts' handlers.
    AccessLog* access_log = nullptr;
};

/// The listener and its connections; see above for stop().
class HttpServer {
public:
    /// Binds and listens on `endpoint` (port 0: any free port); throws
    /// boost::system::system_error when it cannot. The listener runs on the first of
    /// `contexts` (at least one), each connection on the next of them in turn. `api` and
    /// `metrics` must outlive the io_contexts' handlers.
    HttpServer(std::vector<boost::asio::io_context*> contexts,
               const boost::asio::ip::tcp::endpoint& endpoint, Api& api, Metrics& metrics,
               HttpLimits limits = {});
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    /// Where it listens (the chosen port when asked for port 0).
    [[nodiscard]] boost::asio::ip::tcp::endpoint local_endpoint() const;

    /// Starts accepting connections.
    void start();
    /// Stops accepting and winds connections down (see above). Thread-safe.
    void stop();
    /// Closes every connection now, answered or not: after stop(), for connections still
    /// busy when the grace is over. Handlers running finish without sending their answer.
    void abort();
    /// Waits until every connection has closed; false when `timeout` passed first.
    bool wait_idle(std::chrono::milliseconds timeout);

private:
    class Session;
    class Listener;
    struct Connections;

    std::shared_ptr<Connections> connections_;
    std::shared_ptr<Listener> listener_;
};

}  // namespace ticketing
