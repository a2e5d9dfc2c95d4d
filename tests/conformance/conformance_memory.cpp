// The conformance suite on MemoryBackend.
#include "hold_conformance.hpp"
#include "lock_conformance.hpp"
#include "model_test.hpp"
#include "retry_conformance.hpp"
#include "version_conformance.hpp"

SEATLOCK_LOCK_CONFORMANCE(seatlock::testing::MemoryFixture, seatlock::testing::Async<seatlock::testing::MemoryFixture>);
SEATLOCK_LOCK_GROUPS_CONFORMANCE(seatlock::testing::MemoryFixture, seatlock::testing::Async<seatlock::testing::MemoryFixture>);
SEATLOCK_HOLD_CONFORMANCE(seatlock::testing::MemoryFixture, seatlock::testing::Async<seatlock::testing::MemoryFixture>);
SEATLOCK_RETRY_CONFORMANCE(seatlock::testing::MemoryFixture, seatlock::testing::Async<seatlock::testing::MemoryFixture>);
SEATLOCK_VERSION_CONFORMANCE(seatlock::testing::MemoryFixture, seatlock::testing::Async<seatlock::testing::MemoryFixture>);
SEATLOCK_MODEL_TEST(seatlock::testing::MemoryFixture, seatlock::testing::Async<seatlock::testing::MemoryFixture>);
// The model's window for a clock read long before the store answers (a regression seen on
// Redis under ASan on a busy machine).
SEATLOCK_MODEL_TEST(seatlock::testing::SlowCheckMemoryFixture);
