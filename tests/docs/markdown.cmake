# SPDX-License-Identifier: MIT
# markdown.cmake: what the documentation checks (check_links.cmake, check_pages.cmake) read
# of a Markdown file.

# The headings of `file` outside fenced code blocks, whole lines ("## Title"), into `out`.
# A ';' in a heading becomes ',' (a CMake list cannot hold one).
function(markdown_headings file out)
  file(STRINGS "${file}" lines)
  set(result)
  set(in_code FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*```")
      if(in_code)
        set(in_code FALSE)
      else()
        set(in_code TRUE)
      endif()
    elseif(NOT in_code AND line MATCHES "^#+[ \t]")
      string(REPLACE ";" "," line "${line}")
      list(APPEND result "${line}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()
