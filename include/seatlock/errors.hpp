// SPDX-License-Identifier: MIT
// seatlock/errors.hpp: every way a seatlock call can fail, as a std::error_code enum, and
// the groups callers ask about as std::error_condition values:
//
//     if (result.code() == seatlock::condition::retry_safe) retry_later();
//     else if (result.code() == seatlock::condition::conflict) tell_the_buyer();
//
// Expected outcomes (a seat is taken, a hold expired) are values carried by Result<T>;
// seatlock::Error is the exception thrown only when a caller asks for it (Result::value()).
#pragma once

#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace seatlock {

enum class errc {
    // Bad input: nothing was changed.
    invalid_argument = 1,
    // Locks.
    lock_timeout,    // waited `LockOptions::wait` and the key stayed held by someone else
    lock_busy,       // try_lock: held by someone else right now
    lock_not_owned,  // release/extend by an owner whose lease ran out or was taken over
    // Inventory.
    unknown_event,
    unknown_zone,
    unknown_seat,
    event_exists,  // create_event with an id already used by a different spec
    // Holds and orders.
    seat_taken,          // a named seat is held or paid by someone else (Failure::items)
    sold_out,            // not enough free places (Failure::current = places left)
    limit_exceeded,      // holder would pass max_seats_per_holder (limit, current)
    active_hold_exists,  // one_active_hold_per_holder and the holder has one
    unknown_hold,
    hold_expired,     // the hold ran out before the call
    hold_not_active,  // the hold was released or confirmed: it cannot be used that way
    unknown_order,
    order_conflict,  // order id already used for another hold, or hold confirmed as another order
    not_owner,       // the order or hold belongs to another holder
    // Storage and transport.
    connection_failed,  // could not connect (refused, DNS, connect timeout)
    timeout,            // no reply in time before the command was sent completely
    io_error,           // the connection broke; the command was not applied
    auth_failed,        // AUTH rejected
    protocol_error,     // a reply seatlock cannot read
    script_error,       // the server rejected a function call (a bug or a malformed argument)
    outcome_unknown,    // sent, but the reply was lost: it may or may not have been applied
    storage_lost,       // the event existed and its storage lost it (a restart without
                        // persistence, a failover to an empty replica), or went back to
                        // older data (a failover to a lagging replica, an older snapshot:
                        // the event is fenced); recover the event
                        // (SeatHoldStore::recover_event), then retry
    // Asynchronous calls.
    cancelled,  // the caller cancelled the call (an Asio cancellation slot) before it ended;
                // a cancelled lock wait leaves no lock behind
    // Replica-acknowledged writes (RedisOptions::replicas_to_ack).
    not_replicated,  // the write WAS applied on the Redis primary, but fewer replicas than
                     // asked acknowledged it in time (Failure::limit asked, ::current
                     // acknowledged): it may be lost if the primary fails now. Not undone;
                     // retrying is safe but proves nothing (docs/redis.md)
    // The change feed (SeatHoldStore::changes).
    changes_trimmed,  // the event's change log no longer holds the changes after the position
                      // asked for (or it is of another history: a recovery since): read
                      // seats() again and go on from its position
    // The waiting room (WaitingRoom).
    unknown_room,  // no room of that id was configured
    not_in_queue,  // the visitor never joined the room
    not_admitted,  // the visitor is not admitted (still waiting, finished, or a no-show),
                   // or an admission token is forged, expired or of another room
};

/// The category of seatlock::errc; its name is "seatlock".
const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// The identifier of an errc, as used in logs and in the ticketing server's JSON
/// ("seat_taken", "hold_expired", ...).
constexpr const char* to_string(errc e) noexcept {
    switch (e) {
        case errc::invalid_argument: return "invalid_argument";
        case errc::lock_timeout: return "lock_timeout";
        case errc::lock_busy: return "lock_busy";
        case errc::lock_not_owned: return "lock_not_owned";
        case errc::unknown_event: return "unknown_event";
        case errc::unknown_zone: return "unknown_zone";
        case errc::unknown_seat: return "unknown_seat";
        case errc::event_exists: return "event_exists";
        case errc::seat_taken: return "seat_taken";
        case errc::sold_out: return "sold_out";
        case errc::limit_exceeded: return "limit_exceeded";
        case errc::active_hold_exists: return "active_hold_exists";
        case errc::unknown_hold: return "unknown_hold";
        case errc::hold_expired: return "hold_expired";
        case errc::hold_not_active: return "hold_not_active";
        case errc::unknown_order: return "unknown_order";
        case errc::order_conflict: return "order_conflict";
        case errc::not_owner: return "not_owner";
        case errc::connection_failed: return "connection_failed";
        case errc::timeout: return "timeout";
        case errc::io_error: return "io_error";
        case errc::auth_failed: return "auth_failed";
        case errc::protocol_error: return "protocol_error";
        case errc::script_error: return "script_error";
        case errc::outcome_unknown: return "outcome_unknown";
        case errc::storage_lost: return "storage_lost";
        case errc::cancelled: return "cancelled";
        case errc::not_replicated: return "not_replicated";
        case errc::changes_trimmed: return "changes_trimmed";
        case errc::unknown_room: return "unknown_room";
        case errc::not_in_queue: return "not_in_queue";
        case errc::not_admitted: return "not_admitted";
    }
    return "unknown_error";
}

/// Every errc, in value order (for tables and tests).
inline constexpr errc all_errcs[] = {
    errc::invalid_argument, errc::lock_timeout,      errc::lock_busy,
    errc::lock_not_owned,   errc::unknown_event,     errc::unknown_zone,
    errc::unknown_seat,     errc::event_exists,      errc::seat_taken,
    errc::sold_out,         errc::limit_exceeded,    errc::active_hold_exists,
    errc::unknown_hold,     errc::hold_expired,      errc::hold_not_active,
    errc::unknown_order,    errc::order_conflict,    errc::not_owner,
    errc::connection_failed, errc::timeout,          errc::io_error,
    errc::auth_failed,      errc::protocol_error,    errc::script_error,
    errc::outcome_unknown,  errc::storage_lost,      errc::cancelled,
    errc::not_replicated,   errc::changes_trimmed,   errc::unknown_room,
    errc::not_in_queue,     errc::not_admitted,
};

namespace detail {
// all_errcs lists the codes in value order, and no code follows its last one: to_string
// has a case for every code (a switch without default, checked by -Wswitch), so a code
// added after the last listed one would have a name here.
constexpr bool lists_every_errc() {
    for (std::size_t i = 0; i < std::size(all_errcs); ++i) {
        if (static_cast<std::size_t>(all_errcs[i]) != i + 1) return false;
    }
    return std::string_view(to_string(static_cast<errc>(std::size(all_errcs) + 1))) == "unknown_error";
}
static_assert(lists_every_errc(), "seatlock::all_errcs must list every errc, in value order");
}  // namespace detail

/// Groups of errc values, to ask "what kind of failure is this?" instead of listing codes.
/// A code may belong to several groups (outcome_unknown is storage trouble and safe to
/// retry). Compare a std::error_code with them: `code == seatlock::condition::conflict`.
enum class condition {
    bad_input = 1,        ///< invalid_argument: the caller's mistake; nothing changed
    not_found,            ///< unknown_event, unknown_zone, unknown_seat, unknown_hold, unknown_order,
                          ///< changes_trimmed, unknown_room, not_in_queue
    conflict,             ///< the state of seats, holds or orders stood in the way: seat_taken,
                          ///< sold_out, limit_exceeded, active_hold_exists, hold_expired,
                          ///< hold_not_active, order_conflict, not_owner, event_exists
    expired,              ///< something ran out: hold_expired, lock_not_owned (the lease)
    forbidden,            ///< not_owner: someone else's hold or order; not_admitted: not the
                          ///< visitor's turn, or an admission token that is not valid
    busy,                 ///< a lock is someone else's: lock_busy, lock_timeout, lock_not_owned
    storage_unavailable,  ///< the storage could not do it: connection_failed, timeout, io_error,
                          ///< auth_failed, protocol_error, script_error, outcome_unknown,
                          ///< storage_lost; and not_replicated (done, but not as durably as asked)
    retry_safe,           ///< the same call again is safe and may succeed: lock_busy, lock_timeout,
                          ///< connection_failed, timeout, io_error, outcome_unknown,
                          ///< storage_lost. Not lock_not_owned: the lease is gone, and an
                          ///< unlock or extend of it never succeeds (lock again instead)
};

/// Whether `e` belongs to group `c`. A switch without default: a new errc must be placed.
constexpr bool in_group(errc e, condition c) noexcept {
    bool bad_input = false, not_found = false, conflict = false, expired = false,
         forbidden = false, busy = false, storage = false, retry = false;
    switch (e) {
        case errc::invalid_argument: bad_input = true; break;
        case errc::lock_timeout:
        case errc::lock_busy: busy = retry = true; break;
        case errc::lock_not_owned: expired = busy = true; break;  // lost for good
        case errc::unknown_event:
        case errc::unknown_zone:
        case errc::unknown_seat:
        case errc::unknown_hold:
        case errc::unknown_order: not_found = true; break;
        case errc::event_exists:
        case errc::seat_taken:
        case errc::sold_out:
        case errc::limit_exceeded:
        case errc::active_hold_exists:
        case errc::hold_not_active:
        case errc::order_conflict: conflict = true; break;
        case errc::hold_expired: conflict = expired = true; break;
        case errc::not_owner: conflict = forbidden = true; break;
        case errc::auth_failed:
        case errc::protocol_error:
        case errc::script_error: storage = true; break;
        case errc::connection_failed:
        case errc::timeout:
        case errc::io_error:
        case errc::outcome_unknown:
        case errc::storage_lost: storage = retry = true; break;
        case errc::cancelled: break;  // the caller's own choice: no group says more
        // Applied, so not retry_safe in the sense of "try again to get it done": a retry
        // answers the stored result, and its WAIT may not cover this write.
        case errc::not_replicated: storage = true; break;
        // What was asked for is gone from the log: not_found, and not worth the same call again.
        case errc::changes_trimmed: not_found = true; break;
        case errc::unknown_room:
        case errc::not_in_queue: not_found = true; break;
        // Someone else's turn: not yet admitted, or an admission that is not valid.
        case errc::not_admitted: forbidden = true; break;
    }
    switch (c) {
        case condition::bad_input: return bad_input;
        case condition::not_found: return not_found;
        case condition::conflict: return conflict;
        case condition::expired: return expired;
        case condition::forbidden: return forbidden;
        case condition::busy: return busy;
        case condition::storage_unavailable: return storage;
        case condition::retry_safe: return retry;
    }
    return false;
}

constexpr const char* to_string(condition c) noexcept {
    switch (c) {
        case condition::bad_input: return "bad_input";
        case condition::not_found: return "not_found";
        case condition::conflict: return "conflict";
        case condition::expired: return "expired";
        case condition::forbidden: return "forbidden";
        case condition::busy: return "busy";
        case condition::storage_unavailable: return "storage_unavailable";
        case condition::retry_safe: return "retry_safe";
    }
    return "unknown_condition";
}

/// The category of seatlock::condition; its name is "seatlock-condition".
const std::error_category& condition_category() noexcept;

inline std::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

namespace detail {
class ConditionCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "seatlock-condition"; }
    std::string message(int value) const override {
        return to_string(static_cast<condition>(value));
    }
};

class ErrorCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "seatlock"; }
    std::string message(int value) const override {
        return to_string(static_cast<errc>(value));
    }
    bool equivalent(int value, const std::error_condition& c) const noexcept override {
        if (c.category() == condition_category()) {
            return in_group(static_cast<errc>(value), static_cast<condition>(c.value()));
        }
        return std::error_category::equivalent(value, c);
    }
};
}  // namespace detail

inline const std::error_category& condition_category() noexcept {
    static const detail::ConditionCategory category;
    return category;
}

inline const std::error_category& error_category() noexcept {
    static const detail::ErrorCategory category;
    return category;
}

/// Thrown by Result<T>::value() on a failed result, and for misuse.
/// what() is exactly "<code>: <detail>", the code's message (for seatlock codes its name)
/// then the detail, as Failure::message() reads: e.g. "seat_taken: seats A-1, A-2 of zone
/// lower are held". (std::system_error's own what() would put the detail first.)
class Error : public std::system_error {
public:
    Error(std::error_code code, const std::string& detail)
        : std::system_error(code, detail), text_(code.message() + ": " + detail) {}
    [[nodiscard]] const char* what() const noexcept override { return text_.what(); }

private:
    // A std::runtime_error only for its string, which it copies without throwing, as an
    // exception must.
    std::runtime_error text_;
};

}  // namespace seatlock

template <>
struct std::is_error_code_enum<seatlock::errc> : std::true_type {};
template <>
struct std::is_error_condition_enum<seatlock::condition> : std::true_type {};
