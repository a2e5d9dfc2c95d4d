# SPDX-License-Identifier: MIT
# check_pages.cmake: the documentation describes today.
#
#   cmake -DSOURCE_DIR=<repository> [-DPERFORMANCE_MAX_LINES=320] -P check_pages.cmake
#
# Fails when docs/performance.md is longer than PERFORMANCE_MAX_LINES (a page for today,
# not a journal: history stays in git), when a heading of README.md or docs/*.md carries a
# date (2026-12-03, "December 2026", "Dec. 2026": headings other pages link to must not
# change with every run), or when docs/performance.md shows no image or an image that does
# not exist (the chart `./dev bench` draws).
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_pages.cmake needs -DSOURCE_DIR=...")
endif()
if(NOT PERFORMANCE_MAX_LINES)
  set(PERFORMANCE_MAX_LINES 320)
endif()

include(${CMAKE_CURRENT_LIST_DIR}/markdown.cmake)

set(problems)
set(performance "${SOURCE_DIR}/docs/performance.md")

# Length of the performance page: count newlines (file(STRINGS) would drop empty lines).
file(READ "${performance}" text)
string(REGEX REPLACE "[^\n]" "" newlines "${text}")
string(LENGTH "${newlines}" lines)
if(lines GREATER PERFORMANCE_MAX_LINES)
  list(APPEND problems "docs/performance.md has ${lines} lines, more than ${PERFORMANCE_MAX_LINES}")
endif()
message(STATUS "docs/performance.md: ${lines} lines (at most ${PERFORMANCE_MAX_LINES})")

# No dated heading, outside code blocks.
set(months "january|february|march|april|may|june|july|august|september|october|november|december")
set(months "${months}|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
file(GLOB pages "${SOURCE_DIR}/docs/*.md")
list(APPEND pages "${SOURCE_DIR}/README.md")
set(heading_count 0)
foreach(page IN LISTS pages)
  file(RELATIVE_PATH name "${SOURCE_DIR}" "${page}")
  markdown_headings("${page}" headings)
  foreach(line IN LISTS headings)
    math(EXPR heading_count "${heading_count} + 1")
    string(TOLOWER "${line}" lower)
    if(lower MATCHES "(^|[^0-9])[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]([^0-9]|$)"
       OR lower MATCHES "(^|[^a-z])(${months})\\.?,?[ \t]+([0-9][0-9]?(st|nd|rd|th)?,?[ \t]+)?[0-9][0-9][0-9][0-9]([^0-9]|$)")
      list(APPEND problems "${name}: a heading with a date: ${line}")
    endif()
  endforeach()
endforeach()
message(STATUS "${heading_count} headings of README.md and docs/*.md checked for dates")

# The images the performance page shows exist: ![alt](path), relative to the page.
string(ASCII 1 mark)
string(REPLACE "](" "${mark}(" marked "${text}")
string(REGEX MATCHALL "!\\[[^]\n]*${mark}\\([^) ]+\\)" images "${marked}")
if(NOT images)
  list(APPEND problems "docs/performance.md shows no image (the chart ./dev bench draws)")
endif()
foreach(image IN LISTS images)
  string(REGEX MATCH "${mark}\\(([^) ]+)\\)$" matched "${image}")
  set(path "${CMAKE_MATCH_1}")
  if(NOT EXISTS "${SOURCE_DIR}/docs/${path}")
    list(APPEND problems "docs/performance.md shows ${path}, which does not exist")
  else()
    message(STATUS "docs/performance.md shows ${path}")
  endif()
endforeach()

if(problems)
  list(JOIN problems "\n  " problems_text)
  message(FATAL_ERROR "documentation problems:\n  ${problems_text}")
endif()
