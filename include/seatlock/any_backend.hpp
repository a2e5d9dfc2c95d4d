// seatlock/any_backend.hpp: AnyBackend, a backend chosen at run time (the ticketing
// server's --backend flag). Wraps any Backend behind one virtual call per operation;
// code that knows its backend at compile time should use it directly instead.
#pragma once

#include <seatlock/backend.hpp>

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
    Result<void> create_event(const EventSpec& s) { return impl_->create_event(s); }
    Result<std::vector<EventSpec>> events() { return impl_->events(); }
    Result<Hold> hold(const HoldCommand& c) { return impl_->hold(c); }
    Result<Order> confirm(const ConfirmCommand& c) { return impl_->confirm(c); }
    Result<void> release(const std::string& t) { return impl_->release(t); }
    Result<Hold> extend(const std::string& t, Millis ttl, Millis max) { return impl_->extend(t, ttl, max); }
    Result<Order> cancel(const std::string& e, const std::string& o, const std::optional<std::string>& h) { return impl_->cancel(e, o, h); }
    Result<std::vector<ZoneState>> seats(const std::string& e, const std::optional<std::string>& z) { return impl_->seats(e, z); }
    Result<std::vector<ExpiredHold>> expired(std::size_t n, Millis r) { return impl_->expired(n, r); }
    Result<void> ack_expired(std::span<const std::string> t) { return impl_->ack_expired(t); }

private:
    struct Interface {
        virtual ~Interface() = default;
        virtual Result<std::uint64_t> acquire_locks(std::span<const std::string>, const std::string&, Millis) = 0;
        virtual Result<bool> release_locks(std::span<const std::string>, const std::string&) = 0;
        virtual Result<bool> extend_locks(std::span<const std::string>, const std::string&, Millis) = 0;
        virtual Result<void> create_event(const EventSpec&) = 0;
        virtual Result<std::vector<EventSpec>> events() = 0;
        virtual Result<Hold> hold(const HoldCommand&) = 0;
        virtual Result<Order> confirm(const ConfirmCommand&) = 0;
        virtual Result<void> release(const std::string&) = 0;
        virtual Result<Hold> extend(const std::string&, Millis, Millis) = 0;
        virtual Result<Order> cancel(const std::string&, const std::string&, const std::optional<std::string>&) = 0;
        virtual Result<std::vector<ZoneState>> seats(const std::string&, const std::optional<std::string>&) = 0;
        virtual Result<std::vector<ExpiredHold>> expired(std::size_t, Millis) = 0;
        virtual Result<void> ack_expired(std::span<const std::string>) = 0;
    };

    template <Backend B>
    struct Model final : Interface {
        explicit Model(std::shared_ptr<B> b) : b_(std::move(b)) {}
        Result<std::uint64_t> acquire_locks(std::span<const std::string> k, const std::string& o, Millis l) override { return b_->acquire_locks(k, o, l); }
        Result<bool> release_locks(std::span<const std::string> k, const std::string& o) override { return b_->release_locks(k, o); }
        Result<bool> extend_locks(std::span<const std::string> k, const std::string& o, Millis l) override { return b_->extend_locks(k, o, l); }
        Result<void> create_event(const EventSpec& s) override { return b_->create_event(s); }
        Result<std::vector<EventSpec>> events() override { return b_->events(); }
        Result<Hold> hold(const HoldCommand& c) override { return b_->hold(c); }
        Result<Order> confirm(const ConfirmCommand& c) override { return b_->confirm(c); }
        Result<void> release(const std::string& t) override { return b_->release(t); }
        Result<Hold> extend(const std::string& t, Millis ttl, Millis max) override { return b_->extend(t, ttl, max); }
        Result<Order> cancel(const std::string& e, const std::string& o, const std::optional<std::string>& h) override { return b_->cancel(e, o, h); }
        Result<std::vector<ZoneState>> seats(const std::string& e, const std::optional<std::string>& z) override { return b_->seats(e, z); }
        Result<std::vector<ExpiredHold>> expired(std::size_t n, Millis r) override { return b_->expired(n, r); }
        Result<void> ack_expired(std::span<const std::string> t) override { return b_->ack_expired(t); }
        std::shared_ptr<B> b_;
    };

    std::shared_ptr<Interface> impl_;
};

static_assert(Backend<AnyBackend>);

}  // namespace seatlock
