# SPDX-License-Identifier: MIT
# write_if_changed(PATH CONTENT): writes CONTENT to PATH only when the file's content
# differs, so that what is generated at build time does not make its dependents rebuild
# when nothing changed. Included by the build-time generators run with `cmake -P`.
function(write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" previous)
    if(previous STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()
