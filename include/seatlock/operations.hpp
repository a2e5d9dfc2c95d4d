// seatlock/operations.hpp: every backend operation as a value, for the code that runs
// it both ways.
//
// A front class (LockManager, SeatHoldStore) checks its input, then describes the one
// backend step it needs as one of these values. The blocking API runs it with
// `op.run(backend)`; the asynchronous API hands the same value to the backend's
// `async_run` when the backend has one (RedisBackend sends it on a pipelined connection)
// or runs it in place (the in-process backends, whose steps never wait). Retries and the
// reading of the result are written once, around the value, for both.
//
// Each value owns its arguments (an asynchronous call outlives the caller's stack), but
// for the lock steps, which refer to their lease's state.
#pragma once

#include <seatlock/backend.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace seatlock::op {

// Locks (LockBackend). These refer to the keys and owner of a lease instead of copying
// them: the lease's state (detail::LeaseState) outlives every call made for it.

struct acquire_locks {
    using result_type = std::uint64_t;
    std::span<const std::string> keys;
    const std::string& owner;
    Millis lease{};
    template <LockBackend B>
    Result<result_type> run(B& b) const { return b.acquire_locks(keys, owner, lease); }
};

struct release_locks {
    using result_type = bool;
    std::span<const std::string> keys;
    const std::string& owner;
    template <LockBackend B>
    Result<result_type> run(B& b) const { return b.release_locks(keys, owner); }
};

struct extend_locks {
    using result_type = bool;
    std::span<const std::string> keys;
    const std::string& owner;
    Millis lease{};
    template <LockBackend B>
    Result<result_type> run(B& b) const { return b.extend_locks(keys, owner, lease); }
};

struct raise_fencing {
    using result_type = void;
    std::string key;
    std::uint64_t at_least = 0;
    template <LockBackend B>
    Result<result_type> run(B& b) const { return b.raise_fencing(key, at_least); }
};

// Inventory, holds and orders (HoldBackend).

struct create_event {
    using result_type = void;
    EventSpec spec;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.create_event(spec); }
};

struct events {
    using result_type = std::vector<EventSpec>;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.events(); }
};

struct begin_recovery {
    using result_type = Recovery;
    EventSpec spec;
    bool hide_existing = false;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.begin_recovery(spec, hide_existing); }
};

struct restore_order {
    using result_type = Order;
    RestoreCommand cmd;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.restore_order(cmd); }
};

struct end_recovery {
    using result_type = EventVersion;
    std::string event;
    EventVersion at_least = 0;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.end_recovery(event, at_least); }
};

struct version {
    using result_type = EventVersion;
    std::string event;
    /// What the caller's own records say the storage reached: read by the store
    /// (SeatHoldStore::check_version), not by the backend.
    EventVersion at_least = 0;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.version(event); }
};

struct hold {
    using result_type = Hold;
    HoldCommand cmd;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.hold(cmd); }
};

struct confirm {
    using result_type = Order;
    ConfirmCommand cmd;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.confirm(cmd); }
};

struct release {
    using result_type = EventVersion;
    std::string token;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.release(token); }
};

struct extend {
    using result_type = Hold;
    std::string token;
    Millis ttl{};
    Millis max_lifetime{};
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.extend(token, ttl, max_lifetime); }
};

struct cancel {
    using result_type = Order;
    std::string event;
    std::string order_id;
    std::optional<std::string> holder;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.cancel(event, order_id, holder); }
};

struct seats {
    using result_type = std::vector<ZoneState>;
    std::string event;
    std::optional<std::string> zone;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.seats(event, zone); }
};

struct expired {
    using result_type = std::vector<ExpiredHold>;
    std::size_t limit = 0;
    Millis redeliver_after{};
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.expired(limit, redeliver_after); }
};

struct ack_expired {
    using result_type = void;
    std::vector<std::string> tokens;
    template <HoldBackend B>
    Result<result_type> run(B& b) const { return b.ack_expired(tokens); }
};

}  // namespace seatlock::op
