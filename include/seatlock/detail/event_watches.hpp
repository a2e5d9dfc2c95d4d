// SPDX-License-Identifier: MIT
// seatlock/detail/event_watches.hpp: what a SeatHoldStore remembers of each event it has
// seen (created, listed or used): that it exists, so that its absence from the storage
// later means the storage lost it (storage_lost, not unknown_event); the highest version
// the storage answered for it; and whether it is fenced.
//
// Each step on one event is compared with the highest version of the event the store had
// seen answered BEFORE the step was sent: an answer received earlier left the storage at
// that version or later, whatever order replies arrive in. A write raises the version, so
// its answer must be above; a read's must not be below. An answer that breaks this shows
// the storage went back to older data: the event is fenced until it is recovered.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/operations.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace seatlock::detail {

/// What a store knows of one event: the highest version it saw, and its fence.
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

/// What a step is checked as: a write (raises the version), a read of the version, a read
/// without one (only refused while fenced), a step of recovery (whose answers come from
/// the storage being repaired: not checked), or nothing to do with versions.
enum class VersionKind { none, write, read, guarded, recovery, finish_recovery };

template <typename Op>
constexpr VersionKind version_kind() {
    if constexpr (std::is_same_v<Op, op::hold> || std::is_same_v<Op, op::confirm> ||
                  std::is_same_v<Op, op::release> || std::is_same_v<Op, op::extend> ||
                  std::is_same_v<Op, op::cancel>) {
        return VersionKind::write;
    } else if constexpr (std::is_same_v<Op, op::version>) {
        return VersionKind::read;
    } else if constexpr (std::is_same_v<Op, op::seats> || std::is_same_v<Op, op::changes>) {
        return VersionKind::guarded;
    } else if constexpr (std::is_same_v<Op, op::begin_recovery> ||
                         std::is_same_v<Op, op::restore_order>) {
        return VersionKind::recovery;
    } else if constexpr (std::is_same_v<Op, op::end_recovery>) {
        return VersionKind::finish_recovery;
    } else {
        return VersionKind::none;
    }
}

/// The event a step is about (empty for none).
inline std::string_view event_of(const op::hold& o) { return o.cmd.event; }
inline std::string_view event_of(const op::confirm& o) { return token_event(o.cmd.token); }
inline std::string_view event_of(const op::release& o) { return token_event(o.token); }
inline std::string_view event_of(const op::extend& o) { return token_event(o.token); }
inline std::string_view event_of(const op::cancel& o) { return o.event; }
inline std::string_view event_of(const op::seats& o) { return o.event; }
inline std::string_view event_of(const op::changes& o) { return o.event; }
inline std::string_view event_of(const op::version& o) { return o.event; }
inline std::string_view event_of(const op::begin_recovery& o) { return o.spec.id; }
inline std::string_view event_of(const op::restore_order& o) { return o.cmd.event; }
inline std::string_view event_of(const op::end_recovery& o) { return o.event; }
template <typename Op>
std::string_view event_of(const Op&) { return {}; }

/// The event's version in an answer (0 for an answer without one).
inline EventVersion version_in(const Hold& h) { return h.version; }
inline EventVersion version_in(const Order& o) { return o.version; }
inline EventVersion version_in(EventVersion v) { return v; }
template <typename T>
EventVersion version_in(const T&) { return 0; }

/// A step about to be sent: its event's watch (null for an event not seen yet) and the
/// highest version seen then.
struct Sent {
    Watch* watch = nullptr;
    EventVersion before = 0;
};

/// The watches of the events one store has seen. Thread-safe; only grows.
class EventWatches {
public:
    /// The watch of an event seen, or null. A thread that asked this store about the same
    /// event last time skips the lock and the hash: watches_ only grows, and its nodes
    /// never move; the serial, never reused (unlike an address), tells this store from a
    /// destroyed one.
    Watch* find(std::string_view event) const {
        thread_local struct {
            std::uint64_t store = 0;
            const std::string* event = nullptr;
            Watch* watch = nullptr;
        } last;
        if (last.store == serial_ && *last.event == event) return last.watch;
        std::shared_lock lock(mutex_);
        auto it = watches_.find(event);
        if (it == watches_.end()) return nullptr;
        last = {serial_, &it->first, it->second.get()};
        return it->second.get();
    }

    /// The watch of `event`, made when it is new.
    Watch& of(const std::string& event) {
        if (Watch* w = find(event)) return *w;
        std::unique_lock lock(mutex_);
        auto& w = watches_[event];
        if (!w) w = std::make_unique<Watch>(event);
        return *w;
    }

    /// Before a step is sent: the refusal of a fenced event, or what its answer is checked
    /// against.
    template <typename Op>
    Result<Sent> send(const Op& step) const {
        constexpr VersionKind kind = version_kind<Op>();
        if constexpr (kind == VersionKind::none) {
            return Sent{};
        } else {
            Watch* w = find(event_of(step));
            if (!w) return Sent{};
            if constexpr (kind == VersionKind::write || kind == VersionKind::read ||
                          kind == VersionKind::guarded) {
                if (w->fenced.load(std::memory_order_acquire)) return w->refusal();
            }
            return Sent{w, w->version.load(std::memory_order_acquire)};
        }
    }

    /// After the answer `r`: the storage_lost refusal that replaces it when it shows the
    /// storage went back (the event is fenced then); else nothing, and the highest version
    /// seen goes up to the answer's.
    template <typename Op, typename T>
    std::optional<Failure> check(const Op& step, const Sent& sent, const Result<T>& r) const {
        constexpr VersionKind kind = version_kind<Op>();
        if constexpr (kind == VersionKind::write || kind == VersionKind::read ||
                      kind == VersionKind::recovery || kind == VersionKind::finish_recovery) {
            if (!r) return std::nullopt;
            const EventVersion now = version_in(*r);
            Watch* w = sent.watch ? sent.watch : find(event_of(step));
            if (!w) return std::nullopt;
            std::string why;
            if constexpr (kind == VersionKind::write) {
                if (now <= sent.before) {
                    why = "it answered a write with version " + std::to_string(now) +
                          ", not above version " + std::to_string(sent.before) + " seen before";
                }
            } else if constexpr (kind == VersionKind::read) {
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
                return w->refusal();
            }
            if constexpr (kind == VersionKind::finish_recovery) w->lift();
            w->raise(now);
        }
        return std::nullopt;
    }

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
    void finish(const op::changes& o, Result<T>& r) { on_event(o.event, r); }
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

private:
    template <typename T>
    void saw(const std::string& event, const Result<T>& r) {
        if (r) seen(event);
    }

    void seen(const std::string& event) { (void)of(event); }

    // An event this store knew, now missing: the storage lost it.
    Failure lost(const std::string& event) const {
        return Failure(errc::storage_lost,
                       "event " + event + " existed and is missing from the storage: it lost its "
                       "data, or the event is being recovered",
                       {event});
    }

    template <typename T>
    void on_event(const std::string& event, Result<T>& result) const {
        if (result.is(errc::unknown_event) && find(event) != nullptr) result = lost(event);
    }

    // Calls on a token: the backends answer unknown_event when its event is missing.
    template <typename T>
    void on_token(const std::string& token, Result<T>& result) const {
        if (!result.is(errc::unknown_event)) return;
        const std::string event(token_event(token));
        if (find(event) != nullptr) {
            result = lost(event);
        } else {
            result = Failure(errc::unknown_hold, "no hold " + token + " (unknown event)");
        }
    }


    mutable std::shared_mutex mutex_;
    std::map<std::string, std::unique_ptr<Watch>, std::less<>> watches_;
    const std::uint64_t serial_ = [] {
        static std::atomic<std::uint64_t> stores{0};
        return ++stores;
    }();
};

}  // namespace seatlock::detail
