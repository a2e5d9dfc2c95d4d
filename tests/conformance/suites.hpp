// SPDX-License-Identifier: MIT
// tests/conformance/suites.hpp: the whole conformance suite for one backend's fixture,
// on the blocking API and on the asynchronous one (Async<Fixture>):
// SEATLOCK_CONFORMANCE_SUITE(Fixture) in the backend's test program.
#pragma once

#include "change_feed_conformance.hpp"
#include "hold_conformance.hpp"
#include "lock_conformance.hpp"
#include "model_test.hpp"
#include "retry_conformance.hpp"
#include "room_conformance.hpp"
#include "version_conformance.hpp"

#define SEATLOCK_CONFORMANCE_SUITE(Fixture) \
    SEATLOCK_CONFORMANCE_SUITE_OF_BOTH(Fixture, seatlock::testing::Async<Fixture>)
#define SEATLOCK_CONFORMANCE_SUITE_OF_BOTH(...)      \
    SEATLOCK_LOCK_CONFORMANCE(__VA_ARGS__);          \
    SEATLOCK_LOCK_GROUPS_CONFORMANCE(__VA_ARGS__);   \
    SEATLOCK_HOLD_CONFORMANCE(__VA_ARGS__);          \
    SEATLOCK_RETRY_CONFORMANCE(__VA_ARGS__);         \
    SEATLOCK_VERSION_CONFORMANCE(__VA_ARGS__);       \
    SEATLOCK_CHANGE_FEED_CONFORMANCE(__VA_ARGS__);   \
    SEATLOCK_ROOM_CONFORMANCE(__VA_ARGS__);          \
    SEATLOCK_MODEL_TEST(__VA_ARGS__)
