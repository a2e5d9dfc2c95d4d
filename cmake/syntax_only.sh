#!/bin/sh
# SPDX-License-Identifier: MIT
# cmake/syntax_only.sh COMPILER ARGS...: a compiler launcher (CXX_COMPILER_LAUNCHER) for
# targets whose files are compiled only for the front end's checks (the header checks and
# the documentation's examples: tests/CMakeLists.txt, tests/docs/CMakeLists.txt). Runs the
# compile with -fsyntax-only (every check, warnings as errors included, but no code
# generated: about a third less time) and leaves an empty object where -o names one, so
# that the build sees its output made. The dependency file (-MD) is written as usual.
out=
previous=
for argument in "$@"; do
  if [ "$previous" = "-o" ]; then out=$argument; fi
  previous=$argument
done
"$@" -fsyntax-only || exit $?
if [ -n "$out" ]; then : > "$out"; fi
