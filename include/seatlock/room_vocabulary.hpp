// SPDX-License-Identifier: MIT
// seatlock/room_vocabulary.hpp: the vocabulary of the waiting room (seatlock/waiting_room.hpp)
// that its front class, its operations (seatlock/operations.hpp) and every backend share.
// The rules are in docs/waiting-room.md.
#pragma once

#include <seatlock/vocabulary.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace seatlock {

/// How a room admits its visitors.
struct RoomConfig {
    /// Who joins before this instant is put in a random order, drawn when it comes; who
    /// joins later queues in arrival order. Nobody is admitted before it.
    WallTime opens_at{};
    /// Admissions per second, at most (> 0; fractions allowed: 0.5 is one every 2 s).
    double admit_per_second = 0;
    /// Visitors admitted and not yet finished, lapsed or expired, at most (>= 1).
    std::uint64_t max_active = 0;
    /// How long an admission lasts once the visitor collected it (admission()): the
    /// token's lifetime, and the longest the visitor keeps a slot.
    Millis admission_ttl{};
    /// How long an admitted visitor has to collect the admission; after that the visitor
    /// is a no-show, and the slot goes to the next in line.
    Millis no_show_after{};
    /// The seed of the draw: 1 to 128 characters of [A-Za-z0-9._@+-]. Drawn from the
    /// operating system's random source when absent. Kept by the storage from the room's
    /// first configuration on: every server draws the same order. Give one to reproduce a
    /// draw (tests, an audit after the sale); keep it secret until the room opens.
    std::optional<std::string> shuffle_seed;
};

/// A visitor's place in a room's line: what join() answers, and what position(),
/// admission() and finished() take. Only room and visitor are read by those calls.
struct QueueTicket {
    std::string room;
    std::string visitor;
    WallTime joined_at{};  ///< when the visitor first joined (storage time)
    /// True when the visitor joined before the room opened: the draw decides the place.
    bool in_draw = false;
    /// True when the visitor had joined before: this is that first ticket.
    bool replayed = false;
};

/// Where a visitor stands.
enum class QueueState {
    waiting,   ///< in the line
    admitted,  ///< admitted: collect the admission (admission()) before no_show_after
    active,    ///< admission collected, and neither finished nor expired
    finished,  ///< finished() was called: the slot is free
    lapsed,    ///< a no-show, or an admission that expired: the slot went to the next
};

/// "waiting", "admitted", "active", "finished", "lapsed".
constexpr const char* to_string(QueueState s) noexcept {
    switch (s) {
        case QueueState::waiting: return "waiting";
        case QueueState::admitted: return "admitted";
        case QueueState::active: return "active";
        case QueueState::finished: return "finished";
        case QueueState::lapsed: return "lapsed";
    }
    return "?";
}

/// A visitor's place in line and the wait to expect.
struct QueuePosition {
    QueueState state = QueueState::waiting;
    /// While waiting after the room opened: 1 for the next visitor to be admitted. Empty
    /// before the room opens (the draw is not fixed yet) and in the other states.
    std::optional<std::uint64_t> place;
    /// Visitors waiting in the line (all of them, in the draw too).
    std::uint64_t waiting = 0;
    /// While waiting: the time until opening, plus place / admit_per_second once open.
    /// The rate is the most admit() lets in: slots taken (max_active) make it longer.
    Millis estimated_wait{0};
    WallTime opens_at{};
    /// admitted: the collection deadline; active: when the admission expires.
    WallTime deadline{};
};

/// What one admit() step did.
struct AdmitReport {
    std::vector<std::string> admitted;  ///< visitors admitted by this step, in line order
    std::uint64_t lapsed = 0;           ///< no-shows and expired admissions freed by it
    std::uint64_t active = 0;           ///< visitors admitted or active after it
    std::uint64_t waiting = 0;          ///< visitors still in line after it
};

/// A signed admission: the visitor may act in the room until expires_at. `token` carries
/// room, visitor and expiry with an HMAC-SHA-256 over them (seatlock/admission.hpp), so
/// any server holding the key checks it without a storage call.
struct Admission {
    std::string room;
    std::string visitor;
    WallTime expires_at{};
    std::string token;
};

}  // namespace seatlock
