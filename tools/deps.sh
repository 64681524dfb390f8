#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh — install what kcache needs to build and test, from Debian's packages, if missing.
# The CUDA Toolkit comes with the machine (found by CMake under /usr/local/cuda).
set -euo pipefail
pkgs=(cmake ninja-build pkg-config gcc g++ python3
      libzstd-dev libxxhash-dev libcmocka-dev
      libhiredis-dev libssl-dev redis-server
      binutils strace   # the toolchain tests: readelf -n, and "a hit opens no libnvrtc*"
      groff-base zsh    # the man pages through groff -ww (kcache(1), libkcache(3)); the completions through zsh -n
      python3-prometheus-client  # test_stats_metrics: the OpenMetrics and Prometheus text parsers
      openssl redis-tools  # tests/servers/redis_tls.sh: the test CA and certificates, redis-cli --tls
      iproute2          # tests/servers/redis_cluster.sh: ss, to find free ports (and their bus ports)
      dpkg-dev file     # test_package: CPack's .deb (dpkg-shlibdeps, file)
      libcurl4-openssl-dev nginx-light curl  # the HTTP content store (libcurl); its tests' WebDAV server
      python3-venv)     # the S3 stand-in's virtual environment (below)
# Extras, by flag (any number of them):
#   --bench  what kcache-bench compares with and draws with: ccache and sccache (Debian), gnuplot, and
#            the Python runtimes' caches at pinned versions in a virtual environment, .venv-bench
#            (cuda.core's program cache, Triton's; from PyPI: tools/bench/peers/)
#   --python-bench  what tools/bench/python_compile.py compares with, pinned, in .venv-bench: cuda.core's
#            program caches and CuPy's kernel cache (CuPy's hits need a GPU), and this repository's
#            Python package itself (pip install ., rebuilt on each call)
#   --clang  clang, the second compiler of CI's build matrix (.ci/run)
#   --fuzz   clang and its runtime libraries (libFuzzer, sanitizers) for tools/fuzz.sh
#   --package  man-db, for `.ci/run package` (man finds the installed manual pages)
#   --python   the Python package's build and tests (`.ci/run python`): python3-dev (Python.h) and a
#            git-ignored virtual environment .venv-py at the repository's root with pytest, numpy,
#            scikit-build-core and mypy from PyPI, pinned (never the system Python's site-packages)
#   --style  clang-format 14 and python3-venv, for tools/style.sh (which installs lizard from PyPI
#            into a virtual environment when python3 cannot import it)
bench=0
pybench=0
python=0
for flag in "$@"; do
  case "$flag" in
    --bench) pkgs+=(ccache sccache gnuplot-nox python3-venv); bench=1 ;;
    --python-bench) pkgs+=(python3-dev python3-venv); pybench=1 ;;
    --clang) pkgs+=(clang) ;;
    --fuzz) pkgs+=(clang libclang-rt-14-dev) ;;
    --package) pkgs+=(man-db) ;;
    --python) pkgs+=(python3-dev python3-venv); python=1 ;;
    --style) pkgs+=(clang-format-14 python3-venv) ;;
    *) echo "usage: tools/deps.sh [--bench] [--python-bench] [--clang] [--fuzz] [--package] [--python] [--style]" >&2; exit 2 ;;
  esac
done
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
# The S3 stand-in of test_http_s3 (tests/servers/s3.sh): moto's server, pinned, in a git-ignored virtual
# environment at the repository's root, .venv-s3 (always: CI runs that test).
root=$(cd "$(dirname "$0")/.." && pwd)
if ! "$root/.venv-s3/bin/python" -c 'import moto.server, boto3' 2>/dev/null; then
  echo "deps: installing moto[server]==5.0.28 into $root/.venv-s3"
  python3 -m venv "$root/.venv-s3"
  "$root/.venv-s3/bin/pip" install -q --disable-pip-version-check 'moto[server]==5.0.28'
fi
if [ "$bench" = 1 ]; then
  # The Python peers of kcache-bench (tools/bench/peers/), pinned: cuda.core 1.2.2 with the CUDA 13 bindings
  # (NVRTC 13.0 here), Triton 3.9.0.  Into a git-ignored virtual environment at the repository's root.
  root=$(cd "$(dirname "$0")/.." && pwd)
  venv="$root/.venv-bench"
  pins=(cuda-core==1.2.2 cuda-bindings==13.0.3 cuda-pathfinder==1.9.1 triton==3.9.0 numpy==2.4.6)
  if ! "$venv/bin/python" -c 'import cuda.core, triton' 2>/dev/null; then
    echo "deps: installing ${pins[*]} into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
  fi
fi
if [ "$python" = 1 ]; then
  # The Python package's tests (python/tests) and its build without isolation (.ci/run python), pinned.
  venv="$root/.venv-py"
  pins=(pytest==9.2.0 numpy==2.4.6 scikit-build-core==1.1.2 mypy==2.4.1)
  if ! "$venv/bin/python" -c 'import pytest, numpy, scikit_build_core, mypy' 2>/dev/null; then
    echo "deps: installing ${pins[*]} into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
  fi
fi
if [ "$pybench" = 1 ]; then
  # tools/bench/python_compile.py's peers, pinned (cuda.core 1.2.2 as --bench pins it; CuPy 14.2.0 for CUDA 13),
  # and the kcache package built from this tree, into the same git-ignored .venv-bench.
  venv="$root/.venv-bench"
  pins=(cuda-core==1.2.2 cuda-bindings==13.0.3 cuda-pathfinder==1.9.1 cupy-cuda13x==14.2.0 numpy==2.4.6)
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  if ! "$venv/bin/python" -c 'import cuda.core, cupy' 2>/dev/null; then
    echo "deps: installing ${pins[*]} into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
  fi
  echo "deps: installing the kcache package from $root into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "$root"
fi
