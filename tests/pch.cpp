// SPDX-License-Identifier: MIT
// The source of seatlock_test_pch, the target that builds the test programs' precompiled
// header (tests/CMakeLists.txt): the header is all it has.
