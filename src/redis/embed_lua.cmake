# Writes OUTPUT, a C++ header with one constant per Lua operation script in LUA_DIR:
# common.lua followed by <operation>.lua, as a raw string literal, with the SHA1 Redis
# will compute for it (so EVALSHA needs no SCRIPT LOAD round trip).
#   cmake -DLUA_DIR=... -DOPERATIONS=a,b,c -DOUTPUT=... -P embed_lua.cmake
string(REPLACE "," ";" OPERATIONS "${OPERATIONS}")
set(delimiter "seatlock_lua")

function(read_lua path out)
  file(READ ${path} text)
  # Compilers read raw string literals with \n line ends: hash exactly what they embed.
  string(REPLACE "\r" "" text "${text}")
  if(text MATCHES "\\)${delimiter}\"")
    message(FATAL_ERROR "${path} contains the raw string delimiter )${delimiter}\"")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

read_lua(${LUA_DIR}/common.lua common)
set(body "// Generated from src/redis/lua/*.lua by embed_lua.cmake: do not edit.\n")
string(APPEND body "#pragma once\n\n#include <array>\n#include <string_view>\n\n")
string(APPEND body "namespace seatlock::redis_scripts {\n\n")
string(APPEND body "/// One Lua script: its operation name, its text, and the SHA1 of the text.\n")
string(APPEND body "struct Script {\n    std::string_view name;\n    std::string_view body;\n    std::string_view sha1;\n};\n\n")
set(all "")
foreach(op ${OPERATIONS})
  read_lua(${LUA_DIR}/${op}.lua text)
  set(script "${common}\n-- ${op}.lua\n${text}")
  string(SHA1 sha "${script}")
  string(APPEND body "inline constexpr Script ${op}{\"${op}\", R\"${delimiter}(${script})${delimiter}\", \"${sha}\"};\n\n")
  list(APPEND all "&${op}")
endforeach()
list(LENGTH OPERATIONS count)
string(REPLACE ";" ", " all "${all}")
string(APPEND body "/// Every script, for loading and for tests.\n")
string(APPEND body "inline constexpr std::array<const Script*, ${count}> all{${all}};\n\n")
string(APPEND body "}  // namespace seatlock::redis_scripts\n")

# Only touch the file when it changes, so dependents are not rebuilt needlessly.
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} previous)
  if(previous STREQUAL body)
    return()
  endif()
endif()
file(WRITE ${OUTPUT} "${body}")
