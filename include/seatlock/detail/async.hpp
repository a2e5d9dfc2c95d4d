// SPDX-License-Identifier: MIT
// seatlock/detail/async.hpp: how the asynchronous API runs a backend operation and hands
// its result to an Asio completion handler.
//
// The front classes describe each backend step once (seatlock/operations.hpp). Here:
// - start(): an asynchronous backend (one with async_run) sends it and calls back from its
//   own thread; an in-process backend runs it in place, since its steps never wait;
// - RetryLost: the one rule for re-sending a step whose reply was lost, used by the
//   blocking loop and by the asynchronous chain alike;
// - Completer: hands a result to the caller's handler through the handler's associated
//   executor, never inline, keeping that executor's context busy until then (so an
//   io_context::run() does not return while a call is in flight on another thread).
#pragma once

#include <seatlock/operations.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>

namespace seatlock::detail {

/// A move-only callback taking a Result<T>, called once: how an asynchronous backend
/// step reports. (std::function would need a copyable handler; Asio handlers are not.)
template <typename T>
class Completion {
public:
    Completion() = default;
    template <typename F>
        requires(!std::same_as<std::decay_t<F>, Completion> && std::invocable<F&, Result<T>>)
    Completion(F f) : impl_(std::make_unique<Impl<F>>(std::move(f))) {}  // NOLINT: implicit by design

    void operator()(Result<T> result) {
        auto impl = std::move(impl_);
        impl->call(std::move(result));
    }
    explicit operator bool() const noexcept { return impl_ != nullptr; }

private:
    struct Base {
        virtual ~Base() = default;
        virtual void call(Result<T> result) = 0;
    };
    template <typename F>
    struct Impl final : Base {
        explicit Impl(F f) : f(std::move(f)) {}
        void call(Result<T> result) override { f(std::move(result)); }
        F f;
    };
    std::unique_ptr<Base> impl_;
};

/// Backends that run operations asynchronously: RedisBackend. `async_run(op, done)` reads
/// `op` before it returns and calls `done` once, later, from its own thread.
template <typename B, typename Op>
concept RunsAsync = requires(B& b, const Op& op, Completion<typename Op::result_type> done) {
    b.async_run(op, std::move(done));
};

/// Starts `op` on `backend`; `done` gets its result once.
template <typename B, typename Op>
void start(B& backend, const Op& op, Completion<typename Op::result_type> done) {
    if constexpr (RunsAsync<B, Op>) {
        backend.async_run(op, std::move(done));
    } else {
        done(backend.run(op));
    }
}

/// Re-sends an idempotent step whose reply was lost, up to `left` more times.
struct RetryLost {
    int left = 0;
    template <typename T>
    bool again(const Result<T>& result) {
        return result.is(errc::outcome_unknown) && left-- > 0;
    }
};

/// `op` once, then again as RetryLost says: the blocking way.
template <typename B, typename Op>
Result<typename Op::result_type> run_retried(B& backend, const Op& op, RetryLost retry) {
    auto result = backend.run(op);
    while (retry.again(result)) result = backend.run(op);
    return result;
}

/// The same, asynchronously: `done` gets the last result. `op` lives as long as the chain.
template <typename B, typename Op, typename Done>
void start_retried(B& backend, std::shared_ptr<const Op> op, RetryLost retry, Done done) {
    const Op& request = *op;
    start(backend, request,
          [&backend, op = std::move(op), retry,
           done = std::move(done)](Result<typename Op::result_type> result) mutable {
              if (retry.again(result)) {
                  start_retried(backend, std::move(op), retry, std::move(done));
                  return;
              }
              done(std::move(result));
          });
}

/// Holds an Asio completion handler until its result is known, then posts the call to the
/// handler's associated executor.
template <typename Handler>
class Completer {
public:
    explicit Completer(Handler handler)
        : work_(boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                    boost::asio::execution::outstanding_work.tracked)),
          handler_(std::move(handler)) {}

    template <typename R>
    void operator()(R&& result) {
        auto work = std::move(work_);
        boost::asio::post(work, [handler = std::move(handler_),
                                 result = std::forward<R>(result)]() mutable {
            std::move(handler)(std::move(result));
        });
    }

    /// The handler, for its associated cancellation slot.
    [[nodiscard]] const Handler& handler() const noexcept { return handler_; }

private:
    using Executor = std::decay_t<decltype(boost::asio::prefer(
        boost::asio::get_associated_executor(std::declval<Handler&>()),
        boost::asio::execution::outstanding_work.tracked))>;
    Executor work_;
    Handler handler_;
};

/// An Asio completion token for a call that completes with a Result<T>. It keeps an
/// argument that is not a token (a zone, a limit) from being taken for the defaulted
/// token of a shorter overload.
template <typename Token, typename T>
concept TokenFor = boost::asio::completion_token_for<Token, void(Result<T>)>;

}  // namespace seatlock::detail
