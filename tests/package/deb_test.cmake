# SPDX-License-Identifier: MIT
# cmake -P script: the Debian packages of a shared-library build, used as a consumer would.
#   1. configure this source with BUILD_SHARED_LIBS=ON and CMAKE_INSTALL_PREFIX=/usr, and
#      build only the library (no tests, examples or benchmarks), unoptimised;
#   2. cpack -G DEB: libseatlock-redis<major> and libseatlock-dev, nothing else; their
#      files, the library's SONAME, and a Depends naming the package of every library it
#      links (dpkg -S);
#   3. dpkg-deb -x both into a temporary root;
#   4. build examples/quickstart there with find_package(seatlock COMPONENTS redis), and
#      with `pkg-config --cflags --libs seatlock`; both must load libseatlock_redis.so from
#      the root (LD_LIBRARY_PATH), and run, in memory and on a redis-server of their own.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
# The build directory stays from one run to the next (configured again, built again: only
# what changed); everything made from it starts afresh.
set(build ${WORK_DIR}/build)
set(root ${WORK_DIR}/root)
file(GLOB previous ${WORK_DIR}/*)
list(REMOVE_ITEM previous ${build})
file(REMOVE_RECURSE ${previous} ${build}/packages)
file(MAKE_DIRECTORY ${WORK_DIR})
set(libdir usr/lib/${ARCH})
set(LIBRARY_PATH ${root}/${libdir})
set(runtime_package libseatlock-redis${SOVERSION})

# 1. The library, shared.
step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -G ${GENERATOR}
     -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS=-g0
     -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_SHARED_LIBS=ON -DSEATLOCK_WITH_REDIS=ON
     -DSEATLOCK_BUILD_TESTS=OFF -DSEATLOCK_BUILD_EXAMPLES=OFF -DSEATLOCK_BUILD_BENCHMARKS=OFF)
step(${CMAKE_COMMAND} --build ${build})

# 2. The packages.
step(${CPACK} -G DEB WORKING_DIRECTORY ${build})
file(GLOB debs RELATIVE ${build}/packages ${build}/packages/*.deb)
list(SORT debs)
set(expected_debs libseatlock-dev_${VERSION}_${DEB_ARCH}.deb
                  ${runtime_package}_${VERSION}_${DEB_ARCH}.deb)
if(NOT debs STREQUAL expected_debs)
  fail("cpack made ${debs}, not ${expected_debs}")
endif()

function(deb_files deb out)
  step(dpkg-deb -c ${build}/packages/${deb})
  set(${out} "${last_output}" PARENT_SCOPE)
endfunction()
deb_files(${runtime_package}_${VERSION}_${DEB_ARCH}.deb runtime_files)
deb_files(libseatlock-dev_${VERSION}_${DEB_ARCH}.deb dev_files)
foreach(file ${libdir}/libseatlock_redis.so.${VERSION} ${libdir}/libseatlock_redis.so.${SOVERSION})
  if(NOT runtime_files MATCHES "\\./${file}")
    fail("${runtime_package} lacks ${file}:\n${runtime_files}")
  endif()
endforeach()
if(runtime_files MATCHES "include/|\\.so ")
  fail("${runtime_package} carries development files:\n${runtime_files}")
endif()
foreach(file usr/include/seatlock/seatlock.hpp usr/include/seatlock/version.hpp
             usr/include/seatlock/backends/redis.hpp ${libdir}/libseatlock_redis.so
             ${libdir}/cmake/seatlock/seatlockConfig.cmake ${libdir}/pkgconfig/seatlock.pc)
  if(NOT dev_files MATCHES "\\./${file}")
    fail("libseatlock-dev lacks ${file}:\n${dev_files}")
  endif()
endforeach()

foreach(deb ${debs})
  step(dpkg-deb -x ${build}/packages/${deb} ${root})
endforeach()

# The SONAME, and a Depends that names the package of every library it links.
set(library ${root}/${libdir}/libseatlock_redis.so.${VERSION})
step(${READELF} -d ${library})
set(dynamic "${last_output}")
if(NOT dynamic MATCHES "SONAME\\) *Library soname: \\[libseatlock_redis\\.so\\.${SOVERSION}\\]")
  fail("libseatlock_redis.so.${VERSION} has not the SONAME libseatlock_redis.so.${SOVERSION}:\n${dynamic}")
endif()
step(dpkg-deb -f ${build}/packages/${runtime_package}_${VERSION}_${DEB_ARCH}.deb Depends)
string(STRIP "${last_output}" depends)
message(STATUS "${runtime_package} depends on: ${depends}")
string(REGEX REPLACE " *\\([^)]*\\)" "" depends_names "${depends}")
string(REPLACE ", " ";" depends_names "${depends_names}")
string(REGEX MATCHALL "NEEDED\\) *Shared library: \\[[^]]+\\]" needed "${dynamic}")
foreach(entry ${needed})
  string(REGEX REPLACE ".*\\[(.+)\\]" "\\1" soname "${entry}")
  step(dpkg -S "*/${ARCH}/${soname}")
  string(REGEX MATCH "^[^:,]+" package "${last_output}")
  if(NOT package IN_LIST depends_names)
    fail("${runtime_package} links ${soname} (Debian package ${package}) but depends on: ${depends}")
  endif()
endforeach()

# 3 and 4. The quickstart against the unpacked root, both ways.
start_redis(${WORK_DIR})
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/quickstart -B ${WORK_DIR}/quickstart-cmake
     -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${root}/usr
     -DREQUIRE_REDIS=ON)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/quickstart-cmake)
set(from_cmake ${WORK_DIR}/quickstart-cmake/quickstart)

step(${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${root}/${libdir}/pkgconfig"
     "PKG_CONFIG_SYSROOT_DIR=${root}" ${PKG_CONFIG} --cflags --libs seatlock)
string(STRIP "${last_output}" pc_flags)
message(STATUS "pkg-config --cflags --libs seatlock: ${pc_flags}")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
set(from_pkg_config ${WORK_DIR}/quickstart-pkg-config)
step(${CXX} -std=c++20 ${SOURCE_DIR}/examples/quickstart/main.cpp ${pc_flags} -o ${from_pkg_config})

foreach(binary ${from_cmake} ${from_pkg_config})
  step(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${LIBRARY_PATH}" ldd ${binary})
  if(NOT last_output MATCHES "libseatlock_redis\\.so\\.${SOVERSION} => ${LIBRARY_PATH}/")
    fail("${binary} does not load libseatlock_redis.so.${SOVERSION} from ${LIBRARY_PATH}:\n${last_output}")
  endif()
  run_quickstart(${binary})
  run_quickstart(${binary} ${redis_url})
endforeach()
stop_redis()
