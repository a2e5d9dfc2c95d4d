# SPDX-License-Identifier: MIT
# tests/discover_cases.cmake: registers one ctest entry per TEST_CASE of a doctest program,
# "<program>: <test case>", each running `<program> --test-case=<test case>`.
#
# Run by ctest itself (a TEST_INCLUDE_FILES script; seatlock_add_test writes one per
# program), so the build does nothing more: the cases are listed when ctest starts, and
# listed again only when the program is newer than its list. (doctest's own
# doctest_discover_tests, in Debian's doctest 2.4.9, lists them at build time after each
# link, and passes no list value such as LABELS "redis;cluster" through: this script does
# what it does, when ctest starts.)
#
# Set by the including script: the variables PROGRAM (the built file), NAME (the test's
# name), FILTER (empty, or doctest's --source-file=... when PROGRAM holds other tests' cases
# too: it lists and runs only NAME's), LIST_FILE (where the list is kept) and
# WORKING_DIRECTORY, and the macro seatlock_case_properties(test), which sets the test's
# properties on one entry.
# A program that is not built is one entry that fails (ctest cannot find the program).
if(NOT EXISTS "${PROGRAM}")
  add_test("${NAME}: not built" "${PROGRAM}" ${FILTER})
  seatlock_case_properties("${NAME}: not built")
  return()
endif()

if(NOT EXISTS "${LIST_FILE}" OR "${PROGRAM}" IS_NEWER_THAN "${LIST_FILE}")
  execute_process(COMMAND "${PROGRAM}" --list-test-cases --no-version ${FILTER}
                  WORKING_DIRECTORY "${WORKING_DIRECTORY}"
                  OUTPUT_VARIABLE output RESULT_VARIABLE result ERROR_VARIABLE errors)
  # One that cannot list its cases runs them all in one entry, named as the program.
  if(NOT result EQUAL 0)
    message(WARNING "${PROGRAM} --list-test-cases failed (${result}): ${errors}")
    add_test("${NAME}" "${PROGRAM}" ${FILTER})
    seatlock_case_properties("${NAME}")
    return()
  endif()
  file(WRITE "${LIST_FILE}" "${output}")
endif()

file(STRINGS "${LIST_FILE}" lines)
set(count 0)
foreach(line IN LISTS lines)
  # doctest's frame: rules of '=' and lines that start with [doctest].
  if(line MATCHES "^===+$" OR line MATCHES "^\\[doctest\\]" OR line STREQUAL "")
    continue()
  endif()
  # --test-case takes a comma-separated list of patterns: a comma in a name is escaped.
  string(REPLACE "," "\\," pattern "${line}")
  set(test "${NAME}: ${line}")
  add_test("${test}" "${PROGRAM}" ${FILTER} "--test-case=${pattern}")
  # A pattern that matched no case would pass having run nothing: doctest's summary of a
  # run says how many test cases ran.
  set_tests_properties("${test}" PROPERTIES WORKING_DIRECTORY "${WORKING_DIRECTORY}"
                       FAIL_REGULAR_EXPRESSION "test cases: +0 [|]")
  seatlock_case_properties("${test}")
  math(EXPR count "${count} + 1")
endforeach()
# A program without a test case is one entry, which fails: doctest's summary says 0.
if(count EQUAL 0)
  add_test("${NAME}" "${PROGRAM}" ${FILTER})
  set_tests_properties("${NAME}" PROPERTIES FAIL_REGULAR_EXPRESSION "test cases: +0 [|]")
  seatlock_case_properties("${NAME}")
endif()
