#!/usr/bin/env bash
# run.sh — the README's main job: install what is needed, build, open the local cache
# (KCACHE_DIR, default ~/.cache/kcache) and show its statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
KC=build/tools/kcache/kcache
echo "== kcache stats"
"$KC" stats
