// SPDX-License-Identifier: MIT
// seatlock/result.hpp: Result<T>, a value or the Failure that explains why there is none.
//
// Every operation that can meet an expected refusal (a taken seat, an expired hold, a
// busy lock) returns a Result instead of throwing. A Failure names what was asked and
// what stood in the way: the code, a sentence, the seats involved and, for limits, the
// limit and the current count.
#pragma once

#include <seatlock/errors.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace seatlock {

/// Why an operation did not happen.
struct Failure {
    std::error_code code;
    std::string detail;               ///< a sentence for people: what was asked, what blocked it
    std::vector<std::string> items;   ///< the seats or keys concerned (taken seats, busy key)
    std::int64_t limit = -1;          ///< limit_exceeded: the limit; otherwise -1
    std::int64_t current = -1;        ///< limit_exceeded: seats the holder has; sold_out: places left

    Failure() = default;
    Failure(errc e, std::string text, std::vector<std::string> what = {})
        : code(make_error_code(e)), detail(std::move(text)), items(std::move(what)) {}

    /// True when this failure is the given seatlock error.
    [[nodiscard]] bool is(errc e) const noexcept { return code == make_error_code(e); }
    /// "<code name>: <detail>"
    [[nodiscard]] std::string message() const { return code.message() + ": " + detail; }
};

namespace detail {
/// What Result<T>::error() and Result<void>::error() do on a success: there is no failure
/// to give, and a reference to none cannot be handed out.
[[noreturn]] inline void no_failure() {
    throw Error(make_error_code(errc::invalid_argument),
                "Result::error() called on a success: there is no failure (check has_value() "
                "first)");
}
}  // namespace detail

/// Either a T or a Failure. Cheap to move; [[nodiscard]] so a refusal is never ignored.
template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
    Result(Failure failure) : state_(std::in_place_index<1>, std::move(failure)) {}  // NOLINT

    [[nodiscard]] bool has_value() const noexcept { return state_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    /// The value; throws seatlock::Error when there is none.
    T& value() & { check(); return std::get<0>(state_); }
    const T& value() const& { check(); return std::get<0>(state_); }
    T&& value() && { check(); return std::get<0>(std::move(state_)); }

    T& operator*() & noexcept { return std::get<0>(state_); }
    const T& operator*() const& noexcept { return std::get<0>(state_); }
    T* operator->() noexcept { return &std::get<0>(state_); }
    const T* operator->() const noexcept { return &std::get<0>(state_); }

    /// The failure. On a success there is none: throws seatlock::Error (invalid_argument,
    /// "Result::error() called on a success: ...").
    [[nodiscard]] const Failure& error() const& {
        if (has_value()) detail::no_failure();
        return std::get<1>(state_);
    }
    [[nodiscard]] Failure&& error() && {
        if (has_value()) detail::no_failure();
        return std::get<1>(std::move(state_));
    }
    /// The error code, or an empty code on success.
    [[nodiscard]] std::error_code code() const noexcept {
        return has_value() ? std::error_code{} : std::get<1>(state_).code;
    }
    /// True when this is a failure with the given seatlock error.
    [[nodiscard]] bool is(errc e) const noexcept {
        return !has_value() && std::get<1>(state_).is(e);
    }

private:
    void check() const {
        if (!has_value()) throw Error(error().code, error().detail);
    }
    std::variant<T, Failure> state_;
};

/// Result of an operation with nothing to return but success.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Failure failure) : failure_(std::move(failure)) {}  // NOLINT: implicit by design
    /// The success or failure of a Result<T>, its value left out: code written when a call
    /// answered Result<void> keeps working when the call comes to answer a value (as
    /// release() came to answer the event's version).
    template <typename T>
    Result(const Result<T>& other)  // NOLINT: implicit by design
        : failure_(other ? std::nullopt : std::optional<Failure>(other.error())) {}
    template <typename T>
    Result(Result<T>&& other)  // NOLINT: implicit by design
        : failure_(other ? std::nullopt : std::optional<Failure>(std::move(other).error())) {}

    [[nodiscard]] bool has_value() const noexcept { return !failure_; }
    explicit operator bool() const noexcept { return has_value(); }
    /// Throws seatlock::Error on failure.
    void value() const {
        if (failure_) throw Error(failure_->code, failure_->detail);
    }
    /// The failure. On a success there is none: throws seatlock::Error (invalid_argument),
    /// as Result<T>::error() does.
    [[nodiscard]] const Failure& error() const& {
        if (!failure_) detail::no_failure();
        return *failure_;
    }
    [[nodiscard]] Failure&& error() && {
        if (!failure_) detail::no_failure();
        return std::move(*failure_);
    }
    [[nodiscard]] std::error_code code() const noexcept {
        return failure_ ? failure_->code : std::error_code{};
    }
    [[nodiscard]] bool is(errc e) const noexcept { return failure_ && failure_->is(e); }

private:
    std::optional<Failure> failure_;
};

}  // namespace seatlock
