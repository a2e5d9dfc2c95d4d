// SPDX-License-Identifier: MIT
// benchmarks/viewers.cpp: the viewers scenario's runs, figures, checks and JSON.
#include "viewers.hpp"

#include "report.hpp"

#include <fmt/core.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <thread>

#include "cpu_layout.hpp"
#include "http_server.hpp"
#include "redis_server.hpp"
#include "support/temp_files.hpp"

namespace seatlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto poll_period = 500ms;

std::vector<ViewerMix> mixes(bool quick) {
    if (quick) return {{"none", 0, 0}, {"10 pollers", 0, 10}, {"20 streams", 20, 0},
                       {"20 streams + 10 pollers", 20, 10}};
    return {{"none", 0, 0},
            {"1,000 pollers", 0, 1000},
            {"1,000 streams", 1000, 0},
            {"1,000 streams + 1,000 pollers", 1000, 1000},
            {"10,000 streams", 10000, 0}};
}

// The quick run's venue is small, so that the server starts at once; the figures' is the
// 60,000-seat stadium.
VenueShape venue_for(bool quick) {
    VenueShape shape;
    if (quick) shape.sections = 4;
    return shape;
}

// A directory of its own for the venue file, removed with it.
ViewerCounters minus(const ViewerCounters& a, const ViewerCounters& b) {
    ViewerCounters d;
    d.streams_open = a.streams_open;
    d.frames = a.frames - b.frames;
    d.heartbeats = a.heartbeats - b.heartbeats;
    d.stream_bytes = a.stream_bytes - b.stream_bytes;
    d.dropped = a.dropped;
    d.polls = a.polls - b.polls;
    d.polls_changed = a.polls_changed - b.polls_changed;
    d.pollers_ready = a.pollers_ready;
    d.poll_failures = a.poll_failures;
    return d;
}

class BackendRuns {
public:
    BackendRuns(const Options& o, Kind kind, testing::RedisServer* redis, Connection* stats,
                const VenueShape& venue, const std::string& venue_file)
        : o_(o), kind_(kind), redis_(redis), stats_(stats), venue_(venue) {
        const auto binary = ticketing_binary();
        if (!binary)
            throw std::runtime_error("this build has no ticketing server (SEATLOCK_BUILD_EXAMPLES=OFF)");
        std::vector<std::string> args{"--backend", std::string(kind_name(kind)), "--threads",
                                      std::to_string(allowed_cpus().size()), "--venue",
                                      venue_file,
                                      // Each buyer holds and releases as fast as it can: far
                                      // past the per-buyer rate limit's default.
                                      "--rate-buyer-writes", "1000000",
                                      "--rate-buyer-write-burst", "1000000",
                                      // Its buyers are named by X-User-Id, as behind a
                                      // gateway: sessions are http_auth's to measure.
                                      "--trust-user-header"};
        // Another frame budget to compare (the server's default otherwise).
        if (const char* budget = std::getenv("SEATLOCK_BENCH_FRAME_BUDGET"))
            args.insert(args.end(), {"--stream-frame-budget", budget});
        if (kind == Kind::redis) {
            Connection::expect(stats_->command({"FLUSHALL"}), REDIS_REPLY_STATUS, "FLUSHALL");
            args.insert(args.end(), {"--redis-url", redis_->url()});
        }
        server_ = std::make_unique<TicketingProcess>(*binary, args);
    }

    ViewerRun run(const ViewerMix& mix) {
        ViewerRun row;
        row.kind = kind_;
        row.mix = mix;
        StalenessBook stream_book, poll_book;
        BuyerCounters buyers;
        row.server_rss_kib_before = server_->resident_kib();
        std::unique_ptr<ViewerPool> pool;
        if (mix.viewers() > 0) {
            pool = std::make_unique<ViewerPool>(server_->port(), venue_.event, stream_book, poll_book);
            pool->open(mix.streams, mix.pollers, poll_period, o_.quick ? 30s : 180s);
        }
        boost::asio::io_context io(1);
        Budget b;
        b.warmup_ops = o_.quick ? 2 : 20;
        b.duration = std::chrono::milliseconds(static_cast<std::int64_t>(
            (o_.quick ? std::min(o_.seconds, 1.0) : o_.seconds) * 1000));
        const int connections = o_.callers.empty() ? 64 : o_.callers.front();
        ServerCounters redis_before, redis_after;
        ViewerCounters viewers_before, viewers_after;
        std::uint64_t holds_before = 0, versions_before = 0;
        double cpu = 0, feed_calls = 0;
        const std::string feed_counter = "seatlock_ticketing_feed_storage_calls_total";
        row.m = AsyncRunner::run(
            io, connections, b,
            [&](int i) { return viewer_buyer(io, server_->port(), venue_, i, {&stream_book, &poll_book}, buyers); },
            [&] {
                stream_book.start();
                poll_book.start();
                if (pool) viewers_before = pool->counters();
                holds_before = buyers.holds;
                versions_before = buyers.holds_with_version;
                if (stats_ && kind_ == Kind::redis) redis_before = read_counters(*stats_);
                feed_calls = server_counter(server_->port(), feed_counter);
                cpu = server_->cpu_seconds();
            },
            [&] {
                cpu = server_->cpu_seconds() - cpu;
                feed_calls = server_counter(server_->port(), feed_counter) - feed_calls;
                if (stats_ && kind_ == Kind::redis) redis_after = read_counters(*stats_);
                row.server_rss_kib = server_->resident_kib();
                stream_book.stop_probing();
                poll_book.stop_probing();
                if (pool) viewers_after = pool->counters();
            });
        row.server_cpu_seconds = cpu;
        row.feed_calls = feed_calls;
        if (kind_ == Kind::redis) row.redis = between(redis_before, redis_after);
        row.holds = buyers.holds - holds_before;
        row.holds_with_version = buyers.holds_with_version - versions_before;
        if (pool) {
            // What was sent by the end reaches the viewers: a poller asks again within a
            // period, a stream within a coalescing interval and the time to read it.
            std::this_thread::sleep_for(o_.quick ? 1500ms : 3000ms);
            const auto now = StalenessBook::Clock::now();
            stream_book.finish(now);
            poll_book.finish(now);
            row.viewers = minus(viewers_after, viewers_before);
            const ViewerCounters end = pool->counters();
            row.viewers.dropped = end.dropped;
            row.viewers.poll_failures = end.poll_failures;
            if (mix.streams > 0) row.stream_staleness = stream_book.samples();
            if (mix.pollers > 0) row.poll_staleness = poll_book.samples();
            row.probes = std::max(mix.streams > 0 ? stream_book.probes() : 0,
                                  mix.pollers > 0 ? poll_book.probes() : 0);
            row.missed = (mix.streams > 0 ? stream_book.missed() : 0) +
                         (mix.pollers > 0 ? poll_book.missed() : 0);
            pool.reset();
        }
        // The closed connections leave the server before the next run.
        std::this_thread::sleep_for(300ms);
        return row;
    }

    FullMapRun full_maps(bool gzip) {
        FullMapRun row;
        row.kind = kind_;
        row.gzip = gzip;
        boost::asio::io_context io(1);
        Budget b;
        b.warmup_ops = 2;
        b.duration = std::chrono::milliseconds(static_cast<std::int64_t>(
            (o_.quick ? 0.5 : std::min(o_.seconds, 2.0)) * 1000));
        // A few connections: enough to keep the server's threads busy.
        row.m = AsyncRunner::run(io, 8, b, [&](int i) {
            return full_map_get(io, server_->port(), venue_.event, gzip, i);
        });
        return row;
    }

    void stop() { server_->stop(); }

private:
    const Options& o_;
    Kind kind_;
    testing::RedisServer* redis_;
    Connection* stats_;
    const VenueShape& venue_;
    std::unique_ptr<TicketingProcess> server_;
};

// The figures of a run against `base`, its backend's run without viewers.
struct Derived {
    double pairs_per_s = 0;
    std::optional<double> sales_ratio;
    double hold_p99_ms = 0;
    std::optional<double> hold_p99_ratio;
    // A stream viewer's and a poller's staleness are their own; a mixed run's is the streams'.
    std::optional<double> stale_p50_ms, stale_p99_ms;          // streams (or pollers alone)
    std::optional<double> poll_stale_p50_ms, poll_stale_p99_ms;  // pollers
    std::optional<double> redis_calls_per_viewer_s;
    std::optional<double> redis_cpu_us_per_viewer_s;
    std::optional<double> redis_cpu_ratio;
    std::optional<double> rss_kib_per_viewer;
    std::optional<double> server_cpu_us_per_viewer_s;
    std::optional<double> server_cpu_us_per_frame;  // the viewers' share, per frame sent
    // The machine's cores the run kept busy: the server, the load generator (buyers and
    // viewers) and Redis, each its CPU seconds per second.
    double cores_busy = 0;
    std::uint64_t dropped = 0;
};

std::optional<double> ratio(double a, double b) {
    if (!(b > 0)) return std::nullopt;
    return a / b;
}

Derived derive(const ViewerRun& r, const ViewerRun* base) {
    Derived d;
    d.pairs_per_s = r.m.ops_per_second();
    d.hold_p99_ms = r.m.first_step.quantile_us(0.99) / 1000;
    const double v = r.mix.viewers();
    d.dropped = r.viewers.dropped + r.viewers.poll_failures;
    if (r.mix.streams > 0 && r.stream_staleness.count() > 0) {
        d.stale_p50_ms = r.stream_staleness.quantile_us(0.5) / 1000;
        d.stale_p99_ms = r.stream_staleness.quantile_us(0.99) / 1000;
    }
    if (r.mix.pollers > 0 && r.poll_staleness.count() > 0) {
        d.poll_stale_p50_ms = r.poll_staleness.quantile_us(0.5) / 1000;
        d.poll_stale_p99_ms = r.poll_staleness.quantile_us(0.99) / 1000;
        if (r.mix.streams == 0) {
            d.stale_p50_ms = d.poll_stale_p50_ms;
            d.stale_p99_ms = d.poll_stale_p99_ms;
        }
    }
    if (v > 0) d.rss_kib_per_viewer = static_cast<double>(r.server_rss_kib - r.server_rss_kib_before) / v;
    if (r.m.seconds > 0)
        d.cores_busy = (r.server_cpu_seconds + (r.redis ? r.redis->cpu_seconds : 0)) / r.m.seconds +
                       r.m.cores_used();
    if (!base || !base->measured() || r.m.seconds <= 0) return d;
    d.sales_ratio = ratio(d.pairs_per_s, base->m.ops_per_second());
    d.hold_p99_ratio = ratio(d.hold_p99_ms, base->m.first_step.quantile_us(0.99) / 1000);
    if (v <= 0) return d;
    const double seconds = r.m.seconds;
    d.server_cpu_us_per_viewer_s =
        (r.server_cpu_seconds / seconds - base->server_cpu_seconds / base->m.seconds) * 1e6 / v;
    if (r.viewers.frames > 0)
        d.server_cpu_us_per_frame = *d.server_cpu_us_per_viewer_s * v * seconds /
                                    static_cast<double>(r.viewers.frames);
    if (r.redis && base->redis && base->m.ops > 0) {
        // The server's calls are function calls (FCALL), each a request of its own. The
        // seat-map reader's are counted by the server itself; the sales' are the run without
        // viewers' calls per pair, its reader's left out. The rest is the viewers'.
        const auto calls = [](const ViewerRun& run) {
            double n = 0;
            for (const auto& script : run.redis->scripts) n += static_cast<double>(script.calls);
            return n - run.feed_calls;
        };
        const double per_pair = calls(*base) / static_cast<double>(base->m.ops);
        const double excess = calls(r) - per_pair * static_cast<double>(r.m.ops);
        d.redis_calls_per_viewer_s = excess / (v * seconds);
        const double cpu_rate = r.redis->cpu_seconds / seconds;
        const double base_rate = base->redis->cpu_seconds / base->m.seconds;
        d.redis_cpu_us_per_viewer_s = (cpu_rate - base_rate) * 1e6 / v;
        d.redis_cpu_ratio = ratio(cpu_rate, base_rate);
    }
    return d;
}

const ViewerRun* base_of(const ViewersResult& result, const ViewerRun& r) {
    for (const auto& b : result.runs)
        if (b.kind == r.kind && b.mix.viewers() == 0 && b.measured()) return &b;
    return nullptr;
}

void print_run(const ViewerRun& r, const ViewerRun* base) {
    if (!r.measured()) {
        fmt::print("| {} | {} | not run: {} |\n", kind_name(r.kind), r.mix.name, r.not_run);
        return;
    }
    const Derived d = derive(r, base);
    const double s = r.m.seconds;
    fmt::print("| {} | {} | {:.0f} | {} | {:.1f} | {} | {} / {} | {} / {} | {:.0f} | {:.0f} ({:.0f}) "
               "| {} |\n",
               kind_name(r.kind), r.mix.name, d.pairs_per_s, cell(d.sales_ratio), d.hold_p99_ms,
               cell(d.hold_p99_ratio),
               cell(r.mix.streams > 0 ? d.stale_p50_ms : std::nullopt, "{:.0f}"),
               cell(r.mix.streams > 0 ? d.stale_p99_ms : std::nullopt, "{:.0f}"),
               cell(d.poll_stale_p50_ms, "{:.0f}"), cell(d.poll_stale_p99_ms, "{:.0f}"),
               static_cast<double>(r.viewers.frames) / s, static_cast<double>(r.viewers.polls) / s,
               static_cast<double>(r.viewers.polls_changed) / s, d.dropped);
}

}  // namespace

ViewersResult run_viewers(const Options& o, testing::RedisServer* redis, Connection* stats) {
    ViewersResult result;
    result.open_files = raise_open_files();
    const VenueShape venue = venue_for(o.quick);
    result.seats = venue.seat_count();
    const testing::TempFiles dir;
    const std::string venue_file = dir.path("venue.json");
    write_venue_file(venue_file, venue);
    std::vector<Kind> kinds;
    if (o.wanted(Kind::memory)) kinds.push_back(Kind::memory);
    if (redis && stats && o.wanted(Kind::redis)) kinds.push_back(Kind::redis);
    fmt::print("\n## viewers: the seat map of a {}-seat venue ({} x {} x {}) followed by viewers "
               "while {} connections hold and release seats (open-file limit {})\n\n",
               venue.seat_count(), venue.sections, venue.rows, venue.seats,
               o.callers.empty() ? 64 : o.callers.front(), result.open_files);
    fmt::print("| backend | viewers | pairs/s | x none | hold p99 ms | x none | staleness p50 / "
               "p99 ms | pollers' p50 / p99 ms | frames/s | polls/s (200) | dropped |\n");
    fmt::print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const Kind kind : kinds) {
        std::unique_ptr<BackendRuns> runs;
        std::string why;
        try {
            runs = std::make_unique<BackendRuns>(o, kind, redis, stats, venue, venue_file);
        } catch (const std::exception& e) {
            why = e.what();
        }
        for (const auto& mix : mixes(o.quick)) {
            ViewerRun row;
            if (runs) {
                try {
                    row = runs->run(mix);
                } catch (const std::exception& e) {
                    row.not_run = e.what();
                }
            } else {
                row.not_run = why;
            }
            row.kind = kind;
            row.mix = mix;
            result.runs.push_back(row);
            print_run(result.runs.back(), base_of(result, result.runs.back()));
        }
        for (const bool gzip : {false, true}) {
            FullMapRun row;
            if (runs) {
                try {
                    row = runs->full_maps(gzip);
                } catch (const std::exception& e) {
                    row.not_run = e.what();
                }
            } else {
                row.not_run = why;
            }
            row.kind = kind;
            row.gzip = gzip;
            result.maps.push_back(row);
        }
        if (runs) {
            try {
                runs->stop();
            } catch (const std::exception& e) {
                result.runs.back().not_run = e.what();
            }
        }
    }
    return result;
}

void print_viewer_figures(const ViewersResult& result, bool quick) {
    if (result.runs.empty()) return;
    fmt::print("\n### viewers: what each viewer costs (against the run without viewers)\n\n");
    fmt::print("| backend | viewers | Redis calls / viewer-s | Redis CPU us / viewer-s | Redis CPU x "
               "none | server RSS KiB / viewer | server CPU us / viewer-s | server CPU us / frame | "
               "cores busy | holds followed |\n");
    fmt::print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& r : result.runs) {
        if (!r.measured() || r.mix.viewers() == 0) continue;
        const Derived d = derive(r, base_of(result, r));
        fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {:.2f} | {} |\n", kind_name(r.kind),
                   r.mix.name, cell(d.redis_calls_per_viewer_s, "{:.3f}"),
                   cell(d.redis_cpu_us_per_viewer_s), cell(d.redis_cpu_ratio),
                   cell(d.rss_kib_per_viewer, "{:.1f}"), cell(d.server_cpu_us_per_viewer_s, "{:.1f}"),
                   cell(d.server_cpu_us_per_frame, "{:.1f}"), d.cores_busy, r.probes);
    }
    for (const auto& r : result.runs) {
        if (r.measured() && r.holds > 0 && r.holds_with_version == 0) {
            fmt::print("\nStaleness not measured: the server's hold answers name no event "
                       "version (\"version\"), which staleness is counted from.\n");
            break;
        }
    }
    fmt::print("\n| backend | whole maps/s (plain) | whole maps/s (gzip) |\n|---|---:|---:|\n");
    for (std::size_t i = 0; i + 1 < result.maps.size(); i += 2) {
        const auto& plain = result.maps[i];
        const auto& gzip = result.maps[i + 1];
        const auto rate = [](const FullMapRun& m) {
            return m.not_run.empty() ? fmt::format("{:.0f}", m.m.ops_per_second())
                                     : "not run: " + m.not_run;
        };
        fmt::print("| {} | {} | {} |\n", kind_name(plain.kind), rate(plain), rate(gzip));
    }

    // The targets, each beside its figure: never asserted.
    fmt::print("\n### viewers: targets{}\n\n", quick ? " (quick run: a few viewers, not the "
                                                       "targets' numbers; verdicts mean nothing)"
                                                     : "");
    const auto check = [](const std::string& what, const std::optional<double>& value,
                          const std::string& target, bool met) {
        fmt::print("- {}: {} (target {}): {}\n", what, value ? fmt::format("{:.3g}", *value) : "-",
                   target, !value ? "not measured" : met ? "pass" : "FAIL");
    };
    const auto find = [&](Kind kind, int streams, int pollers) -> const ViewerRun* {
        for (const auto& r : result.runs)
            if (r.kind == kind && r.mix.streams == streams && r.mix.pollers == pollers &&
                r.measured())
                return &r;
        return nullptr;
    };
    // The runs the targets are about (the quick run's small stand-ins for them).
    const int mixed_streams = quick ? 20 : 1000, mixed_pollers = quick ? 10 : 1000;
    const int streams = quick ? 20 : 1000, many_streams = quick ? 20 : 10000;
    for (const Kind kind : {Kind::memory, Kind::redis}) {
        const auto name = std::string(kind_name(kind));
        if (const ViewerRun* r = find(kind, mixed_streams, mixed_pollers)) {
            const Derived d = derive(*r, base_of(result, *r));
            check(name + ", " + r->mix.name + ": sales pairs/s x none", d.sales_ratio, ">= 0.8",
                  d.sales_ratio && *d.sales_ratio >= 0.8);
            check(name + ", " + r->mix.name + ": hold p99 x none", d.hold_p99_ratio, "<= 2",
                  d.hold_p99_ratio && *d.hold_p99_ratio <= 2);
        }
        if (const ViewerRun* r = find(kind, streams, 0)) {
            const Derived d = derive(*r, base_of(result, *r));
            check(name + ", " + r->mix.name + ": staleness p99 ms", d.stale_p99_ms, "<= 250",
                  d.stale_p99_ms && *d.stale_p99_ms <= 250);
        }
        if (const ViewerRun* r = find(kind, many_streams, 0)) {
            const Derived d = derive(*r, base_of(result, *r));
            check(name + ", " + r->mix.name + ": staleness p99 ms", d.stale_p99_ms, "<= 1000",
                  d.stale_p99_ms && *d.stale_p99_ms <= 1000);
            check(name + ", " + r->mix.name + ": viewers dropped",
                  static_cast<double>(d.dropped), "0", d.dropped == 0);
            if (kind == Kind::redis)
                check(name + ", " + r->mix.name + ": Redis CPU/s x none", d.redis_cpu_ratio,
                      "<= 1.1", d.redis_cpu_ratio && *d.redis_cpu_ratio <= 1.1);
        }
        if (kind == Kind::redis) {
            for (const auto& r : result.runs) {
                if (r.kind != kind || !r.measured() || r.mix.viewers() == 0) continue;
                const Derived d = derive(r, base_of(result, r));
                // Calls beyond what the sales explain, per viewer-second: noise around 0.
                check(name + ", " + r.mix.name + ": Redis calls / viewer-s",
                      d.redis_calls_per_viewer_s, "~0 (< 0.01)",
                      d.redis_calls_per_viewer_s && std::abs(*d.redis_calls_per_viewer_s) < 0.01);
            }
        }
    }
    for (const auto& m : result.maps) {
        if (!m.not_run.empty()) continue;
        check(fmt::format("{}, whole maps/s from the snapshot{}", kind_name(m.kind),
                          m.gzip ? " (gzip)" : ""),
              m.m.ops_per_second(), ">= 1,000", m.m.ops_per_second() >= 1000);
    }
}

std::vector<std::string> check_viewers(const ViewersResult& result) {
    std::vector<std::string> problems;
    for (const auto& r : result.runs) {
        const std::string name = fmt::format("viewers {} {}", kind_name(r.kind), r.mix.name);
        if (!r.not_run.empty()) {
            problems.push_back(name + ": " + r.not_run);
            continue;
        }
        if (r.m.ops == 0) problems.push_back(name + ": no hold+release measured");
        if (r.holds != r.m.ops && r.holds + 64 < r.m.ops)
            problems.push_back(fmt::format("{}: {} holds answered for {} pairs", name, r.holds, r.m.ops));
        // A server whose hold answers name no version has no staleness to measure (the
        // figures say so); one that names it for some holds only is wrong.
        if (r.holds_with_version > 0 && r.holds_with_version < r.holds)
            problems.push_back(fmt::format("{}: {} of {} holds answered without the event version",
                                           name, r.holds - r.holds_with_version, r.holds));
        if (r.mix.viewers() == 0) continue;
        if (r.holds_with_version > 0) {
            if (r.probes == 0) problems.push_back(name + ": no hold's version was followed");
            if (r.mix.streams > 0 && r.stream_staleness.count() == 0)
                problems.push_back(name + ": no staleness sample from the streams");
            if (r.mix.pollers > 0 && r.poll_staleness.count() == 0)
                problems.push_back(name + ": no staleness sample from the pollers");
        }
        if (r.mix.pollers > 0 && r.viewers.polls == 0)
            problems.push_back(name + ": the pollers got no answer in the measured part");
        if (r.mix.streams > 0 && r.viewers.frames == 0)
            problems.push_back(name + ": the streams got no frame in the measured part");
        if (r.kind == Kind::redis && !r.redis) problems.push_back(name + ": no Redis counters");
    }
    for (const auto& m : result.maps) {
        const std::string name =
            fmt::format("viewers {} whole maps{}", kind_name(m.kind), m.gzip ? " (gzip)" : "");
        if (!m.not_run.empty())
            problems.push_back(name + ": " + m.not_run);
        else if (m.m.ops == 0)
            problems.push_back(name + ": none served");
    }
    return problems;
}

boost::json::object viewers_json(const ViewersResult& result) {
    namespace json = boost::json;
    const auto maybe = [](const std::optional<double>& v) {
        return v ? json::value(*v) : json::value(nullptr);
    };
    json::array runs;
    for (const auto& r : result.runs) {
        json::object j;
        j["backend"] = kind_name(r.kind);
        j["viewers"] = r.mix.name;
        j["streams"] = r.mix.streams;
        j["pollers"] = r.mix.pollers;
        if (!r.measured()) {
            j["not_run"] = r.not_run;
            runs.push_back(std::move(j));
            continue;
        }
        const Derived d = derive(r, base_of(result, r));
        j["seconds"] = r.m.seconds;
        j["pairs"] = r.m.ops;
        j["pairs_per_second"] = d.pairs_per_s;
        j["pairs_per_second_x_none"] = maybe(d.sales_ratio);
        j["hold_p99_ms"] = d.hold_p99_ms;
        j["hold_p99_x_none"] = maybe(d.hold_p99_ratio);
        j["pair_p99_ms"] = r.m.latency.quantile_us(0.99) / 1000;
        j["staleness_p50_ms"] = maybe(d.stale_p50_ms);
        j["staleness_p99_ms"] = maybe(d.stale_p99_ms);
        j["poller_staleness_p50_ms"] = maybe(d.poll_stale_p50_ms);
        j["poller_staleness_p99_ms"] = maybe(d.poll_stale_p99_ms);
        j["holds_followed"] = r.probes;
        j["deliveries_missed"] = r.missed;
        j["frames"] = r.viewers.frames;
        j["heartbeats"] = r.viewers.heartbeats;
        j["stream_bytes"] = r.viewers.stream_bytes;
        j["polls"] = r.viewers.polls;
        j["polls_changed"] = r.viewers.polls_changed;
        j["dropped"] = d.dropped;
        j["redis_calls_per_viewer_second"] = maybe(d.redis_calls_per_viewer_s);
        j["feed_storage_calls"] = r.feed_calls;
        j["redis_cpu_us_per_viewer_second"] = maybe(d.redis_cpu_us_per_viewer_s);
        j["redis_cpu_x_none"] = maybe(d.redis_cpu_ratio);
        if (r.redis) {
            j["redis_commands"] = r.redis->commands;
            j["redis_cpu_seconds"] = r.redis->cpu_seconds;
        }
        j["server_cpu_seconds"] = r.server_cpu_seconds;
        j["server_cpu_us_per_viewer_second"] = maybe(d.server_cpu_us_per_viewer_s);
        j["server_cpu_us_per_frame"] = maybe(d.server_cpu_us_per_frame);
        j["cores_busy"] = d.cores_busy;
        j["server_rss_kib_before"] = r.server_rss_kib_before;
        j["server_rss_kib"] = r.server_rss_kib;
        j["server_rss_kib_per_viewer"] = maybe(d.rss_kib_per_viewer);
        j["client_cores_used"] = r.m.cores_used();
        runs.push_back(std::move(j));
    }
    json::array maps;
    for (const auto& m : result.maps) {
        json::object j;
        j["backend"] = kind_name(m.kind);
        j["gzip"] = m.gzip;
        if (!m.not_run.empty())
            j["not_run"] = m.not_run;
        else
            j["maps_per_second"] = m.m.ops_per_second();
        maps.push_back(std::move(j));
    }
    json::object doc;
    doc["seats"] = result.seats;
    doc["open_file_limit"] = result.open_files;
    doc["runs"] = std::move(runs);
    doc["whole_maps"] = std::move(maps);
    return doc;
}

}  // namespace seatlock::bench
