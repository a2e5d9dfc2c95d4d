// SPDX-License-Identifier: MIT
// The conformance suite on FakeBackend.
#include "suites.hpp"

SEATLOCK_CONFORMANCE_SUITE(seatlock::testing::FakeFixture);
