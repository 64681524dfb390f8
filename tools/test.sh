#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test.sh — the README's test command: install what is needed, build, run every test.
#   bash tools/test.sh                                  # plain build, all tests
#   bash tools/test.sh --sanitize address,undefined     # ASan + UBSan build, all tests
#   bash tools/test.sh --sanitize thread --label concurrency   # TSan on the concurrency tests
#   bash tools/test.sh --no-python                      # the C tests only
# A plain run (no --sanitize, no --label) ends with the Python package's tests (tools/test_python.sh).
# KCACHE_WERROR=ON in the environment (as .ci/run sets it) builds with -Werror: a warning fails
# the run.  Without it (a user's run) warnings are printed and the build goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
san=""; label=""; python=1
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) san=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --no-python) python=0; shift ;;
    *) echo "usage: tools/test.sh [--sanitize LIST] [--label LABEL] [--no-python]" >&2; exit 2 ;;
  esac
done
bash tools/deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
build=build
# KCACHE_WERROR is always passed, so a build folder configured by CI does not keep -Werror for a user.
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCACHE_BUILD_TESTS=ON "-DKCACHE_WERROR=${KCACHE_WERROR:-OFF}")
if [ -n "$san" ]; then
  build="build-${san//,/-}"
  cmake_args+=("-DKCACHE_SANITIZE=${san//,/;}")
  # intercept_tls_get_addr=0: GCC 12's sanitizer runtime (up to GCC 13, LLVM 16) misreads a dynamic TLS
  # block that lands 16 bytes into a page as carrying a glibc 2.19 header, records a garbage range, and
  # LeakSanitizer's tracer then crashes at exit ("Tracer caught signal 11"), now and then, in any test
  # whose threads touch NVRTC's TLS.  Off, dynamic TLS is not scanned for roots; kcache's own
  # thread-locals sit in the static TLS block, which still is.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp}
fi
cmake -S . -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
ctest_args=(--test-dir "$build" --output-on-failure -j "$(nproc)")
[ -n "$label" ] && ctest_args+=(-L "$label")
echo "== ctest ${san:+(sanitize: $san) }${label:+(label: $label)}"
ctest "${ctest_args[@]}"
if [ -z "$san" ] && [ -z "$label" ] && [ $python = 1 ]; then
  bash tools/test_python.sh
fi
