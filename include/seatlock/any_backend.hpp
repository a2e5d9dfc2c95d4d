// seatlock/any_backend.hpp: AnyBackend, a backend chosen at run time (the ticketing
// server's --backend flag). Wraps any Backend behind one virtual call per operation;
// code that knows its backend at compile time should use it directly instead.
#pragma once

#include <seatlock/backend.hpp>
#include <seatlock/detail/async.hpp>
#include <seatlock/operations.hpp>

#include <memory>
#include <utility>

namespace seatlock {

class AnyBackend {
public:
    /// Shares ownership of `backend`.
    template <Backend B>
    explicit AnyBackend(std::shared_ptr<B> backend)
        : impl_(std::make_shared<Model<B>>(std::move(backend))) {}

    /// Constructs a B in place: AnyBackend::make<MemoryBackend>().
    template <Backend B, typename... Args>
    static AnyBackend make(Args&&... args) {
        return AnyBackend(std::make_shared<B>(std::forward<Args>(args)...));
    }

    Result<std::uint64_t> acquire_locks(std::span<const std::string> k, const std::string& o, Millis l) { return impl_->acquire_locks(k, o, l); }
    Result<bool> release_locks(std::span<const std::string> k, const std::string& o) { return impl_->release_locks(k, o); }
    Result<bool> extend_locks(std::span<const std::string> k, const std::string& o, Millis l) { return impl_->extend_locks(k, o, l); }
    /// The backend's raise_fencing: every later fencing token of `key`'s group is larger
    /// than `at_least` (for recovery after the storage lost its counters).
    Result<void> raise_fencing(std::string_view k, std::uint64_t n) { return impl_->raise_fencing(k, n); }
    Result<void> create_event(const EventSpec& s) { return impl_->create_event(s); }
    Result<std::vector<EventSpec>> events() { return impl_->events(); }
    Result<Hold> hold(const HoldCommand& c) { return impl_->hold(c); }
    Result<Order> confirm(const ConfirmCommand& c) { return impl_->confirm(c); }
    Result<EventVersion> release(const std::string& t) { return impl_->release(t); }
    Result<Hold> extend(const std::string& t, Millis ttl, Millis max) { return impl_->extend(t, ttl, max); }
    Result<Order> cancel(const std::string& e, const std::string& o, const std::optional<std::string>& h) { return impl_->cancel(e, o, h); }
    Result<std::vector<ZoneState>> seats(const std::string& e, const std::optional<std::string>& z) { return impl_->seats(e, z); }
    Result<std::vector<ExpiredHold>> expired(std::size_t n, Millis r) { return impl_->expired(n, r); }
    Result<void> ack_expired(std::span<const std::string> t) { return impl_->ack_expired(t); }
    Result<Recovery> begin_recovery(const EventSpec& s, bool h) { return impl_->begin_recovery(s, h); }
    Result<Order> restore_order(const RestoreCommand& c) { return impl_->restore_order(c); }
    Result<EventVersion> end_recovery(const std::string& e, EventVersion v) { return impl_->end_recovery(e, v); }
    Result<EventVersion> version(const std::string& e) { return impl_->version(e); }

    /// The asynchronous path: the wrapped backend's async_run when it has one (Redis),
    /// else the step run in place (seatlock/detail/async.hpp).
    void async_run(const op::acquire_locks& o, detail::Completion<std::uint64_t> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::release_locks& o, detail::Completion<bool> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::extend_locks& o, detail::Completion<bool> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::raise_fencing& o, detail::Completion<void> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::create_event& o, detail::Completion<void> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::events& o, detail::Completion<std::vector<EventSpec>> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::begin_recovery& o, detail::Completion<Recovery> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::restore_order& o, detail::Completion<Order> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::end_recovery& o, detail::Completion<EventVersion> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::version& o, detail::Completion<EventVersion> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::hold& o, detail::Completion<Hold> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::confirm& o, detail::Completion<Order> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::release& o, detail::Completion<EventVersion> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::extend& o, detail::Completion<Hold> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::cancel& o, detail::Completion<Order> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::seats& o, detail::Completion<std::vector<ZoneState>> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::expired& o, detail::Completion<std::vector<ExpiredHold>> d) { impl_->async_run(o, std::move(d)); }
    void async_run(const op::ack_expired& o, detail::Completion<void> d) { impl_->async_run(o, std::move(d)); }

private:
    struct Interface {
        virtual ~Interface() = default;
        virtual Result<std::uint64_t> acquire_locks(std::span<const std::string>, const std::string&, Millis) = 0;
        virtual Result<bool> release_locks(std::span<const std::string>, const std::string&) = 0;
        virtual Result<bool> extend_locks(std::span<const std::string>, const std::string&, Millis) = 0;
        virtual Result<void> raise_fencing(std::string_view, std::uint64_t) = 0;
        virtual Result<void> create_event(const EventSpec&) = 0;
        virtual Result<std::vector<EventSpec>> events() = 0;
        virtual Result<Hold> hold(const HoldCommand&) = 0;
        virtual Result<Order> confirm(const ConfirmCommand&) = 0;
        virtual Result<EventVersion> release(const std::string&) = 0;
        virtual Result<Hold> extend(const std::string&, Millis, Millis) = 0;
        virtual Result<Order> cancel(const std::string&, const std::string&, const std::optional<std::string>&) = 0;
        virtual Result<std::vector<ZoneState>> seats(const std::string&, const std::optional<std::string>&) = 0;
        virtual Result<std::vector<ExpiredHold>> expired(std::size_t, Millis) = 0;
        virtual Result<void> ack_expired(std::span<const std::string>) = 0;
        virtual Result<Recovery> begin_recovery(const EventSpec&, bool) = 0;
        virtual Result<Order> restore_order(const RestoreCommand&) = 0;
        virtual Result<EventVersion> end_recovery(const std::string&, EventVersion) = 0;
        virtual Result<EventVersion> version(const std::string&) = 0;

        virtual void async_run(const op::acquire_locks&, detail::Completion<std::uint64_t>) = 0;
        virtual void async_run(const op::release_locks&, detail::Completion<bool>) = 0;
        virtual void async_run(const op::extend_locks&, detail::Completion<bool>) = 0;
        virtual void async_run(const op::raise_fencing&, detail::Completion<void>) = 0;
        virtual void async_run(const op::create_event&, detail::Completion<void>) = 0;
        virtual void async_run(const op::events&, detail::Completion<std::vector<EventSpec>>) = 0;
        virtual void async_run(const op::begin_recovery&, detail::Completion<Recovery>) = 0;
        virtual void async_run(const op::restore_order&, detail::Completion<Order>) = 0;
        virtual void async_run(const op::end_recovery&, detail::Completion<EventVersion>) = 0;
        virtual void async_run(const op::version&, detail::Completion<EventVersion>) = 0;
        virtual void async_run(const op::hold&, detail::Completion<Hold>) = 0;
        virtual void async_run(const op::confirm&, detail::Completion<Order>) = 0;
        virtual void async_run(const op::release&, detail::Completion<EventVersion>) = 0;
        virtual void async_run(const op::extend&, detail::Completion<Hold>) = 0;
        virtual void async_run(const op::cancel&, detail::Completion<Order>) = 0;
        virtual void async_run(const op::seats&, detail::Completion<std::vector<ZoneState>>) = 0;
        virtual void async_run(const op::expired&, detail::Completion<std::vector<ExpiredHold>>) = 0;
        virtual void async_run(const op::ack_expired&, detail::Completion<void>) = 0;
    };

    template <Backend B>
    struct Model final : Interface {
        explicit Model(std::shared_ptr<B> b) : b_(std::move(b)) {}
        Result<std::uint64_t> acquire_locks(std::span<const std::string> k, const std::string& o, Millis l) override { return b_->acquire_locks(k, o, l); }
        Result<bool> release_locks(std::span<const std::string> k, const std::string& o) override { return b_->release_locks(k, o); }
        Result<bool> extend_locks(std::span<const std::string> k, const std::string& o, Millis l) override { return b_->extend_locks(k, o, l); }
        Result<void> raise_fencing(std::string_view k, std::uint64_t n) override { return b_->raise_fencing(k, n); }
        Result<void> create_event(const EventSpec& s) override { return b_->create_event(s); }
        Result<std::vector<EventSpec>> events() override { return b_->events(); }
        Result<Hold> hold(const HoldCommand& c) override { return b_->hold(c); }
        Result<Order> confirm(const ConfirmCommand& c) override { return b_->confirm(c); }
        Result<EventVersion> release(const std::string& t) override { return b_->release(t); }
        Result<Hold> extend(const std::string& t, Millis ttl, Millis max) override { return b_->extend(t, ttl, max); }
        Result<Order> cancel(const std::string& e, const std::string& o, const std::optional<std::string>& h) override { return b_->cancel(e, o, h); }
        Result<std::vector<ZoneState>> seats(const std::string& e, const std::optional<std::string>& z) override { return b_->seats(e, z); }
        Result<std::vector<ExpiredHold>> expired(std::size_t n, Millis r) override { return b_->expired(n, r); }
        Result<void> ack_expired(std::span<const std::string> t) override { return b_->ack_expired(t); }
        Result<Recovery> begin_recovery(const EventSpec& s, bool h) override { return b_->begin_recovery(s, h); }
        Result<Order> restore_order(const RestoreCommand& c) override { return b_->restore_order(c); }
        Result<EventVersion> end_recovery(const std::string& e, EventVersion v) override { return b_->end_recovery(e, v); }
        Result<EventVersion> version(const std::string& e) override { return b_->version(e); }

        void async_run(const op::acquire_locks& o, detail::Completion<std::uint64_t> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::release_locks& o, detail::Completion<bool> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::extend_locks& o, detail::Completion<bool> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::raise_fencing& o, detail::Completion<void> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::create_event& o, detail::Completion<void> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::events& o, detail::Completion<std::vector<EventSpec>> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::begin_recovery& o, detail::Completion<Recovery> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::restore_order& o, detail::Completion<Order> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::end_recovery& o, detail::Completion<EventVersion> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::version& o, detail::Completion<EventVersion> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::hold& o, detail::Completion<Hold> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::confirm& o, detail::Completion<Order> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::release& o, detail::Completion<EventVersion> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::extend& o, detail::Completion<Hold> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::cancel& o, detail::Completion<Order> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::seats& o, detail::Completion<std::vector<ZoneState>> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::expired& o, detail::Completion<std::vector<ExpiredHold>> d) override { detail::start(*b_, o, std::move(d)); }
        void async_run(const op::ack_expired& o, detail::Completion<void> d) override { detail::start(*b_, o, std::move(d)); }
        std::shared_ptr<B> b_;
    };

    std::shared_ptr<Interface> impl_;
};

static_assert(Backend<AnyBackend>);
static_assert(detail::RunsAsync<AnyBackend, op::hold>);

}  // namespace seatlock
