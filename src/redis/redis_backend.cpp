// SPDX-License-Identifier: MIT
// src/redis/redis_backend.cpp: RedisBackend: every operation is one Redis function call
// (or a short chain of commands), encoded and read by its Codec (codecs/*.hpp; the rules
// live in lua/*.lua), and sent by the driver (driver.hpp): the blocking API waits for the
// reply, the asynchronous one reads it when it comes. One run and one async_run, over
// every Codec, are the whole of the backend's surface.
#include <seatlock/backends/redis.hpp>

#include "codecs/events.hpp"
#include "codecs/holds.hpp"
#include "codecs/locks.hpp"
#include "codecs/rooms.hpp"
#include "codecs/seat_map.hpp"
#include "driver.hpp"
#include "replication.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

namespace seatlock {

static_assert(Backend<RedisBackend>);

using redis_detail::Call;
using redis_detail::Codec;
using redis_detail::Context;
using redis_detail::ReplyPtr;

struct RedisBackend::Impl {
    Impl(RedisOptions o, std::vector<boost::asio::any_io_executor> executors)
        : keys(o.prefix), driver(std::move(o), std::move(executors)) {}

    redis_detail::KeyLayout keys;
    redis_detail::Driver driver;

    [[nodiscard]] Context context() const {
        return Context{keys, driver.on_cluster(),
                       std::to_string(driver.options().change_log_limit)};
    }
};

namespace {

// Where the calls of an operation go, the blocking way: each reply is waited for in the
// caller's thread, and what follows runs there (codec.hpp).
class BlockingExec {
public:
    explicit BlockingExec(RedisBackend::Impl& impl) : impl_(&impl), context_(impl.context()) {}
    [[nodiscard]] const Context& context() const { return context_; }

    template <typename T, typename Then>
    void call(const Call<T>& call, Then&& then) const {
        redis_detail::Acks acks;
        auto reply = impl_->driver.fcall(*call.script, call.keys, call.args, acks);
        if (!reply) return then(Result<T>(std::move(reply).error()));
        const auto& o = impl_->driver.options();
        then(redis_detail::replicated(call.read(reply->get()), acks, o.replicas_to_ack,
                                      o.replica_ack_timeout, call.script->name));
    }
    template <typename Then>
    void command(const std::vector<std::string>& argv, Then&& then) const {
        then(impl_->driver.command(std::vector<std::string_view>(argv.begin(), argv.end()), argv.at(1)));
    }

private:
    RedisBackend::Impl* impl_;
    Context context_;
};

// The same, asynchronously: each call is sent on a pipelined connection, and what follows
// runs where the driver hands its reply over (Driver::async_fcall).
class AsyncExec {
public:
    explicit AsyncExec(RedisBackend::Impl& impl) : impl_(&impl), context_(impl.context()) {}
    [[nodiscard]] const Context& context() const { return context_; }

    template <typename T, typename Then>
    void call(Call<T> call, Then then) const {
        const redis_detail::Script& script = *call.script;
        auto acks = std::make_shared<redis_detail::Acks>();
        impl_->driver.async_fcall(
            script, std::move(call.keys), std::move(call.args), acks,
            [name = script.name, read = std::move(call.read), acks,
             wanted = impl_->driver.options().replicas_to_ack,
             timeout = impl_->driver.options().replica_ack_timeout,
             then = std::make_shared<Then>(std::move(then))](Result<ReplyPtr> reply) {
                if (!reply) return (*then)(Result<T>(std::move(reply).error()));
                (*then)(redis_detail::replicated(read(reply->get()), *acks, wanted, timeout, name));
            });
    }
    template <typename Then>
    void command(std::vector<std::string> argv, Then then) const {
        impl_->driver.async_command(std::move(argv),
                                    [then = std::make_shared<Then>(std::move(then))](
                                        Result<ReplyPtr> reply) { (*then)(std::move(reply)); });
    }

private:
    RedisBackend::Impl* impl_;
    Context context_;
};

// An operation through its Codec, on either Exec: `done` gets its result once.
template <typename Op, typename Exec, typename Done>
void perform(Exec exec, const Op& operation, Done&& done) {
    if constexpr (redis_detail::single_call<Op>) {
        auto call = Codec<Op>::call(exec.context(), operation);
        if (!call) return done(op::result_of<Op>(std::move(call).error()));
        exec.call(std::move(*call), std::forward<Done>(done));
    } else {
        Codec<Op>::run(std::move(exec), operation, std::forward<Done>(done));
    }
}

}  // namespace

template <op::any_op O>
op::result_of<O> RedisBackend::run(const O& operation) {
    std::optional<op::result_of<O>> result;
    perform(BlockingExec(*impl_), operation, [&result](op::result_of<O> r) { result.emplace(std::move(r)); });
    return std::move(*result);
}

template <op::any_op O>
void RedisBackend::async_run(const O& operation, detail::Completion<typename O::result_type> done) {
    perform(AsyncExec(*impl_), operation, std::move(done));
}

// Emits run and async_run for every operation of op::all (the header declares them as
// templates): an operation without a Codec fails to compile here.
template <typename... Os>
struct RedisBackend::Instances<op::List<Os...>> {
    // Returned, so that the addresses, and with them the functions, are kept.
    static auto touch() {
        return std::make_tuple(&RedisBackend::run<Os>..., &RedisBackend::async_run<Os>...);
    }
};
template struct RedisBackend::Instances<op::all>;

RedisBackend::RedisBackend(RedisOptions options) {
    if (auto ok = options.validate(); !ok) throw Error(ok.error().code, ok.error().detail);
    impl_ = std::make_unique<Impl>(std::move(options), std::vector<boost::asio::any_io_executor>{});
}

RedisBackend::RedisBackend(RedisOptions options, boost::asio::any_io_executor executor)
    : RedisBackend(std::move(options), std::vector{std::move(executor)}) {}

RedisBackend::RedisBackend(RedisOptions options,
                           std::vector<boost::asio::any_io_executor> executors) {
    if (auto ok = options.validate(); !ok) throw Error(ok.error().code, ok.error().detail);
    if (executors.empty()) throw Error(errc::invalid_argument, "no executor given");
    if (std::ranges::any_of(executors, [](const auto& executor) { return !executor; }))
        throw Error(errc::invalid_argument, "an empty executor given (one that runs nothing)");
    impl_ = std::make_unique<Impl>(std::move(options), std::move(executors));
}

RedisBackend::~RedisBackend() = default;

const RedisOptions& RedisBackend::options() const noexcept {
    return impl_->driver.options();
}

RedisStats RedisBackend::stats() const {
    return impl_->driver.stats();
}

Result<void> RedisBackend::ping() {
    return impl_->driver.ping();
}

void RedisBackend::close() {
    impl_->driver.close();
}

}  // namespace seatlock
