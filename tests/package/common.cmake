# SPDX-License-Identifier: MIT
# Helpers of the package tests' cmake -P scripts.

# step(COMMAND...): runs it; stops the test, with its output, when it fails. The output is
# left in last_output.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    stop_redis()
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# fail(MESSAGE): stops the test.
function(fail message)
  stop_redis()
  message(FATAL_ERROR "${message}")
endfunction()

# start_redis(DIR): a redis-server of this test alone, on the Unix socket DIR/redis.sock
# (no TCP port, so no clash with other tests); its URL in redis_url.
function(start_redis dir)
  set(socket ${dir}/redis.sock)
  execute_process(COMMAND ${REDIS_SERVER} --port 0 --unixsocket ${socket} --unixsocketperm 700
                          --daemonize yes --pidfile ${dir}/redis.pid --logfile ${dir}/redis.log
                          --dir ${dir} --save "" --appendonly no
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not start ${REDIS_SERVER}")
  endif()
  set_property(GLOBAL PROPERTY package_test_redis_socket ${socket})
  foreach(attempt RANGE 100)
    execute_process(COMMAND ${REDIS_CLI} -s ${socket} ping OUTPUT_VARIABLE pong ERROR_QUIET)
    if(pong MATCHES "PONG")
      set(redis_url "unix://${socket}" PARENT_SCOPE)
      return()
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 0.05)
  endforeach()
  fail("redis-server did not answer on ${socket}")
endfunction()

function(stop_redis)
  get_property(socket GLOBAL PROPERTY package_test_redis_socket)
  if(socket)
    execute_process(COMMAND ${REDIS_CLI} -s ${socket} shutdown nosave OUTPUT_QUIET ERROR_QUIET)
    set_property(GLOBAL PROPERTY package_test_redis_socket "")
  endif()
endfunction()

# run_quickstart(BINARY [URL]): runs a quickstart binary and checks what it says: this
# version, three seats locked, the second try refused.
function(run_quickstart binary)
  step(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${LIBRARY_PATH}" ${binary} ${ARGN})
  message(STATUS "${binary} ${ARGN} said: ${last_output}")
  if(NOT last_output MATCHES "^seatlock ${VERSION}\nlocked 3 seats, fencing token [0-9]+\nsecond try: lock_busy")
    fail("unexpected output of ${binary} ${ARGN}: ${last_output}")
  endif()
endfunction()
