#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# verify.sh — run ON THE GPU MACHINE in one call (after tools/gpu/prepare.sh here, with
# .gpu-debs carried): unpack the -dev packages into a private prefix, build, then, each step
# under its own time limit so that one hang cannot spend the lease: the gpu-labelled tests,
# the demo (every bundled graph against its CPU reference), the benchmark (its GPU part: a hit
# with the driver load against a bare load, PTX against cubin), the Python extension's gpu tests,
# and last every other test.
# Logs go to $OUT (or /tmp/kcache-gpu), 10 files (what the device tool brings back); the output is a short summary.
#   bash tools/gpu/verify.sh [--no-rest] [--no-bench]
#     --no-rest   skip the non-gpu tests at the end
#     --no-bench  skip the demo, the C benchmark and the load timings (the gpu tests, C and Python, and
#                 the Python benchmark still run): for a short lease
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/kcache-gpu}
mkdir -p "$out"
rest=1; cbench=1
for a in "$@"; do
    case "$a" in
        --no-rest) rest=0 ;;
        --no-bench) cbench=0 ;;
        *) echo "usage: tools/gpu/verify.sh [--no-rest] [--no-bench]" >&2; exit 2 ;;
    esac
done
prefix=/tmp/kcache-deps
rm -rf "$prefix" && mkdir -p "$prefix"
for d in .gpu-debs/*.deb; do dpkg -x "$d" "$prefix"; done
export CMAKE_PREFIX_PATH="$prefix/usr"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PATH="$PATH:/usr/local/cuda/bin:$prefix/usr/bin"   # redis-server from the carried packages
t0=$SECONDS
# step NAME LIMIT CMD...: run CMD under LIMIT seconds into $out/NAME.log; print its rc and tail.
step() {
    local name=$1 limit=$2 s=$SECONDS rc; shift 2
    timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1; rc=$?
    echo "== $name: rc $rc in $((SECONDS - s)) s$([ $rc = 124 ] && echo " (time limit $limit s)")"
    return $rc
}
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  nvcc --version | tail -2; ls /usr/local/cuda/lib64/ | grep -E '^libnvrtc' | head -4; uname -r; } >"$out/gpu.log" 2>&1
cat "$out/gpu.log"
gen=""; command -v ninja >/dev/null && gen="-G Ninja"
step build 300 bash -c "cmake -S . -B build-gpu $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_INCLUDE_PATH=$prefix/usr/include -DCMAKE_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu \
    && cmake --build build-gpu -j $(nproc)" || { tail -30 "$out/build.log"; exit 1; }
step ctest-gpu 240 ctest --test-dir build-gpu -L gpu --output-on-failure -V
grep -E "^\[ *(RUN|OK|FAILED|SKIPPED|PASSED|ERROR|  FAILED) |skipped:|Test +#|tests passed|Failed|\(Failed\)|Passed" "$out/ctest-gpu.log" | tail -40
if [ $cbench = 1 ]; then
    rm -rf /tmp/kcache-gpu-demo
    step demo 120 env KCACHE_DIR=/tmp/kcache-gpu-demo build-gpu/tools/kcache/kcache demo
    tail -25 "$out/demo.log"
    step bench 240 build-gpu/tools/bench/kcache-bench --quick --largest 10000 --json "$out/bench.json"
    grep -E "^GPU|warm / limit|cold / warm|second shape, cold|process floor|acceptance" "$out/bench.log" | head -12
    # Where a load's time goes (KCACHE_LOG=load: one line per graph loaded), in-process hits of one
    # graph; then a warm start: 5 fresh processes, each getting every graph of the manifest loaded.
    rm -rf /tmp/kcache-gpu-ws
    step load 120 bash -c "KCACHE_LOG=load build-gpu/tools/bench/kcache-bench --gpu-only &&
        build-gpu/tools/kcache/kcache --cache-dir /tmp/kcache-gpu-ws prewarm kernels/manifest.json --arch sm_90 >/dev/null &&
        for i in 1 2 3 4 5; do build-gpu/tools/bench/kcache-warmstart kernels/manifest.json --cache-dir /tmp/kcache-gpu-ws; done"
    tail -7 "$out/load.log"
fi
# Python: the extension kcache._kcache built in a folder of its own against this machine's python3 (with
# PyTorch and CuPy), then the pytest tests marked gpu: PyTorch and CuPy tensors through a loaded graph's
# forward and backward against a NumPy reference, on the default and a non-default stream.
py=$(command -v python3 || echo python3); pkg=/tmp/kcache-py
rm -rf "$pkg" && mkdir -p "$pkg/kcache"
step py-build 240 bash -c "cmake -S . -B build-gpu-py $gen -DCMAKE_BUILD_TYPE=Release -DKCACHE_PYTHON=ON \
    -DKCACHE_BUILD_TESTS=OFF -DKCACHE_BUILD_TOOLS=OFF -DKCACHE_DRIVER_DOUBLE=OFF -DPython_EXECUTABLE=$py \
    -DCMAKE_INCLUDE_PATH=$prefix/usr/include -DCMAKE_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu \
    && cmake --build build-gpu-py -j $(nproc) --target _kcache \
    && cp python/kcache/*.py python/kcache/py.typed build-gpu-py/python/kcache/_kcache*.so $pkg/kcache/" &&
    step py-gpu 180 env -u KCACHE_CUDA_DRIVER -u KCACHE_TEST_DRIVER_DOUBLE PYTHONPATH="$pkg" \
        "$py" -m pytest -m gpu python/tests -p no:cacheprovider -q -rs
tail -15 "$out/py-build.log" "$out/py-gpu.log" 2>/dev/null | grep -vE "^$" | tail -20
# The Python benchmark (tools/bench/python_compile.py): a warm compile from Python against cuda.core's and
# CuPy's program caches, and Python over C, in one process.
step pybench 120 env PYTHONPATH="$pkg" "$py" tools/bench/python_compile.py --json "$out/pybench.json"
tail -25 "$out/pybench.log"
if [ $rest = 1 ]; then
    step ctest-rest 200 ctest --test-dir build-gpu -LE gpu --output-on-failure -j 12 --timeout 150
    grep -E "tests passed|\*\*\*|Failed|Timeout|Not Run" "$out/ctest-rest.log" | tail -25
fi
echo "== total $((SECONDS - t0)) s"
# The device tool brings back 8 files at most: more than that go back as one archive.
if [ "$(ls -1 "$out" | wc -l)" -gt 8 ]; then
    tar czf /tmp/kcache-gpu-logs.tgz -C "$out" . && rm -f "$out"/* && mv /tmp/kcache-gpu-logs.tgz "$out/logs.tgz"
fi
