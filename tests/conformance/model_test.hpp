// SPDX-License-Identifier: MIT
// tests/conformance/model_test.hpp: a randomized test of the hold store against a model.
//
// 8 threads run 5,000 random operations each (1,500 in sanitizer builds): hold, confirm,
// confirm_late, release, extend, cancel, and letting the clock move, on one event. Each
// operation and the model's update run under a shared gate; after every step its thread
// takes the gate exclusively — nothing in flight, every completed operation in the
// model — and checks the storage against the model: no seat in two holds or orders, no
// holder over the limit, every paid seat of a live order still paid, every seat nobody
// claims free.
#pragma once

#include "hold_conformance.hpp"

#include <map>
#include <random>
#include <shared_mutex>

namespace seatlock::testing {

template <typename F>
class ModelRun {
public:
    static constexpr int threads = 8;
    // Sanitizer builds run every operation several times slower: fewer steps there
    // (tests/conformance/CMakeLists.txt sets SEATLOCK_MODEL_STEPS), the full run in the
    // optimised build.
#ifdef SEATLOCK_MODEL_STEPS
    static constexpr int default_steps = SEATLOCK_MODEL_STEPS;
#else
    static constexpr int default_steps = 5000;
#endif
    // A fixture may ask for fewer (SlowCheck, whose checks sleep).
    static constexpr int steps = [] {
        if constexpr (requires { F::model_steps; }) return F::model_steps;
        else return default_steps;
    }();
    static constexpr std::int64_t limit = 3;

    ModelRun() : store_(f_.backend(), policy()) {
        store_.create_event(test_event("model", 20)).value();
    }

    void run() {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) pool.emplace_back([this, t] { worker(t); });
        for (auto& t : pool) t.join();
        std::unique_lock gate(gate_);
        check();
    }

    int violations() const { return violations_; }
    int unexpected() const { return unexpected_; }
    int checks() const { return checks_; }
    int successes() const { return successes_; }

private:
    struct ModelHold {
        std::string holder, zone;
        std::vector<std::string> seats;
        WallTime expires_at;
        bool active = true;  // false once released or confirmed
    };
    struct ModelOrder {
        std::string holder, zone;
        std::vector<std::string> seats;
        bool cancelled = false;
    };

    static HoldPolicy policy() {
        HoldPolicy p;
        p.max_seats_per_holder = limit;
        return p;
    }

    // Real clocks cannot say to the microsecond when a hold ended: a hold within this
    // margin of its end may be seen either way.
    static constexpr auto margin = F::manual_clock ? Millis(0) : Millis(50);

    void worker(int t) {
        std::mt19937 rng(static_cast<unsigned>(t) * 104729u + 17u);
        auto pick = [&](auto n) { return static_cast<decltype(n)>(rng() % static_cast<unsigned>(n)); };
        for (int i = 0; i < steps; ++i) {
            {
                std::shared_lock gate(gate_);
                step(t, i, rng, pick);
            }
            std::unique_lock gate(gate_);
            check();
        }
    }

    template <typename Rng, typename Pick>
    void step(int t, int i, Rng& rng, Pick& pick) {
        const int op = pick(100);
        if (op < 40) {
            const std::string holder = "h" + std::to_string(pick(6));
            HoldRequest req;
            const int kind = pick(3);
            if (kind == 0) {
                std::set<std::string> seats;
                const int n = 1 + pick(3);
                for (int k = 0; k < n; ++k) {
                    seats.insert(std::string(pick(2) ? "A-" : "B-") + std::to_string(1 + pick(6)));
                }
                req = named_seats("lower", {seats.begin(), seats.end()});
            } else if (kind == 1) {
                req = quantity("bleachers", 1 + pick(2));
            } else {
                req = best_available("lower", 1 + pick(2));
            }
            const Millis ttl = pick(2) ? Millis(10 * 60 * 1000) : Millis(20 + pick(200));
            auto h = store_.hold("model", holder, req, ttl);
            if (h) {
                const std::size_t want = req.kind == HoldKind::seats ? req.seats.size()
                                                                     : static_cast<std::size_t>(req.quantity);
                if (h->seats.size() != want ||
                    std::set<std::string>(h->seats.begin(), h->seats.end()).size() != want ||
                    (req.kind == HoldKind::seats && h->seats != req.seats)) {
                    ++violations_;
                }
                record_hold(*h);
            } else {
                expect(h, {errc::seat_taken, errc::sold_out, errc::limit_exceeded});
            }
        } else if (op < 60) {
            const auto token = any_hold(pick);
            if (token.empty()) return;
            const bool late = pick(4) == 0;
            const std::string order_id = "o" + std::to_string(t) + "-" + std::to_string(i);
            auto o = late ? store_.confirm_late(token, order_id) : store_.confirm(token, order_id);
            if (o) {
                record_order(token, *o);
            } else {
                expect(o, {errc::hold_expired, errc::hold_not_active, errc::order_conflict,
                           errc::seat_taken, errc::limit_exceeded, errc::unknown_hold});
            }
        } else if (op < 72) {
            const auto token = any_hold(pick);
            if (token.empty()) return;
            auto r = store_.release(token);
            if (r) {
                std::lock_guard lock(model_mutex_);
                holds_[token].active = false;
                ++successes_;
            } else {
                expect(r, {errc::hold_not_active, errc::unknown_hold});
            }
        } else if (op < 82) {
            const auto token = any_hold(pick);
            if (token.empty()) return;
            auto h = store_.extend(token, Millis(50 + pick(400)));
            if (h) {
                std::lock_guard lock(model_mutex_);
                auto& m = holds_[token];
                m.expires_at = std::max(m.expires_at, h->expires_at);
                ++successes_;
            } else {
                expect(h, {errc::hold_expired, errc::hold_not_active, errc::unknown_hold});
            }
        } else if (op < 92) {
            std::string order_id, holder;
            {
                std::lock_guard lock(model_mutex_);
                if (orders_.empty()) return;
                auto it = std::next(orders_.begin(), pick(static_cast<long>(orders_.size())));
                order_id = it->first;
                holder = pick(5) ? it->second.holder : "h9";
            }
            auto c = store_.cancel("model", order_id, holder);
            if (c) {
                std::lock_guard lock(model_mutex_);
                orders_[order_id].cancelled = true;
                ++successes_;
                if (holder == "h9") ++violations_;
            } else if (holder == "h9") {
                expect(c, {errc::not_owner});
            } else {
                ++unexpected_;
            }
        } else {
            if constexpr (F::manual_clock) {
                f_.advance(Millis(pick(60)));
            } else {
                std::this_thread::sleep_for(Millis(pick(3)));
            }
        }
        (void)rng;
    }

    template <typename R>
    void expect(const R& result, std::initializer_list<errc> allowed) {
        for (errc e : allowed) {
            if (result.is(e)) return;
        }
        std::lock_guard lock(model_mutex_);
        ++unexpected_;
        if (unexpected_ <= 5) MESSAGE("unexpected: " << result.error().message());
    }

    template <typename Pick>
    std::string any_hold(Pick& pick) {
        std::lock_guard lock(model_mutex_);
        if (holds_.empty()) return {};
        // Mostly recent holds, where the action is.
        const long n = static_cast<long>(holds_.size());
        const long from = std::max(0L, n - 64);
        return tokens_[static_cast<std::size_t>(from + pick(n - from))];
    }

    void record_hold(const Hold& h) {
        std::lock_guard lock(model_mutex_);
        holds_[h.token] = ModelHold{h.holder, h.zone, h.seats, h.expires_at, true};
        tokens_.push_back(h.token);
        live_holds_.insert(h.token);
        ++successes_;
    }

    void record_order(const std::string& token, const Order& o) {
        std::lock_guard lock(model_mutex_);
        auto& h = holds_[token];
        if (o.seats != h.seats || o.holder != h.holder) ++violations_;
        h.active = false;
        if (orders_.try_emplace(o.id, ModelOrder{o.holder, o.zone, o.seats, o.cancelled}).second) {
            live_orders_.insert(o.id);
        }
        ++successes_;
    }

    // Called with the gate held exclusively: the model holds every completed operation.
    // The storage reads its clock somewhere between `before` and `after`, which a busy
    // machine can set far apart: a hold counts as surely held only if it outlives `after`,
    // as surely ended only if it ended by `before`, and may be seen either way in between.
    void check() {
        ++checks_;
        const WallTime before = f_.now();
        if constexpr (requires { f_.pause_in_check(); }) f_.pause_in_check();
        auto zones = store_.seats("model").value();
        const WallTime after = f_.now();
        std::map<std::string, int> sure_claims, maybe_claims;  // "zone:seat" -> claims
        std::map<std::string, SeatState> expected;
        std::map<std::string, std::int64_t> holder_seats;
        std::int64_t ga_paid = 0, ga_sure_held = 0, ga_maybe_held = 0;
        // Holds and orders that ended never claim a seat again: checked once more here,
        // then dropped, so that a check costs what is live, not all history.
        for (auto it = live_holds_.begin(); it != live_holds_.end();) {
            const ModelHold& h = holds_.at(*it);
            if (!h.active || h.expires_at + margin <= before) {
                it = live_holds_.erase(it);
                continue;
            }
            ++it;
            const bool sure = h.expires_at - margin > after;
            for (const auto& seat : h.seats) {
                const auto key = h.zone + ":" + seat;
                (sure ? sure_claims : maybe_claims)[key] += 1;
                if (sure) expected[key] = SeatState::held;
            }
            if (sure) holder_seats[h.holder] += static_cast<std::int64_t>(h.seats.size());
            if (h.zone == "bleachers") (sure ? ga_sure_held : ga_maybe_held) += static_cast<std::int64_t>(h.seats.size());
        }
        for (auto it = live_orders_.begin(); it != live_orders_.end();) {
            const ModelOrder& o = orders_.at(*it);
            if (o.cancelled) {
                it = live_orders_.erase(it);
                continue;
            }
            ++it;
            for (const auto& seat : o.seats) {
                const auto key = o.zone + ":" + seat;
                sure_claims[key] += 1;
                expected[key] = SeatState::paid;
            }
            holder_seats[o.holder] += static_cast<std::int64_t>(o.seats.size());
            if (o.zone == "bleachers") ga_paid += static_cast<std::int64_t>(o.seats.size());
        }
        for (const auto& [key, n] : sure_claims) {
            if (n > 1) {
                ++violations_;
                MESSAGE("seat " << key << " claimed " << n << " times");
            }
        }
        for (const auto& [holder, n] : holder_seats) {
            if (n > limit) {
                ++violations_;
                MESSAGE("holder " << holder << " has " << n << " seats");
            }
        }
        for (const auto& seat : zones.at(0).seats) {
            const auto key = "lower:" + seat.id;
            auto it = expected.find(key);
            if (it != expected.end()) {
                if (seat.state != it->second) {
                    ++violations_;
                    MESSAGE("seat " << key << " is " << std::string(to_string(seat.state)) << ", model says "
                                    << std::string(to_string(it->second)));
                }
            } else if (!maybe_claims.count(key) && seat.state != SeatState::free) {
                ++violations_;
                MESSAGE("seat " << key << " is " << std::string(to_string(seat.state)) << ", model says free");
            }
        }
        const auto& ga = zones.at(1);
        if (ga.paid != ga_paid || ga.held < ga_sure_held || ga.held > ga_sure_held + ga_maybe_held ||
            ga.free + ga.held + ga.paid != ga.capacity) {
            ++violations_;
            MESSAGE("bleachers: held " << ga.held << " paid " << ga.paid << " free " << ga.free << " of "
                                       << ga.capacity << ", model: paid " << ga_paid << " held " << ga_sure_held
                                       << "+" << ga_maybe_held);
        }
    }

    F f_;
    seatlock::testing::Store<F> store_;
    std::shared_mutex gate_;
    std::mutex model_mutex_;
    std::map<std::string, ModelHold> holds_;
    std::vector<std::string> tokens_;
    std::map<std::string, ModelOrder> orders_;
    std::set<std::string> live_holds_;   // holds that may still claim seats
    std::set<std::string> live_orders_;  // orders not cancelled
    int violations_ = 0, unexpected_ = 0, checks_ = 0, successes_ = 0;
};

}  // namespace seatlock::testing

TEST_CASE_TEMPLATE_DEFINE("random concurrent operations always agree with the model", F, hold_model) {
    seatlock::testing::ModelRun<F> run;
    run.run();
    MESSAGE(std::string(F::name) << ": " << run.successes() << " successful operations, " << run.checks()
                    << " checks against the model");
    CHECK(run.checks() > seatlock::testing::ModelRun<F>::threads * seatlock::testing::ModelRun<F>::steps);
    // About one operation in twenty succeeding at least: the run did exercise the store.
    CHECK(run.successes() > seatlock::testing::ModelRun<F>::threads * seatlock::testing::ModelRun<F>::steps / 20);
    CHECK(run.violations() == 0);
    CHECK(run.unexpected() == 0);
}

#define SEATLOCK_MODEL_TEST(...) TEST_CASE_TEMPLATE_INVOKE(hold_model, __VA_ARGS__)
