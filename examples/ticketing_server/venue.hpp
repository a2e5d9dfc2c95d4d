// SPDX-License-Identifier: MIT
// venue.hpp: what the server sells. The built-in demo venue, --venue FILE in JSON, and
// the storage as a server sees it: only its venue's events.
//
// A venue file holds one event or {"events": [...]}. Each zone is either
// general admission ("capacity": N) or named seats, listed flat ("seats": ["1", "2"])
// or by row ("rows": [{"row": "A", "seats": 12}] names them A-1..A-12; a list of ids
// may replace the count):
//
//     {"events": [{"id": "spring-gig", "name": "Spring gig",
//                  "zones": [{"id": "floor", "capacity": 300},
//                            {"id": "balcony", "rows": [{"row": "A", "seats": 10}]}]}]}
//
// An event may name a waiting room (docs/waiting-room.md) that buyers pass before they
// hold its seats (rooms.hpp):
//
//     "room": {"id": "spring-gig-line", "opens_at": "2026-12-05T18:00:00Z",
//              "admit_per_second": 50, "max_active": 500,
//              "admission_ttl_s": 900, "no_show_after_s": 120}
#pragma once

#include <seatlock/any_backend.hpp>
#include <seatlock/backend.hpp>
#include <seatlock/result.hpp>
#include <seatlock/room_vocabulary.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ticketing {

/// The id of the demo venue's only event.
inline constexpr std::string_view demo_event_id = "demo-game";

/// A baseball stadium: named-seat zones lower-1, lower-2 (rows A-F, 12 seats each),
/// upper-1 (rows A-H, 16 seats each) with seats "A-1", "A-2", ..., and two
/// general-admission bleachers, bleachers-left and bleachers-right (200 places each).
std::vector<seatlock::EventSpec> demo_venue();

/// The waiting room an event's buyers pass before they hold seats.
struct VenueRoom {
    std::string id;     ///< the room's id (an id: no ':', WaitingRoom's rules)
    std::string event;  ///< the event whose holds need its admission
    seatlock::RoomConfig config;
};

/// What a venue file describes: its events, and the rooms some of them name.
struct Venue {
    std::vector<seatlock::EventSpec> events;
    std::vector<VenueRoom> rooms;
};

/// Parses a venue document and checks every event by SeatHoldStore's rules (ids,
/// counts, duplicates; an event id twice) and every room by WaitingRoom's (its id, a rate
/// in (0, 10^6], max_active >= 1, durations > 0; a room named by two events), so that a
/// bad event is found before any is stored; invalid_argument naming the offending field
/// or event otherwise.
seatlock::Result<Venue> parse_venue(std::string_view json_text);

/// Reads and parses a venue file.
seatlock::Result<Venue> load_venue(const std::string& path);

/// An instant in RFC 3339 UTC, as the server writes them: "2026-12-05T18:00:00Z", with
/// an optional fraction of a second ("...:00.250Z"); nothing for any other text.
std::optional<seatlock::WallTime> parse_utc_time(std::string_view text);

/// `backend` narrowed to the venue's events. A storage shared by several servers (Redis)
/// may hold other venues' events too; through this view a server lists only its own and
/// answers unknown_event for the others, whether named by event id or by hold token.
/// Every other operation (locks, the expiry feed, ...) is the backend's, unchanged.
seatlock::AnyBackend venue_view(seatlock::AnyBackend backend,
                                const std::vector<seatlock::EventSpec>& venue);

}  // namespace ticketing
