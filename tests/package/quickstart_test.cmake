# SPDX-License-Identifier: MIT
# cmake -P script: install this build -> build examples/quickstart against the installed
# tree with find_package(seatlock), and with pkg-config -> run both.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(LIBRARY_PATH ${prefix}/${LIBDIR})

step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/quickstart -B ${WORK_DIR}/build
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_quickstart(${WORK_DIR}/build/quickstart)

# pkg-config: seatlock.pc names the prefix the build was configured with; installed
# elsewhere (--prefix), it is told where.
step(${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig"
     ${PKG_CONFIG} --define-variable=prefix=${prefix} --cflags --libs seatlock)
string(STRIP "${last_output}" pc_flags)
message(STATUS "pkg-config --cflags --libs seatlock: ${pc_flags}")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
step(${CXX} -std=c++20 ${SOURCE_DIR}/examples/quickstart/main.cpp ${pc_flags}
     -o ${WORK_DIR}/quickstart-pkg-config)
run_quickstart(${WORK_DIR}/quickstart-pkg-config)
