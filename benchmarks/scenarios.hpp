// SPDX-License-Identifier: MIT
// benchmarks/scenarios.hpp: the operations seatlock is measured on, written once over the
// public API (LockManager, SeatHoldStore) and run on every backend, and the inventory
// they work on, which the hand-written baselines share so that both touch the same seats.
// Some have an asynchronous twin, the same operation through the async_* calls.
//
// Callers never get in each other's way unless the scenario is about contention: each
// has its own lock keys, its own seats and its own holder id.
#pragma once

#include <array>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <random>
#include <seatlock/backend.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/lock_manager.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "async_runner.hpp"
#include "harness.hpp"

namespace seatlock::bench {

enum class Scenario {
    lock,               ///< lock one key, unlock it
    lock_all,           ///< lock_all of 3 keys in one step, unlock them
    try_lock_all,       ///< try_lock_all of 3 random keys of a shared 1,000, no retry; unlock them
    hold_release,       ///< hold 3 named seats, release them
    hold_confirm,       ///< hold 3 named seats, confirm (pay) them: uses seats up
    ga_hold_release,    ///< hold 2 places of a general-admission zone, release them
    contended_hold,     ///< ten callers per seat try to hold it; the winner releases it
    hold_kept,          ///< hold 3 named seats and keep them: fills 100,000 seats, memory per seat
    http_hold_release,  ///< the ticketing server over HTTP: hold 1 place, release it (run.cpp)
    http_hold_release_apart,  ///< the same with Redis on a CPU of its own (cpu_layout.hpp)
};

struct ScenarioInfo {
    Scenario id;
    std::string_view name;
    std::string_view what;
    int round_trips;     ///< seatlock's storage steps per operation (1 when refused)
    int by_hand_trips;   ///< the hand-written flow's round trips per operation; 0: no hand-written
                         ///< version
    bool uses_up_seats;  ///< runs a fixed number of operations, never for a duration
    bool may_refuse;     ///< callers get in each other's way: a refusal is an operation too
};

inline constexpr std::array<ScenarioInfo, 10> scenarios{{
    {Scenario::lock, "lock+unlock", "lock one key, unlock it", 2, 2, false, false},
    {Scenario::lock_all, "lock_all3+unlock", "lock 3 keys at once, unlock them", 2, 6, false,
     false},
    {Scenario::try_lock_all, "try_lock_all3+unlock",
     "try once to lock 3 random keys of 1,000 in one group, unlock them", 2, 0, false, true},
    {Scenario::hold_release, "hold3+release", "hold 3 named seats, release them", 2, 18, false,
     false},
    {Scenario::hold_confirm, "hold3+confirm", "hold 3 named seats, pay them", 2, 0, true, false},
    {Scenario::ga_hold_release, "ga_hold2+release", "hold 2 general-admission places, release them",
     2, 0, false, false},
    {Scenario::contended_hold, "contended_hold1",
     "ten callers per seat: hold it, release it when won", 2, 0, false, true},
    {Scenario::hold_kept, "hold3_kept", "hold 3 named seats and keep them (memory per held seat)",
     1, 9, true, false},
    // Storage steps of the server: a hold and a release, one function call each (their
    // rows take no lock: docs/ticketing-server.md#the-database).
    {Scenario::http_hold_release, "http_hold+release",
     "the ticketing server over HTTP: hold 1 general-admission place, release it", 2, 0, false,
     false},
    {Scenario::http_hold_release_apart, "http_hold+release_apart",
     "the same, Redis on a CPU of its own, the server and the load on the others", 2, 0, false,
     false},
}};

/// Whether the scenario is the example server's over HTTP (run.cpp's run_http).
constexpr bool over_http(Scenario s) {
    return s == Scenario::http_hold_release || s == Scenario::http_hold_release_apart;
}

inline const ScenarioInfo& info(Scenario s) {
    for (const auto& i : scenarios) {
        if (i.id == s) return i;
    }
    throw std::logic_error("unknown scenario");
}

/// Whether the scenario also runs through the asynchronous API (SeatlockScenario::async_caller).
constexpr bool has_async_twin(Scenario s) {
    return s == Scenario::lock_all || s == Scenario::try_lock_all || s == Scenario::hold_release;
}

/// Callers that try to hold the same seat in contended_hold.
inline constexpr int contenders_per_seat = 10;

/// try_lock_all's keys: one group of shared_lock_keys keys, "game1:k0" to "game1:k999", of
/// which every operation picks 3 at random, as node-redlock's peer does with the same Redis
/// key names.
inline constexpr int shared_lock_keys = 1000;
inline constexpr std::string_view shared_lock_key_stem = "game1:k";

/// Picks 3 distinct keys of the shared group at random, for one caller. Not a lock owner
/// token: a fast generator is enough to spread the keys.
class SharedLockKeys {
public:
    explicit SharedLockKeys(int caller) : random_(static_cast<std::uint_fast32_t>(caller) + 1) {}

    [[nodiscard]] std::vector<std::string> pick3() {
        std::uniform_int_distribution<int> key(0, shared_lock_keys - 1);
        int n[3] = {key(random_), 0, 0};
        do n[1] = key(random_);
        while (n[1] == n[0]);
        do n[2] = key(random_);
        while (n[2] == n[0] || n[2] == n[1]);
        std::vector<std::string> keys;
        for (int k : n) keys.push_back(std::string(shared_lock_key_stem) + std::to_string(k));
        return keys;
    }

private:
    std::minstd_rand random_;
};

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
            case Scenario::try_lock_all:
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
            case Scenario::http_hold_release:
            case Scenario::http_hold_release_apart:
                return {};  // the server's own venue
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
                    detail::require(guard->unlock(), "unlock");
                    return Outcome::done;
                };
            case Scenario::lock_all:
                return [this, keys = inventory_.lock_keys(caller)](Lap& lap) {
                    auto guard = locks_.lock_all(keys);
                    detail::require(guard, "lock_all");
                    lap.first_step_done();
                    detail::require(guard->unlock(), "unlock");
                    return Outcome::done;
                };
            case Scenario::try_lock_all:
                return [this, keys = SharedLockKeys(caller)](Lap& lap) mutable {
                    auto guard = locks_.try_lock_all(keys.pick3());
                    lap.first_step_done();
                    if (guard.is(errc::lock_busy)) return Outcome::refused;
                    detail::require(guard, "try_lock_all");
                    detail::require(guard->unlock(), "unlock");
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
            case Scenario::http_hold_release:
            case Scenario::http_hold_release_apart:
                throw std::logic_error("the http scenarios run over HTTP, not in process");
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

    /// Slot `slot`'s operation through the asynchronous API, for the scenarios that have
    /// one (has_async_twin): the same steps as caller(slot)'s, each completing on `io`.
    AsyncOperation async_caller(int slot, boost::asio::io_context& io) {
        using boost::asio::bind_executor;
        switch (inventory_.scenario()) {
            case Scenario::lock_all:
                return [this, &io, keys = inventory_.lock_keys(slot)](Lap& lap, const Done& done) {
                    locks_.async_lock_all(
                        keys, bind_executor(io, [&io, &lap, &done](Result<MultiLock<B>> guard) {
                            detail::require(guard, "async_lock_all");
                            lap.first_step_done();
                            unlock(std::move(*guard), io, done);
                        }));
                };
            case Scenario::try_lock_all:
                return
                    [this, &io, keys = SharedLockKeys(slot)](Lap& lap, const Done& done) mutable {
                        locks_.async_try_lock_all(
                            keys.pick3(),
                            bind_executor(io, [&io, &lap, &done](Result<MultiLock<B>> guard) {
                                lap.first_step_done();
                                if (guard.is(errc::lock_busy)) return done(Outcome::refused);
                                detail::require(guard, "async_try_lock_all");
                                unlock(std::move(*guard), io, done);
                            }));
                    };
            case Scenario::hold_release:
                return [this, &io, event = inventory_.event(slot), holder = inventory_.holder(slot),
                        request = named_seats(inventory_.zone(), inventory_.seats(slot, 0))](
                           Lap& lap, const Done& done) {
                    store_.async_hold(
                        event, holder, request,
                        bind_executor(io, [this, &io, &lap, &done](Result<Hold> hold) {
                            detail::require(hold, "async_hold");
                            lap.first_step_done();
                            store_.async_release(hold->token,
                                                 bind_executor(io, [&done](Result<void> released) {
                                                     detail::require(released, "async_release");
                                                     done(Outcome::done);
                                                 }));
                        }));
                };
            default:
                throw std::logic_error("no asynchronous version of " +
                                       std::string(info(inventory_.scenario()).name));
        }
    }

private:
    // Unlocks without waiting; the guard may go once the release is sent.
    static void unlock(MultiLock<B> guard, boost::asio::io_context& io, const Done& done) {
        guard.async_unlock(boost::asio::bind_executor(io, [&done](Result<void> unlocked) {
            detail::require(unlocked, "async_unlock");
            done(Outcome::done);
        }));
    }

    static HoldPolicy policy(Scenario s) {
        HoldPolicy p;
        // A confirming buyer piles up paid seats: lift the per-buyer limit there only.
        if (s == Scenario::hold_confirm) p.max_seats_per_holder = 0;
        return p;
    }

    Inventory inventory_;
    LockManager<B> locks_;
    SeatHoldStore<B> store_;
};

}  // namespace seatlock::bench
