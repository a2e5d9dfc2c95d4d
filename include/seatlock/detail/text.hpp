// SPDX-License-Identifier: MIT
// seatlock/detail/text.hpp: how failures name seats and keys; one place for every backend
// and front class, so that every backend says the same sentence for the same refusal.
#pragma once

#include <seatlock/result.hpp>

#include <string>
#include <vector>

namespace seatlock::detail {

/// "A-1, A-2"
inline std::string join(const std::vector<std::string>& items) {
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i) text += (i ? ", " : "") + items[i];
    return text;
}

/// "key k" or "keys a, b"
inline std::string name_keys(const std::vector<std::string>& keys) {
    return (keys.size() == 1 ? "key " : "keys ") + join(keys);
}

/// The lock_busy refusal naming the keys held by someone else.
inline Failure keys_busy(std::vector<std::string> held) {
    std::string text = name_keys(held) + (held.size() == 1 ? " is" : " are") + " held by another owner";
    return Failure(errc::lock_busy, std::move(text), std::move(held));
}

}  // namespace seatlock::detail
