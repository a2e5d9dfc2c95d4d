# SPDX-License-Identifier: MIT
# cmake -P script: seatlock configured without its Redis backend (SEATLOCK_WITH_REDIS=OFF,
# nothing to compile) and installed into a temporary prefix:
#   - the Redis header is not installed, and seatlock.pc links no library;
#   - find_package(seatlock COMPONENTS redis) fails, saying that the backend was not built;
#   - the quickstart, with OPTIONAL_COMPONENTS redis, builds and runs in memory, and refuses
#     a Redis URL.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(LIBRARY_PATH ${prefix}/lib)

step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
     -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_INSTALL_PREFIX=${prefix} -DSEATLOCK_WITH_REDIS=OFF
     -DSEATLOCK_BUILD_TESTS=OFF -DSEATLOCK_BUILD_EXAMPLES=OFF -DSEATLOCK_BUILD_BENCHMARKS=OFF)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target install)

file(GLOB_RECURSE installed RELATIVE ${prefix} ${prefix}/*)
if(NOT "include/seatlock/seatlock.hpp" IN_LIST installed
   OR NOT "include/seatlock/version.hpp" IN_LIST installed)
  fail("the headers are not installed: ${installed}")
endif()
if(installed MATCHES "redis\\.hpp|libseatlock_redis")
  fail("a build without Redis installed Redis files: ${installed}")
endif()
file(GLOB pc_files ${prefix}/*/pkgconfig/seatlock.pc)
file(READ "${pc_files}" pc)
if(NOT pc MATCHES "\nLibs: +-pthread\n" OR pc MATCHES "hiredis")
  fail("seatlock.pc of a build without Redis:\n${pc}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/quickstart
                        -B ${WORK_DIR}/quickstart-required -DCMAKE_PREFIX_PATH=${prefix}
                        -DCMAKE_CXX_COMPILER=${CXX} -DREQUIRE_REDIS=ON
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \n]+" " " err "${err}")
if(rc EQUAL 0 OR NOT err MATCHES "built without the Redis backend \\(SEATLOCK_WITH_REDIS=OFF\\)")
  fail("find_package(seatlock COMPONENTS redis) without Redis: rc ${rc}\n${out}\n${err}")
endif()

step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/quickstart -B ${WORK_DIR}/quickstart
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX})
if(NOT last_output MATCHES "seatlock ${VERSION}, Redis backend: FALSE")
  fail("OPTIONAL_COMPONENTS redis without Redis: ${last_output}")
endif()
step(${CMAKE_COMMAND} --build ${WORK_DIR}/quickstart)
run_quickstart(${WORK_DIR}/quickstart/quickstart)
execute_process(COMMAND ${WORK_DIR}/quickstart/quickstart redis://127.0.0.1:1
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(rc EQUAL 0 OR NOT err MATCHES "installed without its Redis backend")
  fail("the quickstart without Redis given a URL: rc ${rc}: ${err}")
endif()
