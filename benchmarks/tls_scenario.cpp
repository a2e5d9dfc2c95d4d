// SPDX-License-Identifier: MIT
// benchmarks/tls_scenario.cpp: the tls scenario (tls_scenario.hpp).
#include "tls_scenario.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>

#include "async_runner.hpp"
#include "harness.hpp"
#include "redis_client.hpp"
#include "redis_server.hpp"
#include "scenarios.hpp"
#include "tls_certificates.hpp"
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
#include <seatlock/backends/redis.hpp>
#endif

namespace seatlock::bench {

namespace {

constexpr int tls_in_flight = 64;

bool tls_asked_for(const Options& o) {
    return (o.scenarios.empty() ||
            std::find(o.scenarios.begin(), o.scenarios.end(), tls_scenario) != o.scenarios.end()) &&
           o.wanted(Kind::redis);
}

#ifdef SEATLOCK_BENCH_REDIS_BACKEND
// The server both transports reach: its plain port, its TLS port, and a connection of the
// benchmark's own for FLUSHALL.
struct TlsAndTcpServer {
    TlsAndTcpServer()
        : server(certificates.server_arguments(false)), admin("127.0.0.1", server.port()) {
        auto reply = admin.command({"CONFIG", "GET", "tls-port"});
        if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2)
            throw std::runtime_error("CONFIG GET tls-port: unexpected reply");
        tls_port = std::stoi(reply->element[1]->str);
    }
    [[nodiscard]] RedisOptions options(bool tls) const {
        RedisOptions o;
        o.host = "127.0.0.1";
        // As run.cpp's: a loaded machine must not end the run with a timeout.
        o.command_timeout = std::chrono::seconds(10);
        o.port = server.port();
        if (tls) {
            o.port = tls_port;
            o.tls.enabled = true;
            o.tls.ca_file = certificates.path("ca.crt");
        }
        return o;
    }
    testing::TlsCertificates certificates;
    testing::RedisServer server;
    Connection admin;
    int tls_port = 0;
};

// As run.cpp's budgets for Redis rows: a slice of --seconds per round, or a few operations
// in --quick.
Budget tls_budget(const Options& o, Api api) {
    Budget b;
    if (o.quick) {
        b.ops_per_caller = api == Api::async ? 1 : 20;
        b.warmup_ops = api == Api::async ? 1 : 5;
        return b;
    }
    b.duration =
        std::chrono::milliseconds(static_cast<std::int64_t>(o.seconds * 1000 / o.rounds_per_run()));
    b.warmup_ops = api == Api::async ? 4 : 20;
    return b;
}

Measurement tls_measure(TlsAndTcpServer& s, const ScenarioInfo& scenario_info, Api api, bool tls,
                        const Budget& b) {
    Connection::expect(s.admin.command({"FLUSHALL"}), REDIS_REPLY_STATUS, "FLUSHALL");
    RedisOptions options = s.options(tls);
    Inventory inventory(scenario_info.id, tls_in_flight, b.ops_per_caller + b.warmup_ops, false);
    if (api == Api::async) {
        // As run.cpp's async rows: the pipelined connection on the slots' own thread.
        boost::asio::io_context io(1);
        RedisBackend backend(options, io.get_executor());
        detail::require(backend.ping(), "ping");
        SeatlockScenario<RedisBackend> scenario(backend, std::move(inventory));
        return AsyncRunner::run(io, tls_in_flight, b,
                                [&](int i) { return scenario.async_caller(i, io); });
    }
    options.pool_size = tls_in_flight;  // over TCP, as run.cpp's blocking rows; unused over TLS
    RedisBackend backend(options);
    detail::require(backend.ping(), "ping");
    SeatlockScenario<RedisBackend> scenario(backend, std::move(inventory));
    return Runner::run(tls_in_flight, b, [&](int i) { return scenario.caller(i); });
}
#endif

}  // namespace

TlsResult run_tls(const Options& options) {
    TlsResult result;
    result.wanted = tls_asked_for(options);
    if (!result.wanted) return result;
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
    try {
        TlsAndTcpServer server;
        const std::pair<Scenario, Api> pairs[] = {{Scenario::hold_release, Api::async},
                                                  {Scenario::lock_all, Api::async},
                                                  {Scenario::hold_release, Api::blocking},
                                                  {Scenario::lock, Api::blocking}};
        for (const auto& [scenario, api] : pairs) {
            if (!options.wanted(api)) continue;
            const ScenarioInfo& s = info(scenario);
            TlsPair pair;
            pair.scenario = std::string(s.name);
            pair.api = api;
            pair.in_flight = tls_in_flight;
            const Budget b = tls_budget(options, api);
            // Interleaved slices: TCP, TLS, TCP, TLS, ...
            for (int round = 0; round < options.rounds_per_run(); ++round) {
                auto tcp = tls_measure(server, s, api, false, b);
                auto tls = tls_measure(server, s, api, true, b);
                if (round == 0) {
                    pair.tcp = std::move(tcp);
                    pair.tls = std::move(tls);
                } else {
                    pair.tcp.merge(tcp);
                    pair.tls.merge(tls);
                }
            }
            fmt::print("tls: {} ({}, {} in flight): {:.0f} pairs/s over TCP, {:.0f} over TLS\n",
                       pair.scenario, api_name(api), tls_in_flight, pair.tcp.ops_per_second(),
                       pair.tls.ops_per_second());
            result.pairs.push_back(std::move(pair));
        }
    } catch (const std::exception& e) {
        result.not_run = e.what();
    }
#else
    result.not_run = "built without the Redis backend";
#endif
    return result;
}

void print_tls(const TlsResult& result, bool quick) {
    if (!result.wanted) return;
    fmt::print("\n### tls: TLS to Redis against plain TCP, {} in flight{}\n\n", tls_in_flight,
               quick ? " (quick run: a few operations, the ratios mean nothing)" : "");
    if (!result.not_run.empty()) {
        fmt::print("- not run: {}\n", result.not_run);
        return;
    }
    fmt::print("| scenario | API | TCP pairs/s | TLS pairs/s | TLS / TCP |\n");
    fmt::print("|---|---|---:|---:|---:|\n");
    for (const auto& p : result.pairs) {
        fmt::print("| {} | {} | {:.0f} | {:.0f} | {:.2f} |\n", p.scenario, api_name(p.api),
                   p.tcp.ops_per_second(), p.tls.ops_per_second(), p.ratio());
    }
}

std::vector<std::string> check_tls(const TlsResult& result) {
    if (!result.wanted) return {};
    if (!result.not_run.empty()) return {"tls: " + result.not_run};
    std::vector<std::string> problems;
    for (const auto& p : result.pairs) {
        if (p.tcp.ops == 0 || p.tls.ops == 0)
            problems.push_back("tls: " + p.scenario + " measured no operations");
    }
    return problems;
}

boost::json::value tls_json(const TlsResult& result) {
    if (!result.not_run.empty()) return boost::json::object{{"not_run", result.not_run}};
    boost::json::array pairs;
    for (const auto& p : result.pairs) {
        pairs.push_back(boost::json::object{{"scenario", p.scenario},
                                            {"api", api_name(p.api)},
                                            {"in_flight", p.in_flight},
                                            {"tcp_pairs_per_second", p.tcp.ops_per_second()},
                                            {"tls_pairs_per_second", p.tls.ops_per_second()},
                                            {"tls_over_tcp", p.ratio()}});
    }
    return pairs;
}

}  // namespace seatlock::bench
