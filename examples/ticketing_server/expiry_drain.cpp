// expiry_drain.cpp: the drain loop. Failures (storage down) are logged once when they
// start and once when they end, not four times a second.
#include "expiry_drain.hpp"

#include "log.hpp"

namespace ticketing {
namespace {
constexpr auto prune_every = std::chrono::hours(1);
}

ExpiryDrain::ExpiryDrain(Ticketing& ticketing, std::chrono::milliseconds period)
    : ticketing_(ticketing),
      period_(period),
      thread_([this](std::stop_token stop) { run(stop); }) {}

ExpiryDrain::~ExpiryDrain() {
    stop();
}

void ExpiryDrain::stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
}

void ExpiryDrain::run(std::stop_token stop) {
    bool failing = false;
    auto next_prune = std::chrono::steady_clock::now();
    while (!stop.stop_requested()) {
        std::string failure;
        try {
            if (auto drained = ticketing_.drain_expired(); !drained)
                failure = drained.error().message();
            if (std::chrono::steady_clock::now() >= next_prune) {
                ticketing_.prune_closed_holds();
                next_prune += prune_every;
            }
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (!failure.empty() && !failing) log("expiry drain failing (will retry): {}", failure);
        if (failure.empty() && failing) log("expiry drain working again");
        failing = !failure.empty();

        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, stop, period_, [] { return false; });
    }
}

}  // namespace ticketing
