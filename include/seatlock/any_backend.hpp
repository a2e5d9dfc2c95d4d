// SPDX-License-Identifier: MIT
// seatlock/any_backend.hpp: AnyBackend, a backend chosen at run time (the ticketing
// server's --backend flag). Wraps any Backend behind one virtual call per operation of
// op::all, both ways; code that knows its backend at compile time should use it directly
// instead.
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
        : impl_(std::make_shared<Model<B, op::all>>(std::move(backend))) {}

    /// Constructs a B in place: AnyBackend::make<MemoryBackend>().
    template <Backend B, typename... Args>
    static AnyBackend make(Args&&... args) {
        return AnyBackend(std::make_shared<B>(std::forward<Args>(args)...));
    }

    /// The wrapped backend's run.
    template <op::any_op O>
    op::result_of<O> run(const O& operation) {
        return impl_->run(operation);
    }

    /// The asynchronous path: the wrapped backend's async_run when it has one (Redis),
    /// else the step run in place (seatlock/detail/async.hpp).
    template <op::any_op O>
    void async_run(const O& operation, detail::Completion<typename O::result_type> done) {
        impl_->async_run(operation, std::move(done));
    }

private:
    // One pair of virtual calls per operation.
    template <typename O>
    struct Slot {
        virtual ~Slot() = default;
        virtual op::result_of<O> run(const O&) = 0;
        virtual void async_run(const O&, detail::Completion<typename O::result_type>) = 0;
    };
    template <typename L>
    struct Interface;
    template <typename... Os>
    struct Interface<op::List<Os...>> : Slot<Os>... {
        using Slot<Os>::run...;
        using Slot<Os>::async_run...;
    };

    // Model<B, List<O1, O2, ...>> overrides O1's pair, and derives from Model<B, List<O2, ...>>.
    template <Backend B, typename L>
    struct Model;
    template <Backend B>
    struct Model<B, op::List<>> : Interface<op::all> {
        explicit Model(std::shared_ptr<B> b) : b_(std::move(b)) {}
        std::shared_ptr<B> b_;
    };
    template <Backend B, typename O, typename... Rest>
    struct Model<B, op::List<O, Rest...>> : Model<B, op::List<Rest...>> {
        using Model<B, op::List<Rest...>>::Model;
        using Model<B, op::List<Rest...>>::run;
        using Model<B, op::List<Rest...>>::async_run;
        op::result_of<O> run(const O& o) override { return this->b_->run(o); }
        void async_run(const O& o, detail::Completion<typename O::result_type> d) override {
            detail::start(*this->b_, o, std::move(d));
        }
    };

    std::shared_ptr<Interface<op::all>> impl_;
};

static_assert(Backend<AnyBackend>);
static_assert(detail::RunsAsync<AnyBackend, op::hold>);

}  // namespace seatlock
