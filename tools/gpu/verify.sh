#!/usr/bin/env bash
# verify.sh — run ON THE GPU MACHINE in one call (after tools/gpu/prepare.sh here, with
# .gpu-debs carried): unpack the -dev packages into a private prefix, build, run every test
# (the gpu label included) and the demo, and leave the logs in $OUT (or /tmp/kcache-gpu).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/kcache-gpu}
mkdir -p "$out"
prefix=/tmp/kcache-deps
rm -rf "$prefix" && mkdir -p "$prefix"
for d in .gpu-debs/*.deb; do dpkg -x "$d" "$prefix"; done
export CMAKE_PREFIX_PATH="$prefix/usr"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PATH="$PATH:/usr/local/cuda/bin:$prefix/usr/bin"   # redis-server from the carried packages
nvidia-smi -L 2>&1 | tee "$out/gpu.txt"
gen=""; command -v ninja >/dev/null && gen="-G Ninja"
cmake -S . -B build-gpu $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INCLUDE_PATH="$prefix/usr/include" -DCMAKE_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu" \
  >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
ctest --test-dir build-gpu --output-on-failure -j 4 2>&1 | tee "$out/ctest.log" | tail -25
KCACHE_DIR=/tmp/kcache-gpu-demo build-gpu/tools/kcache/kcache demo 2>&1 | tee "$out/demo.log"
# The benchmark, GPU part included (hit with load vs bare load, PTX vs cubin, NVRTC's own cache).
build-gpu/tools/bench/kcache-bench --quick --json "$out/bench.json" 2>&1 | tee "$out/bench.log" | tail -25
