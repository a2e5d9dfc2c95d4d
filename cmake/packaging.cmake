# SPDX-License-Identifier: MIT
# Debian packages with CPack (`cpack -G DEB` in a build directory), one per install
# component that has files:
#   libseatlock-redis<major>  runtime:   libseatlock_redis.so.<major> (BUILD_SHARED_LIBS=ON)
#   libseatlock-dev           dev:       headers, the CMake package, seatlock.pc, and the
#                                        static library or the shared one's symlink
#   seatlock-ticketing        ticketing: the example server (its seat-map page is compiled
#                                        into the binary)
# Configure the build that packages with -DCMAKE_INSTALL_PREFIX=/usr (Debian's
# multiarch library directory) and -DBUILD_SHARED_LIBS=ON; docs/packaging.md shows it.
# The dependencies are Debian 12's package names of what the binaries link (dpkg -S);
# override one with -DCPACK_DEBIAN_<COMPONENT>_PACKAGE_DEPENDS=... for another release.
set(CPACK_PACKAGE_NAME seatlock)
set(CPACK_PACKAGE_VENDOR "The seatlock authors")
set(CPACK_PACKAGE_CONTACT "The seatlock authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)

# Only components with files: a static build has no runtime package.
set(CPACK_COMPONENTS_ALL dev)
if(SEATLOCK_WITH_REDIS AND BUILD_SHARED_LIBS)
  list(APPEND CPACK_COMPONENTS_ALL runtime)
endif()
if(TARGET seatlock-ticketing)
  list(APPEND CPACK_COMPONENTS_ALL ticketing)
endif()

set(seatlock_runtime_package libseatlock-redis${PROJECT_VERSION_MAJOR})
set(seatlock_version_dependency "(= ${PROJECT_VERSION})")
set(seatlock_cxx_runtime "libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${seatlock_runtime_package})
# Each description follows the project's one-line summary, the packages' common synopsis.
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "The shared library of seatlock's Redis backend (libseatlock_redis.so),\nover hiredis and OpenSSL (TLS).")
if(NOT DEFINED CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libhiredis0.14, libssl3, ${seatlock_cxx_runtime}")
endif()

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libseatlock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "The C++20 headers of seatlock (locks, holds, the memory and fake backends,\nthe asynchronous API on Boost.Asio), its CMake package (find_package(seatlock))\nand pkg-config file (seatlock.pc), and the Redis backend to link.")
if(NOT DEFINED CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)
  # libssl-dev: the headers' waiting room uses libcrypto (seatlock.pc names it).
  set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libboost1.81-dev, libssl-dev")
  if(SEATLOCK_WITH_REDIS)
    # seatlock.pc names hiredis and openssl (Requires or Requires.private), so pkg-config
    # needs their .pc files.
    string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", libhiredis-dev")
    if(BUILD_SHARED_LIBS)
      string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
             ", ${seatlock_runtime_package} ${seatlock_version_dependency}")
    endif()
  endif()
endif()

set(CPACK_DEBIAN_TICKETING_PACKAGE_NAME seatlock-ticketing)
set(CPACK_DEBIAN_TICKETING_PACKAGE_SECTION net)
set(CPACK_DEBIAN_TICKETING_DESCRIPTION
    "seatlock-ticketing, seatlock's example ticketing server: HTTP/1.1 and JSON,\na live seat map (served from the binary), orders in SQLite, seats held on\nseatlock's memory backend or on Redis.")
if(NOT DEFINED CPACK_DEBIAN_TICKETING_PACKAGE_DEPENDS)
  set(CPACK_DEBIAN_TICKETING_PACKAGE_DEPENDS
      "libboost-json1.81.0, libboost-url1.81.0, libboost-program-options1.81.0, libfmt9, libsqlite3-0, zlib1g, ${seatlock_cxx_runtime}")
  if(SEATLOCK_WITH_REDIS)
    if(BUILD_SHARED_LIBS)
      string(APPEND CPACK_DEBIAN_TICKETING_PACKAGE_DEPENDS
             ", ${seatlock_runtime_package} ${seatlock_version_dependency}")
    else()
      string(APPEND CPACK_DEBIAN_TICKETING_PACKAGE_DEPENDS ", libhiredis0.14, libssl3")
    endif()
  endif()
endif()

include(CPack)
