#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_consumer.sh — a runtime's build against the INSTALLED kcache ([Note: versioned structs] in
# src/common/api.h; README "Testing a runtime without a GPU").
#
# Installs the build tree into a temporary prefix (cmake --install), then builds consumer/ — C11
# and C++11, -pedantic -Wall -Wextra -Werror, every struct filled through its _INIT macro or
# designated initialisers — twice: through find_package(kcache) (kcache::kcache,
# kcache::cuda_double) and through pkg-config (its cuda_double variable names the double).  Each
# program gets and runs a graph on the INSTALLED driver double (KCACHE_CUDA_DRIVER), with the real
# NVRTC.  Nothing is read from the source or build tree but the install itself and consumer/.
# Usage: test_consumer.sh BUILD_DIR SOURCE_DIR VERSION.  Exit 77 when there is no NVRTC.
set -euo pipefail
build=$1 src=$2 version=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
for f in include/kcache.h include/kcache/version.h include/kcache/cuda_double.h; do
  [ -f "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
# The installed control header needs no <cuda.h>: compile it alone with no CUDA include folder.
printf '#include <kcache/cuda_double.h>\nint main(void) { kcd_reset(); return 0; }\n' >"$tmp/alone.c"
cc -std=c11 -pedantic -Wall -Wextra -Werror -I"$prefix/include" -c "$tmp/alone.c" -o "$tmp/alone.o"
libdir=$(dirname "$(find "$prefix" -name 'libkcache.so' -print -quit)")
[ -f "$libdir/libkcache_cuda_double.so" ] || { echo "the driver double is not installed beside libkcache"; exit 1; }

run() { # name, program: a fresh cache, the installed double
  mkdir -p "$tmp/cache-$1"
  local rc=0
  KCACHE_CUDA_DRIVER=$2 KCD_DEVICES=9.0 LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$3" "$tmp/cache-$1" || rc=$?
  if [ "$rc" = 77 ]; then echo "skipped: no NVRTC"; exit 77; fi
  [ "$rc" = 0 ] || { echo "$1: exit $rc"; exit 1; }
}

# 1. find_package(kcache)
cmake -S "$src/tests/api/consumer" -B "$tmp/b" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DKCACHE_EXPECT_VERSION="$version" -DCMAKE_BUILD_TYPE=Debug >"$tmp/cfg.log" 2>&1 || { cat "$tmp/cfg.log"; exit 1; }
cmake --build "$tmp/b" || exit 1
double=$(cat "$tmp/b/cuda_double_path.txt")
case $double in "$prefix"/*) ;; *) echo "kcache::cuda_double is not the installed one: $double"; exit 1 ;; esac
run cmake-c "$double" "$tmp/b/consumer_c"
run cmake-cxx "$double" "$tmp/b/consumer_cxx"

# 2. pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion kcache)" = "$version" ] || { echo "pkg-config: version $(pkg-config --modversion kcache)"; exit 1; }
pc_double=$(pkg-config --variable=cuda_double kcache)
[ -f "$pc_double" ] || { echo "pkg-config's cuda_double '$pc_double' is no file"; exit 1; }
flags=(-pedantic -Wall -Wextra -Werror)
# shellcheck disable=SC2046
cc -std=c11 "${flags[@]}" $(pkg-config --cflags kcache) "$src/tests/api/consumer/consumer.c" -o "$tmp/pc_c" \
  $(pkg-config --libs kcache) -lkcache_cuda_double -Wl,-rpath,"$libdir"
# shellcheck disable=SC2046
c++ -std=c++11 "${flags[@]}" $(pkg-config --cflags kcache) "$src/tests/api/consumer/consumer.cpp" -o "$tmp/pc_cxx" \
  $(pkg-config --libs kcache) -lkcache_cuda_double -Wl,-rpath,"$libdir"
run pc-c "$pc_double" "$tmp/pc_c"
run pc-cxx "$pc_double" "$tmp/pc_cxx"
echo "consumer: built and ran against the installed kcache $version (CMake and pkg-config, C and C++)"
