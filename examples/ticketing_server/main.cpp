// SPDX-License-Identifier: MIT
// main.cpp: seatlock-ticketing, the example ticketing server (docs/ticketing-server.md).
//
// Wires the pieces together: options -> backend -> SQLite -> ticketing flow -> HTTP,
// plus the expiry drain; then serves until SIGINT or SIGTERM and shuts down cleanly
// (exit 0). Exit 1 when it cannot start (database, venue, Redis, address in use),
// 2 for a bad setting (command line, environment or config file: options.hpp).
//
// Threads: --threads single-threaded io_contexts, one thread each, where every request
// and the expiry drain run as coroutines that never block; each HTTP connection stays on
// one of them. The database has a thread of its own (database_pool.hpp). On Redis, each
// io_context runs a pipelined connection of its own, which its requests use: a reply is
// read and its request resumed on the thread that sent it, with no hand-over and no lock
// shared between threads. Only the start-up, before the server listens, waits for the
// storage (startup.hpp).
#include <seatlock/any_backend.hpp>
#include <seatlock/backends/memory.hpp>

#include "access_log.hpp"
#include "api.hpp"
#include "database.hpp"
#include "expiry_drain.hpp"
#include "http_server.hpp"
#include "log.hpp"
#include "metrics.hpp"
#include "options.hpp"
#include "rate_limit.hpp"
#include "rooms.hpp"
#include "seat_feed.hpp"
#include "session.hpp"
#include "startup.hpp"
#include "ticketing.hpp"
#include "venue.hpp"
#ifdef SEATLOCK_TICKETING_WITH_REDIS
#include "redis_metrics.hpp"

#include <seatlock/backends/redis.hpp>
#endif

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

namespace {
using namespace ticketing;
namespace asio = boost::asio;

constexpr auto drain_period = std::chrono::milliseconds(250);

seatlock::Result<seatlock::AnyBackend> make_redis(const std::string& url,
                                                 const std::optional<std::string>& password,
                                                 const std::vector<asio::io_context*>& contexts,
                                                 Metrics& metrics, bool scraped, bool must_answer = true);

// On Redis, the connections' events are logged and counted in `metrics`, and the backend's
// counters rendered at every scrape (redis_metrics.hpp); `metrics` outlives the backend.
seatlock::Result<seatlock::AnyBackend> make_backend(
    const ServerOptions& options, const std::vector<asio::io_context*>& contexts, Metrics& metrics) {
    if (options.backend == BackendKind::memory) {
        return seatlock::AnyBackend::make<seatlock::MemoryBackend>();
    }
    return make_redis(options.redis_url, options.redis_password, contexts, metrics, true);
}

// A Redis backend at `url` with a connection on each of `contexts`, pinged (a Redis that
// does not answer is an error when `must_answer`, else a warning: the backend connects
// when it can); its events counted in `metrics`, and its counters rendered at every scrape
// when `scraped`.
seatlock::Result<seatlock::AnyBackend> make_redis(
    [[maybe_unused]] const std::string& url, [[maybe_unused]] const std::optional<std::string>& password,
    [[maybe_unused]] const std::vector<asio::io_context*>& contexts,
    [[maybe_unused]] Metrics& metrics, [[maybe_unused]] bool scraped, [[maybe_unused]] bool must_answer) {
#ifdef SEATLOCK_TICKETING_WITH_REDIS
    auto redis_options = seatlock::RedisOptions::from_url(url);
    if (!redis_options) return std::move(redis_options).error();
    // From --redis-password-file (options.hpp): a URL with a password of its own was refused.
    if (password) redis_options->password = *password;
    // Everything goes through the pipelined connection of the asynchronous API, but the
    // ping below: the blocking pool needs one connection.
    redis_options->pool_size = 1;
    observe_redis(*redis_options, metrics);
    // A connection on each of the server's io_contexts (RedisBackend(options, executors)).
    std::vector<asio::any_io_executor> executors;
    for (auto* context : contexts) executors.push_back(context->get_executor());
    auto redis = std::make_shared<seatlock::RedisBackend>(std::move(*redis_options), executors);
    // Fail at start, not at the first customer's request.
    if (auto ok = redis->ping(); !ok) {
        if (must_answer || ok.error().code != seatlock::condition::storage_unavailable)
            return std::move(ok).error();
        log_warn("Redis at {} does not answer yet: {}", url, ok.error().message());
    }
    if (scraped) scrape_redis(redis, metrics);
    return seatlock::AnyBackend(std::move(redis));
#else
    return seatlock::Failure(
        seatlock::errc::invalid_argument,
        "this build has no Redis backend (configure with SEATLOCK_WITH_REDIS=ON)");
#endif
}

// Raises the open-file limit (RLIMIT_NOFILE) to its hard limit: every stream viewer and
// every polling page holds a connection. Says what it got.
void raise_open_file_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        log_warn("open-file limit: cannot read it: {}", std::strerror(errno));
        return;
    }
    const rlim_t before = limit.rlim_cur;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
            log_warn("open-file limit: {} (raising it to the hard limit {} failed: {})", before,
                     limit.rlim_max, std::strerror(errno));
            return;
        }
    }
    const auto shown = [](rlim_t n) {
        return n == RLIM_INFINITY ? std::string("unlimited") : std::to_string(n);
    };
    log("open-file limit: {} (was {}, hard limit {})", shown(limit.rlim_cur), shown(before),
        shown(limit.rlim_max));
}

// Runs the io_context until it is stopped; a handler that throws is logged, not fatal.
void run_worker(asio::io_context& ioc) {
    for (;;) {
        try {
            ioc.run();
            return;
        } catch (const std::exception& e) {
            log_error("request handler failed: {}", e.what());
        }
    }
}

int serve(const ServerOptions& options) {
    raise_open_file_limit();
    auto venue = options.venue_file ? load_venue(*options.venue_file)
                                    : seatlock::Result<Venue>(Venue{demo_venue(), {}});
    if (!venue) {
        log_error("{}", venue.error().detail);
        return 1;
    }
    const auto* events = &venue->events;
    // Declared before everything that hands it work, so that it is destroyed last; kept
    // from stopping by itself until the end (startup.hpp says why).
    std::vector<std::unique_ptr<asio::io_context>> owned;
    std::vector<asio::io_context*> contexts;
    std::vector<KeepRunning> keep_running;
    for (unsigned i = 0; i < options.threads; ++i) {
        contexts.push_back(owned.emplace_back(std::make_unique<asio::io_context>(1)).get());
        keep_running.push_back(asio::make_work_guard(*contexts.back()));
    }
    // The first also runs the start-up, the signals and the expiry drain.
    asio::io_context& ioc = *contexts.front();
    // Before the backend, which reports to it, and destroyed after it.
    Metrics metrics;
    auto backend = make_backend(options, contexts, metrics);
    if (!backend) {
        log_error("cannot use the {} backend: {}",
                  options.backend == BackendKind::redis ? "redis" : "memory",
                  backend.error().message());
        return 1;
    }
    Database db(options.db_path);
    seatlock::HoldPolicy policy;
    policy.hold_ttl = options.hold_ttl;
    policy.max_hold_lifetime = options.max_hold_lifetime;
    policy.max_seats_per_holder = options.max_seats_per_buyer;
    // The waiting rooms: in the seats' storage, or in a Redis of their own.
    auto room_backend = options.room_redis_url
                            ? make_redis(*options.room_redis_url, std::nullopt, contexts, metrics, false,
                                         !options.room_fail_open)
                            : seatlock::Result<seatlock::AnyBackend>(*backend);
    if (!room_backend) {
        log_error("cannot use the rooms' Redis: {}", room_backend.error().message());
        return 1;
    }
    // Without a key file, a key of this process's own: its admissions are accepted by no
    // other server and end with it.
    std::string admission_key;
    if (options.admission_key) {
        admission_key = *options.admission_key;
    } else {
        admission_key = SessionSigner::generate_key();
        if (!venue->rooms.empty())
            log_warn("waiting rooms: admissions signed with a key generated at start "
                     "(--admission-key-file shares one between servers and restarts)");
    }
    Rooms rooms(std::move(*room_backend), seatlock::AdmissionKey(std::move(admission_key)),
                venue->rooms, options.room_fail_open);
    // Through the venue's view: a shared Redis may hold other servers' events too.
    Ticketing ticketing(venue_view(std::move(*backend), *events), policy, db, metrics);
    if (!rooms.empty()) {
        ticketing.on_buyer_done(
            [&rooms](std::string buyer, std::string event) { return rooms.done(std::move(buyer), std::move(event)); },
            [&rooms](std::string_view event) { return rooms.of_event(event) != nullptr; });
        if (auto configured = run_to_end(ioc, keep_running.front(), rooms.configure()); !configured) {
            log_error("cannot configure the venue's waiting rooms: {}", configured.error().message());
            return 1;
        }
        metrics.add_scraped([&rooms] { return rooms.render_metrics(); });
    }
    if (auto created = run_to_end(ioc, keep_running.front(), ticketing.create_events(*events));
        !created) {
        log_error("cannot create the venue's events: {}", created.error().message());
        return 1;
    }
    // The seat maps viewers are served from: one reader for the process, started and
    // read once before the server listens.
    std::vector<std::string> event_ids;
    for (const auto& event : *events) event_ids.push_back(event.id);
    FeedOptions feed_options;
    feed_options.interval = options.feed_interval;
    feed_options.retained_changes = options.feed_retained;
    SeatFeed feed(ticketing, metrics, event_ids, feed_options);
    // Who requests come from (session.hpp). Without a key file, a key of this process's
    // own: its sessions are accepted by no other server and end with it.
    AuthSettings auth_settings;
    auth_settings.session_keys = options.session_keys;
    if (auth_settings.session_keys.empty()) {
        auth_settings.session_keys.push_back(SessionSigner::generate_key());
        log("sessions: signed with a key generated at start (--session-key-file shares one "
            "between servers and restarts)");
    }
    auth_settings.session_ttl = options.session_ttl;
    auth_settings.open_sign_in = options.open_sign_in;
    auth_settings.trust_user_header = options.trust_user_header;
    auth_settings.behind_tls_proxy = options.behind_tls_proxy;
    auth_settings.admin_key = options.admin_key;
    if (options.trust_user_header)
        log("X-User-Id trusted (--trust-user-header): the gateway in front must set it");
    const Authenticator authenticator(std::move(auth_settings));
    // Scraped from memory: no storage call per scrape.
    metrics.add_scraped([&feed] { return feed.render_gauges(); });
    Api api(ticketing, metrics, feed, authenticator, &rooms);

    // The first SIGINT or SIGTERM starts the shutdown; a second cuts its drain short.
    std::promise<int> stop_signal;
    std::atomic<int> signals_seen{0};
    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    std::function<void(const boost::system::error_code&, int)> on_signal =
        [&](const boost::system::error_code& ec, int signal) {
            if (ec) return;
            if (signals_seen.fetch_add(1) == 0) stop_signal.set_value(signal);
            signals.async_wait(on_signal);
        };
    signals.async_wait(on_signal);
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(options.listen_host),
                                           options.listen_port);
    HttpLimits limits;
    limits.body_limit = options.http_body_limit;
    limits.header_limit = options.http_header_limit;
    limits.idle_timeout = options.http_idle_timeout;
    limits.coalesce = options.stream_coalesce;
    limits.heartbeat = options.stream_heartbeat;
    limits.buffer_limit = options.stream_buffer;
    limits.send_buffer = options.stream_send_buffer;
    limits.frame_budget = options.stream_frame_budget;
    RateLimiter rate_limiter(RateLimits{
        {static_cast<double>(options.rate_buyer_writes),
         static_cast<double>(options.rate_buyer_write_burst)},
        {static_cast<double>(options.rate_buyer_reads),
         static_cast<double>(options.rate_buyer_read_burst)},
        {static_cast<double>(options.rate_address_writes),
         static_cast<double>(options.rate_address_write_burst)},
        {static_cast<double>(options.rate_address_reads),
         static_cast<double>(options.rate_address_read_burst)}});
    limits.rate_limiter = &rate_limiter;
    AccessLog access_log(options.access_log);
    limits.access_log = &access_log;
    HttpServer server(contexts, endpoint, api, metrics, limits);
    ExpiryDrain drain(ioc.get_executor(), ticketing, drain_period);
    std::vector<std::jthread> workers;
    for (auto* context : contexts) workers.emplace_back([context] { run_worker(*context); });
    feed.start(ioc.get_executor());
    rooms.start(ioc.get_executor(), options.admit_interval);
    // Viewers find a map from the first request on (a map not read yet answers 503).
    const auto read_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (const auto& id : event_ids) {
        while (!feed.current(id) && std::chrono::steady_clock::now() < read_by)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    server.start();

    const auto address = server.local_endpoint();
    log_always("listening on http://{}:{} (backend {}, database {}, hold ttl {} s, {} threads)",
               address.address().to_string(), address.port(),
               options.backend == BackendKind::redis ? "redis" : "memory", options.db_path,
               options.hold_ttl.count(), options.threads);

    const int signal = stop_signal.get_future().get();
    const char* signal_name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    // /readyz answers 503 from now on; for `drain` the server goes on serving, so that a
    // load balancer sees it not ready and sends its requests elsewhere before the
    // listener closes.
    ticketing.begin_draining();
    if (options.drain.count() > 0) {
        log("{} received: not ready, draining for {} s before the listener closes", signal_name,
            options.drain.count());
        const auto until = std::chrono::steady_clock::now() + options.drain;
        while (std::chrono::steady_clock::now() < until && signals_seen.load() < 2)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (signals_seen.load() >= 2) log("second signal: draining cut short");
    }
    log("{} received: finishing in-flight requests", signal_name);
    server.stop();
    const auto shutdown_grace = options.shutdown_grace;
    if (!server.wait_idle(shutdown_grace)) {
        // A handler still running ends by itself (its waits are bounded by the lock wait
        // and the storage's and database's timeouts); its answer is not sent.
        log_warn("connections still busy after {} s: closing them", shutdown_grace.count());
        server.abort();
        if (!server.wait_idle(shutdown_grace)) log_warn("requests still running: stopping anyway");
    }
    drain.stop();
    rooms.stop();
    feed.stop();
    for (auto* context : contexts) context->stop();
    workers.clear();  // joins
    log("stopped");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const auto parsed =
        parse_options(std::vector<std::string>(argv + 1, argv + argc), process_environment());
    if (const auto* exit = std::get_if<EarlyExit>(&parsed)) {
        std::fputs(exit->text.c_str(), exit->exit_code == 0 ? stdout : stderr);
        return exit->exit_code;
    }
    const auto& options = std::get<ServerOptions>(parsed);
    set_log_level(options.log_level);
    try {
        return serve(options);
    } catch (const std::exception& e) {
        log_error("cannot start: {}", e.what());
        return 1;
    }
}
