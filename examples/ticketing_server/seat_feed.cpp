// SPDX-License-Identifier: MIT
// seat_feed.cpp: the reader and the snapshots it publishes.
#include "seat_feed.hpp"

#include <algorithm>
#include <limits>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "log.hpp"
#include "wire_form.hpp"

namespace ticketing {
namespace asio = boost::asio;
using seatlock::errc;
using seatlock::EventVersion;
using seatlock::EventHistory;
using seatlock::SeatChange;

const Encoded& Snapshot::full() const {
    std::call_once(full_once_, [this] {
        full_.body = encode_map(*this);
        full_.gzip = gzip(full_.body);
    });
    return full_;
}

const std::string& Snapshot::snapshot_frame() const {
    std::call_once(frame_once_,
                   [this] { frame_ = sse_frame(version, "snapshot", full().body); });
    return frame_;
}

int Snapshot::zone_index(std::string_view zone) const {
    for (std::size_t i = 0; i < zones.size(); ++i) {
        if (zones[i]->zone == zone) return static_cast<int>(i);
    }
    return -1;
}

// One event: its latest snapshot, the recent changes, and who listens.
struct SeatFeed::EventFeed {
    std::string id;
    mutable std::mutex mutex;
    std::shared_ptr<const Snapshot> snapshot;
    // The changes after `base`, in version order, up to the snapshot's version.
    std::deque<SeatChange> changes;
    EventVersion base = 0;
    // The highest version published on an earlier history of the event (a recovery, by
    // any server, started its versions again: SeatHoldStore::changes): a viewer's version
    // up to it may be of either history, so it gets the whole map.
    EventVersion unsure_until = 0;
    std::vector<std::weak_ptr<FeedListener>> listeners;
    // The stream's tick (frame_after), its snapshot, and its frames to that snapshot's
    // version, by the version they start from.
    mutable std::int64_t tick = std::numeric_limits<std::int64_t>::min();
    mutable std::shared_ptr<const Snapshot> tick_snapshot;
    // Keyed by the starting version and whether the whole map was due (another history).
    mutable std::map<std::pair<EventVersion, bool>, std::shared_ptr<const std::string>> frames;
    bool failing = false;  // reader only: the last read failed (logged once)
    std::uint64_t repairs_seen = 0;  // reader only: Ticketing::repairs() at the last whole read
};

// The reader's strand and timer, shared with whoever wakes or stops it.
struct SeatFeed::Reader {
    explicit Reader(const asio::any_io_executor& executor)
        : strand(asio::make_strand(executor)), timer(strand) {}
    asio::strand<asio::any_io_executor> strand;
    asio::steady_timer timer;
    std::atomic<bool> stopping{false};
    std::atomic<bool> woken{false};
};

SeatFeed::SeatFeed(Ticketing& ticketing, Metrics& metrics, std::vector<std::string> events,
                   FeedOptions options)
    : ticketing_(ticketing), metrics_(metrics), options_(options) {
    for (auto& id : events) {
        auto feed = std::make_unique<EventFeed>();
        feed->id = std::move(id);
        events_.push_back(std::move(feed));
    }
}

SeatFeed::~SeatFeed() {
    if (reader_) {
        reader_->stopping = true;
        asio::post(reader_->strand, [reader = reader_] { reader->timer.cancel(); });
    }
}

void SeatFeed::start(const asio::any_io_executor& executor) {
    reader_ = std::make_shared<Reader>(executor);
    finished_ = asio::co_spawn(reader_->strand, run(), asio::use_future);
}

void SeatFeed::stop() {
    if (!finished_.valid()) return;
    reader_->stopping = true;
    asio::post(reader_->strand, [reader = reader_] { reader->timer.cancel(); });
    finished_.get();
}

SeatFeed::EventFeed* SeatFeed::find(std::string_view event) const {
    for (const auto& feed : events_) {
        if (feed->id == event) return feed.get();
    }
    return nullptr;
}

bool SeatFeed::knows(std::string_view event) const {
    return find(event) != nullptr;
}

std::string SeatFeed::render_gauges() const {
    std::string seats =
        "# HELP seatlock_ticketing_seats Seats of each event by state (free, held, paid), as "
        "of the seat feed's latest snapshot.\n"
        "# TYPE seatlock_ticketing_seats gauge\n";
    std::string versions =
        "# HELP seatlock_ticketing_event_version The version of each event's latest snapshot "
        "(it grows with every change of its seats).\n"
        "# TYPE seatlock_ticketing_event_version gauge\n";
    for (const auto& feed : events_) {
        const auto snapshot = current(feed->id);
        if (!snapshot) continue;
        std::int64_t free = 0, held = 0, paid = 0;
        for (const auto& zone : snapshot->zones) {
            free += zone->free;
            held += zone->held;
            paid += zone->paid;
        }
        // Event ids are validated ids (seatlock::validate_id): nothing to escape in a label.
        const std::pair<const char*, std::int64_t> counts[] = {
            {"free", free}, {"held", held}, {"paid", paid}};
        for (const auto& [state, n] : counts) {
            fmt::format_to(std::back_inserter(seats),
                           "seatlock_ticketing_seats{{event=\"{}\",state=\"{}\"}} {}\n", feed->id,
                           state, n);
        }
        fmt::format_to(std::back_inserter(versions),
                       "seatlock_ticketing_event_version{{event=\"{}\"}} {}\n", feed->id,
                       snapshot->version);
    }
    return seats + versions;
}

std::shared_ptr<const Snapshot> SeatFeed::current(std::string_view event) const {
    const EventFeed* feed = find(event);
    if (!feed) return nullptr;
    std::lock_guard lock(feed->mutex);
    return feed->snapshot;
}

asio::awaitable<std::shared_ptr<const Snapshot>> SeatFeed::fresh(std::string event,
                                                                 std::chrono::milliseconds timeout) {
    const std::uint64_t writes = writes_.load();
    const std::uint64_t repairs = ticketing_.repairs();
    auto snapshot = current(event);
    // A snapshot read before this server's repair may miss sales of other servers made
    // just before the storage lost its data, which the repair restored: the reader reads
    // the whole map again on its next pass, woken here rather than after its interval.
    const auto behind = [&] {
        if (!snapshot) return false;
        if (snapshot->repairs < repairs) {
            wake();
            return true;
        }
        return snapshot->covers_writes < writes;
    };
    if (!behind()) co_return snapshot;
    // The reader was woken by those writes; it publishes within min_gap plus one call.
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (behind() && std::chrono::steady_clock::now() < deadline) {
        timer.expires_after(std::chrono::milliseconds(1));
        boost::system::error_code ignored;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        snapshot = current(event);
    }
    co_return snapshot;
}

ChangesSince SeatFeed::since(std::string_view event, EventVersion after) const {
    ChangesSince out;
    const EventFeed* feed = find(event);
    if (!feed) return out;
    std::lock_guard lock(feed->mutex);
    out.snapshot = feed->snapshot;
    if (!out.snapshot) return out;
    if (after > out.snapshot->version) {
        out.outcome = ChangesSince::Outcome::ahead;
    } else if (after < feed->base || after <= feed->unsure_until) {
        out.outcome = ChangesSince::Outcome::trimmed;
    } else {
        const auto first =
            std::upper_bound(feed->changes.begin(), feed->changes.end(), after,
                             [](EventVersion v, const SeatChange& c) { return v < c.version; });
        out.changes.assign(first, feed->changes.end());
    }
    return out;
}

StreamFrame SeatFeed::frame_after(std::string_view event, EventVersion after, EventHistory history,
                                  std::int64_t tick) const {
    const EventFeed* feed = find(event);
    if (!feed) return {};
    std::unique_lock lock(feed->mutex);
    if (tick != feed->tick || !feed->tick_snapshot) {
        feed->tick = tick;
        feed->tick_snapshot = feed->snapshot;
        feed->frames.clear();
    }
    const auto snapshot = feed->tick_snapshot;
    if (!snapshot) return {};
    StreamFrame out{nullptr, snapshot->version, snapshot->history,
                    feed->snapshot->version != snapshot->version};
    // A viewer brought to a version of another history gets the whole map.
    const bool whole = history != snapshot->history;
    if (snapshot->version == after && !whole) return out;
    if (const auto kept = feed->frames.find({after, whole}); kept != feed->frames.end()) {
        out.text = kept->second;
        return out;
    }
    std::string text;
    if (whole) {
        lock.unlock();
        text = snapshot->snapshot_frame();
        lock.lock();
    } else if (after == snapshot->changes_from && !snapshot->changes_frame.empty()) {
        text = snapshot->changes_frame;
    } else if (after >= feed->base && after < snapshot->version) {
        const auto by_version = [](EventVersion v, const SeatChange& c) { return v < c.version; };
        const auto first = std::upper_bound(feed->changes.begin(), feed->changes.end(), after, by_version);
        const auto end = std::upper_bound(first, feed->changes.end(), snapshot->version, by_version);
        const std::vector<SeatChange> changes(first, end);
        lock.unlock();
        text = sse_frame(snapshot->version, "changes", encode_changes(*snapshot, after, changes));
        lock.lock();
    } else {
        lock.unlock();
        text = snapshot->snapshot_frame();
        lock.lock();
    }
    out.text = std::make_shared<const std::string>(std::move(text));
    // Kept for the rest of the tick, for a bounded few starting versions.
    if (feed->tick == tick && feed->tick_snapshot == snapshot && feed->frames.size() < 64)
        feed->frames.emplace(std::pair{after, whole}, out.text);
    return out;
}

void SeatFeed::note_write() {
    writes_.fetch_add(1);
    wake();
}

void SeatFeed::wake() {
    if (!reader_) return;
    if (reader_->woken.exchange(true)) return;
    asio::post(reader_->strand, [reader = reader_] { reader->timer.cancel(); });
}

void SeatFeed::listen(std::string_view event, std::weak_ptr<FeedListener> listener) {
    EventFeed* feed = find(event);
    if (!feed) return;
    std::lock_guard lock(feed->mutex);
    feed->listeners.push_back(std::move(listener));
}

namespace {

std::shared_ptr<Snapshot> from_map(const std::string& event, const seatlock::SeatMap& map,
                                   const Snapshot* previous) {
    auto next = std::make_shared<Snapshot>();
    next->event = event;
    next->version = map.version;
    next->history = map.history;
    for (const auto& zone : map.zones) {
        auto view = std::make_shared<ZoneView>();
        view->zone = zone.zone;
        view->kind = zone.kind;
        view->capacity = zone.capacity;
        view->free = zone.free;
        view->held = zone.held;
        view->paid = zone.paid;
        std::shared_ptr<const ZoneLayout> layout;
        if (zone.kind == seatlock::ZoneKind::named) {
            // The venue does not change: the layout of the previous snapshot is kept when
            // its seats are the same.
            if (previous) {
                const int at = previous->zone_index(zone.zone);
                const auto& old = at >= 0 ? previous->layouts[static_cast<std::size_t>(at)]
                                          : std::shared_ptr<const ZoneLayout>();
                bool same = old && old->ids.size() == zone.seats.size();
                for (std::size_t i = 0; same && i < zone.seats.size(); ++i)
                    same = old->ids[i] == zone.seats[i].id;
                if (same) layout = old;
            }
            if (!layout) layout = std::make_shared<ZoneLayout>(make_layout(zone.seats));
            view->states.reserve(zone.seats.size());
            for (std::size_t i = 0; i < zone.seats.size(); ++i) {
                const auto& seat = zone.seats[i];
                view->states += state_char(seat.state);
                if (seat.state == seatlock::SeatState::held) {
                    view->expires[static_cast<std::uint32_t>(i)] = to_unix_ms(seat.expires_at);
                }
            }
        }
        next->zones.push_back(std::move(view));
        next->layouts.push_back(std::move(layout));
    }
    return next;
}

// `previous` with `changes` applied; zones without a change are shared with it.
std::shared_ptr<Snapshot> apply(const Snapshot& previous, EventVersion version,
                                const std::vector<SeatChange>& changes) {
    auto next = std::make_shared<Snapshot>();
    next->event = previous.event;
    next->version = version;
    next->history = previous.history;  // changes() answers only on the snapshot's history
    next->zones = previous.zones;
    next->layouts = previous.layouts;
    std::vector<std::shared_ptr<ZoneView>> copied(next->zones.size());
    for (const auto& change : changes) {
        const int at = previous.zone_index(change.zone);
        if (at < 0) continue;
        const auto i = static_cast<std::size_t>(at);
        if (!copied[i]) {
            copied[i] = std::make_shared<ZoneView>(*previous.zones[i]);
            next->zones[i] = copied[i];
        }
        ZoneView& zone = *copied[i];
        zone.free = change.free;
        zone.held = change.held;
        zone.paid = change.paid;
        if (change.seat.empty() || !next->layouts[i]) continue;
        const auto found = next->layouts[i]->index.find(change.seat);
        if (found == next->layouts[i]->index.end()) continue;
        zone.states[found->second] = state_char(change.state);
        if (change.state == seatlock::SeatState::held)
            zone.expires[found->second] = to_unix_ms(change.expires_at);
        else
            zone.expires.erase(found->second);
    }
    return next;
}

}  // namespace

void SeatFeed::publish(EventFeed& feed, std::shared_ptr<const Snapshot> next,
                       std::vector<SeatChange> changes, bool whole) {
    std::vector<std::shared_ptr<FeedListener>> listeners;
    {
        std::lock_guard lock(feed.mutex);
        if (whole) {
            if (feed.snapshot && feed.snapshot->history != next->history)
                feed.unsure_until = std::max(feed.unsure_until, feed.snapshot->version);
            feed.changes.clear();
            feed.base = next->version;
        } else {
            for (auto& change : changes) feed.changes.push_back(std::move(change));
            // Trimmed by whole steps: a step's changes are never split.
            while (feed.changes.size() > options_.retained_changes) {
                const EventVersion step = feed.changes.front().version;
                while (!feed.changes.empty() && feed.changes.front().version == step)
                    feed.changes.pop_front();
                feed.base = step;
            }
        }
        feed.snapshot = std::move(next);
        auto& list = feed.listeners;
        list.erase(std::remove_if(list.begin(), list.end(),
                                  [](const std::weak_ptr<FeedListener>& l) { return l.expired(); }),
                   list.end());
        for (const auto& weak : list) {
            if (auto listener = weak.lock()) listeners.push_back(std::move(listener));
        }
    }
    metrics_.snapshot_published();
    for (const auto& listener : listeners) listener->wake();
}

// One storage call for `feed` (two when its map must be read whole); true when it moved on
// and more changes are waiting.
asio::awaitable<bool> SeatFeed::follow(EventFeed& feed) {
    const std::uint64_t writes = writes_.load();
    std::shared_ptr<const Snapshot> previous;
    {
        std::lock_guard lock(feed.mutex);
        previous = feed.snapshot;
    }
    std::string failure;
    bool more = false;
    // After a repair the storage's versions may have gone back and on again: only a
    // whole read is sure to match it.
    const std::uint64_t repairs = ticketing_.repairs();
    bool whole = !previous || repairs != feed.repairs_seen;
    if (!whole) {
        metrics_.feed_storage_call();
        auto page = co_await ticketing_.changes(feed.id, {previous->version, previous->history},
                                                options_.page_limit);
        if (page) {
            if (page->version != previous->version || !page->changes.empty()) {
                auto next = apply(*previous, page->version, page->changes);
                next->covers_writes = writes;
                next->repairs = repairs;
                next->changes_from = previous->version;
                next->changes_frame =
                    sse_frame(next->version, "changes",
                              encode_changes(*next, previous->version, page->changes));
                publish(feed, std::move(next), std::move(page->changes), false);
            } else if (previous->covers_writes < writes) {
                // Nothing new, but the writes made so far are in: republish the same state
                // as covering them (readers waiting in fresh() go on).
                auto same = std::make_shared<Snapshot>();
                same->event = previous->event;
                same->version = previous->version;
                same->history = previous->history;
                same->zones = previous->zones;
                same->layouts = previous->layouts;
                same->covers_writes = writes;
                same->repairs = repairs;
                same->changes_from = previous->changes_from;
                same->changes_frame = previous->changes_frame;
                std::lock_guard lock(feed.mutex);
                feed.snapshot = std::move(same);
            }
            more = page->more;
        } else if (page.is(errc::changes_trimmed) || page.is(errc::invalid_argument) ||
                   page.is(errc::unknown_event) || page.is(errc::storage_lost)) {
            // The log no longer has these changes or they are of another history (a
            // recovery, by any server, since this snapshot), or the storage is behind this
            // snapshot (it went back to older data): read the whole map again.
            whole = true;
        } else {
            failure = page.error().message();
        }
    }
    if (whole) {
        metrics_.feed_storage_call();
        auto map = co_await ticketing_.seat_map(feed.id);
        if (map) {
            auto next = from_map(feed.id, *map, previous.get());
            next->covers_writes = writes;
            next->repairs = repairs;
            publish(feed, std::move(next), {}, true);
            feed.repairs_seen = repairs;
        } else {
            failure = map.error().message();
        }
    }
    if (!failure.empty() && !feed.failing)
        log_warn("seat feed of {} failing: {}", feed.id, failure);
    if (failure.empty() && feed.failing) log("seat feed of {} working again", feed.id);
    feed.failing = !failure.empty();
    co_return more;
}

asio::awaitable<void> SeatFeed::run() {
    auto& reader = *reader_;
    while (!reader.stopping) {
        reader.woken = false;
        const auto started = std::chrono::steady_clock::now();
        bool more = false;
        for (const auto& feed : events_) {
            try {
                more = (co_await follow(*feed)) || more;
            } catch (const std::exception& e) {
                log_error("seat feed of {} failed: {}", feed->id, e.what());
            }
            if (reader.stopping) co_return;
        }
        if (more) continue;
        // Every `interval`, or sooner when this process wrote (note_write cancels the
        // timer), but never sooner than min_gap after the last pass began.
        reader.timer.expires_at(started + options_.interval);
        boost::system::error_code cancelled;
        if (!reader.woken) {
            co_await reader.timer.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
        }
        if (reader.stopping) break;
        reader.timer.expires_at(started + options_.min_gap);
        co_await reader.timer.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
    }
}

}  // namespace ticketing
