// SPDX-License-Identifier: MIT
// rooms.cpp: the rooms' calls, the hold's gate and the admit timer.
#include "rooms.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "log.hpp"

namespace ticketing {
namespace asio = boost::asio;
using asio::use_awaitable;

// The admit timer, on a strand of its own (as ExpiryDrain's).
struct Rooms::State {
    explicit State(const asio::any_io_executor& executor)
        : strand(asio::make_strand(executor)), timer(strand) {}

    asio::strand<asio::any_io_executor> strand;
    asio::steady_timer timer;
    std::atomic<bool> stopping{false};
};

Rooms::Rooms(seatlock::AnyBackend backend, seatlock::AdmissionKey key, std::vector<VenueRoom> rooms,
             bool fail_open)
    : backend_(std::move(backend)),
      room_(backend_, std::move(key)),
      rooms_(std::move(rooms)),
      fail_open_(fail_open),
      failing_(new std::atomic<bool>[rooms_.size()]),
      configured_(new std::atomic<bool>[rooms_.size()]),
      active_(new std::atomic<std::uint64_t>[rooms_.size()]),
      waiting_(new std::atomic<std::uint64_t>[rooms_.size()]) {
    for (std::size_t i = 0; i < rooms_.size(); ++i) {
        failing_[i] = false;
        configured_[i] = false;
        active_[i] = 0;
        waiting_[i] = 0;
    }
}

Rooms::~Rooms() {
    if (state_) {
        state_->stopping = true;
        asio::post(state_->strand, [state = state_] { state->timer.cancel(); });
    }
}

const VenueRoom* Rooms::of_event(std::string_view event) const {
    for (const auto& room : rooms_)
        if (room.event == event) return &room;
    return nullptr;
}

const VenueRoom* Rooms::find(std::string_view id) const {
    for (const auto& room : rooms_)
        if (room.id == id) return &room;
    return nullptr;
}

// A storage error marks the room failing; any other answer (an answer of the storage)
// healthy again.
template <typename T>
void Rooms::noted(const VenueRoom& room, const seatlock::Result<T>& result) {
    const auto i = static_cast<std::size_t>(&room - rooms_.data());
    const bool failed = !result && result.error().code == seatlock::condition::storage_unavailable;
    if (failing_[i].exchange(failed) != failed) {
        if (failed)
            log_warn("room {}: its storage fails ({}): {}", room.id, result.error().message(),
                     fail_open_
                         ? "holds on event " + room.event + " need no admission meanwhile"
                         : "holds on event " + room.event + " without an admission are refused");
        else
            log("room {}: its storage answers again", room.id);
    }
}

Task<void> Rooms::configure() {
    for (std::size_t i = 0; i < rooms_.size(); ++i) {
        const VenueRoom& room = rooms_[i];
        auto configured = co_await room_.async_configure(room.id, room.config, use_awaitable);
        noted(room, configured);
        if (configured) {
            configured_[i] = true;
        } else if (configured.error().code == seatlock::condition::storage_unavailable) {
            // The room's storage is down: the admit timer configures it once it answers;
            // meanwhile the room fails (open or closed, as the server was told).
            log_warn("room {}: not configured yet, its storage fails ({}); the admit timer tries again",
                     room.id, configured.error().message());
        } else {
            seatlock::Failure failure = std::move(configured).error();
            failure.detail = "room " + room.id + ": " + failure.detail;
            co_return failure;
        }
    }
    co_return seatlock::Result<void>();
}

Task<seatlock::QueueTicket> Rooms::join(const VenueRoom& room, std::string buyer) {
    auto ticket = co_await room_.async_join(room.id, buyer, use_awaitable);
    noted(room, ticket);
    co_return ticket;
}

// The calls' results are named before they are used: g++ 12 mishandles temporaries of
// class type in an expression that also awaits.
Task<seatlock::QueuePosition> Rooms::position(const VenueRoom& room, std::string buyer) {
    const seatlock::QueueTicket ticket{room.id, std::move(buyer)};
    auto where = co_await room_.async_position(ticket, use_awaitable);
    noted(room, where);
    co_return where;
}

Task<seatlock::Admission> Rooms::admission(const VenueRoom& room, std::string buyer) {
    const seatlock::QueueTicket ticket{room.id, std::move(buyer)};
    auto admitted = co_await room_.async_admission(ticket, use_awaitable);
    noted(room, admitted);
    co_return admitted;
}

HoldGate Rooms::gate(std::string_view event, std::string_view buyer,
                     std::optional<std::string_view> token) {
    HoldGate gate;
    gate.room = of_event(event);
    if (!gate.room) return gate;
    if (token) {
        auto admitted = room_.check(*token, gate.room->id);
        if (admitted && admitted->visitor == buyer) {
            gate.outcome = HoldGate::Outcome::admitted;
            return gate;
        }
        gate.why = admitted ? "the admission token is another buyer's than " + std::string(buyer)
                            : admitted.error().detail;
    } else {
        gate.why = fmt::format("no admission: join the line of room {} first", gate.room->id);
    }
    const auto i = static_cast<std::size_t>(gate.room - rooms_.data());
    if (failing_[i].load()) {
        if (fail_open_) {
            fail_open_holds_.fetch_add(1, std::memory_order_relaxed);
            gate.outcome = HoldGate::Outcome::fail_open;
        } else {
            gate.outcome = HoldGate::Outcome::unavailable;
        }
        return gate;
    }
    gate.outcome = HoldGate::Outcome::refused;
    return gate;
}

asio::awaitable<void> Rooms::done(std::string buyer, std::string event) {
    const VenueRoom* room = of_event(event);
    if (!room) co_return;
    const seatlock::QueueTicket ticket{room->id, std::move(buyer)};
    auto finished = co_await room_.async_finished(ticket, use_awaitable);
    noted(*room, finished);
    // not_in_queue: the buyer held without an admission (fail-open): nothing to free.
    if (!finished && !finished.is(seatlock::errc::not_in_queue))
        log_warn("room {}: finishing buyer {} failed: {}", room->id, ticket.visitor,
                 finished.error().message());
}

asio::awaitable<void> Rooms::run(std::shared_ptr<State> state, Rooms& rooms,
                                 std::chrono::milliseconds period) {
    while (!state->stopping) {
        for (std::size_t i = 0; i < rooms.rooms_.size(); ++i) {
            const VenueRoom& room = rooms.rooms_[i];
            try {
                if (!rooms.configured_[i]) {
                    auto configured = co_await rooms.room_.async_configure(room.id, room.config, use_awaitable);
                    rooms.noted(room, configured);
                    if (!configured) {
                        if (configured.error().code != seatlock::condition::storage_unavailable)
                            log_error("room {}: cannot configure it: {}", room.id, configured.error().message());
                        continue;
                    }
                    rooms.configured_[i] = true;
                    log("room {}: configured", room.id);
                }
                auto admitted = co_await rooms.room_.async_admit(room.id, use_awaitable);
                rooms.noted(room, admitted);
                if (admitted.is(seatlock::errc::unknown_room)) {
                    // The storage lost the room (a Redis back empty): configured again on
                    // the next pass; its line starts anew, and its buyers join again.
                    log_warn("room {}: its storage no longer knows it; configuring it again", room.id);
                    rooms.configured_[i] = false;
                    continue;
                }
                const auto& report = admitted;
                if (report) {
                    rooms.active_[i] = report->active;
                    rooms.waiting_[i] = report->waiting;
                    rooms.admitted_.fetch_add(report->admitted.size(), std::memory_order_relaxed);
                }
            } catch (const std::exception& e) {
                log_error("room {}: admit step failed: {}", room.id, e.what());
            }
        }
        if (state->stopping) break;
        state->timer.expires_after(period);
        boost::system::error_code cancelled;  // by stop()
        co_await state->timer.async_wait(asio::redirect_error(use_awaitable, cancelled));
    }
}

void Rooms::start(asio::any_io_executor executor, std::chrono::milliseconds period) {
    if (rooms_.empty() || state_) return;
    state_ = std::make_shared<State>(executor);
    finished_ = asio::co_spawn(state_->strand, run(state_, *this, period), asio::use_future);
}

void Rooms::stop() {
    if (!finished_.valid()) return;
    state_->stopping = true;
    asio::post(state_->strand, [state = state_] { state->timer.cancel(); });
    finished_.get();
}

std::string Rooms::render_metrics() const {
    std::string out = fmt::format(
        "# HELP seatlock_ticketing_room_fail_open_holds_total Holds let in without an admission "
        "while their room's storage failed (--room-fail-open).\n"
        "# TYPE seatlock_ticketing_room_fail_open_holds_total counter\n"
        "seatlock_ticketing_room_fail_open_holds_total {}\n"
        "# HELP seatlock_ticketing_room_admitted_total Visitors admitted by this server's admit "
        "steps.\n"
        "# TYPE seatlock_ticketing_room_admitted_total counter\n"
        "seatlock_ticketing_room_admitted_total {}\n",
        fail_open_holds_.load(), admitted_.load());
    std::string failing =
        "# HELP seatlock_ticketing_room_failing_open 1 while the room's storage fails and its "
        "event's holds need no admission (--room-fail-open), 0 otherwise.\n"
        "# TYPE seatlock_ticketing_room_failing_open gauge\n";
    std::string failing_closed =
        "# HELP seatlock_ticketing_room_storage_failing 1 while the room's storage fails (its "
        "last call answered a storage error), 0 otherwise.\n"
        "# TYPE seatlock_ticketing_room_storage_failing gauge\n";
    std::string visitors =
        "# HELP seatlock_ticketing_room_visitors The room's visitors admitted or active, and "
        "waiting, as of this server's last admit step.\n"
        "# TYPE seatlock_ticketing_room_visitors gauge\n";
    // Room ids are validated ids: nothing to escape in a label.
    for (std::size_t i = 0; i < rooms_.size(); ++i) {
        const bool fails = failing_[i].load();
        fmt::format_to(std::back_inserter(failing),
                       "seatlock_ticketing_room_failing_open{{room=\"{}\"}} {}\n", rooms_[i].id,
                       fails && fail_open_ ? 1 : 0);
        fmt::format_to(std::back_inserter(failing_closed),
                       "seatlock_ticketing_room_storage_failing{{room=\"{}\"}} {}\n", rooms_[i].id,
                       fails ? 1 : 0);
        fmt::format_to(std::back_inserter(visitors),
                       "seatlock_ticketing_room_visitors{{room=\"{}\",state=\"active\"}} {}\n"
                       "seatlock_ticketing_room_visitors{{room=\"{}\",state=\"waiting\"}} {}\n",
                       rooms_[i].id, active_[i].load(), rooms_[i].id, waiting_[i].load());
    }
    return out + failing + failing_closed + visitors;
}

}  // namespace ticketing
