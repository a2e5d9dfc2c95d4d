// SPDX-License-Identifier: MIT
// seat_feed.hpp: the seat maps a server process serves to viewers, kept in memory.
//
// One SeatFeed per process keeps one Snapshot per event: the state of every seat at one
// version. A single reader (a coroutine on its own strand) keeps them current from the
// library's change feed: every `interval` it asks the storage, once per event, for the
// changes after its snapshot's version (SeatHoldStore::changes) and applies them; a
// write made by this process (note_write) wakes it early. When the storage no longer
// has those changes (changes_trimmed), or answers that the version is ahead of it (it
// went back to older data), the reader reads the whole map again (seats()). Viewers
// never cause a storage call: GET /events/{id}/seats, ?since= and the stream
// (sse_stream.hpp) read the snapshots and the recent changes kept here.
//
// A snapshot is immutable once published, shared by every reader of it; its encoded
// answers (the compact wire form of wire_form.hpp, and a gzip copy) are built once, on
// first use.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <seatlock/vocabulary.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "metrics.hpp"
#include "ticketing.hpp"

namespace ticketing {

/// How the reader follows the change feed.
struct FeedOptions {
    /// How often the reader asks the storage for each event's changes.
    std::chrono::milliseconds interval{50};
    /// After a write of this process the reader asks at once, but never more often than this.
    std::chrono::milliseconds min_gap{5};
    /// The most changes one storage call returns.
    std::size_t page_limit = 2000;
    /// The recent changes kept per event for ?since= and stream resumes; older ones are
    /// answered with a whole snapshot.
    std::size_t retained_changes = 20000;
};

/// The seat ids of one named zone, in zone order, and how the wire form names them.
struct ZoneLayout {
    std::vector<std::string> ids;
    std::unordered_map<std::string, std::uint32_t> index;  ///< seat id -> position
    std::string rows_json;  ///< the "rows" member of the wire form (wire_form.hpp)
};

/// One zone at one version.
struct ZoneView {
    std::string zone;
    seatlock::ZoneKind kind = seatlock::ZoneKind::named;
    std::int64_t capacity = 0, free = 0, held = 0, paid = 0;
    std::string states;  ///< named: one character per seat, in zone order ('f', 'h', 'p')
    std::map<std::uint32_t, std::int64_t> expires;  ///< held seat position -> expires_at (ms)
};

/// An answer encoded once: its body and the same body gzip-compressed.
struct Encoded {
    std::string body;
    std::string gzip;
};

/// An event's seats at one version; immutable once published.
class Snapshot {
public:
    std::string event;
    seatlock::EventVersion version = 0;
    seatlock::EventHistory history = 0;  ///< the event's history `version` belongs to
    std::vector<std::shared_ptr<const ZoneView>> zones;
    std::vector<std::shared_ptr<const ZoneLayout>> layouts;  ///< per zone (named zones)
    /// The writes of this process (SeatFeed::note_write) the storage had answered before
    /// the read that made this snapshot.
    std::uint64_t covers_writes = 0;
    /// Ticketing::repairs() when the read that made this snapshot was sent. One from before
    /// this server's latest repair may show the storage as it was before it lost data (a
    /// sale of another server that this process had not read yet is missing from it).
    std::uint64_t repairs = 0;
    /// The stream frame of the changes from the previous published snapshot to this one,
    /// and that snapshot's version ("" when this one came from a whole read).
    std::string changes_frame;
    seatlock::EventVersion changes_from = 0;

    /// The whole map in the wire form, and its gzip copy; built on first use.
    const Encoded& full() const;
    /// The stream frame carrying the whole map; built on first use.
    const std::string& snapshot_frame() const;
    /// The position of zone `zone`, or -1.
    [[nodiscard]] int zone_index(std::string_view zone) const;

private:
    mutable std::once_flag full_once_, frame_once_;
    mutable Encoded full_;
    mutable std::string frame_;
};

/// Something woken when an event's snapshot moves on (a stream viewer). Called from the
/// reader's strand: it must only note the wake-up and return.
class FeedListener {
public:
    virtual ~FeedListener() = default;
    virtual void wake() = 0;
};

/// The changes after a version, as `since` finds them.
struct ChangesSince {
    enum class Outcome { ok, trimmed, ahead } outcome = Outcome::ok;
    std::shared_ptr<const Snapshot> snapshot;    ///< the state the changes lead to
    std::vector<seatlock::SeatChange> changes;  ///< outcome ok: in version order
};

/// A stream frame that brings a viewer to `version` of `history` (text null: nothing new).
struct StreamFrame {
    std::shared_ptr<const std::string> text;
    seatlock::EventVersion version = 0;
    seatlock::EventHistory history = 0;
    /// A later snapshot exists than the frame leads to: ask again on the next tick.
    bool behind = false;
};

/// The process's snapshots and their reader; thread-safe.
class SeatFeed {
public:
    /// `ticketing` and `metrics` must outlive the feed. `events`: the ids of the venue's
    /// events (fixed for the life of the process).
    SeatFeed(Ticketing& ticketing, Metrics& metrics, std::vector<std::string> events,
             FeedOptions options = {});
    ~SeatFeed();
    SeatFeed(const SeatFeed&) = delete;
    SeatFeed& operator=(const SeatFeed&) = delete;

    /// Starts the reader on `executor` (a strand of its own is made on it).
    void start(const boost::asio::any_io_executor& executor);
    /// Stops the reader and waits for it. From a thread that does not run the executor.
    void stop();

    /// Whether `event` is one of the venue's events.
    [[nodiscard]] bool knows(std::string_view event) const;
    /// The latest snapshot of `event`; null before the first read of it succeeded (or for
    /// an event the venue does not have).
    [[nodiscard]] std::shared_ptr<const Snapshot> current(std::string_view event) const;
    /// The latest snapshot of `event`, waited for (never more than `timeout`) until it
    /// covers every write of this process answered before the call (a buyer reads their
    /// own writes) and was read after this server's latest repair (the reader is woken
    /// for it). Null as for current().
    boost::asio::awaitable<std::shared_ptr<const Snapshot>> fresh(
        std::string event, std::chrono::milliseconds timeout);
    /// The changes of `event` after version `after`, from memory. Trimmed for a version
    /// this process also published on an earlier history of the event (a viewer's
    /// version names no history).
    [[nodiscard]] ChangesSince since(std::string_view event, seatlock::EventVersion after) const;

    /// The stream frame from version `after` to the snapshot of tick `tick`: its changes
    /// when they are kept, the whole map otherwise. The first call of a tick (a number
    /// that only grows: the stream's coalescing period on the steady clock) fixes that
    /// tick's snapshot, the latest then; every viewer composing in the same tick is
    /// brought to it, so viewers that keep up stay at one version and share one frame per
    /// tick however often the snapshot moves on. Frames are kept for the tick.
    /// A viewer at a version of another history than the tick's snapshot (`history`: the
    /// one of the frame it was sent last) gets the whole map.
    [[nodiscard]] StreamFrame frame_after(std::string_view event, seatlock::EventVersion after,
                                          seatlock::EventHistory history, std::int64_t tick) const;

    /// A write of this process (hold, release, ...) was answered: the reader asks soon.
    void note_write();

    /// Registers a listener of `event`'s snapshots; it is dropped once it expires.
    void listen(std::string_view event, std::weak_ptr<FeedListener> listener);

    /// The gauges of every event's latest snapshot in Prometheus text format: its seats by
    /// state (free, held, paid; a general-admission zone's places count as seats) and its
    /// version. From memory, no storage call: for Metrics::add_scraped. An event not read
    /// yet has no sample.
    [[nodiscard]] std::string render_gauges() const;

private:
    struct EventFeed;
    struct Reader;
    EventFeed* find(std::string_view event) const;
    boost::asio::awaitable<void> run();
    void wake();
    boost::asio::awaitable<bool> follow(EventFeed& feed);
    void publish(EventFeed& feed, std::shared_ptr<const Snapshot> next,
                 std::vector<seatlock::SeatChange> changes, bool whole);

    Ticketing& ticketing_;
    Metrics& metrics_;
    FeedOptions options_;
    std::vector<std::unique_ptr<EventFeed>> events_;
    std::atomic<std::uint64_t> writes_{0};
    std::shared_ptr<Reader> reader_;
    std::future<void> finished_;
};

}  // namespace ticketing
