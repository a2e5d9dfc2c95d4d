// SPDX-License-Identifier: MIT
// seatlock/operations.hpp: every backend operation, described once, as a value.
//
// A front class (LockManager, SeatHoldStore) checks its input, then describes the one
// backend step it needs as one of these values. A backend is whatever runs them: it
// provides `run(const op::X&)` for every X in op::all (seatlock/backend.hpp checks that),
// and `async_run(const op::X&, done)` where it has its own asynchronous path (RedisBackend
// sends it on a pipelined connection; the in-process backends run it in place, since their
// steps never wait). Retries and the reading of the result are written once, around the
// value, for both APIs.
//
// Every operation runs as ONE atomic step against the backend's storage (one Redis
// function call, one critical section in memory), on commands already validated by the
// front classes; time is the storage's clock.
//
// Adding an operation: its value here (and its place in op::all), the front-class call,
// the memory rule (detail/lock_table.hpp or detail/hold_table.hpp), its Lua function
// (src/redis/lua), and its Redis encoding and reply (src/redis/codecs). AnyBackend and
// FakeBackend derive theirs from op::all; a backend that misses one does not compile.
//
// Each value owns its arguments (an asynchronous call outlives the caller's stack), but
// for the lock steps, which refer to their lease's state.
#pragma once

#include <seatlock/room_vocabulary.hpp>
#include <seatlock/vocabulary.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace seatlock::op {

// ---------------------------------------------------------------------------------------
// Locks. These refer to the keys and owner of a lease instead of copying them: the
// lease's state (detail::LeaseState) outlives every call made for it. Keys are valid
// (is_valid_lock_key) and distinct; `owner` is a fresh 32-hex-digit token per acquisition.

/// Takes every key for `owner` until now + lease, or none of them. Succeeds also when
/// `owner` already holds them (a retry). Answers a fencing token larger than any token
/// answered before for any key of the same group. lock_busy (Failure::items = the keys
/// held by others) when any key is held by someone else.
struct acquire_locks {
    using result_type = std::uint64_t;
    static constexpr std::string_view name = "acquire_locks";
    std::span<const std::string> keys;
    const std::string& owner;
    Millis lease{};
};

/// Frees the keys still held by `owner`; true when it still held all of them. Keys held
/// by anyone else are never touched.
struct release_locks {
    using result_type = bool;
    static constexpr std::string_view name = "release_locks";
    std::span<const std::string> keys;
    const std::string& owner;
};

/// Moves the expiry of every key to now + lease if `owner` still holds all of them;
/// false (and nothing changed) otherwise.
struct extend_locks {
    using result_type = bool;
    static constexpr std::string_view name = "extend_locks";
    std::span<const std::string> keys;
    const std::string& owner;
    Millis lease{};
};

/// Every later fencing token of `key`'s group is larger than `at_least`: after the
/// storage lost its counters, tokens go on from the application's records.
struct raise_fencing {
    using result_type = void;
    static constexpr std::string_view name = "raise_fencing";
    std::string key;
    std::uint64_t at_least = 0;
};

// ---------------------------------------------------------------------------------------
// Inventory, holds and orders. Commands arrive validated (ids, counts, no duplicate seats).

/// Stores an event's inventory. The same spec again succeeds; another spec under the
/// same id fails with event_exists.
struct create_event {
    using result_type = void;
    static constexpr std::string_view name = "create_event";
    EventSpec spec;
};

/// Every shown event, by id.
struct events {
    using result_type = std::vector<EventSpec>;
    static constexpr std::string_view name = "events";
};

/// Recovery after the storage lost an event or went back to older data: creates it
/// hidden (every operation on it but begin_recovery, restore_order and end_recovery then
/// fails with unknown_event, and events omits it) unless it exists; an existing one is
/// left as it is, or hidden as it stands when `hide_existing` (Recovery::rolled_back).
struct begin_recovery {
    using result_type = Recovery;
    static constexpr std::string_view name = "begin_recovery";
    EventSpec spec;
    bool hide_existing = false;
};

/// Marks an order's seats paid, idempotently: seat_taken when another order has one (or,
/// on a shown event, a hold), order_conflict for an order id of another hold (or, on a
/// shown event, a hold of the order's token in storage). On a hidden event (under
/// recovery, whose storage may have gone back) the order wins: an active hold on one of
/// its seats ends as if it expired then (its holder's next call gets hold_expired,
/// expired reports it), a hold of the order's token that is not confirmed is replaced by
/// the order, and an order the storage has cancelled is paid again (the application's
/// records say it is paid).
struct restore_order {
    using result_type = Order;
    static constexpr std::string_view name = "restore_order";
    RestoreCommand cmd;
};

/// Shows the event (a no-op on a shown one) and raises its version above `at_least`;
/// answers the version.
struct end_recovery {
    using result_type = EventVersion;
    static constexpr std::string_view name = "end_recovery";
    std::string event;
    EventVersion at_least = 0;
};

/// The event's version now (unknown_event when it is missing or hidden). Changes nothing.
struct version {
    using result_type = EventVersion;
    static constexpr std::string_view name = "version";
    std::string event;
    /// What the caller's own records say the storage reached: read by the store
    /// (SeatHoldStore::check_version), not by the backend.
    EventVersion at_least = 0;
};

/// All or nothing: seat_taken (items = the taken seats), sold_out (current = places
/// left), limit_exceeded (limit, current), active_hold_exists, unknown_zone/seat. The
/// token or the idempotency key of a remembered hold returns that hold, with its status,
/// whatever the seats and limits say now.
struct hold {
    using result_type = Hold;
    static constexpr std::string_view name = "hold";
    HoldCommand cmd;
};

/// held -> paid. Idempotent per (token, order id); order_conflict for another order id or
/// an order id already used by another hold; hold_expired when it ran out.
struct confirm {
    using result_type = Order;
    static constexpr std::string_view name = "confirm";
    ConfirmCommand cmd;
};

/// held -> free. Releasing a released or expired hold succeeds (a released hold is
/// remembered for detail::released_memory_ms); a confirmed one fails with
/// hold_not_active. Answers the event's version after the step.
struct release {
    using result_type = EventVersion;
    static constexpr std::string_view name = "release";
    std::string token;
};

/// Moves the expiry to now + ttl, capped at creation + max_lifetime.
struct extend {
    using result_type = Hold;
    static constexpr std::string_view name = "extend";
    std::string token;
    Millis ttl{};
    Millis max_lifetime{};
};

/// paid -> free (event, order id, and when given the holder that must own it: not_owner
/// otherwise). Cancelling a cancelled order returns it again.
struct cancel {
    using result_type = Order;
    static constexpr std::string_view name = "cancel";
    std::string event;
    std::string order_id;
    std::optional<std::string> holder;
};

/// Every zone of the event, or only `zone` when given, at exactly one version (the map's).
struct seats {
    using result_type = SeatMap;
    static constexpr std::string_view name = "seats";
    std::string event;
    std::optional<std::string> zone;
};

/// The changes of the event after version `after`, in version order: at most `limit` of
/// them (`limit` >= 1), but never part of a step (a step with more than `limit` changes
/// comes whole, alone). changes_trimmed when `history` is given and is not the event's
/// (checked first), or when the event's change log no longer holds every change after
/// `after`; invalid_argument when `after` is above the event's version. The page names
/// the event's history.
struct changes {
    using result_type = ChangePage;
    static constexpr std::string_view name = "changes";
    std::string event;
    EventVersion after = 0;
    std::optional<EventHistory> history;
    std::size_t limit = 0;
};

/// Up to `limit` expired holds not yet acknowledged and not delivered during the last
/// `redeliver_after`. Each is reported at least once.
struct expired {
    using result_type = std::vector<ExpiredHold>;
    static constexpr std::string_view name = "expired";
    std::size_t limit = 0;
    Millis redeliver_after{};
};

/// Acknowledges expired holds: they are never reported again.
struct ack_expired {
    using result_type = void;
    static constexpr std::string_view name = "ack_expired";
    std::vector<std::string> tokens;
};

// ---------------------------------------------------------------------------------------
// The waiting room (docs/waiting-room.md). Room and visitor ids are valid ids; time is the
// storage's. A visitor record is "<state> <joined_at> ...": waiting in the line, admitted
// (deadline: no_show_after), active (deadline: the admission's expiry), finished, lapsed.
// Every step that finds an admitted or active visitor past its deadline lapses it.

/// Stores a room's configuration, checked (RoomConfig's ranges; `config.shuffle_seed` is
/// set). The seed is kept from the first configuration on: a later one with another seed
/// is invalid_argument when `seed_given`, and keeps the stored one otherwise. opens_at
/// cannot change once the room has opened (invalid_argument).
struct configure_room {
    using result_type = void;
    static constexpr std::string_view name = "configure_room";
    std::string room;
    RoomConfig config;
    bool seed_given = false;
};

/// Puts the visitor in the room's line, once: a visitor who joined before gets that first
/// ticket (replayed), whatever state it is in now. Before opens_at the visitor's place is
/// the draw's: its key is the first 52 bits of SHA-1("<seed> <visitor>") over 2^52, in
/// [0, 1); after it, the visitor's arrival number (1, 2, ...): later than every one in the
/// draw, and than every earlier arrival. unknown_room.
struct join_room {
    using result_type = QueueTicket;
    static constexpr std::string_view name = "join_room";
    std::string room;
    std::string visitor;
};

/// Where the visitor stands: the place is the visitor's rank in the line (O(log n)).
/// Changes nothing (a visitor past its deadline reads as lapsed). unknown_room,
/// not_in_queue.
struct room_position {
    using result_type = QueuePosition;
    static constexpr std::string_view name = "room_position";
    std::string room;
    std::string visitor;
};

/// One admission step: lapses the admitted and active visitors past their deadline, then
/// admits the first visitors of the line, as many as the rate's credit (admit_per_second
/// per second since opens_at or the previous step, kept up to one second's worth: at
/// least 1), the free slots (max_active) and `limit` allow. Nothing is admitted before
/// opens_at. Safe from any number of callers at once: each step is atomic. unknown_room.
struct admit {
    using result_type = AdmitReport;
    static constexpr std::string_view name = "admit";
    std::string room;
    std::size_t limit = 0;
};

/// The visitor collects the admission: admitted -> active until now + admission_ttl;
/// active -> the same expiry again. not_admitted for a visitor waiting, finished or
/// lapsed; unknown_room, not_in_queue. Answers the expiry.
struct admission {
    using result_type = WallTime;
    static constexpr std::string_view name = "admission";
    std::string room;
    std::string visitor;
};

/// The visitor is done: admitted or active -> finished (the slot is free); waiting ->
/// finished (leaves the line). Finishing a finished or lapsed visitor succeeds and
/// changes nothing. unknown_room, not_in_queue.
struct finished {
    using result_type = void;
    static constexpr std::string_view name = "finished";
    std::string room;
    std::string visitor;
};

// ---------------------------------------------------------------------------------------
// The one list of operations.

/// A list of operation types.
template <typename... Ops>
struct List {
    static constexpr std::size_t size = sizeof...(Ops);
};

/// The operations of a lock backend.
using lock_ops = List<acquire_locks, release_locks, extend_locks, raise_fencing>;
/// The operations of a hold backend.
using hold_ops = List<create_event, events, begin_recovery, restore_order, end_recovery, version,
                      hold, confirm, release, extend, cancel, seats, changes, expired,
                      ack_expired>;
/// The operations of a waiting-room backend.
using room_ops = List<configure_room, join_room, room_position, admit, admission, finished>;

namespace detail {
template <typename A, typename B>
struct Concat;
template <typename... A, typename... B>
struct Concat<List<A...>, List<B...>> {
    using type = List<A..., B...>;
};
template <typename Op, typename L>
struct IndexOf;
template <typename Op, typename... Ops>
struct IndexOf<Op, List<Ops...>> {
    static constexpr std::size_t value = [] {
        constexpr bool same[] = {std::is_same_v<Op, Ops>..., false};
        std::size_t i = 0;
        while (i < sizeof...(Ops) && !same[i]) ++i;
        return i;
    }();
};
template <typename Op, typename L>
inline constexpr bool in = IndexOf<Op, L>::value < L::size;
template <typename... Ops>
constexpr std::string_view name_at(List<Ops...>, std::size_t i) {
    constexpr std::string_view names[] = {Ops::name...};
    return i < sizeof...(Ops) ? names[i] : std::string_view("?");
}
}  // namespace detail

/// Every operation: what AnyBackend forwards, what FakeBackend scripts faults for, what
/// RedisBackend encodes.
using all = detail::Concat<detail::Concat<lock_ops, hold_ops>::type, room_ops>::type;

/// An operation of the lock backend concept.
template <typename Op>
concept lock_op = detail::in<Op, lock_ops>;
/// An operation of the hold backend concept.
template <typename Op>
concept hold_op = detail::in<Op, hold_ops>;
/// An operation of the room backend concept.
template <typename Op>
concept room_op = detail::in<Op, room_ops>;
/// Any operation.
template <typename Op>
concept any_op = lock_op<Op> || hold_op<Op> || room_op<Op>;

/// An operation as a value that names it, for recording and scripting calls
/// (FakeBackend): `op::id<op::confirm>`.
struct Id {
    std::size_t index = 0;
    /// The operation's name: "confirm".
    [[nodiscard]] constexpr std::string_view name() const { return detail::name_at(all{}, index); }
    friend constexpr bool operator==(Id, Id) = default;
};
template <any_op Op>
inline constexpr Id id{detail::IndexOf<Op, all>::value};

/// The result an operation's run gives.
template <any_op Op>
using result_of = Result<typename Op::result_type>;

}  // namespace seatlock::op
