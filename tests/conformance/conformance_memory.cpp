// SPDX-License-Identifier: MIT
// The conformance suite on MemoryBackend.
#include "suites.hpp"

SEATLOCK_CONFORMANCE_SUITE(seatlock::testing::MemoryFixture);
// The model's window for a clock read long before the store answers (a regression seen on
// Redis under ASan on a busy machine).
SEATLOCK_MODEL_TEST(seatlock::testing::SlowCheckMemoryFixture);
