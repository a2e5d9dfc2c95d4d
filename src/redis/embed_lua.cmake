# SPDX-License-Identifier: MIT
# Writes OUTPUT, a C++ header holding one Redis function library (Redis 7 FUNCTION LOAD)
# built from LUA_DIR: common.lua, common_records.lua and common_rooms.lua, whose helpers are defined once
# when the library loads,
# then one function per operation <op>.lua, whose text becomes the function's body.
#   cmake -DLUA_DIR=... -DOPERATIONS=a,b,c -DOUTPUT=... -P embed_lua.cmake
#
# The library and its functions are named after the SHA1 of the library text
# (seatlock_<12 hex digits>, seatlock_<12 hex digits>_<op>): every build of seatlock calls
# its own code, and servers shared by two versions during an upgrade hold both.
string(REPLACE "," ";" OPERATIONS "${OPERATIONS}")
set(delimiter "seatlock_lua")

function(read_lua path out)
  file(READ ${path} text)
  string(REPLACE "\r" "" text "${text}")
  if(text MATCHES "\\)${delimiter}\"")
    message(FATAL_ERROR "${path} contains the raw string delimiter )${delimiter}\"")
  endif()
  if(text MATCHES "@FUNCTION_PREFIX@")
    message(FATAL_ERROR "${path} contains the placeholder @FUNCTION_PREFIX@")
  endif()
  # Comment lines are left empty: the library stays far below the 65,536 characters a
  # string literal may have (clang warns beyond), and Lua's line numbers stay the files'.
  # (A line that starts with -- is a comment: the files have no multi-line strings.)
  if(text MATCHES "\\[\\[|\\[=+\\[")
    message(FATAL_ERROR "${path} has a long bracket string or comment: its lines would be cut")
  endif()
  string(REGEX REPLACE "\n[ \t]*--[^\n]*" "\n" text "\n${text}")
  string(SUBSTRING "${text}" 1 -1 text)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# An operation's arguments are declared once, in its file, by one line
#   --! ARGV name name ... [rest...]
# and named in its code as @name: the 1-based position in ARGV, put in here (and @argc,
# how many fixed arguments there are; rest..., if any, is where the variable part starts).
# The C++ side gets the same names (redis_scripts::args::<op>::<name>, 0-based), so that
# neither side repeats positions by hand.
set(args_body "")
function(name_arguments op text_var)
  set(text "${${text_var}}")
  if(NOT text MATCHES "(^|\n)--! ARGV ([^\n]*)")
    message(FATAL_ERROR "${op}.lua has no '--! ARGV' line declaring its arguments")
  endif()
  string(REGEX REPLACE " +" ";" names "${CMAKE_MATCH_2}")
  set(index 0)
  set(fixed "")
  set(members "")
  foreach(name ${names})
    string(REGEX REPLACE "\\.\\.\\.$" "" bare "${name}")
    math(EXPR position "${index} + 1")
    list(APPEND fixed "${bare}=${position}")
    string(APPEND members "    static constexpr std::size_t ${bare} = ${index};\n")
    if(NOT bare STREQUAL name)
      break()
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
  string(APPEND members "    static constexpr std::size_t argc = ${index};  ///< fixed arguments\n")
  # Longest names first, so that @n does not cut @name.
  set(pairs "")
  foreach(entry ${fixed} "argc=${index}")
    string(REGEX REPLACE "=.*" "" bare "${entry}")
    string(LENGTH "${bare}" length)
    math(EXPR key "1000 - ${length}")
    list(APPEND pairs "${key}:${entry}")
  endforeach()
  list(SORT pairs)
  foreach(pair ${pairs})
    string(REGEX REPLACE "^[0-9]+:" "" entry "${pair}")
    string(REGEX REPLACE "=.*" "" bare "${entry}")
    string(REGEX REPLACE ".*=" "" position "${entry}")
    string(REPLACE "@${bare}" "${position}" text "${text}")
  endforeach()
  string(REGEX MATCH "@[a-z_]+" unknown "${text}")
  if(unknown)
    message(FATAL_ERROR "${op}.lua names ${unknown}, which its '--! ARGV' line does not declare")
  endif()
  set(${text_var} "${text}" PARENT_SCOPE)
  set(args_body "${args_body}/// ${op}.lua's arguments by name: positions in the ARGV a call sends.\nstruct ${op} {\n${members}};\n" PARENT_SCOPE)
endfunction()

read_lua(${LUA_DIR}/common.lua common)
read_lua(${LUA_DIR}/common_records.lua records)
string(APPEND common "\n${records}")
read_lua(${LUA_DIR}/common_rooms.lua rooms)
string(APPEND common "\n${rooms}")
# KEYS and ARGV: the running call's, set by each function before its body runs (a library
# may not define globals; Redis runs one function at a time). The first call also binds
# common.lua's locals for Lua's library functions (bind).
set(library "local KEYS, ARGV\n\n${common}\n")
foreach(op ${OPERATIONS})
  file(READ ${LUA_DIR}/${op}.lua declared)
  read_lua(${LUA_DIR}/${op}.lua text)
  string(REGEX MATCH "(^|\n)--! ARGV [^\n]*" declaration "${declared}")
  set(text "${declaration}\n${text}")
  name_arguments(${op} text)
  string(REGEX REPLACE "^\n?--! ARGV [^\n]*\n" "" text "${text}")
  string(APPEND library "\nredis.register_function('@FUNCTION_PREFIX@${op}', function(keys, args)\n")
  string(APPEND library "KEYS, ARGV = keys, args\nif not call then bind() end\n${text}end)\n")
endforeach()
string(SHA1 sha "${library}")
string(SUBSTRING "${sha}" 0 12 version)
set(name "seatlock_${version}")
string(REPLACE "@FUNCTION_PREFIX@" "${name}_" library "${library}")
set(library "#!lua name=${name}\n${library}")

set(body "// Generated from src/redis/lua/*.lua by embed_lua.cmake: do not edit.\n")
string(APPEND body "#pragma once\n\n#include <array>\n#include <cstddef>\n#include <string_view>\n\n")
string(APPEND body "namespace seatlock::redis_scripts {\n\n")
string(APPEND body "/// The function library every operation runs in, for FUNCTION LOAD.\n")
string(APPEND body "inline constexpr std::string_view library_name = \"${name}\";\n")
string(APPEND body "inline constexpr std::string_view library = R\"${delimiter}(${library})${delimiter}\";\n\n")
string(APPEND body "/// One operation: its name, and the library function FCALL runs for it.\n")
string(APPEND body "struct Script {\n    std::string_view name;\n    std::string_view function;\n};\n\n")
set(all "")
foreach(op ${OPERATIONS})
  string(APPEND body "inline constexpr Script ${op}{\"${op}\", \"${name}_${op}\"};\n")
  list(APPEND all "&${op}")
endforeach()
list(LENGTH OPERATIONS count)
string(REPLACE ";" ", " all "${all}")
string(APPEND body "\n/// Each function's arguments, by the names its file declares.\nnamespace args {\n\n${args_body}\n}  // namespace args\n")
string(APPEND body "\n/// Every operation, for tests.\n")
string(APPEND body "inline constexpr std::array<const Script*, ${count}> all{${all}};\n\n")
string(APPEND body "}  // namespace seatlock::redis_scripts\n")

include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/write_if_changed.cmake)
write_if_changed(${OUTPUT} "${body}")
