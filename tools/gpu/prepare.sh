#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# prepare.sh — run HERE (a machine that reaches Debian's registry): download the -dev
# packages the build needs into .gpu-debs/ (ignored by git), so that a GPU machine that
# reaches no registry can build kcache: carry .gpu-debs and run tools/gpu/verify.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-debs
gd=$(git rev-parse --git-dir); mkdir -p "$gd/info"
grep -qx '/.gpu-debs/' "$gd/info/exclude" 2>/dev/null || echo '/.gpu-debs/' >> "$gd/info/exclude"
cd .gpu-debs
apt-get download libzstd-dev libzstd1 libxxhash-dev libxxhash0 libcmocka-dev libcmocka0 \
  libhiredis-dev libhiredis0.14 libssl-dev libssl3 redis-server redis-tools liblzf1 libjemalloc2 >/dev/null 2>&1
ls -1
