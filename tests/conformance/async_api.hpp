// SPDX-License-Identifier: MIT
// tests/conformance/async_api.hpp: the conformance suite through the asynchronous API.
//
// AsyncStore and AsyncLocks have the blocking interface the suite calls, and make every
// call with its async_ twin, completed on an io_context thread of their own and waited
// for with a future. A fixture wrapped in Async<> makes the suite's Store<F> and Locks<F>
// these (and its Room<F> AsyncRoom), so every rule is checked through both APIs on every backend.
#pragma once

#include <seatlock/seatlock.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::testing {

/// An io_context running on a thread of its own for as long as this lives.
class AsyncRunner {
public:
    AsyncRunner() : work_(io_.get_executor()), thread_([this] { io_.run(); }) {}
    ~AsyncRunner() {
        work_.reset();  // lets run() return once the last timer or call has completed
        thread_.join();
    }
    AsyncRunner(const AsyncRunner&) = delete;
    AsyncRunner& operator=(const AsyncRunner&) = delete;

    /// A token completing on this runner's thread, as a std::future.
    auto future() { return boost::asio::bind_executor(io_.get_executor(), boost::asio::use_future); }

private:
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::thread thread_;
};

/// SeatHoldStore's blocking interface, each call made asynchronously.
template <HoldBackend B>
class AsyncStore {
public:
    explicit AsyncStore(B& backend, HoldPolicy policy = {}) : store_(backend, policy) {}

    [[nodiscard]] const HoldPolicy& policy() const noexcept { return store_.policy(); }
    [[nodiscard]] B& backend() const noexcept { return store_.backend(); }
    [[nodiscard]] bool knows(const std::string& event) const { return store_.knows(event); }

    Result<void> create_event(const EventSpec& spec) {
        return store_.async_create_event(spec, run_.future()).get();
    }
    Result<std::vector<EventSpec>> events() { return store_.async_events(run_.future()).get(); }
    Result<Hold> hold(const std::string& event, const std::string& holder,
                      const HoldRequest& request, std::optional<Millis> ttl = std::nullopt) {
        return hold(event, holder, request, HoldOptions{ttl, {}});
    }
    Result<Hold> hold(const std::string& event, const std::string& holder,
                      const HoldRequest& request, const HoldOptions& options) {
        return store_.async_hold(event, holder, request, options, run_.future()).get();
    }
    Result<Order> confirm(const std::string& token, const std::string& order_id) {
        return store_.async_confirm(token, order_id, run_.future()).get();
    }
    Result<Order> confirm_late(const std::string& token, const std::string& order_id) {
        return store_.async_confirm_late(token, order_id, run_.future()).get();
    }
    Result<EventVersion> release(const std::string& token) {
        return store_.async_release(token, run_.future()).get();
    }
    Result<Hold> extend(const std::string& token, Millis ttl) {
        return store_.async_extend(token, ttl, run_.future()).get();
    }
    Result<Order> cancel(const std::string& event, const std::string& order_id,
                         const std::optional<std::string>& holder = std::nullopt) {
        return store_.async_cancel(event, order_id, holder, run_.future()).get();
    }
    Result<SeatMap> seats(const std::string& event,
                          const std::optional<std::string>& zone = std::nullopt) {
        return store_.async_seats(event, zone, run_.future()).get();
    }
    Result<ChangePage> changes(const std::string& event, EventVersion after,
                               std::size_t limit = SeatHoldStore<B>::default_changes_limit) {
        return store_.async_changes(event, after, limit, run_.future()).get();
    }
    Result<ChangePage> changes(const std::string& event, FeedPosition after,
                               std::size_t limit = SeatHoldStore<B>::default_changes_limit) {
        return store_.async_changes(event, after, limit, run_.future()).get();
    }
    Result<std::vector<ExpiredHold>> expired(std::size_t limit = 100,
                                             Millis redeliver_after = std::chrono::seconds(30)) {
        return store_.async_expired(limit, redeliver_after, run_.future()).get();
    }
    Result<void> ack_expired(std::span<const std::string> tokens) {
        return store_.async_ack_expired(tokens, run_.future()).get();
    }
    Result<Recovery> recover_event(const EventSpec& spec) {
        return store_.async_recover_event(spec, run_.future()).get();
    }
    Result<Order> restore_order(const RestoreCommand& cmd) {
        return store_.async_restore_order(cmd, run_.future()).get();
    }
    Result<EventVersion> finish_recovery(const std::string& event, EventVersion at_least = 0) {
        return store_.async_finish_recovery(event, at_least, run_.future()).get();
    }
    Result<EventVersion> check_version(const std::string& event, EventVersion at_least = 0) {
        return store_.async_check_version(event, at_least, run_.future()).get();
    }
    Result<void> fence(const std::string& event, const std::string& reason) {
        return store_.fence(event, reason);
    }
    [[nodiscard]] bool fenced(const std::string& event) const { return store_.fenced(event); }
    [[nodiscard]] EventVersion seen_version(const std::string& event) const {
        return store_.seen_version(event);
    }

private:
    AsyncRunner run_;  // declared first: destroyed after the store's calls completed
    SeatHoldStore<B> store_;
};

/// WaitingRoom's blocking interface, each call made asynchronously.
template <RoomBackend B>
class AsyncRoom {
public:
    AsyncRoom(B& backend, AdmissionKey key) : room_(backend, std::move(key)) {}

    Result<void> configure(const std::string& room, const RoomConfig& config) {
        return room_.async_configure(room, config, run_.future()).get();
    }
    Result<QueueTicket> join(const std::string& room, const std::string& visitor) {
        return room_.async_join(room, visitor, run_.future()).get();
    }
    Result<QueuePosition> position(const QueueTicket& ticket) {
        return room_.async_position(ticket, run_.future()).get();
    }
    Result<AdmitReport> admit(const std::string& room) {
        return room_.async_admit(room, run_.future()).get();
    }
    Result<AdmitReport> admit(const std::string& room, std::size_t limit) {
        return room_.async_admit(room, limit, run_.future()).get();
    }
    Result<Admission> admission(const QueueTicket& ticket) {
        return room_.async_admission(ticket, run_.future()).get();
    }
    Result<void> finished(const QueueTicket& ticket) {
        return room_.async_finished(ticket, run_.future()).get();
    }
    [[nodiscard]] Result<Admission> check(std::string_view token, std::string_view room,
                                          WallTime now = std::chrono::system_clock::now()) const {
        return room_.check(token, room, now);
    }

private:
    AsyncRunner run_;
    WaitingRoom<B> room_;
};

/// A guard acquired asynchronously, with the blocking guard's interface: unlock() and
/// extend() are made with async_unlock and async_extend. Its destructor is the guard's own,
/// which releases without blocking.
template <typename Guard>
class AsyncGuard {
public:
    AsyncGuard(Guard guard, AsyncRunner& run) : guard_(std::move(guard)), run_(&run) {}

    [[nodiscard]] bool owns() const noexcept { return guard_.owns(); }
    [[nodiscard]] const std::vector<std::string>& keys() const noexcept { return guard_.keys(); }
    [[nodiscard]] const std::string& key() const noexcept { return guard_.key(); }
    [[nodiscard]] std::uint64_t fencing_token() const noexcept { return guard_.fencing_token(); }
    Result<void> unlock() { return guard_.async_unlock(run_->future()).get(); }
    Result<void> extend(Millis lease) { return guard_.async_extend(lease, run_->future()).get(); }

private:
    Guard guard_;
    AsyncRunner* run_;
};

/// LockManager's blocking interface, each acquisition made asynchronously.
template <LockBackend B>
class AsyncLocks {
public:
    explicit AsyncLocks(B& backend, LockOptions options = {}) : locks_(backend, std::move(options)) {}

    [[nodiscard]] const LockOptions& options() const noexcept { return locks_.options(); }

    Result<AsyncGuard<SingleLock<B>>> lock(const std::string& key) {
        return wrap(locks_.async_lock(key, run_.future()).get());
    }
    Result<AsyncGuard<SingleLock<B>>> lock(const std::string& key, const LockOptions& options) {
        return wrap(locks_.async_lock(key, options, run_.future()).get());
    }
    Result<AsyncGuard<SingleLock<B>>> try_lock(const std::string& key) {
        return wrap(locks_.async_try_lock(key, run_.future()).get());
    }
    Result<AsyncGuard<MultiLock<B>>> lock_all(std::vector<std::string> keys) {
        return wrap(locks_.async_lock_all(std::move(keys), run_.future()).get());
    }
    Result<AsyncGuard<MultiLock<B>>> lock_all(std::vector<std::string> keys,
                                              const LockOptions& options) {
        return wrap(locks_.async_lock_all(std::move(keys), options, run_.future()).get());
    }
    Result<AsyncGuard<MultiLock<B>>> try_lock_all(std::vector<std::string> keys) {
        return wrap(locks_.async_try_lock_all(std::move(keys), run_.future()).get());
    }

private:
    template <typename Guard>
    Result<AsyncGuard<Guard>> wrap(Result<Guard> acquired) {
        if (!acquired) return std::move(acquired).error();
        return AsyncGuard<Guard>(std::move(*acquired), run_);
    }

    AsyncRunner run_;
    LockManager<B> locks_;
};

/// A fixture whose suite goes through the asynchronous API.
template <typename Base>
struct Async : Base {
    using async_api = void;
};

template <typename F>
struct ApiOf {
    using store = SeatHoldStore<typename F::backend_type>;
    using locks = LockManager<typename F::backend_type>;
    using room = WaitingRoom<typename F::backend_type>;
};
template <typename F>
    requires requires { typename F::async_api; }
struct ApiOf<F> {
    using store = AsyncStore<typename F::backend_type>;
    using locks = AsyncLocks<typename F::backend_type>;
    using room = AsyncRoom<typename F::backend_type>;
};

/// The store and the lock manager the suite uses with fixture F.
template <typename F>
using Store = typename ApiOf<F>::store;
template <typename F>
using Locks = typename ApiOf<F>::locks;
/// The waiting room the suite uses with fixture F.
template <typename F>
using Room = typename ApiOf<F>::room;

}  // namespace seatlock::testing
