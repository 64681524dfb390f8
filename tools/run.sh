#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh — the README's main job: install what is needed, build, compile the bundled graphs
# (kernels/manifest.json) through the local cache twice — cold, then warm — then prewarm the
# manifest for every architecture it lists, and show the cache's statistics.  The cache is KCACHE_DIR (default ~/.cache/kcache).  Without a GPU
# it compiles for sm_90 only (set KCACHE_DEMO_ARCH to choose).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCACHE_WERROR="${KCACHE_WERROR:-OFF}" >/dev/null
cmake --build build -j "$(nproc)"
KC=build/tools/kcache/kcache
echo
echo "== kcache demo (kernels/manifest.json)"
"$KC" demo --manifest kernels/manifest.json ${KCACHE_DEMO_ARCH:+--arch "$KCACHE_DEMO_ARCH"}
echo "== kcache prewarm kernels/manifest.json"
"$KC" prewarm kernels/manifest.json
echo
echo "== kcache stats"
"$KC" stats
