// SPDX-License-Identifier: MIT
// seatlock/waiting_room.hpp: WaitingRoom<B>, a fair line in front of an on-sale.
//
//     seatlock::WaitingRoom room(backend, seatlock::AdmissionKey(secret));
//     room.configure("onsale-1", {opens_at, 50.0, 500, minutes(15), minutes(2)}).value();
//     auto ticket = room.join("onsale-1", "alice").value();   // the same ticket if again
//     auto where = room.position(ticket);                     // place, estimated wait
//     room.admit("onsale-1");                                 // from any server, on a timer
//     auto admitted = room.admission(ticket);                 // signed, once admitted
//     room.check(admitted->token, "onsale-1");                // no storage call
//     room.finished(ticket);                                  // the slot goes to the next
//
// Visitors who join before the room opens are put in a random order, the same on every
// server (a draw from a seed the storage keeps); later ones queue in arrival order;
// admit() lets the line in at a rate, with at most max_active admitted at once, and
// gives a no-show's slot to the next. docs/waiting-room.md has the rules.
//
// Each call is one atomic step of the backend (op::configure_room ... op::finished),
// checked before it is sent and sent again once after a lost reply (every step can be:
// joins, admissions and finishes by visitor; an admit step again only admits what the
// rate allows). Every call that reaches the storage has an asynchronous twin, async_<name>,
// with the same arguments and defaults, then an Asio completion token (deferred when none
// is given) with the signature void(Result<T>), as SeatHoldStore's.
#pragma once

#include <seatlock/admission.hpp>
#include <seatlock/backend.hpp>
#include <seatlock/detail/async.hpp>
#include <seatlock/detail/random.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/operations.hpp>
#include <seatlock/room_vocabulary.hpp>

#include <boost/asio/deferred.hpp>

#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace seatlock {

template <RoomBackend B>
class WaitingRoom {
public:
    /// How many visitors one admit() step admits, and lapses, at most (by default, and the
    /// highest limit accepted): a step stays short, and a timer calling admit() often keeps
    /// up with any rate.
    static constexpr std::size_t default_admit_limit = 1000;
    /// The highest admit_per_second accepted.
    static constexpr double max_admit_per_second = 1e6;

    /// `backend` must outlive the room. `key` signs and checks admissions: the same on
    /// every server. `retries_on_unknown_outcome`: how many times a step whose reply was
    /// lost is sent again (>= 0; invalid_argument otherwise, thrown as seatlock::Error).
    WaitingRoom(B& backend, AdmissionKey key, int retries_on_unknown_outcome = 1)
        : backend_(&backend), key_(std::move(key)), retries_(retries_on_unknown_outcome) {
        if (retries_ < 0) throw Error(make_error_code(errc::invalid_argument), "retries must be >= 0");
    }

    [[nodiscard]] B& backend() const noexcept { return *backend_; }
    [[nodiscard]] const AdmissionKey& key() const noexcept { return key_; }

    /// Configures `room` (again: the same configuration is a no-op, so every server may
    /// configure it at start-up). invalid_argument, changing nothing, for an id or a
    /// value out of range (admit_per_second in (0, 10^6], max_active >= 1, admission_ttl
    /// and no_show_after > 0, a seed that is not an id), another seed than the stored
    /// one, or another opens_at once the room has opened.
    Result<void> configure(const std::string& room, const RoomConfig& config) {
        return run(prepare_configure(room, config));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, void>
    auto async_configure(const std::string& room, const RoomConfig& config, Token&& token = {}) {
        return async_call(prepare_configure(room, config), std::forward<Token>(token));
    }

    /// Puts `visitor` in the line of `room`; joining again answers the first ticket.
    /// unknown_room when it is not configured.
    Result<QueueTicket> join(const std::string& room, const std::string& visitor) {
        return run(prepare<op::join_room>(room, visitor));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, QueueTicket>
    auto async_join(const std::string& room, const std::string& visitor, Token&& token = {}) {
        return async_call(prepare<op::join_room>(room, visitor), std::forward<Token>(token));
    }

    /// Where the ticket's visitor stands: state, place in line, estimated wait. A read:
    /// O(log n) in the line's length. not_in_queue, unknown_room.
    Result<QueuePosition> position(const QueueTicket& ticket) {
        return run(prepare<op::room_position>(ticket.room, ticket.visitor));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, QueuePosition>
    auto async_position(const QueueTicket& ticket, Token&& token = {}) {
        return async_call(prepare<op::room_position>(ticket.room, ticket.visitor),
                          std::forward<Token>(token));
    }

    /// One admission step (op::admit): no-shows and expired admissions lapse, and the
    /// next visitors are admitted as the rate and max_active allow, at most `limit` (>= 1).
    /// Call it on a timer (every 100 ms, say) from one server or several.
    Result<AdmitReport> admit(const std::string& room, std::size_t limit = default_admit_limit) {
        return run(prepare_admit(room, limit));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, AdmitReport>
    auto async_admit(const std::string& room, Token&& token = {}) {
        return async_admit(room, default_admit_limit, std::forward<Token>(token));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, AdmitReport>
    auto async_admit(const std::string& room, std::size_t limit, Token&& token = {}) {
        return async_call(prepare_admit(room, limit), std::forward<Token>(token));
    }

    /// The ticket's visitor collects the admission, signed: from the first call on, the
    /// slot is the visitor's until the admission expires (admission_ttl) or finished() is
    /// called; later calls answer the same expiry. not_admitted while waiting, once
    /// finished, or after missing no_show_after; not_in_queue, unknown_room.
    Result<Admission> admission(const QueueTicket& ticket) {
        auto expiry = run(prepare<op::admission>(ticket.room, ticket.visitor));
        if (!expiry) return std::move(expiry).error();
        return key_.sign(ticket.room, ticket.visitor, *expiry);
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, Admission>
    auto async_admission(const QueueTicket& ticket, Token&& token = {}) {
        return async_call(prepare<op::admission>(ticket.room, ticket.visitor), std::forward<Token>(token),
                          [key = key_, room = ticket.room, visitor = ticket.visitor](
                              Result<WallTime> expiry) -> Result<Admission> {
                              if (!expiry) return std::move(expiry).error();
                              return key.sign(room, visitor, *expiry);
                          });
    }

    /// The ticket's visitor is done (paid, gave up): its slot, or its place in line, is
    /// freed. Again: succeeds, changes nothing. not_in_queue, unknown_room.
    Result<void> finished(const QueueTicket& ticket) {
        return run(prepare<op::finished>(ticket.room, ticket.visitor));
    }
    template <typename Token = boost::asio::deferred_t>
        requires detail::TokenFor<Token, void>
    auto async_finished(const QueueTicket& ticket, Token&& token = {}) {
        return async_call(prepare<op::finished>(ticket.room, ticket.visitor), std::forward<Token>(token));
    }

    /// Checks an admission token for `room` against this room's key and the local clock,
    /// without a storage call (AdmissionKey::verify): not_admitted when it is forged,
    /// expired or of another room.
    [[nodiscard]] Result<Admission> check(std::string_view token, std::string_view room,
                                          WallTime now = std::chrono::system_clock::now()) const {
        return key_.verify(token, room, now);
    }

private:
    static Result<op::configure_room> prepare_configure(const std::string& room, RoomConfig c) {
        if (auto ok = validate_id("room", room); !ok) return std::move(ok).error();
        if (!(c.admit_per_second > 0) || !std::isfinite(c.admit_per_second) ||
            c.admit_per_second > max_admit_per_second) {
            return Failure(errc::invalid_argument, "admit_per_second must be in (0, 1000000]");
        }
        if (c.max_active < 1 || c.max_active > (std::uint64_t{1} << 53)) {
            return Failure(errc::invalid_argument, "max_active must be in [1, 2^53]");
        }
        constexpr Millis longest(1'000'000'000'000'000);
        if (c.admission_ttl <= Millis(0) || c.no_show_after <= Millis(0) || c.admission_ttl > longest ||
            c.no_show_after > longest) {
            return Failure(errc::invalid_argument, "admission_ttl and no_show_after must be > 0");
        }
        const auto opens = std::chrono::duration_cast<Millis>(c.opens_at.time_since_epoch());
        if (opens < Millis(0) || opens > longest) {
            return Failure(errc::invalid_argument, "opens_at must be after 1970");
        }
        const bool given = c.shuffle_seed.has_value();
        if (given) {
            if (auto ok = validate_id("shuffle seed", *c.shuffle_seed); !ok) return std::move(ok).error();
        } else {
            c.shuffle_seed = detail::random_hex128();
        }
        return op::configure_room{room, std::move(c), given};
    }

    template <typename Op>
    static Result<Op> prepare(const std::string& room, const std::string& visitor) {
        if (auto ok = validate_id("room", room); !ok) return std::move(ok).error();
        if (auto ok = validate_id("visitor", visitor); !ok) return std::move(ok).error();
        return Op{room, visitor};
    }

    static Result<op::admit> prepare_admit(const std::string& room, std::size_t limit) {
        if (auto ok = validate_id("room", room); !ok) return std::move(ok).error();
        if (limit < 1 || limit > default_admit_limit)
            return Failure(errc::invalid_argument, "admit limit must be in [1, 1000]");
        return op::admit{room, limit};
    }

    template <typename Op>
    Result<typename Op::result_type> run(Result<Op> prepared) {
        if (!prepared) return std::move(prepared).error();
        return detail::run_retried(*backend_, *prepared, detail::RetryLost{retries_});
    }

    // The step, its retry, then `then` on its result, completed through the token.
    template <typename Op, typename Token, typename Then = std::identity>
    auto async_call(Result<Op> prepared, Token&& token, Then then = {}) {
        using R = std::decay_t<decltype(then(std::declval<Result<typename Op::result_type>>()))>;
        return boost::asio::async_initiate<Token, void(R)>(
            [this](auto handler, Result<Op> prepared, Then then) {
                detail::Completer<decltype(handler)> done(std::move(handler));
                if (!prepared) {
                    done(R(std::move(prepared).error()));
                    return;
                }
                detail::start_retried(*backend_, std::make_shared<const Op>(std::move(*prepared)),
                                      detail::RetryLost{retries_},
                                      [then = std::move(then), done = std::move(done)](
                                          Result<typename Op::result_type> result) mutable {
                                          done(R(then(std::move(result))));
                                      });
            },
            token, std::move(prepared), std::move(then));
    }

    B* backend_;
    AdmissionKey key_;
    int retries_;
};

}  // namespace seatlock
