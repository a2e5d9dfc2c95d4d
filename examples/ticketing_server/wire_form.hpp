// SPDX-License-Identifier: MIT
// wire_form.hpp: the compact wire form of seat maps and changes (docs/ticketing-server.md,
// "The wire form"), the Server-Sent Events frames that carry them, and gzip.
//
// A named zone's seats are one string of one character per seat in zone order ('f' free,
// 'h' held, 'p' paid); their ids follow from the zone's rows, given once per map as
// [row, count] (ids row-1 .. row-count) or [row, [ids...]] when they do not follow that
// pattern. Held seats' expires_at are a short list of [position, Unix ms].
#pragma once

#include <cstdint>
#include <seatlock/vocabulary.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "seat_feed.hpp"

namespace ticketing {

/// The character of a seat state in the wire form: 'f', 'h' or 'p'.
char state_char(seatlock::SeatState state);

/// Appends `text` as a JSON string (quoted, escaped) to `out`.
void append_json_string(std::string& out, std::string_view text);

/// The layout of a named zone from its seats in zone order.
ZoneLayout make_layout(const std::vector<seatlock::SeatStatus>& seats);

/// The seat map of `snapshot` in the wire form: every zone, or only zone `only` (its
/// position) when `only` >= 0.
std::string encode_map(const Snapshot& snapshot, int only = -1);

/// The changes after `after` up to `snapshot`'s version in the wire form: each seat once,
/// at its last change (a viewer needs the state at that version, not every step to it),
/// named by its position in its zone and grouped by zone and state; held seats grouped by
/// expiry, given from the frame's `base`. The counts of every zone they touch are read
/// from `snapshot`.
std::string encode_changes(const Snapshot& snapshot, seatlock::EventVersion after,
                           const std::vector<seatlock::SeatChange>& changes);

/// A Server-Sent Events frame: `id: <version>`, `event: <kind>`, `data: <json>`.
std::string sse_frame(seatlock::EventVersion version, std::string_view kind,
                      std::string_view json);

/// `data` compressed in the gzip format (zlib), at a fast level.
std::string gzip(std::string_view data);

}  // namespace ticketing
