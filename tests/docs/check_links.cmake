# SPDX-License-Identifier: MIT
# check_links.cmake: the README stays a guide and the documentation holds together.
#
#   cmake -DSOURCE_DIR=<repository> [-DREADME_MAX_LINES=320] -P check_links.cmake
#
# Fails when README.md is longer than README_MAX_LINES, when a page of docs/ is not linked
# from README.md, or when a Markdown link of README.md or docs/*.md to a local file (or to
# a heading of one, `page.md#heading`) does not resolve. Headings are matched by their
# GitHub anchors: lower case, punctuation dropped, spaces turned into '-'.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/markdown.cmake)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_links.cmake needs -DSOURCE_DIR=...")
endif()
if(NOT README_MAX_LINES)
  set(README_MAX_LINES 320)
endif()

set(problems)

# README length: count newlines (file(STRINGS) would drop empty lines).
file(READ "${SOURCE_DIR}/README.md" readme)
string(REGEX REPLACE "[^\n]" "" newlines "${readme}")
string(LENGTH "${newlines}" readme_lines)
if(readme_lines GREATER README_MAX_LINES)
  list(APPEND problems "README.md has ${readme_lines} lines, more than ${README_MAX_LINES}")
endif()
message(STATUS "README.md: ${readme_lines} lines (at most ${README_MAX_LINES})")

# Every page of docs/ is linked from the README.
file(GLOB pages RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/docs/*.md")
foreach(page IN LISTS pages)
  string(FIND "${readme}" "](${page}" at)
  if(at EQUAL -1)
    list(APPEND problems "README.md does not link ${page}")
  endif()
endforeach()

# The GitHub anchors of a Markdown file's headings (outside code blocks), into `out`.
function(anchors_of file out)
  markdown_headings("${file}" headings)
  set(result)
  foreach(line IN LISTS headings)
    if(line MATCHES "^#+[ \t]+(.*)$")
      string(TOLOWER "${CMAKE_MATCH_1}" anchor)
      string(REGEX REPLACE "[^a-z0-9 _-]" "" anchor "${anchor}")
      string(REPLACE " " "-" anchor "${anchor}")
      list(APPEND result "${anchor}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# Every local link resolves: [text](path) and [text](path#anchor), relative to the page.
string(ASCII 1 link_mark)
file(GLOB markdown "${SOURCE_DIR}/docs/*.md")
list(APPEND markdown "${SOURCE_DIR}/README.md")
foreach(file IN LISTS markdown)
  get_filename_component(dir "${file}" DIRECTORY)
  file(RELATIVE_PATH name "${SOURCE_DIR}" "${file}")
  file(READ "${file}" text)
  # A ']' in a CMake list element glues it to the next: mark "](" with a control character.
  string(REPLACE "](" "${link_mark}(" text "${text}")
  string(REGEX MATCHALL "${link_mark}\\([^)# ]*(#[^) ]*)?\\)" links "${text}")
  foreach(link IN LISTS links)
    string(REGEX MATCH "^${link_mark}\\(([^)# ]*)(#[^) ]*)?\\)$" matched "${link}")
    set(target "${CMAKE_MATCH_1}")
    set(anchor "${CMAKE_MATCH_2}")
    if(target MATCHES "^[a-z]+:")
      continue()  # http:, https:, mailto:
    endif()
    if(target STREQUAL "")
      set(target_file "${file}")
    else()
      set(target_file "${dir}/${target}")
    endif()
    if(NOT EXISTS "${target_file}")
      list(APPEND problems "${name}: link to ${target}, which does not exist")
      continue()
    endif()
    if(anchor AND target_file MATCHES "\\.md$")
      string(SUBSTRING "${anchor}" 1 -1 anchor)
      anchors_of("${target_file}" known)
      if(NOT anchor IN_LIST known)
        list(APPEND problems "${name}: link to ${target}#${anchor}, a heading that does not exist")
      endif()
    endif()
  endforeach()
endforeach()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "documentation problems:\n  ${text}")
endif()
list(LENGTH pages page_count)
message(STATUS "every docs/ page (${page_count}) is linked from README.md; every local link resolves")
