#!/usr/bin/env bash
# deps.sh — install what kcache needs to build and test, from Debian's packages, if missing.
# The CUDA Toolkit comes with the machine (found by CMake under /usr/local/cuda).
set -euo pipefail
pkgs=(cmake ninja-build pkg-config gcc g++ python3
      libzstd-dev libxxhash-dev libcjson-dev libcmocka-dev
      libhiredis-dev libssl-dev redis-server)
# `tools/deps.sh --bench` also installs what kcache-bench compares with and draws with.
[ "${1:-}" = "--bench" ] && pkgs+=(ccache gnuplot-nox)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "deps: note: the CUDA Toolkit is at /usr/local/cuda (not on PATH; CMake finds it)"
fi
