// SPDX-License-Identifier: MIT
// rooms.hpp: the server's waiting rooms (docs/ticketing-server.md, "Waiting rooms"). An
// event of the venue may name a room (venue.hpp); its buyers join the room's line, and a
// hold on the event needs the buyer's admission: a token signed by the admission key,
// checked with no storage call (seatlock::WaitingRoom, docs/waiting-room.md).
//
// Every server configures the venue's rooms at start (the same configuration again is a
// no-op) and runs admit() for each on a timer: several servers doing it admit no more than
// the room's rate. A buyer who paid, or whose last hold on the event ended, is finished:
// the slot goes to the next in line.
//
// When a room's storage fails (its calls answer a storage error: the admit timer finds out
// within its period), holds without an admission are refused (503 room_unavailable), or,
// with fail_open, let in and counted; a storage down at start delays the room's
// configuration to the admit timer, not the server's start.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <seatlock/any_backend.hpp>
#include <seatlock/waiting_room.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ticketing.hpp"
#include "venue.hpp"

namespace ticketing {

/// The name of the cookie that carries a buyer's admission to the page's hold requests;
/// its Path is the event's holds (/events/{event}/holds), so each event has its own.
inline constexpr std::string_view admission_cookie = "seatlock_admission";
/// The request header that carries an admission from an API client.
inline constexpr std::string_view admission_header = "X-Admission-Token";

/// What the gate of a hold decided (Rooms::gate).
struct HoldGate {
    enum class Outcome {
        open,         ///< the event has no room
        admitted,     ///< a valid admission of the buyer
        fail_open,    ///< no admission, but the room's storage fails and fail_open is set
        refused,      ///< no valid admission: 403 not_admitted
        unavailable,  ///< no admission, the room's storage fails, fail_open is not set: 503
    };
    Outcome outcome = Outcome::open;
    const VenueRoom* room = nullptr;  ///< the event's room, if it has one
    std::string why;                  ///< for refused: why the token was not accepted
};

/// The venue's rooms; thread-safe.
class Rooms {
public:
    /// `rooms` from the venue; `backend` holds them (the seats' storage, or a storage of
    /// their own); `key` signs and checks admissions, the same on every server.
    Rooms(seatlock::AnyBackend backend, seatlock::AdmissionKey key, std::vector<VenueRoom> rooms,
          bool fail_open);
    ~Rooms();
    Rooms(const Rooms&) = delete;
    Rooms& operator=(const Rooms&) = delete;

    /// The room of `event`, or none.
    [[nodiscard]] const VenueRoom* of_event(std::string_view event) const;
    /// The room `id`, or none when this server's venue has no such room.
    [[nodiscard]] const VenueRoom* find(std::string_view id) const;
    [[nodiscard]] bool empty() const { return rooms_.empty(); }

    /// Configures every room (at start; idempotent). A room whose storage fails is left
    /// to the admit timer, which configures it once the storage answers (the room fails
    /// meanwhile, open or closed); any other refusal is the answer.
    Task<void> configure();
    /// The room's calls for `buyer` (WaitingRoom's join, position, admission). Their
    /// storage errors mark the room failing, their successes healthy.
    Task<seatlock::QueueTicket> join(const VenueRoom& room, std::string buyer);
    Task<seatlock::QueuePosition> position(const VenueRoom& room, std::string buyer);
    Task<seatlock::Admission> admission(const VenueRoom& room, std::string buyer);

    /// Whether `buyer` may hold seats of `event`, with `token` (the request's admission,
    /// if any): no storage call. Counts the holds let in by fail-open.
    HoldGate gate(std::string_view event, std::string_view buyer,
                  std::optional<std::string_view> token);

    /// `buyer` is done with `event` (paid, or its last hold ended): finished() in the
    /// event's room, if it has one; a failure is logged (the admission then lapses when it
    /// expires).
    boost::asio::awaitable<void> done(std::string buyer, std::string event);

    /// Starts admit() for every room every `period` on `executor`; stop() ends it.
    void start(boost::asio::any_io_executor executor, std::chrono::milliseconds period);
    /// Finishes the pass in progress and stops; from a thread that does not run the
    /// executor, while others do.
    void stop();

    /// The rooms' metrics, for Metrics::add_scraped: the holds let in by fail-open, and
    /// per room whether it fails open, and its visitors active and waiting as of the last
    /// admit step.
    [[nodiscard]] std::string render_metrics() const;

private:
    struct State;
    // Notes whether the room's storage answered `result` or failed.
    template <typename T>
    void noted(const VenueRoom& room, const seatlock::Result<T>& result);
    static boost::asio::awaitable<void> run(std::shared_ptr<State> state, Rooms& rooms,
                                            std::chrono::milliseconds period);

    seatlock::AnyBackend backend_;
    seatlock::WaitingRoom<seatlock::AnyBackend> room_;
    std::vector<VenueRoom> rooms_;
    bool fail_open_;
    // Per room (in rooms_' order): whether its storage fails now, and its last admit report.
    std::unique_ptr<std::atomic<bool>[]> failing_;
    std::unique_ptr<std::atomic<bool>[]> configured_;  // configure() succeeded
    std::unique_ptr<std::atomic<std::uint64_t>[]> active_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> waiting_;
    std::atomic<std::uint64_t> fail_open_holds_{0};
    std::atomic<std::uint64_t> admitted_{0};
    std::shared_ptr<State> state_;
    std::future<void> finished_;
};

}  // namespace ticketing
