// SPDX-License-Identifier: MIT
// seatlock/hold_store.hpp: SeatHoldStore<B>, holds, payments and cancellations of seats.
//
//     seatlock::MemoryBackend backend;
//     seatlock::SeatHoldStore store(backend);                  // HoldPolicy defaults
//     store.create_event(spec).value();
//     auto hold = store.hold("game1", "alice", seatlock::named_seats("lower", {"A-1", "A-2"}));
//     if (hold) store.confirm(hold->token, "payment-77");      // held -> paid, for good
//
// The store validates every input (ids, counts, duplicates: detail/hold_validation.hpp)
// before anything reaches the backend, applies the HoldPolicy inside the backend's single
// atomic step, and retries once an operation whose reply was lost, which is safe because
// each is idempotent.
//
// It also remembers the events it has seen (created, listed or used): when one of them
// is then missing from the storage, the storage lost it, and calls fail with
// storage_lost instead of unknown_event. recover_event() and restore_order() put it back.
// And it remembers the highest version of each (EventVersion) that the storage answered
// (detail/event_watches.hpp): an answer at or below a version seen before the call was
// sent means the storage went back to older data (a failover to a lagging replica, an
// older snapshot). The call then fails with storage_lost, and the event is fenced: every
// call on it fails the same way, without reaching the storage, until it is recovered.
//
// Every operation that reaches the storage has an asynchronous twin, async_<name>: the
// same overloads with the same arguments and the same defaults, then an Asio completion
// token (a callback, asio::use_awaitable, asio::use_future; asio::deferred when none is
// given) with the signature void(Result<T>): the same checks, the same single backend
// step and the same retry, completed through the handler's associated executor. A
// deferred call checks and copies its input at once, and sends when it is started.
//
//     auto hold = co_await store.async_hold("game1", "alice", request, asio::use_awaitable);
//     auto zones = co_await store.async_seats("game1");         // deferred, awaited
//
// A step already sent runs to its end: cancelling through the handler's cancellation slot
// is not supported by these calls (each is one round trip); see LockManager for waits.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/async.hpp>
#include <seatlock/detail/event_watches.hpp>
#include <seatlock/detail/hold_validation.hpp>
#include <seatlock/hold_policy.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/operations.hpp>

#include <boost/asio/deferred.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace seatlock {

template <HoldBackend B>
class SeatHoldStore {
public:
    /// The default limit of expired() and async_expired().
    static constexpr std::size_t default_expired_limit = 100;
    /// The default redeliver_after of expired() and async_expired().
    static constexpr Millis default_redeliver_after = std::chrono::seconds(30);

    /// `backend` must outlive the store. Throws seatlock::Error (invalid_argument) for a
    /// policy without hold_ttl > 0, max_hold_lifetime >= hold_ttl,
    /// max_seats_per_holder >= 0 and retries_on_unknown_outcome >= 0.
    explicit SeatHoldStore(B& backend, HoldPolicy policy = {})
        : backend_(&backend), policy_(policy) {
        detail::check_policy(policy_);
    }

    [[nodiscard]] const HoldPolicy& policy() const noexcept { return policy_; }
    [[nodiscard]] B& backend() const noexcept { return *backend_; }

    /// Stores an event's inventory. Creating the same spec again is a no-op, so several
    /// server instances may all create it at start-up.
    Result<void> create_event(const EventSpec& spec) { return run(detail::prepare_create(spec)); }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, void>
    auto async_create_event(const EventSpec& spec, Token&& token = {}) {
        return async_call(detail::prepare_create(spec), std::forward<Token>(token));
    }

    /// Every event, in id order.
    Result<std::vector<EventSpec>> events() { return run_step(op::events{}); }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, std::vector<EventSpec>>
    auto async_events(Token&& token = {}) {
        return async_step(std::optional<op::events>(op::events{}), std::nullopt,
                          std::forward<Token>(token));
    }

    /// The storage's version of `event`, after checking it against the highest version
    /// this store has seen and against `at_least` (the highest version the application's
    /// own records hold, e.g. of its last order). storage_lost when the storage is below
    /// either: it went back to older data, and the event is fenced until recovered.
    /// One read, changing nothing: cheap enough to probe every second.
    Result<EventVersion> check_version(const std::string& event, EventVersion at_least = 0) {
        return run(detail::prepare_check_version(event, at_least));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, EventVersion>
    auto async_check_version(const std::string& event, Token&& token = {}) {
        return async_check_version(event, 0, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, EventVersion>
    auto async_check_version(const std::string& event, EventVersion at_least, Token&& token = {}) {
        return async_call(detail::prepare_check_version(event, at_least), std::forward<Token>(token));
    }

    // fence, fenced, seen_version and knows read or change only this store's memory of
    // an event: they have no asynchronous twin.

    /// Fences `event` as check_version does when the storage went back: for an application
    /// that found so by itself (its database refused to sell a seat twice). Every call on
    /// the event then fails with storage_lost, saying `reason`, until recover_event,
    /// restore_order and finish_recovery have repaired it. invalid_argument, changing
    /// nothing, for an event id that is not one.
    Result<void> fence(const std::string& event, const std::string& reason) {
        if (auto ok = validate_id("event", event); !ok) return ok;
        watches_.of(event).fence(reason);
        return {};
    }

    /// Whether `event` is fenced (see fence()).
    [[nodiscard]] bool fenced(const std::string& event) const {
        const detail::Watch* w = watches_.find(event);
        return w && w->fenced.load(std::memory_order_acquire);
    }

    /// The highest version of `event` this store has seen the storage answer (0 before any).
    [[nodiscard]] EventVersion seen_version(const std::string& event) const {
        const detail::Watch* w = watches_.find(event);
        return w ? w->version.load(std::memory_order_acquire) : 0;
    }

    /// Holds seats for `holder` until now + ttl (default `policy().hold_ttl`); all or nothing.
    Result<Hold> hold(const std::string& event, const std::string& holder,
                      const HoldRequest& request, std::optional<Millis> ttl = std::nullopt) {
        return hold(event, holder, request, HoldOptions{ttl, {}});
    }

    /// hold() with an idempotency key (see HoldOptions).
    Result<Hold> hold(const std::string& event, const std::string& holder,
                      const HoldRequest& request, const HoldOptions& options) {
        return run(detail::prepare_hold(policy_, event, holder, request, options));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Hold>
    auto async_hold(const std::string& event, const std::string& holder,
                    const HoldRequest& request, Token&& token = {}) {
        return async_hold(event, holder, request, HoldOptions{}, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Hold>
    auto async_hold(const std::string& event, const std::string& holder,
                    const HoldRequest& request, std::optional<Millis> ttl, Token&& token = {}) {
        return async_hold(event, holder, request, HoldOptions{ttl, {}}, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Hold>
    auto async_hold(const std::string& event, const std::string& holder,
                    const HoldRequest& request, const HoldOptions& options, Token&& token = {}) {
        return async_call(detail::prepare_hold(policy_, event, holder, request, options),
                          std::forward<Token>(token));
    }

    /// held -> paid, for good. The same token and order id again returns the same order
    /// (safe to retry after a lost reply); hold_expired when the hold ran out first.
    Result<Order> confirm(const std::string& token, const std::string& order_id) {
        return run(detail::prepare_confirm(policy_, token, order_id, false));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Order>
    auto async_confirm(const std::string& token, const std::string& order_id, Token&& tok = {}) {
        return async_call(detail::prepare_confirm(policy_, token, order_id, false),
                          std::forward<Token>(tok));
    }

    /// Like confirm, but a hold that expired is paid anyway when every one of its seats is
    /// still free (and the holder's limit allows); seat_taken otherwise. For payments that
    /// arrive after the hold ran out.
    Result<Order> confirm_late(const std::string& token, const std::string& order_id) {
        return run(detail::prepare_confirm(policy_, token, order_id, true));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Order>
    auto async_confirm_late(const std::string& token, const std::string& order_id,
                            Token&& tok = {}) {
        return async_call(detail::prepare_confirm(policy_, token, order_id, true),
                          std::forward<Token>(tok));
    }

    /// held -> free. Releasing a released hold again succeeds for 2 minutes after the
    /// release (then unknown_hold), and so does releasing an expired one; a confirmed
    /// one is hold_not_active (cancel the order instead). Later confirm and extend calls
    /// on a released hold get hold_not_active. Answers the event's version after it.
    Result<EventVersion> release(const std::string& token) {
        return run(detail::prepare_release(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, EventVersion>
    auto async_release(const std::string& token, Token&& tok = {}) {
        return async_call(detail::prepare_release(token), std::forward<Token>(tok));
    }

    /// Moves the hold's expiry to now + ttl. Capped, never refused: a hold never lives
    /// past its creation + policy().max_hold_lifetime; the returned Hold says where it ends.
    Result<Hold> extend(const std::string& token, Millis ttl) {
        return run(detail::prepare_extend(policy_, token, ttl));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Hold>
    auto async_extend(const std::string& token, Millis ttl, Token&& tok = {}) {
        return async_call(detail::prepare_extend(policy_, token, ttl), std::forward<Token>(tok));
    }

    /// paid -> free. When `holder` is given, the order must be theirs (not_owner otherwise).
    /// Order ids are the caller's own (payment ids), scoped by event: hence the event.
    Result<Order> cancel(const std::string& event, const std::string& order_id,
                         const std::optional<std::string>& holder = std::nullopt) {
        return run(detail::prepare_cancel(event, order_id, holder));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Order>
    auto async_cancel(const std::string& event, const std::string& order_id, Token&& token = {}) {
        return async_cancel(event, order_id, std::nullopt, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Order>
    auto async_cancel(const std::string& event, const std::string& order_id,
                      const std::optional<std::string>& holder, Token&& token = {}) {
        return async_call(detail::prepare_cancel(event, order_id, holder),
                          std::forward<Token>(token));
    }

    /// The state of every zone of `event` (or just `zone`), as of the storage's now, at
    /// exactly one version (SeatMap::version): what changes(event, map.version) goes on
    /// from. A held seat carries when its hold runs out (SeatStatus::expires_at).
    Result<SeatMap> seats(const std::string& event,
                          const std::optional<std::string>& zone = std::nullopt) {
        return run(detail::prepare_seats(event, zone));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, SeatMap>
    auto async_seats(const std::string& event, Token&& token = {}) {
        return async_seats(event, std::nullopt, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, SeatMap>
    auto async_seats(const std::string& event, const std::optional<std::string>& zone,
                     Token&& token = {}) {
        return async_call(detail::prepare_seats(event, zone), std::forward<Token>(token));
    }

    /// The default limit of changes() and async_changes().
    static constexpr std::size_t default_changes_limit = 1000;

    /// The change feed: the changes of `event` after position `after` (a SeatMap's or a
    /// ChangePage's position()), in version order, at most `limit` (1 to 100,000; a backend
    /// may answer fewer, RedisBackend at most 50 a call, with ChangePage::more set) but
    /// never part of one step; applying them to seats() at `after` gives the state at the
    /// page's position (seatlock::apply). While ChangePage::more, ask again from its
    /// position(). changes_trimmed when `after` is of another history of the event (a
    /// recovery since, which may have started from other data: EventHistory), or when the
    /// event's change log (bounded: the backend's change log limit, in steps) no longer
    /// holds them: read seats() again and go on from its position. invalid_argument when
    /// `after.version` is above the event's version.
    Result<ChangePage> changes(const std::string& event, FeedPosition after,
                               std::size_t limit = default_changes_limit) {
        return run(detail::prepare_changes(event, after.version, after.history, limit));
    }
    /// The changes after a version of the event's current history, whichever it is: for a
    /// caller that knows a version from a write's answer (Hold::version, ...), which
    /// carries no history. The page names the history; go on from its position(). A copy
    /// of the map kept up to date must use the FeedPosition form, which tells a recovery
    /// in between.
    Result<ChangePage> changes(const std::string& event, EventVersion after,
                               std::size_t limit = default_changes_limit) {
        return run(detail::prepare_changes(event, after, std::nullopt, limit));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, ChangePage>
    auto async_changes(const std::string& event, FeedPosition after, Token&& token = {}) {
        return async_changes(event, after, default_changes_limit, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, ChangePage>
    auto async_changes(const std::string& event, FeedPosition after, std::size_t limit,
                       Token&& token = {}) {
        return async_call(detail::prepare_changes(event, after.version, after.history, limit),
                          std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, ChangePage>
    auto async_changes(const std::string& event, EventVersion after, Token&& token = {}) {
        return async_changes(event, after, default_changes_limit, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, ChangePage>
    auto async_changes(const std::string& event, EventVersion after, std::size_t limit,
                       Token&& token = {}) {
        return async_call(detail::prepare_changes(event, after, std::nullopt, limit),
                          std::forward<Token>(token));
    }

    /// Up to `limit` holds that expired and are not yet acknowledged, including those that
    /// expired while nobody asked. A hold handed out here is handed out again after
    /// `redeliver_after` until acknowledged with ack_expired(): delivery is at least once.
    Result<std::vector<ExpiredHold>> expired(std::size_t limit = default_expired_limit,
                                             Millis redeliver_after = default_redeliver_after) {
        return run(detail::prepare_expired(limit, redeliver_after));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, std::vector<ExpiredHold>>
    auto async_expired(Token&& token = {}) {
        return async_expired(default_expired_limit, default_redeliver_after,
                             std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, std::vector<ExpiredHold>>
    auto async_expired(std::size_t limit, Token&& token = {}) {
        return async_expired(limit, default_redeliver_after, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, std::vector<ExpiredHold>>
    auto async_expired(std::size_t limit, Millis redeliver_after, Token&& token = {}) {
        return async_call(detail::prepare_expired(limit, redeliver_after),
                          std::forward<Token>(token));
    }

    /// Acknowledges expired holds: they are never reported again.
    Result<void> ack_expired(std::span<const std::string> tokens) {
        return run(detail::prepare_ack(tokens));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, void>
    auto async_ack_expired(std::span<const std::string> tokens, Token&& token = {}) {
        return async_call(detail::prepare_ack(tokens), std::forward<Token>(token));
    }

    // -----------------------------------------------------------------------------------
    // Recovery after the storage lost an event (see docs/operations.md):
    //
    //     if (store.recover_event(spec).value() == Recovery::created) { close what was lost }
    //     for (each paid order in your records) store.restore_order(order);
    //     store.finish_recovery(spec.id);
    //
    // Between recover_event and finish_recovery the event is hidden: every other call on
    // it fails (storage_lost for stores that knew it), so nothing is sold before every
    // order is back. Several processes may recover one event at once: each restores
    // every order, then shows it.
    //
    // The same three calls repair an event whose storage went back to older data (this
    // store fenced it): the event is hidden as it stands, every paid order is restored
    // (an order restored on a seat that a later hold took wins, and the hold ends as if
    // it expired), and finish_recovery raises its version above every version seen.

    /// Creates the event hidden, with every seat free, when the storage lacks it
    /// (Recovery::created); hides an existing one as it stands when this store fenced it
    /// (Recovery::rolled_back); leaves any other existing one as it is (Recovery::existed).
    Result<Recovery> recover_event(const EventSpec& spec) {
        return run(detail::prepare_recover(spec, fenced(spec.id)));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Recovery>
    auto async_recover_event(const EventSpec& spec, Token&& token = {}) {
        return async_call(detail::prepare_recover(spec, fenced(spec.id)),
                          std::forward<Token>(token));
    }

    /// Marks an order's seats paid again, from the application's own records. Idempotent:
    /// an order restored (or never lost) is returned as it is; seat_taken (items) when
    /// another hold or order has one of its seats, order_conflict when its id paid
    /// another hold. A retried confirm of its hold token then returns the order.
    Result<Order> restore_order(const RestoreCommand& cmd) {
        return run(detail::prepare_restore(cmd));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Order>
    auto async_restore_order(const RestoreCommand& cmd, Token&& token = {}) {
        return async_call(detail::prepare_restore(cmd), std::forward<Token>(token));
    }

    /// Shows a recovered event again, and lifts this store's fence: calls on it work from
    /// now on. Its version goes above `at_least` (the highest version the application's
    /// records hold) and above every version this store has seen; answers the new one.
    Result<EventVersion> finish_recovery(const std::string& event, EventVersion at_least = 0) {
        return run(detail::prepare_finish_recovery(event, std::max(at_least, seen_version(event))));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, EventVersion>
    auto async_finish_recovery(const std::string& event, Token&& token = {}) {
        return async_finish_recovery(event, 0, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, EventVersion>
    auto async_finish_recovery(const std::string& event, EventVersion at_least, Token&& token = {}) {
        return async_call(
            detail::prepare_finish_recovery(event, std::max(at_least, seen_version(event))),
            std::forward<Token>(token));
    }

    /// True when this store saw `event` in the storage (created, listed or used it).
    [[nodiscard]] bool knows(const std::string& event) const {
        return watches_.find(event) != nullptr;
    }

private:
    // Each operation in three parts, shared by both ways of calling: detail::prepare_*
    // checks the input and describes the backend step (nothing is sent when it fails);
    // the step is sent and retried after a lost reply (run / async_call); finish() and
    // check() read its result against what the store knows.

    // What each result means to the store: storage_lost for an event it knew, and the
    // events it has now seen (detail/event_watches.hpp). Read and, where it must,
    // replaced in place: a Hold or an Order is never moved on its way back to the caller.
    template <typename Op, typename T>
    void finish(const Op& step, Result<T>& r) { watches_.finish(step, r); }

    // Before a step is sent: the refusal of a fenced event, or what its answer is checked
    // against (detail/event_watches.hpp).
    template <typename Op>
    Result<detail::Sent> send(const Op& step) { return watches_.send(step); }

    // After the answer: storage_lost when it shows the storage went back (the event is
    // fenced then); else the highest version seen goes up to it.
    template <typename Op, typename T>
    void check(const Op& step, const detail::Sent& sent, Result<T>& r, bool blocking) {
        auto refusal = watches_.check(step, sent, r);
        if (!refusal) return;
        if constexpr (std::is_same_v<Op, op::hold>) give_back(step, *r, blocking);
        r = std::move(*refusal);
    }

    // A hold the older data made, answered storage_lost: its caller never learns its token,
    // so its seats would stay held until it expires. Given back at once, past the fence,
    // unless the caller can find it again with its idempotency key. Whatever the release
    // answers, the caller's answer stays storage_lost.
    void give_back(const op::hold& step, const Hold& made, bool blocking) {
        if (!step.cmd.idempotency_key.empty() || made.replayed) return;
        const op::release release{made.token};
        if (blocking) {
            (void)backend_->run(release);
        } else {
            detail::start(*backend_, release, [](Result<EventVersion>) {});
        }
    }

    // The blocking way: the step, its retries, its reading.
    template <typename Op>
    Result<typename Op::result_type> run(Result<Op> prepared) {
        if (!prepared) return std::move(prepared).error();
        return run_step(*prepared);
    }
    template <typename Op>
    Result<typename Op::result_type> run_step(const Op& step) {
        auto sent = send(step);
        if (!sent) return std::move(sent).error();
        auto result = detail::run_retried(*backend_, step,
                                          detail::RetryLost{policy_.retries_on_unknown_outcome});
        finish(step, result);
        check(step, *sent, result, true);
        return result;
    }

    // The asynchronous way: the same parts, chained through the backend's completion.
    template <typename Op, typename Token>
    auto async_call(Result<Op> prepared, Token&& token) {
        if (!prepared) {
            return async_step(std::optional<Op>(), std::move(prepared).error(),
                              std::forward<Token>(token));
        }
        return async_step(std::optional<Op>(std::move(*prepared)), std::nullopt,
                          std::forward<Token>(token));
    }

    // `refused` when the checks failed (nothing is sent), else `prepared`.
    template <typename Op, typename Token>
    auto async_step(std::optional<Op> prepared, std::optional<Failure> refused, Token&& token) {
        using T = typename Op::result_type;
        return boost::asio::async_initiate<Token, void(Result<T>)>(
            [this](auto handler, std::optional<Op> prepared, std::optional<Failure> refused) {
                detail::Completer<decltype(handler)> done(std::move(handler));
                if (refused) {
                    done(Result<T>(std::move(*refused)));
                    return;
                }
                auto sent = send(*prepared);
                if (!sent) {
                    done(Result<T>(std::move(sent).error()));
                    return;
                }
                auto request = std::make_shared<const Op>(std::move(*prepared));
                const Op& step = *request;
                detail::start_retried(
                    *backend_, std::move(request),
                    detail::RetryLost{policy_.retries_on_unknown_outcome},
                    [this, &step, sent = *sent, done = std::move(done)](Result<T> result) mutable {
                        finish(step, result);
                        check(step, sent, result, false);
                        done(std::move(result));
                    });
            },
            token, std::move(prepared), std::move(refused));
    }

    B* backend_;
    HoldPolicy policy_;
    // The events this store has seen: only grows.
    detail::EventWatches watches_;
};

}  // namespace seatlock
