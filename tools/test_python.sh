#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_python.sh — the Python package's tests, the last part of tools/test.sh: the virtual
# environment .venv-py (tools/deps.sh --python: pytest and the build backend from PyPI), the package
# built and installed into it (`pip install .`: scikit-build-core over the CMake build, its folder
# build-py/ kept between runs), then pytest over python/tests with the `kcache` command and the CUDA
# driver double of the C tests' build (build/; what is missing of them is built here).  Tests that
# need a GPU are deselected here (-m "not gpu"); tools/gpu/verify.sh runs them on a GPU machine.
#   bash tools/test_python.sh [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh --python
export PATH="$PATH:/usr/local/cuda/bin"
werror=${KCACHE_WERROR:-OFF}
[ -f build/build.ninja ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCACHE_BUILD_TESTS=ON \
  "-DKCACHE_WERROR=$werror" >/dev/null
cmake --build build -j "$(nproc)" --target kcache_cli kcache_cuda_double >/dev/null
echo "== pip install . (the Python package, into .venv-py)"
.venv-py/bin/pip install -q --disable-pip-version-check --no-build-isolation \
  --config-settings=cmake.define.KCACHE_WERROR="$werror" .
echo "== pytest python/tests"
KCACHE_CLI="$PWD/build/tools/kcache/kcache" KCACHE_REQUIRE_CLI=1 \
  KCACHE_CUDA_DRIVER="$PWD/build/tests/double/libkcache_cuda_double.so" KCACHE_REQUIRE_DOUBLE=1 \
  .venv-py/bin/python -m pytest -q -p no:cacheprovider -m "not gpu" python/tests "$@"
