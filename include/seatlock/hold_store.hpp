// seatlock/hold_store.hpp: SeatHoldStore<B>, holds, payments and cancellations of seats.
//
//     seatlock::MemoryBackend backend;
//     seatlock::SeatHoldStore store(backend);                  // HoldPolicy defaults
//     store.create_event(spec).value();
//     auto hold = store.hold("game1", "alice", seatlock::named_seats("lower", {"A-1", "A-2"}));
//     if (hold) store.confirm(hold->token, "payment-77");      // held -> paid, for good
//
// The store validates every input (ids, counts, duplicates) before anything reaches the
// backend, applies the HoldPolicy inside the backend's single atomic step, and retries
// once an operation whose reply was lost, which is safe because each is idempotent.
//
// It also remembers the events it has seen (created, listed or used): when one of them
// is then missing from the storage, the storage lost it, and calls fail with
// storage_lost instead of unknown_event. recover_event() and restore_order() put it back.
// And it remembers the highest version of each (EventVersion) that the storage answered:
// an answer at or below a version seen before the call was sent means the storage went
// back to older data (a failover to a lagging replica, an older snapshot). The call then
// fails with storage_lost, and the event is fenced: every call on it fails the same way,
// without reaching the storage, until it is recovered.
//
// Every operation has an asynchronous twin, async_<name>, taking the same arguments and
// an Asio completion token (a callback, asio::use_awaitable, asio::use_future,
// asio::deferred) with the signature void(Result<T>): the same checks, the same single
// backend step and the same retry, completed through the handler's associated executor.
//
//     auto hold = co_await store.async_hold("game1", "alice", request, {}, asio::use_awaitable);
//
// A step already sent runs to its end: cancelling through the handler's cancellation slot
// is not supported by these calls (each is one round trip); see LockManager for waits.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/async.hpp>
#include <seatlock/detail/random.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/operations.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <map>
#include <memory>
#include <set>
#include <type_traits>
#include <shared_mutex>
#include <unordered_set>
#include <string>
#include <vector>

namespace seatlock {

/// The business rules every hold is checked against.
struct HoldPolicy {
    Millis hold_ttl = std::chrono::minutes(10);           ///< default hold length
    Millis max_hold_lifetime = std::chrono::hours(2);     ///< extend() never goes past creation + this
    std::int64_t max_seats_per_holder = 3;                ///< held + paid per holder and event; 0 = no limit
    bool one_active_hold_per_holder = false;              ///< refuse a second active hold in an event
    int retries_on_unknown_outcome = 1;                   ///< re-sends of idempotent calls whose reply was lost
};

/// Per-call choices of SeatHoldStore::hold.
struct HoldOptions {
    /// The hold's length; policy().hold_ttl when not given.
    std::optional<Millis> ttl;
    /// The caller's idempotency key (an id: 1 to 128 characters of [A-Za-z0-9._@+-]), or
    /// empty. A hold call with a key that this holder already used in this event returns
    /// that hold as it stands now (Hold::replayed, Hold::status: held, confirmed, released
    /// or expired) instead of making a second one, for as long as the hold is remembered:
    /// while it is active, with its order once confirmed, 2 minutes after a release, an
    /// hour after its expiry was acknowledged. The same key for another zone or other
    /// seats is invalid_argument. Use a fresh key (a UUID) per buyer intent, and the same
    /// one for every retry of it.
    std::string idempotency_key;
};

template <HoldBackend B>
class SeatHoldStore {
public:
    /// `backend` must outlive the store.
    explicit SeatHoldStore(B& backend, HoldPolicy policy = {})
        : backend_(&backend), policy_(policy) {
        if (policy_.hold_ttl <= Millis(0) || policy_.max_hold_lifetime < policy_.hold_ttl ||
            policy_.max_seats_per_holder < 0 || policy_.retries_on_unknown_outcome < 0) {
            throw Error(make_error_code(errc::invalid_argument),
                        "HoldPolicy needs hold_ttl > 0, max_hold_lifetime >= hold_ttl, "
                        "max_seats_per_holder >= 0 and retries_on_unknown_outcome >= 0");
        }
    }

    [[nodiscard]] const HoldPolicy& policy() const noexcept { return policy_; }
    [[nodiscard]] B& backend() const noexcept { return *backend_; }

    /// Stores an event's inventory. Creating the same spec again is a no-op, so several
    /// server instances may all create it at start-up.
    Result<void> create_event(const EventSpec& spec) { return run(prepare_create(spec)); }
    template <typename Token>
    auto async_create_event(const EventSpec& spec, Token&& token) {
        return async_call(prepare_create(spec), std::forward<Token>(token));
    }

    /// Every event, in id order.
    Result<std::vector<EventSpec>> events() { return run_step(op::events{}); }
    template <typename Token>
    auto async_events(Token&& token) {
        return async_step(std::optional<op::events>(op::events{}), std::nullopt,
                          std::forward<Token>(token));
    }

    /// The storage's version of `event`, after checking it against the highest version
    /// this store has seen and against `at_least` (the highest version the application's
    /// own records hold, e.g. of its last order). storage_lost when the storage is below
    /// either: it went back to older data, and the event is fenced until recovered.
    /// One read, changing nothing: cheap enough to probe every second.
    Result<EventVersion> check_version(const std::string& event, EventVersion at_least = 0) {
        return run(prepare_check_version(event, at_least));
    }
    template <typename Token>
    auto async_check_version(const std::string& event, EventVersion at_least, Token&& token) {
        return async_call(prepare_check_version(event, at_least), std::forward<Token>(token));
    }

    /// Fences `event` as check_version does when the storage went back: for an application
    /// that found so by itself (its database refused to sell a seat twice). Every call on
    /// the event then fails with storage_lost, saying `reason`, until recover_event,
    /// restore_order and finish_recovery have repaired it. invalid_argument, changing
    /// nothing, for an event id that is not one.
    Result<void> fence(const std::string& event, const std::string& reason) {
        if (auto ok = validate_id("event", event); !ok) return ok;
        watch_of(event).fence(reason);
        return {};
    }

    /// Whether `event` is fenced (see fence()).
    [[nodiscard]] bool fenced(const std::string& event) const {
        const Watch* w = find_watch(event);
        return w && w->fenced.load(std::memory_order_acquire);
    }

    /// The highest version of `event` this store has seen the storage answer (0 before any).
    [[nodiscard]] EventVersion seen_version(const std::string& event) const {
        const Watch* w = find_watch(event);
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
        return run(prepare_hold(event, holder, request, options));
    }
    template <typename Token>
    auto async_hold(const std::string& event, const std::string& holder,
                    const HoldRequest& request, Token&& token) {
        return async_call(prepare_hold(event, holder, request, HoldOptions{}),
                          std::forward<Token>(token));
    }
    template <typename Token>
    auto async_hold(const std::string& event, const std::string& holder,
                    const HoldRequest& request, const HoldOptions& options, Token&& token) {
        return async_call(prepare_hold(event, holder, request, options), std::forward<Token>(token));
    }

    /// held -> paid, for good. The same token and order id again returns the same order
    /// (safe to retry after a lost reply); hold_expired when the hold ran out first.
    Result<Order> confirm(const std::string& token, const std::string& order_id) {
        return run(prepare_confirm(token, order_id, false));
    }
    template <typename Token>
    auto async_confirm(const std::string& token, const std::string& order_id, Token&& tok) {
        return async_call(prepare_confirm(token, order_id, false), std::forward<Token>(tok));
    }

    /// Like confirm, but a hold that expired is paid anyway when every one of its seats is
    /// still free (and the holder's limit allows); seat_taken otherwise. For payments that
    /// arrive after the hold ran out.
    Result<Order> confirm_late(const std::string& token, const std::string& order_id) {
        return run(prepare_confirm(token, order_id, true));
    }
    template <typename Token>
    auto async_confirm_late(const std::string& token, const std::string& order_id, Token&& tok) {
        return async_call(prepare_confirm(token, order_id, true), std::forward<Token>(tok));
    }

    /// held -> free. Releasing a released hold again succeeds for 2 minutes after the
    /// release (then unknown_hold), and so does releasing an expired one; a confirmed
    /// one is hold_not_active (cancel the order instead). Later confirm and extend calls
    /// on a released hold get hold_not_active. Answers the event's version after it.
    Result<EventVersion> release(const std::string& token) { return run(prepare_release(token)); }
    template <typename Token>
    auto async_release(const std::string& token, Token&& tok) {
        return async_call(prepare_release(token), std::forward<Token>(tok));
    }

    /// Moves the hold's expiry to now + ttl. Capped, never refused: a hold never lives
    /// past its creation + policy().max_hold_lifetime; the returned Hold says where it ends.
    Result<Hold> extend(const std::string& token, Millis ttl) {
        return run(prepare_extend(token, ttl));
    }
    template <typename Token>
    auto async_extend(const std::string& token, Millis ttl, Token&& tok) {
        return async_call(prepare_extend(token, ttl), std::forward<Token>(tok));
    }

    /// paid -> free. When `holder` is given, the order must be theirs (not_owner otherwise).
    /// Order ids are the caller's own (payment ids), scoped by event: hence the event.
    Result<Order> cancel(const std::string& event, const std::string& order_id,
                         const std::optional<std::string>& holder = std::nullopt) {
        return run(prepare_cancel(event, order_id, holder));
    }
    template <typename Token>
    auto async_cancel(const std::string& event, const std::string& order_id,
                      const std::optional<std::string>& holder, Token&& token) {
        return async_call(prepare_cancel(event, order_id, holder), std::forward<Token>(token));
    }

    /// The state of every zone of `event` (or just `zone`), as of the storage's now.
    Result<std::vector<ZoneState>> seats(const std::string& event,
                                         const std::optional<std::string>& zone = std::nullopt) {
        return run(prepare_seats(event, zone));
    }
    template <typename Token>
    auto async_seats(const std::string& event, const std::optional<std::string>& zone,
                     Token&& token) {
        return async_call(prepare_seats(event, zone), std::forward<Token>(token));
    }

    /// Up to `limit` holds that expired and are not yet acknowledged, including those that
    /// expired while nobody asked. A hold handed out here is handed out again after
    /// `redeliver_after` until acknowledged with ack_expired(): delivery is at least once.
    Result<std::vector<ExpiredHold>> expired(std::size_t limit = 100,
                                             Millis redeliver_after = std::chrono::seconds(30)) {
        return run(prepare_expired(limit, redeliver_after));
    }
    template <typename Token>
    auto async_expired(std::size_t limit, Millis redeliver_after, Token&& token) {
        return async_call(prepare_expired(limit, redeliver_after), std::forward<Token>(token));
    }

    /// Acknowledges expired holds: they are never reported again.
    Result<void> ack_expired(std::span<const std::string> tokens) {
        return run(prepare_ack(tokens));
    }
    template <typename Token>
    auto async_ack_expired(std::span<const std::string> tokens, Token&& token) {
        return async_call(prepare_ack(tokens), std::forward<Token>(token));
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
    Result<Recovery> recover_event(const EventSpec& spec) { return run(prepare_recover(spec)); }
    template <typename Token>
    auto async_recover_event(const EventSpec& spec, Token&& token) {
        return async_call(prepare_recover(spec), std::forward<Token>(token));
    }

    /// Marks an order's seats paid again, from the application's own records. Idempotent:
    /// an order restored (or never lost) is returned as it is; seat_taken (items) when
    /// another hold or order has one of its seats, order_conflict when its id paid
    /// another hold. A retried confirm of its hold token then returns the order.
    Result<Order> restore_order(const RestoreCommand& cmd) { return run(prepare_restore(cmd)); }
    template <typename Token>
    auto async_restore_order(const RestoreCommand& cmd, Token&& token) {
        return async_call(prepare_restore(cmd), std::forward<Token>(token));
    }

    /// Shows a recovered event again, and lifts this store's fence: calls on it work from
    /// now on. Its version goes above `at_least` (the highest version the application's
    /// records hold) and above every version this store has seen; answers the new one.
    Result<EventVersion> finish_recovery(const std::string& event, EventVersion at_least = 0) {
        return run(prepare_finish_recovery(event, at_least));
    }
    template <typename Token>
    auto async_finish_recovery(const std::string& event, Token&& token) {
        return async_call(prepare_finish_recovery(event, 0), std::forward<Token>(token));
    }
    template <typename Token>
    auto async_finish_recovery(const std::string& event, EventVersion at_least, Token&& token) {
        return async_call(prepare_finish_recovery(event, at_least), std::forward<Token>(token));
    }

    /// True when this store saw `event` in the storage (created, listed or used it).
    [[nodiscard]] bool knows(const std::string& event) const { return find_watch(event) != nullptr; }

private:
    // Each operation in three parts, shared by both ways of calling: prepare_* checks the
    // input and describes the backend step (nothing is sent when it fails); the step is
    // sent and retried after a lost reply (run / async_call); finish() reads its result
    // against what the store knows.

    Result<op::restore_order> prepare_restore(const RestoreCommand& cmd) const {
        for (auto [what, id] : {std::pair{"event", &cmd.event}, {"order", &cmd.order_id},
                                {"holder", &cmd.holder}, {"zone", &cmd.zone}}) {
            if (auto ok = validate_id(what, *id); !ok) return std::move(ok).error();
        }
        if (token_event(cmd.hold_token) != cmd.event) {
            return Failure(errc::invalid_argument,
                           "hold token '" + cmd.hold_token.substr(0, 80) + "' is not of event " + cmd.event);
        }
        if (cmd.seats.empty()) return Failure(errc::invalid_argument, "an order has seats");
        for (const auto& seat : cmd.seats) {
            if (auto ok = validate_id("seat", seat); !ok) return std::move(ok).error();
        }
        std::vector<std::string_view> sorted(cmd.seats.begin(), cmd.seats.end());
        std::sort(sorted.begin(), sorted.end());
        if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
            return Failure(errc::invalid_argument, "seat " + std::string(*twice) + " listed twice",
                           {std::string(*twice)});
        }
        return op::restore_order{cmd};
    }

    Result<op::end_recovery> prepare_finish_recovery(const std::string& event,
                                                     EventVersion at_least) const {
        if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
        return op::end_recovery{event, std::max(at_least, seen_version(event))};
    }

    Result<op::begin_recovery> prepare_recover(const EventSpec& spec) const {
        if (auto ok = validate(spec); !ok) return std::move(ok).error();
        return op::begin_recovery{spec, fenced(spec.id)};
    }

    Result<op::version> prepare_check_version(const std::string& event,
                                              EventVersion at_least) const {
        if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
        return op::version{event, at_least};
    }

    Result<op::create_event> prepare_create(const EventSpec& spec) const {
        if (auto ok = validate(spec); !ok) return std::move(ok).error();
        return op::create_event{spec};
    }

    Result<op::hold> prepare_hold(const std::string& event, const std::string& holder,
                                  const HoldRequest& request, const HoldOptions& options) const {
        if (auto ok = validate(event, holder, request); !ok) return std::move(ok).error();
        if (!options.idempotency_key.empty()) {
            if (auto ok = validate_id("idempotency key", options.idempotency_key); !ok) {
                return std::move(ok).error();
            }
        }
        const Millis length = options.ttl.value_or(policy_.hold_ttl);
        if (length <= Millis(0) || length > policy_.max_hold_lifetime) {
            return Failure(errc::invalid_argument,
                           "hold ttl must be positive and at most max_hold_lifetime (" +
                               std::to_string(policy_.max_hold_lifetime.count()) + " ms)");
        }
        return op::hold{HoldCommand{event, holder, event + "." + detail::random_hex128(), request,
                                    length, limits(), options.idempotency_key}};
    }

    Result<op::confirm> prepare_confirm(const std::string& token, const std::string& order_id,
                                        bool late) const {
        if (auto ok = validate_token(token); !ok) return std::move(ok).error();
        if (auto ok = validate_id("order", order_id); !ok) return std::move(ok).error();
        return op::confirm{ConfirmCommand{token, order_id, late, limits()}};
    }

    Result<op::release> prepare_release(const std::string& token) const {
        if (auto ok = validate_token(token); !ok) return std::move(ok).error();
        return op::release{token};
    }

    Result<op::extend> prepare_extend(const std::string& token, Millis ttl) const {
        if (auto ok = validate_token(token); !ok) return std::move(ok).error();
        if (ttl <= Millis(0)) return Failure(errc::invalid_argument, "extend ttl must be positive");
        return op::extend{token, ttl, policy_.max_hold_lifetime};
    }

    Result<op::cancel> prepare_cancel(const std::string& event, const std::string& order_id,
                                      const std::optional<std::string>& holder) const {
        if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
        if (auto ok = validate_id("order", order_id); !ok) return std::move(ok).error();
        if (holder) {
            if (auto ok = validate_id("holder", *holder); !ok) return std::move(ok).error();
        }
        return op::cancel{event, order_id, holder};
    }

    Result<op::seats> prepare_seats(const std::string& event,
                                    const std::optional<std::string>& zone) const {
        if (auto ok = validate_id("event", event); !ok) return std::move(ok).error();
        if (zone) {
            if (auto ok = validate_id("zone", *zone); !ok) return std::move(ok).error();
        }
        return op::seats{event, zone};
    }

    static Result<op::expired> prepare_expired(std::size_t limit, Millis redeliver_after) {
        if (limit == 0 || redeliver_after < Millis(0)) {
            return Failure(errc::invalid_argument, "expired() needs limit > 0 and redeliver_after >= 0");
        }
        return op::expired{limit, redeliver_after};
    }

    static Result<op::ack_expired> prepare_ack(std::span<const std::string> tokens) {
        for (const auto& token : tokens) {
            if (auto ok = validate_token(token); !ok) return std::move(ok).error();
        }
        return op::ack_expired{{tokens.begin(), tokens.end()}};
    }

    // What this store knows of one event: the highest version it saw, and its fence.
    struct Watch {
        explicit Watch(std::string e) : event(std::move(e)) {}
        const std::string event;
        std::atomic<EventVersion> version{0};
        std::atomic<bool> fenced{false};
        mutable std::mutex mutex;
        std::string reason;  // why it is fenced

        void raise(EventVersion v) {
            EventVersion seen = version.load(std::memory_order_relaxed);
            while (seen < v && !version.compare_exchange_weak(seen, v, std::memory_order_acq_rel)) {
            }
        }
        void fence(std::string why) {
            std::lock_guard lock(mutex);
            if (!fenced.load(std::memory_order_relaxed)) reason = std::move(why);
            fenced.store(true, std::memory_order_release);
        }
        void lift() {
            std::lock_guard lock(mutex);
            fenced.store(false, std::memory_order_release);
            reason.clear();
        }
        Failure refusal() const {
            std::lock_guard lock(mutex);
            return Failure(errc::storage_lost,
                           reason + "; the event is fenced until it is recovered", {event});
        }
    };

    // What each result means to the store: storage_lost for an event it knew, and the
    // events it has now seen. Each reads and, where it must, replaces the result in place:
    // a Hold or an Order is never moved on its way back to the caller.
    template <typename T>
    void finish(const op::create_event& o, Result<T>& r) { saw(o.spec.id, r); }
    template <typename T>
    void finish(const op::begin_recovery& o, Result<T>& r) { saw(o.spec.id, r); }
    template <typename T>
    void finish(const op::end_recovery& o, Result<T>& r) { saw(o.event, r); }
    template <typename T>
    void finish(const op::hold& o, Result<T>& r) {
        on_event(o.cmd.event, r);
        saw(o.cmd.event, r);
    }
    template <typename T>
    void finish(const op::cancel& o, Result<T>& r) { on_event(o.event, r); }
    template <typename T>
    void finish(const op::seats& o, Result<T>& r) { on_event(o.event, r); }
    template <typename T>
    void finish(const op::version& o, Result<T>& r) {
        on_event(o.event, r);
        saw(o.event, r);
    }
    template <typename T>
    void finish(const op::confirm& o, Result<T>& r) { on_token(o.cmd.token, r); }
    template <typename T>
    void finish(const op::release& o, Result<T>& r) { on_token(o.token, r); }
    template <typename T>
    void finish(const op::extend& o, Result<T>& r) { on_token(o.token, r); }
    template <typename T>
    void finish(const op::events&, Result<T>& r) {
        if (r) {
            for (const auto& spec : *r) seen(spec.id);
        }
    }
    template <typename Op, typename T>
    void finish(const Op&, Result<T>&) {}

    template <typename T>
    void saw(const std::string& event, const Result<T>& r) {
        if (r) seen(event);
    }

    // ------------------------------------------------------------------------------------
    // Versions. Each step on one event is compared with the highest version of the event
    // this store had seen answered BEFORE the step was sent: an answer received earlier
    // left the storage at that version or later, whatever order replies arrive in. A
    // write raises the version, so its answer must be above; a read's must not be below.

    // What a step is checked as: a write (raises the version), a read of the version, a
    // read without one (only refused while fenced), a step of recovery (whose answers come
    // from the storage being repaired: not checked), or nothing to do with versions.
    enum class Kind { none, write, read, guarded, recovery, finish_recovery };

    template <typename Op>
    static constexpr Kind kind_of() {
        if constexpr (std::is_same_v<Op, op::hold> || std::is_same_v<Op, op::confirm> ||
                      std::is_same_v<Op, op::release> || std::is_same_v<Op, op::extend> ||
                      std::is_same_v<Op, op::cancel>) {
            return Kind::write;
        } else if constexpr (std::is_same_v<Op, op::version>) {
            return Kind::read;
        } else if constexpr (std::is_same_v<Op, op::seats>) {
            return Kind::guarded;
        } else if constexpr (std::is_same_v<Op, op::begin_recovery> ||
                             std::is_same_v<Op, op::restore_order>) {
            return Kind::recovery;
        } else if constexpr (std::is_same_v<Op, op::end_recovery>) {
            return Kind::finish_recovery;
        } else {
            return Kind::none;
        }
    }

    static std::string_view event_of(const op::hold& o) { return o.cmd.event; }
    static std::string_view event_of(const op::confirm& o) { return token_event(o.cmd.token); }
    static std::string_view event_of(const op::release& o) { return token_event(o.token); }
    static std::string_view event_of(const op::extend& o) { return token_event(o.token); }
    static std::string_view event_of(const op::cancel& o) { return o.event; }
    static std::string_view event_of(const op::seats& o) { return o.event; }
    static std::string_view event_of(const op::version& o) { return o.event; }
    static std::string_view event_of(const op::begin_recovery& o) { return o.spec.id; }
    static std::string_view event_of(const op::restore_order& o) { return o.cmd.event; }
    static std::string_view event_of(const op::end_recovery& o) { return o.event; }
    template <typename Op>
    static std::string_view event_of(const Op&) { return {}; }

    static EventVersion version_in(const Hold& h) { return h.version; }
    static EventVersion version_in(const Order& o) { return o.version; }
    static EventVersion version_in(EventVersion v) { return v; }
    template <typename T>
    static EventVersion version_in(const T&) { return 0; }

    // A step about to be sent: its event's watch (null for an event not seen yet) and the
    // highest version seen then.
    struct Sent {
        Watch* watch = nullptr;
        EventVersion before = 0;
    };

    // Before a step is sent: the refusal of a fenced event, or what its answer is checked
    // against.
    template <typename Op>
    Result<Sent> send(const Op& step) {
        constexpr Kind kind = kind_of<Op>();
        if constexpr (kind == Kind::none) {
            return Sent{};
        } else {
            Watch* w = cached_watch(event_of(step));
            if (!w) return Sent{};
            if constexpr (kind == Kind::write || kind == Kind::read || kind == Kind::guarded) {
                if (w->fenced.load(std::memory_order_acquire)) return w->refusal();
            }
            return Sent{w, w->version.load(std::memory_order_acquire)};
        }
    }

    // After the answer: storage_lost when it shows the storage went back; else the
    // highest version seen goes up to it.
    template <typename Op, typename T>
    void check(const Op& step, const Sent& sent, Result<T>& r, bool blocking) {
        constexpr Kind kind = kind_of<Op>();
        if constexpr (kind == Kind::write || kind == Kind::read || kind == Kind::recovery ||
                      kind == Kind::finish_recovery) {
            if (!r) return;
            const EventVersion now = version_in(*r);
            Watch* w = sent.watch ? sent.watch : cached_watch(event_of(step));
            if (!w) return;
            std::string why;
            if constexpr (kind == Kind::write) {
                if (now <= sent.before) {
                    why = "it answered a write with version " + std::to_string(now) +
                          ", not above version " + std::to_string(sent.before) + " seen before";
                }
            } else if constexpr (kind == Kind::read) {
                if (now < step.at_least) {
                    why = "it is at version " + std::to_string(now) + ", below version " +
                          std::to_string(step.at_least) + " that the application's records hold";
                } else if (now < sent.before) {
                    why = "it is at version " + std::to_string(now) + ", below version " +
                          std::to_string(sent.before) + " seen before";
                }
            }
            if (!why.empty()) {
                w->fence("the storage of event " + w->event + " went back to older data (" +
                         why + "): a failover to a lagging replica, or an older snapshot");
                if constexpr (std::is_same_v<Op, op::hold>) give_back(step, *r, blocking);
                r = w->refusal();
                return;
            }
            if constexpr (kind == Kind::finish_recovery) w->lift();
            w->raise(now);
        }
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

    // The watch of an event this store has seen, or null. A thread that asked this store
    // about the same event last time skips the lock and the hash: watches_ only grows, and
    // its nodes never move; the serial, never reused (unlike an address), tells this store
    // from a destroyed one.
    Watch* cached_watch(std::string_view event) const {
        thread_local struct {
            std::uint64_t store = 0;
            const std::string* event = nullptr;
            Watch* watch = nullptr;
        } last;
        if (last.store == serial_ && *last.event == event) return last.watch;
        std::shared_lock lock(watches_mutex_);
        auto it = watches_.find(event);
        if (it == watches_.end()) return nullptr;
        last = {serial_, &it->first, it->second.get()};
        return it->second.get();
    }

    const Watch* find_watch(const std::string& event) const { return cached_watch(event); }

    Watch& watch_of(const std::string& event) {
        if (Watch* w = cached_watch(event)) return *w;
        std::unique_lock lock(watches_mutex_);
        auto& w = watches_[event];
        if (!w) w = std::make_unique<Watch>(event);
        return *w;
    }

    void seen(const std::string& event) { (void)watch_of(event); }

    // An event this store knew, now missing: the storage lost it.
    Failure lost(const std::string& event) const {
        return Failure(errc::storage_lost,
                       "event " + event + " existed and is missing from the storage: it lost its "
                       "data, or the event is being recovered",
                       {event});
    }

    template <typename T>
    void on_event(const std::string& event, Result<T>& result) const {
        if (result.is(errc::unknown_event) && knows(event)) result = lost(event);
    }

    // Calls on a token: the backends answer unknown_event when its event is missing.
    template <typename T>
    void on_token(const std::string& token, Result<T>& result) const {
        if (!result.is(errc::unknown_event)) return;
        const std::string event(token_event(token));
        if (knows(event)) {
            result = lost(event);
        } else {
            result = Failure(errc::unknown_hold, "no hold " + token + " (unknown event)");
        }
    }

    HoldLimits limits() const {
        return {policy_.max_seats_per_holder, policy_.one_active_hold_per_holder};
    }

    static Result<void> validate_token(const std::string& token) {
        if (token_event(token).empty()) {
            return Failure(errc::unknown_hold, "malformed hold token '" + token.substr(0, 80) + "'");
        }
        return {};
    }

    static Result<void> validate(const std::string& event, const std::string& holder,
                                 const HoldRequest& request) {
        if (auto ok = validate_id("event", event); !ok) return ok;
        if (auto ok = validate_id("holder", holder); !ok) return ok;
        if (auto ok = validate_id("zone", request.zone); !ok) return ok;
        if (request.kind == HoldKind::seats) {
            if (request.seats.empty()) return Failure(errc::invalid_argument, "no seats asked");
            for (const auto& seat : request.seats) {
                if (auto ok = validate_id("seat", seat); !ok) return ok;
            }
            const auto& seats = request.seats;
            auto twice = seats.end();
            if (seats.size() <= 16) {  // the usual few seats: a scan beats building anything
                for (auto it = seats.begin(); it != seats.end() && twice == seats.end(); ++it) {
                    if (std::find(seats.begin(), it, *it) != it) twice = it;
                }
            } else {
                std::vector<std::string_view> sorted(seats.begin(), seats.end());
                std::sort(sorted.begin(), sorted.end());
                auto dup = std::adjacent_find(sorted.begin(), sorted.end());
                if (dup != sorted.end()) twice = std::find(seats.begin(), seats.end(), *dup);
            }
            if (twice != seats.end()) {
                return Failure(errc::invalid_argument, "seat " + *twice + " asked twice", {*twice});
            }
            return {};
        }
        if (!request.seats.empty()) {
            return Failure(errc::invalid_argument, "a quantity request names no seats");
        }
        if (request.quantity <= 0 || request.quantity > max_zone_places) {
            return Failure(errc::invalid_argument,
                           "quantity must be between 1 and " + std::to_string(max_zone_places) +
                               ", got " + std::to_string(request.quantity));
        }
        return {};
    }

    static Result<void> validate(const EventSpec& spec) {
        if (auto ok = validate_id("event", spec.id); !ok) return ok;
        if (spec.name.size() > 256) return Failure(errc::invalid_argument, "event name over 256 characters");
        if (spec.zones.empty()) return Failure(errc::invalid_argument, "event " + spec.id + " has no zone");
        std::set<std::string> zones;
        for (const auto& zone : spec.zones) {
            if (auto ok = validate_id("zone", zone.id); !ok) return ok;
            if (!zones.insert(zone.id).second) {
                return Failure(errc::invalid_argument, "zone " + zone.id + " defined twice");
            }
            if (zone.kind == ZoneKind::general_admission) {
                if (zone.capacity <= 0 || zone.capacity > max_zone_places || !zone.seats.empty()) {
                    return Failure(errc::invalid_argument,
                                   "general-admission zone " + zone.id +
                                       " needs a capacity from 1 to " +
                                       std::to_string(max_zone_places) + " and no named seats");
                }
                continue;
            }
            if (zone.seats.empty() || zone.seats.size() > static_cast<std::size_t>(max_zone_places) ||
                zone.capacity != 0) {
                return Failure(errc::invalid_argument,
                               "zone " + zone.id + " needs 1 to " + std::to_string(max_zone_places) +
                                   " named seats and no capacity");
            }
            std::set<std::string> seats;
            for (const auto& seat : zone.seats) {
                if (auto ok = validate_id("seat", seat.id); !ok) return ok;
                if (!seat.row.empty()) {
                    if (auto ok = validate_id("row", seat.row); !ok) return ok;
                }
                if (!seats.insert(seat.id).second) {
                    return Failure(errc::invalid_argument,
                                   "seat " + seat.id + " defined twice in zone " + zone.id);
                }
            }
        }
        return {};
    }

    B* backend_;
    HoldPolicy policy_;
    mutable std::shared_mutex watches_mutex_;
    // The events this store has seen: only grows.
    std::map<std::string, std::unique_ptr<Watch>, std::less<>> watches_;
    const std::uint64_t serial_ = [] {
        static std::atomic<std::uint64_t> stores{0};
        return ++stores;
    }();
};

}  // namespace seatlock
