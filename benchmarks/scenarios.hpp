// benchmarks/scenarios.hpp: the operations seatlock is measured on, written once over the
// public API (LockManager, SeatHoldStore) and run on every backend, and the inventory
// they work on, which the hand-written baselines share so that both touch the same seats.
//
// Callers never get in each other's way unless the scenario is about contention: each
// has its own lock keys, its own seats and its own holder id.
#pragma once

#include <array>
#include <cstdint>
#include <seatlock/backend.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/lock_manager.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"

namespace seatlock::bench {

enum class Scenario {
    lock,             ///< lock one key, unlock it
    lock_all,         ///< lock_all of 3 keys in one step, unlock them
    hold_release,     ///< hold 3 named seats, release them
    hold_confirm,     ///< hold 3 named seats, confirm (pay) them: uses seats up
    ga_hold_release,  ///< hold 2 places of a general-admission zone, release them
    contended_hold,   ///< ten callers per seat try to hold it; the winner releases it
    hold_kept,        ///< hold 3 named seats and keep them: fills 100,000 seats, memory per seat
};

struct ScenarioInfo {
    Scenario id;
    std::string_view name;
    std::string_view what;
    int round_trips;     ///< seatlock's storage steps per operation (contended: 1 when refused)
    int seed_trips;      ///< the seed flow's round trips per operation; 0: no seed version
    bool uses_up_seats;  ///< runs a fixed number of operations, never for a duration
};

inline constexpr std::array<ScenarioInfo, 7> scenarios{{
    {Scenario::lock, "lock+unlock", "lock one key, unlock it", 2, 2, false},
    {Scenario::lock_all, "lock_all3+unlock", "lock 3 keys at once, unlock them", 2, 6, false},
    {Scenario::hold_release, "hold3+release", "hold 3 named seats, release them", 2, 18, false},
    {Scenario::hold_confirm, "hold3+confirm", "hold 3 named seats, pay them", 2, 0, true},
    {Scenario::ga_hold_release, "ga_hold2+release", "hold 2 general-admission places, release them",
     2, 0, false},
    {Scenario::contended_hold, "contended_hold1",
     "ten callers per seat: hold it, release it when won", 2, 0, false},
    {Scenario::hold_kept, "hold3_kept", "hold 3 named seats and keep them (memory per held seat)",
     1, 9, true},
}};

inline const ScenarioInfo& info(Scenario s) {
    for (const auto& i : scenarios) {
        if (i.id == s) return i;
    }
    throw std::logic_error("unknown scenario");
}

/// Callers that try to hold the same seat in contended_hold.
inline constexpr int contenders_per_seat = 10;

/// Where every caller's keys and seats are, for one run of one scenario.
class Inventory {
public:
    /// `ops_per_caller`: how many operations (warm-up included) each caller may run, for
    /// scenarios that use seats up. `event_per_caller`: give each caller an event of its
    /// own instead of one shared event (the memory backend keeps one mutex per event).
    Inventory(Scenario scenario, int callers, std::uint64_t ops_per_caller, bool event_per_caller)
        : scenario_(scenario),
          callers_(callers),
          ops_per_caller_(ops_per_caller),
          event_per_caller_(event_per_caller) {}

    [[nodiscard]] Scenario scenario() const noexcept { return scenario_; }

    [[nodiscard]] std::string event(int caller) const {
        return event_per_caller_ ? "game1-c" + std::to_string(caller) : "game1";
    }
    /// The zone a caller's holds are in.
    [[nodiscard]] std::string zone() const {
        return scenario_ == Scenario::ga_hold_release ? "bleachers" : "floor";
    }
    [[nodiscard]] std::string holder(int caller) const {
        return "buyer-c" + std::to_string(caller);
    }

    /// What a caller locks (lock and lock_all), by name.
    [[nodiscard]] std::vector<std::string> lock_names(int caller) const {
        const std::string base = "c" + std::to_string(caller);
        if (scenario_ == Scenario::lock) return {base};
        return {base + "-a", base + "-b", base + "-c"};
    }
    /// The same as seatlock lock keys, all in one group like the seats of one game.
    [[nodiscard]] std::vector<std::string> lock_keys(int caller) const {
        std::vector<std::string> keys;
        for (const auto& name : lock_names(caller)) keys.push_back("game1:" + name);
        return keys;
    }

    /// The seats caller `caller` asks for in its operation number `op` (warm-up included).
    [[nodiscard]] std::vector<std::string> seats(int caller, std::uint64_t op) const {
        if (scenario_ == Scenario::contended_hold)
            return {"hot" + std::to_string(caller / contenders_per_seat)};
        const std::uint64_t triple = info(scenario_).uses_up_seats ? op : 0;
        const std::string base = "c" + std::to_string(caller) + "-";
        return {base + std::to_string(3 * triple), base + std::to_string(3 * triple + 1),
                base + std::to_string(3 * triple + 2)};
    }

    /// Named seats each caller may use.
    [[nodiscard]] std::uint64_t seats_per_caller() const {
        return info(scenario_).uses_up_seats ? 3 * ops_per_caller_ : 3;
    }

    /// The events to create before the run (none for the lock scenarios).
    [[nodiscard]] std::vector<EventSpec> events() const {
        switch (scenario_) {
            case Scenario::lock:
            case Scenario::lock_all:
                return {};
            case Scenario::ga_hold_release:
                // Room for every caller twice over: never sold out.
                return {EventSpec{
                    "game1",
                    "benchmark game",
                    {ZoneSpec::general_admission("bleachers", std::max(100, 4 * callers_))}}};
            case Scenario::contended_hold: {
                std::vector<SeatSpec> hot;
                for (int g = 0; g * contenders_per_seat < callers_; ++g)
                    hot.push_back({"hot" + std::to_string(g), ""});
                return {EventSpec{
                    "game1", "benchmark game", {ZoneSpec::named("floor", std::move(hot))}}};
            }
            case Scenario::hold_release:
            case Scenario::hold_confirm:
            case Scenario::hold_kept:
                break;
        }
        auto seats_of = [&](int caller, std::vector<SeatSpec>& into) {
            const std::string base = "c" + std::to_string(caller) + "-";
            const std::string row = "r" + std::to_string(caller);
            for (std::uint64_t k = 0; k < seats_per_caller(); ++k)
                into.push_back({base + std::to_string(k), row});
        };
        std::vector<EventSpec> events;
        if (event_per_caller_) {
            for (int c = 0; c < callers_; ++c) {
                std::vector<SeatSpec> seats;
                seats_of(c, seats);
                events.push_back(
                    {event(c), "benchmark game", {ZoneSpec::named("floor", std::move(seats))}});
            }
            return events;
        }
        std::vector<SeatSpec> seats;
        for (int c = 0; c < callers_; ++c) seats_of(c, seats);
        events.push_back({"game1", "benchmark game", {ZoneSpec::named("floor", std::move(seats))}});
        return events;
    }

private:
    Scenario scenario_;
    int callers_;
    std::uint64_t ops_per_caller_;
    bool event_per_caller_;
};

namespace detail {
template <typename R>
void require(const R& result, std::string_view what) {
    if (!result) throw std::runtime_error(std::string(what) + ": " + result.error().message());
}
}  // namespace detail

/// One scenario over one backend: creates the inventory, then hands each caller its
/// operation. `backend` must outlive it.
template <Backend B>
class SeatlockScenario {
public:
    SeatlockScenario(B& backend, Inventory inventory)
        : inventory_(std::move(inventory)),
          locks_(backend),
          store_(backend, policy(inventory_.scenario())) {
        for (const auto& event : inventory_.events())
            detail::require(store_.create_event(event), "create_event");
    }

    /// Caller `caller`'s operation; everything it needs is built here, before the clock runs.
    Operation caller(int caller) {
        const std::string event = inventory_.event(caller);
        const std::string holder = inventory_.holder(caller);
        switch (inventory_.scenario()) {
            case Scenario::lock:
                return [this, key = inventory_.lock_keys(caller).front()](Lap& lap) {
                    auto guard = locks_.lock(key);
                    detail::require(guard, "lock");
                    lap.first_step_done();
                    check_unlocked(guard->unlock());
                    return Outcome::done;
                };
            case Scenario::lock_all:
                return [this, keys = inventory_.lock_keys(caller)](Lap& lap) {
                    auto guard = locks_.lock_all(keys);
                    detail::require(guard, "lock_all");
                    lap.first_step_done();
                    check_unlocked(guard->unlock());
                    return Outcome::done;
                };
            case Scenario::hold_release:
            case Scenario::ga_hold_release: {
                const HoldRequest request =
                    inventory_.scenario() == Scenario::ga_hold_release
                        ? quantity(inventory_.zone(), 2)
                        : named_seats(inventory_.zone(), inventory_.seats(caller, 0));
                return [this, event, holder, request](Lap& lap) {
                    auto hold = store_.hold(event, holder, request);
                    detail::require(hold, "hold");
                    lap.first_step_done();
                    detail::require(store_.release(hold->token), "release");
                    return Outcome::done;
                };
            }
            case Scenario::contended_hold:
                return [this, event, holder,
                        request =
                            named_seats(inventory_.zone(), inventory_.seats(caller, 0))](Lap& lap) {
                    auto hold = store_.hold(event, holder, request);
                    lap.first_step_done();
                    if (hold.is(errc::seat_taken)) return Outcome::refused;
                    detail::require(hold, "hold");
                    detail::require(store_.release(hold->token), "release");
                    return Outcome::done;
                };
            case Scenario::hold_confirm:
            case Scenario::hold_kept:
                break;
        }
        // The scenarios that use seats up: every operation has its own seats (and, when
        // kept, its own buyer, so that the default 3-seat limit per buyer holds).
        const std::uint64_t ops = inventory_.seats_per_caller() / 3;
        std::vector<HoldRequest> requests;
        std::vector<std::string> names;  // order ids (confirm) or holders (kept)
        requests.reserve(ops);
        names.reserve(ops);
        for (std::uint64_t op = 0; op < ops; ++op) {
            requests.push_back(named_seats(inventory_.zone(), inventory_.seats(caller, op)));
            names.push_back(holder + "-" + std::to_string(op));
        }
        const bool confirm = inventory_.scenario() == Scenario::hold_confirm;
        return [this, event, holder, confirm, requests = std::move(requests),
                names = std::move(names), next = std::size_t{0}](Lap& lap) mutable {
            if (next == requests.size())
                throw std::logic_error("the inventory of this run is used up");
            const std::size_t op = next++;
            auto hold = store_.hold(event, confirm ? holder : names[op], requests[op]);
            detail::require(hold, "hold");
            lap.first_step_done();
            if (confirm) detail::require(store_.confirm(hold->token, names[op]), "confirm");
            return Outcome::done;
        };
    }

private:
    static HoldPolicy policy(Scenario s) {
        HoldPolicy p;
        // A confirming buyer piles up paid seats: lift the per-buyer limit there only.
        if (s == Scenario::hold_confirm) p.max_seats_per_holder = 0;
        return p;
    }

    static void check_unlocked(const Result<bool>& released) {
        detail::require(released, "unlock");
        if (!*released) throw std::runtime_error("unlock: the lease ran out before the unlock");
    }

    Inventory inventory_;
    LockManager<B> locks_;
    SeatHoldStore<B> store_;
};

}  // namespace seatlock::bench
