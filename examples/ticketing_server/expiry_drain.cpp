// SPDX-License-Identifier: MIT
// expiry_drain.cpp: the drain loop. Failures (storage down) are logged once when they
// start and once when they end, not four times a second.
#include "expiry_drain.hpp"

#include <atomic>
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

namespace {
constexpr auto prune_every = std::chrono::hours(1);
constexpr auto probe_every = std::chrono::milliseconds(750);
}

// What the job shares with whoever stops it: the timer it pauses on, on a strand of its own.
struct ExpiryDrain::State {
    explicit State(const asio::any_io_executor& executor)
        : strand(asio::make_strand(executor)), timer(strand) {}

    asio::strand<asio::any_io_executor> strand;
    asio::steady_timer timer;
    std::atomic<bool> stopping{false};
};

asio::awaitable<void> ExpiryDrain::run(std::shared_ptr<State> state, Ticketing& ticketing,
                                       std::chrono::milliseconds period) {
    bool failing = false;
    auto next_prune = std::chrono::steady_clock::now();
    auto next_probe = next_prune;
    while (!state->stopping) {
        std::string failure;
        try {
            // A storage that went back to older data, or stopped answering, is found within
            // a second, traffic or not (Ticketing::not_ready); the drain right after
            // repairs the venue.
            if (std::chrono::steady_clock::now() >= next_probe) {
                // Due again one pass early: passes come every `period`, so probes come at
                // most probe_every apart.
                next_probe = std::chrono::steady_clock::now() + probe_every - period;
                auto probed = co_await ticketing.probe_versions();
                if (!probed && !probed.is(seatlock::errc::storage_lost)) {
                    failure = probed.error().message();
                }
            }
            auto drained = co_await ticketing.drain_expired();
            if (!drained && failure.empty()) failure = drained.error().message();
            if (std::chrono::steady_clock::now() >= next_prune) {
                co_await ticketing.prune_closed_holds();
                next_prune += prune_every;
            }
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (!failure.empty() && !failing)
            log_warn("expiry drain failing (will retry): {}", failure);
        if (failure.empty() && failing) log("expiry drain working again");
        failing = !failure.empty();

        if (state->stopping) break;
        state->timer.expires_after(period);
        boost::system::error_code cancelled;  // by stop()
        co_await state->timer.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
    }
}

ExpiryDrain::ExpiryDrain(asio::any_io_executor executor, Ticketing& ticketing,
                         std::chrono::milliseconds period)
    : state_(std::make_shared<State>(executor)),
      finished_(asio::co_spawn(state_->strand, run(state_, ticketing, period), asio::use_future)) {}

ExpiryDrain::~ExpiryDrain() {
    state_->stopping = true;
    asio::post(state_->strand, [state = state_] { state->timer.cancel(); });
}

void ExpiryDrain::stop() {
    if (!finished_.valid()) return;
    state_->stopping = true;
    asio::post(state_->strand, [state = state_] { state->timer.cancel(); });
    finished_.get();
}

}  // namespace ticketing
