# SPDX-License-Identifier: MIT
# Provides the imported target seatlock_hiredis::hiredis for hiredis, wherever it comes
# from: upstream 1.x installs a CMake config with hiredis::hiredis; Debian 12's 0.14.1
# ships only a pkg-config file (its CMake file defines no target).
if(TARGET seatlock_hiredis::hiredis)
  return()
endif()
find_package(hiredis CONFIG QUIET)
if(TARGET hiredis::hiredis)
  add_library(seatlock_hiredis::hiredis INTERFACE IMPORTED)
  target_link_libraries(seatlock_hiredis::hiredis INTERFACE hiredis::hiredis)
else()
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SEATLOCK_HIREDIS REQUIRED IMPORTED_TARGET hiredis)
  add_library(seatlock_hiredis::hiredis INTERFACE IMPORTED)
  target_link_libraries(seatlock_hiredis::hiredis INTERFACE PkgConfig::SEATLOCK_HIREDIS)
endif()
