// SPDX-License-Identifier: MIT
// benchmarks/viewer_parts.hpp: the pieces of the viewers scenario (viewers.hpp) that need
// no server: reading a Server-Sent Events stream without keeping its data, the versions
// an answer carries, the staleness of what viewers see, and the venue file the server is
// started with.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"

namespace seatlock::bench {

/// One event of a Server-Sent Events stream: its `id:` and `event:` fields (empty when
/// it has none) and how many bytes its `data:` lines held (values and line ends, roughly
/// the data's size). The data itself is not kept: a
/// viewer of the benchmark needs only the version, which is the `id:`.
struct SseEvent {
    std::string id;
    std::string type;
    std::size_t data_bytes = 0;
};

/// Reads a text/event-stream body fed in pieces of any size (the HTTP head already
/// removed). Lines end with LF, CRLF or CR; a blank line ends an event; a line beginning
/// with ':' is a comment (the server's heartbeat). Keeps a few bytes per stream, whatever
/// the size of the data lines.
class SseParser {
public:
    using OnEvent = std::function<void(const SseEvent&)>;

    /// Parses `bytes`, calling `on_event` for every event they complete.
    void feed(std::string_view bytes, const OnEvent& on_event);

    [[nodiscard]] std::uint64_t events() const noexcept { return events_; }
    [[nodiscard]] std::uint64_t comments() const noexcept { return comments_; }

private:
    enum class State { line_start, field, value, skip_value, comment };
    void end_line(const OnEvent& on_event);

    State state_ = State::line_start;
    std::string field_;  // the field name of the current line (at most a few bytes kept)
    std::string value_;  // its value, for id and event
    bool after_cr_ = false;  // the last byte was CR: an LF right after it ends nothing more
    bool value_space_ = false;  // the value's first byte is next (one leading space is dropped)
    SseEvent event_;
    bool event_started_ = false;
    std::uint64_t events_ = 0;
    std::uint64_t comments_ = 0;
};

/// The version an entity tag of the seat map names: `"42"`, `"42-gzip"` (or either
/// weak, `W/"42"`); nothing when it names none.
[[nodiscard]] std::optional<std::uint64_t> version_of_etag(std::string_view tag);

/// The whole number a JSON object's top-level-looking member `"name": N` holds (the first
/// such member in `json`); nothing when there is none. Enough for the server's answers,
/// whose members are plain.
[[nodiscard]] std::optional<std::uint64_t> json_number(std::string_view json,
                                                       std::string_view name);

/// The staleness of what viewers see: the time from a hold's answer (which names the
/// event version it raised the event to) to each viewer's first receipt of that version
/// or a later one. A hold answered every `probe_every` at most is followed (a probe), so
/// that the book costs little whatever the sales rate.
///
/// Thread-safe: the buyers record answers on one thread, the viewers their receipts on
/// another. A viewer that had the version before the hold's answer arrived sees it with
/// staleness 0.
class StalenessBook {
public:
    using Clock = std::chrono::steady_clock;

    explicit StalenessBook(std::chrono::milliseconds probe_every = std::chrono::milliseconds(20))
        : probe_every_(probe_every) {}

    /// A new viewer, which counts from the next probe on: its number.
    int add_viewer();
    /// Forgets every probe and sample, and makes every viewer count from now on (the start
    /// of a measured phase). Viewers keep the version they are at.
    void start();
    /// Until start() again, probes are not taken (the end of the measured phase).
    void stop_probing();
    /// A hold answered at `at` with event version `version`: becomes a probe when the last
    /// probe is at least `probe_every` older and had a lower version.
    void hold_answered(std::uint64_t version, Clock::time_point at);
    /// Viewer `viewer` received version `version` at `at` (a frame, a poll's answer).
    void received(int viewer, std::uint64_t version, Clock::time_point at);
    /// Closes the book at `now`: each probe a viewer had by then and that no receipt
    /// counted yet counts 0; each it never received counts `now - answer` and as missed.
    void finish(Clock::time_point now);

    /// Staleness samples: one per probe and viewer.
    [[nodiscard]] LatencyHistogram samples() const;
    /// Probes taken since start().
    [[nodiscard]] std::size_t probes() const;
    /// (probe, viewer) pairs never delivered by finish().
    [[nodiscard]] std::uint64_t missed() const;

private:
    struct Probe {
        std::uint64_t version;
        Clock::time_point at;
    };
    struct Viewer {
        std::uint64_t version = 0;  // the latest version it received
        std::size_t next = 0;       // the first probe it has not been counted for
    };
    void count(Viewer& viewer, std::uint64_t version, Clock::time_point at);

    const std::chrono::milliseconds probe_every_;
    mutable std::mutex mutex_;
    std::vector<Probe> probes_;
    std::vector<Viewer> viewers_;
    bool probing_ = true;
    LatencyHistogram samples_;
    std::uint64_t missed_ = 0;
};

/// A venue of named seats: `sections` zones of `rows` rows of `seats` seats.
struct VenueShape {
    std::string event = "stadium";
    int sections = 60;
    int rows = 40;
    int seats = 25;

    [[nodiscard]] std::int64_t seat_count() const {
        return static_cast<std::int64_t>(sections) * rows * seats;
    }
    /// Zone `i` (0-based): "s01", "s02", ...
    [[nodiscard]] std::string zone(int i) const;
    /// Row `i` (0-based): "r01", "r02", ...; its seats are "<row>-1" to "<row>-<seats>".
    [[nodiscard]] std::string row(int i) const;
};

/// The venue file of the server's --venue (docs/ticketing-server.md#venue-files): one
/// event of `shape`.
[[nodiscard]] std::string venue_json(const VenueShape& shape);
/// Writes venue_json(shape) to `path`; throws when it cannot.
void write_venue_file(const std::string& path, const VenueShape& shape);

}  // namespace seatlock::bench
