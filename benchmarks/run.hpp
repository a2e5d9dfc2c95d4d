// SPDX-License-Identifier: MIT
// benchmarks/run.hpp: the run — every wanted scenario at each number of callers, on each
// backend through each of seatlock's APIs and against each peer, in one process and
// against one private redis-server.
//
// The variants compared with each other (seatlock blocking and async, the hand-written flow,
// command floor and raw ceiling at one number of callers or operations in flight, or seatlock
// and node-redlock) are cut into interleaved slices, A B C A B C ..., so that a neighbour's
// burst of load hits all of them alike.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "hand_written.hpp"
#include "node_redlock.hpp"
#include "options.hpp"
#include "redis_client.hpp"
#include "redis_cluster.hpp"
#include "row.hpp"
#include "scenarios.hpp"
#include "viewers.hpp"

namespace seatlock::testing {
class RedisServer;
}

namespace seatlock::bench {

/// Whether this program was built with seatlock's Redis backend (the redis and floor rows).
#ifdef SEATLOCK_BENCH_REDIS_BACKEND
inline constexpr bool redis_backend_built = true;
#else
inline constexpr bool redis_backend_built = false;
#endif

class Run {
public:
    /// Starts the redis-server when a wanted backend or peer needs one, and installs the
    /// node-redlock peer when it is wanted (saying so).
    explicit Run(const Options& options);
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    /// Runs every wanted scenario, handing each row to `on_row` as soon as it is measured.
    std::vector<Row> measure(const std::function<void(const Row&)>& on_row);

    /// The node-redlock peer, when a wanted scenario has it: its versions, or why it does
    /// not run.
    [[nodiscard]] const std::optional<NodeRedlock>& node_redlock() const noexcept {
        return node_redlock_;
    }

    /// The viewers scenario's runs, once measure() ran it (empty when not wanted).
    [[nodiscard]] const ViewersResult& viewers() const noexcept { return viewers_; }

private:
    // One run of the table: a backend (or peer) at a number of callers (blocking) or of
    // operations in flight (async).
    struct Variant {
        Kind kind;
        int callers;
        bool event_per_caller = false;
        Api api = Api::blocking;
    };
    // Measures with the two hooks of Runner::run and AsyncRunner::run.
    using Measure = std::function<Measurement(const std::function<void()>& at_start,
                                              const std::function<void()>& at_end)>;

    [[nodiscard]] std::vector<int> callers_for(const ScenarioInfo& s) const;
    [[nodiscard]] std::vector<int> blocking_callers(const ScenarioInfo& s) const;
    [[nodiscard]] std::vector<int> async_in_flight(const ScenarioInfo& s) const;
    [[nodiscard]] std::vector<Variant> variants_of(const ScenarioInfo& s, int callers) const;
    [[nodiscard]] Budget budget_for(const ScenarioInfo& s, const Variant& v, int rounds) const;
    std::vector<Row> run_group(const ScenarioInfo& s, int callers);
    Row run_variant(const ScenarioInfo& s, const Variant& v, int rounds);

    Row run_memory(const ScenarioInfo& s, int callers, bool event_per_caller, const Budget& b);
    Row run_memory_async(const ScenarioInfo& s, int in_flight, const Budget& b);
    Row run_redis(const ScenarioInfo& s, int callers, const Budget& b);
    Row run_redis_async(const ScenarioInfo& s, int in_flight, const Budget& b);
    Row run_redis_cluster(const ScenarioInfo& s, int callers, Api api, const Budget& b);
    Row run_by_hand(const ScenarioInfo& s, int callers, const Budget& b);
    Row run_raw(const ScenarioInfo& s, int callers, const Budget& b);
    Row run_floor(const ScenarioInfo& s, int callers, const Budget& b);
    Row run_node_redlock(const ScenarioInfo& s, int callers, const Budget& b);
    Row run_http(const ScenarioInfo& s, Kind kind, int connections, const Budget& b);
    Row run_on_redis(const ScenarioInfo& s, Kind kind, int callers, const Budget& b,
                     const CallerFactory& make);
    Row measure_on_redis(const ScenarioInfo& s, Kind kind, Api api, const Measure& measure);
    void flush();

    const Options& o_;
    std::unique_ptr<testing::RedisServer> server_;
    std::unique_ptr<Connection> stats_;
    std::unique_ptr<RedisCluster> cluster_;
    std::vector<std::unique_ptr<Connection>> cluster_stats_;  ///< one per primary, by port
    BaselineScripts scripts_;
    std::optional<NodeRedlock> node_redlock_;
    ViewersResult viewers_;
};

}  // namespace seatlock::bench
