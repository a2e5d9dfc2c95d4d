// seatlock/errors.hpp: every way a seatlock call can fail, as a std::error_code enum.
//
// Expected outcomes (a seat is taken, a hold expired) are values carried by Result<T>;
// seatlock::Error is the exception thrown only when a caller asks for it (Result::value()).
#pragma once

#include <string>
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
    }
    return "unknown_error";
}

namespace detail {
class ErrorCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "seatlock"; }
    std::string message(int value) const override {
        return to_string(static_cast<errc>(value));
    }
};
}  // namespace detail

inline const std::error_category& error_category() noexcept {
    static const detail::ErrorCategory category;
    return category;
}

/// Thrown by Result<T>::value() on a failed result, and for misuse.
/// what() is "<code>: <detail>", e.g. "seat_taken: seats of zone lower are held".
class Error : public std::system_error {
public:
    Error(std::error_code code, const std::string& detail) : std::system_error(code, detail) {}
};

}  // namespace seatlock

template <>
struct std::is_error_code_enum<seatlock::errc> : std::true_type {};
