# SPDX-License-Identifier: MIT
# extract_cpp_blocks.cmake: writes every ```cpp block of some Markdown files into a .cpp
# file of its own, so that the build compiles what the documentation shows.
#
#   cmake -DMARKDOWN="a.md|b.md" -DOUT_DIR=dir [-DLIST_FILE=file] -P extract_cpp_blocks.cmake
#
# (MARKDOWN: the pages separated by '|' or ';'.)
#
# The rules:
# - A block opens with a line that is exactly ```cpp (indentation allowed) and closes at
#   the next line that starts with ```.
# - Block n of <name>.md becomes <OUT_DIR>/<name>_<n>.cpp (n from 1, in file order), with
#   a #line directive, so that compiler messages point at the Markdown file and line.
# - A block with a line starting with `#include` is a complete translation unit and is
#   written as it is. A block without one is a fragment: it is wrapped in
#       #include <seatlock/seatlock.hpp>
#       [[maybe_unused]] static void docs_fragment() { <the block> }
#   Prefer complete blocks (a reader can copy them); fragments must still compile as a
#   function body.
# - A file is written only when its content changes, so unchanged blocks are not
#   compiled again; files of blocks that no longer exist are deleted.
# - LIST_FILE, when given, receives the list of files written (one per line).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/write_if_changed.cmake)

if(NOT MARKDOWN OR NOT OUT_DIR)
  message(FATAL_ERROR "extract_cpp_blocks.cmake needs -DMARKDOWN=... and -DOUT_DIR=...")
endif()
string(REPLACE "|" ";" MARKDOWN "${MARKDOWN}")
file(MAKE_DIRECTORY "${OUT_DIR}")
string(ASCII 2 semicolon)
string(ASCII 3 open_bracket)
string(ASCII 4 close_bracket)

set(written)
foreach(markdown IN LISTS MARKDOWN)
  get_filename_component(stem "${markdown}" NAME_WE)
  string(MAKE_C_IDENTIFIER "${stem}" stem)
  # Split into lines ourselves (file(STRINGS) drops empty lines). ';', '[' and ']' mean
  # something in a CMake list, so they travel as control characters and come back below.
  file(READ "${markdown}" text)
  string(REPLACE ";" "${semicolon}" text "${text}")
  string(REPLACE "[" "${open_bracket}" text "${text}")
  string(REPLACE "]" "${close_bracket}" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")

  set(number 0)
  set(line_number 0)
  set(in_block FALSE)
  foreach(line IN LISTS lines)
    math(EXPR line_number "${line_number} + 1")
    if(NOT in_block)
      if(line MATCHES "^[ \t]*```cpp[ \t]*$")
        set(in_block TRUE)
        set(body "")
        set(has_include FALSE)
        math(EXPR first_line "${line_number} + 1")
      endif()
      continue()
    endif()
    if(line MATCHES "^[ \t]*```")
      set(in_block FALSE)
      math(EXPR number "${number} + 1")
      set(source "${OUT_DIR}/${stem}_${number}.cpp")
      if(has_include)
        set(content "#line ${first_line} \"${markdown}\"\n${body}")
      else()
        set(content "#include <seatlock/seatlock.hpp>\n[[maybe_unused]] static void docs_fragment() {\n#line ${first_line} \"${markdown}\"\n${body}}\n")
      endif()
      write_if_changed("${source}" "${content}")
      list(APPEND written "${source}")
      continue()
    endif()
    if(line MATCHES "^#include")
      set(has_include TRUE)
    endif()
    string(REPLACE "${semicolon}" ";" line "${line}")
    string(REPLACE "${open_bracket}" "[" line "${line}")
    string(REPLACE "${close_bracket}" "]" line "${line}")
    string(APPEND body "${line}\n")
  endforeach()
  if(in_block)
    message(FATAL_ERROR "${markdown}: the ```cpp block at line ${first_line} is never closed")
  endif()

  # Blocks removed from this file: their sources go too.
  file(GLOB previous "${OUT_DIR}/${stem}_*.cpp")
  foreach(source IN LISTS previous)
    if(NOT source IN_LIST written)
      file(REMOVE "${source}")
    endif()
  endforeach()
endforeach()

if(LIST_FILE)
  list(JOIN written "\n" listed)
  write_if_changed("${LIST_FILE}" "${listed}\n")
endif()
