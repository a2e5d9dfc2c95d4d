// The conformance suite on FakeBackend.
#include "hold_conformance.hpp"
#include "lock_conformance.hpp"
#include "model_test.hpp"
#include "retry_conformance.hpp"
#include "version_conformance.hpp"

SEATLOCK_LOCK_CONFORMANCE(seatlock::testing::FakeFixture, seatlock::testing::Async<seatlock::testing::FakeFixture>);
SEATLOCK_LOCK_GROUPS_CONFORMANCE(seatlock::testing::FakeFixture, seatlock::testing::Async<seatlock::testing::FakeFixture>);
SEATLOCK_HOLD_CONFORMANCE(seatlock::testing::FakeFixture, seatlock::testing::Async<seatlock::testing::FakeFixture>);
SEATLOCK_RETRY_CONFORMANCE(seatlock::testing::FakeFixture, seatlock::testing::Async<seatlock::testing::FakeFixture>);
SEATLOCK_VERSION_CONFORMANCE(seatlock::testing::FakeFixture, seatlock::testing::Async<seatlock::testing::FakeFixture>);
SEATLOCK_MODEL_TEST(seatlock::testing::FakeFixture, seatlock::testing::Async<seatlock::testing::FakeFixture>);
