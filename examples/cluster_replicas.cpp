// SPDX-License-Identifier: MIT
// Holds and sales on a Redis Cluster whose writes wait for a replica (replicas_to_ack).
//
//     example_cluster_replicas 'redis+cluster://host:7000,host:7001?replicas_to_ack=1'
//
// Every write the URL's replicas_to_ack covers (create_event, hold, confirm, cancel) is
// followed by Redis's WAIT on the primary that ran it. Answered done, it is on that
// primary and on at least that many of its replicas: a failover to one of them keeps it.
// Answered not_replicated, it was applied on the primary, but too few replicas said so
// within replica_ack_timeout_ms: it is not undone, and may be lost if that primary fails
// before its replicas catch up. Keep your own record of it (the order in your database),
// and alert on the replicas.
//
// Exits 0 when every write was acknowledged, 2 when one was answered not_replicated (a
// hold answered so stops the program: it stands on the primary, but its token is only
// in the message), 1 on any other failure.
#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <cstdio>
#include <string>

namespace {

enum class Outcome { acknowledged, not_replicated, failed };

// Says what a write's answer means for its durability.
template <typename T>
Outcome report(const char* step, const seatlock::Result<T>& result, int replicas) {
    if (result) {
        std::printf("%-12s done: on the primary and acknowledged by %d replica(s)\n", step, replicas);
        return Outcome::acknowledged;
    }
    const seatlock::Failure& failure = result.error();
    if (failure.is(seatlock::errc::not_replicated)) {
        // limit: the replicas asked for; current: those that acknowledged (-1: WAIT failed).
        std::printf("%-12s not_replicated: applied on the primary, acknowledged by %lld of %lld "
                    "replica(s) in time; not durable yet\n",
                    step, static_cast<long long>(failure.current), static_cast<long long>(failure.limit));
        std::printf("             %s\n", failure.message().c_str());
        return Outcome::not_replicated;
    }
    std::printf("%-12s failed: %s\n", step, failure.message().c_str());
    return Outcome::failed;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s 'redis+cluster://host:port[,...]?replicas_to_ack=1'\n", argv[0]);
        return 1;
    }
    auto options = seatlock::RedisOptions::from_url(argv[1]);
    if (!options) {
        std::fprintf(stderr, "%s\n", options.error().message().c_str());
        return 1;
    }
    const int replicas = options->replicas_to_ack;
    std::printf("%zu seed node(s); each write waits for %d replica(s), at most %lld ms\n",
                options->cluster_nodes.size(), replicas,
                static_cast<long long>(options->replica_ack_timeout.count()));

    seatlock::RedisBackend backend(*options);  // learns the slot map at the first call
    if (auto reachable = backend.ping(); !reachable) {  // PINGs every primary
        std::fprintf(stderr, "%s\n", reachable.error().message().c_str());
        return 1;
    }
    seatlock::SeatHoldStore store(backend);

    // One event lives in one hash slot, so on one primary; its writes wait for that
    // primary's replicas. Creating the same spec again is a no-op: the program can run
    // again on the same cluster.
    const seatlock::EventSpec spec{"cluster-demo", "Cluster demo",
                                   {seatlock::ZoneSpec::general_admission("floor", 10000)}};
    bool durable = true;  // every write so far acknowledged
    // not_replicated: the event exists on the primary all the same, and the program goes on.
    auto created = report("create_event", store.create_event(spec), replicas);
    if (created == Outcome::failed) return 1;
    durable = durable && created == Outcome::acknowledged;

    auto hold = store.hold("cluster-demo", "alice", seatlock::quantity("floor", 2));
    if (auto o = report("hold", hold, replicas); o != Outcome::acknowledged) {
        // A hold answered not_replicated stands on the primary (its token is in the
        // message) and keeps its places until it expires; this program stops here.
        return o == Outcome::failed ? 1 : 2;
    }
    std::printf("             alice holds places %s and %s\n", hold->seats[0].c_str(),
                hold->seats[1].c_str());

    // The order id is the caller's own (a payment id); here one per hold, so that runs
    // again never reuse one. Answered done or not_replicated, the sale is made: record it
    // in your database either way (the record a repair after a failover restores from).
    const std::string order_id = "pay-" + hold->token.substr(hold->token.find('.') + 1);
    auto confirmed = report("confirm", store.confirm(hold->token, order_id), replicas);
    if (confirmed == Outcome::failed) return 1;
    durable = durable && confirmed == Outcome::acknowledged;
    std::printf("             order %s: %s\n", order_id.c_str(),
                confirmed == Outcome::acknowledged
                    ? "a failover to an acknowledging replica keeps this sale"
                    : "sold on the primary; a failover now could lose it");

    // Give the places back, so that the event does not fill up over many runs.
    auto cancelled = report("cancel", store.cancel("cluster-demo", order_id), replicas);
    if (cancelled == Outcome::failed) return 1;
    durable = durable && cancelled == Outcome::acknowledged;

    if (!durable) {
        std::printf("some writes were answered not_replicated: check the replicas\n");
        return 2;
    }
    std::printf("every write was acknowledged by %d replica(s)\n", replicas);
    return 0;
}
