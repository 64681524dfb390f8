# SPDX-License-Identifier: Apache-2.0
# Warnings.cmake — the project's compiler warnings, as one INTERFACE target: kcache_warnings.
#
# The one idea: warnings are for us, never a reason for a user's build to fail.  A user's
# compiler may be newer than ours and find something new; that must print a warning, not
# stop `cmake --build`.  So -Werror is an option, KCACHE_WERROR, OFF by default and turned
# on by development and CI (.ci/run, `KCACHE_WERROR=ON bash tools/test.sh`) — as ccache
# (cmake/StandardWarnings.cmake), curl (CURL_WERROR) and libgit2 (ENABLE_WERROR) do.
#
# Who uses it: our own targets link it PRIVATELY (the library's object files in
# src/CMakeLists.txt, the tools, the tests, the benchmark, the fuzz targets), so the flags
# never travel to a program that links kcache, nor into the installed CMake package.
# What it must not do: carry anything but warning flags (sanitizers, definitions and the
# language standard are set elsewhere).

option(KCACHE_WERROR "Treat compiler warnings as errors (for development and CI; users leave it OFF)" OFF)

add_library(kcache_warnings INTERFACE)
target_compile_options(kcache_warnings INTERFACE -Wall -Wextra)
# Bounded snprintf into fixed buffers is deliberate here (paths are length-checked first,
# messages may be cut); GCC's guesses about it are noise.
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  target_compile_options(kcache_warnings INTERFACE -Wno-format-truncation)
endif()
if(KCACHE_WERROR)
  target_compile_options(kcache_warnings INTERFACE -Werror)
endif()
