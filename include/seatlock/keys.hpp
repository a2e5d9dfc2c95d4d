// SPDX-License-Identifier: MIT
// seatlock/keys.hpp: what an id may look like, how lock keys group, how hold tokens
// name their event.
//
// Ids (events, zones, seats, holders, orders) end up inside storage keys and URLs, so
// they are checked before anything is stored: 1 to 128 characters from
// [A-Za-z0-9._@+-]; never `{`, `}`, `:` or white space, which carry meaning in keys.
#pragma once

#include <seatlock/result.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace seatlock {

inline constexpr std::size_t max_id_length = 128;
inline constexpr std::size_t max_lock_key_length = 512;

namespace detail {
inline constexpr auto id_chars = [] {
    std::array<bool, 256> table{};
    for (char c = 'a'; c <= 'z'; ++c) table[static_cast<unsigned char>(c)] = true;
    for (char c = 'A'; c <= 'Z'; ++c) table[static_cast<unsigned char>(c)] = true;
    for (char c = '0'; c <= '9'; ++c) table[static_cast<unsigned char>(c)] = true;
    for (char c : {'.', '_', '-', '@', '+'}) table[static_cast<unsigned char>(c)] = true;
    return table;
}();
}  // namespace detail

/// True when `id` is a valid event, zone, seat, holder or order id.
constexpr bool is_valid_id(std::string_view id) noexcept {
    if (id.empty() || id.size() > max_id_length) return false;
    for (char c : id) {
        if (!detail::id_chars[static_cast<unsigned char>(c)]) return false;
    }
    return true;
}

/// Checks an id; `what` names it in the error ("event", "seat", ...).
inline Result<void> validate_id(std::string_view what, std::string_view id) {
    if (is_valid_id(id)) return {};
    std::string shown(id.substr(0, 40));
    if (id.size() > 40) shown += "...";
    return Failure(errc::invalid_argument,
                   std::string(what) + " id '" + shown + "' is invalid: use 1 to " +
                       std::to_string(max_id_length) + " characters from [A-Za-z0-9._@+-]");
}

/// A character of a lock key or of a storage key prefix: printable ASCII, no space, no `{`
/// or `}` (braces would change a Redis key's hash tag, hence its Cluster slot).
constexpr bool is_key_char(char c) noexcept {
    return c > ' ' && c < 127 && c != '{' && c != '}';
}

/// True when `key` can be locked: 1 to 512 printable ASCII characters, no space, no `{` `}`.
constexpr bool is_valid_lock_key(std::string_view key) noexcept {
    return !key.empty() && key.size() <= max_lock_key_length &&
           std::all_of(key.begin(), key.end(), is_key_char);
}

/// The group of a lock key: the part before its first ':' ("game42:A-12" -> "game42"),
/// or the whole key when it has none. Keys of one group share a fencing counter and, on
/// Redis, a hash tag (one Cluster slot): lock together what shares a group.
constexpr std::string_view lock_group(std::string_view key) noexcept {
    return key.substr(0, key.find(':'));
}

/// Hold tokens are "<event>.<32 lowercase hex digits>": 128 random bits, prefixed by the
/// event so that every call on a hold reaches the event's storage in one step.
inline constexpr std::size_t token_random_hex = 32;

/// The event a hold token belongs to, or an empty view when `token` is malformed.
constexpr std::string_view token_event(std::string_view token) noexcept {
    if (token.size() < token_random_hex + 2) return {};
    const std::size_t dot = token.size() - token_random_hex - 1;
    if (token[dot] != '.') return {};
    const std::string_view random = token.substr(dot + 1);
    const bool hex = std::all_of(random.begin(), random.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
    const std::string_view event = token.substr(0, dot);
    return hex && is_valid_id(event) ? event : std::string_view{};
}

}  // namespace seatlock
