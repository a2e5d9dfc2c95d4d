// SPDX-License-Identifier: MIT
// tests/conformance/fixtures.hpp: how the conformance suite reaches a backend.
//
// A fixture owns a fresh, empty backend and knows how to let time pass on its clock:
//   using backend_type;            the backend class
//   static constexpr name;         for messages
//   static constexpr manual_clock; true when advance() moves a manual clock instantly
//   backend_type& backend();
//   void advance(Millis d);        let d pass on the backend's clock (sleeps on real clocks)
//   WallTime now();                the backend's now, on the wall clock
//   void lose_data();              the storage forgets every event, hold and order, as a
//                                  server restarted without persistence does
//   std::unique_ptr<backend_type> backend_with_log_limit(std::size_t n);
//                                  a backend whose events' change logs keep n steps (on
//                                  the same storage where it can be: Redis)
// and may have, for the model test (model_test.hpp):
//   static constexpr int model_steps;  steps per thread instead of the default
//   void pause_in_check();             called between a check's clock read and its query
#pragma once

#include <seatlock/seatlock.hpp>

#include "async_api.hpp"

#include <chrono>
#include <memory>
#include <thread>

namespace seatlock::testing {

struct MemoryFixture {
    using backend_type = MemoryBackend;
    static constexpr const char* name = "memory";
    static constexpr bool manual_clock = false;

    MemoryBackend& backend() { return backend_; }
    void advance(Millis d) { std::this_thread::sleep_for(d); }
    WallTime now() const { return std::chrono::system_clock::now(); }
    void lose_data() { backend_.wipe(); }
    std::unique_ptr<MemoryBackend> backend_with_log_limit(std::size_t n) {
        return std::make_unique<MemoryBackend>(64, n);
    }

    MemoryBackend backend_;
};

/// MemoryFixture whose model checks sleep between reading the clock and asking the store,
/// as a thread of a busy machine can be held up there: the model test (model_test.hpp)
/// must not take a hold that ended meanwhile for one still held. Few steps, since every
/// check sleeps.
struct SlowCheckMemoryFixture : MemoryFixture {
    static constexpr const char* name = "memory, with checks that sleep";
    static constexpr int model_steps = 8;
    void pause_in_check() { std::this_thread::sleep_for(Millis(150)); }
};

struct FakeFixture {
    using backend_type = FakeBackend;
    static constexpr const char* name = "fake";
    static constexpr bool manual_clock = true;

    FakeBackend& backend() { return backend_; }
    void advance(Millis d) { backend_.advance(d); }
    WallTime now() const { return backend_.now(); }
    void lose_data() { backend_.wipe(); }
    std::unique_ptr<FakeBackend> backend_with_log_limit(std::size_t n) {
        return std::make_unique<FakeBackend>(backend_.now(), n);
    }

    FakeBackend backend_;
};

}  // namespace seatlock::testing
