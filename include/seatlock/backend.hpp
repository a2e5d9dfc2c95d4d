// SPDX-License-Identifier: MIT
// seatlock/backend.hpp: the concepts a storage backend satisfies.
//
// A backend runs each operation of seatlock/operations.hpp as ONE atomic step against its
// storage (one Lua function call on Redis, one critical section in memory): it provides
// `Result<T> run(const op::X&)` for every operation X of op::lock_ops (a LockBackend),
// op::hold_ops (a HoldBackend) or op::room_ops (a RoomBackend). Policy, validation, token
// generation, waiting and retries live in the front classes (LockManager, SeatHoldStore,
// WaitingRoom); a backend only applies commands that are already checked. Time (lease and
// hold expiry, a room's opening) is the backend's own clock, never the caller's.
//
//     static_assert(seatlock::Backend<MyBackend>);   // fails while one operation is missing
#pragma once

#include <seatlock/operations.hpp>
#include <seatlock/vocabulary.hpp>

#include <concepts>

namespace seatlock {

/// B runs `Op`: `b.run(op)` answers Result<Op::result_type>.
template <typename B, typename Op>
concept Runs = requires(B& b, const Op& operation) {
    { b.run(operation) } -> std::same_as<op::result_of<Op>>;
};

namespace detail {
template <typename B, typename L>
struct RunsAll;
template <typename B, typename... Ops>
struct RunsAll<B, op::List<Ops...>> {
    static constexpr bool value = (Runs<B, Ops> && ...);
};
}  // namespace detail

/// Storage for locks: runs every operation of op::lock_ops.
template <typename B>
concept LockBackend = detail::RunsAll<B, op::lock_ops>::value;

/// Storage for seat holds: runs every operation of op::hold_ops.
template <typename B>
concept HoldBackend = detail::RunsAll<B, op::hold_ops>::value;

/// Storage for waiting rooms: runs every operation of op::room_ops.
template <typename B>
concept RoomBackend = detail::RunsAll<B, op::room_ops>::value;

/// A complete backend: locks, holds and waiting rooms over one storage.
template <typename B>
concept Backend = LockBackend<B> && HoldBackend<B> && RoomBackend<B>;

}  // namespace seatlock
