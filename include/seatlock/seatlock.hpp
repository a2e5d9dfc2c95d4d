// SPDX-License-Identifier: MIT
// seatlock/seatlock.hpp: the whole header-only API in one include: errors and results,
// the backend concepts, LockManager, SeatHoldStore and WaitingRoom, the memory and fake
// backends and AnyBackend, and the version macros (<seatlock/version.hpp>). The Redis backend is in
// <seatlock/backends/redis.hpp> (link seatlock::redis).
#pragma once

#include <seatlock/any_backend.hpp>
#include <seatlock/backend.hpp>
#include <seatlock/backends/fake.hpp>
#include <seatlock/backends/memory.hpp>
#include <seatlock/errors.hpp>
#include <seatlock/hold_store.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/lock_manager.hpp>
#include <seatlock/result.hpp>
#include <seatlock/version.hpp>
#include <seatlock/waiting_room.hpp>
