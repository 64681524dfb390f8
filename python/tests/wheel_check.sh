#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# wheel_check.sh — the wheel as a user gets it: `pip wheel .` builds it (scikit-build-core over the
# root CMakeLists.txt, build isolation and all), it installs into a fresh virtual environment with
# nothing else of the repository, and the compile-only test runs there (the real NVRTC, no GPU),
# from a folder outside the repository so that only the installed package can be imported; the
# wheel's `kcache` command runs too.  Called by `.ci/run python`; needs PyPI (or a pip cache) for
# the build requirements and pytest.
#   bash python/tests/wheel_check.sh [PYTHON]   # PYTHON: the interpreter to build for (default: .venv-py's)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${1:-$root/.venv-py/bin/python}
[ -x "$py" ] || { echo "wheel_check: no interpreter at $py (bash tools/deps.sh --python)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
"$py" -m pip wheel -q --no-deps --disable-pip-version-check . -w "$work/dist"
whl=$(ls "$work"/dist/kcache-*.whl)
echo "wheel_check: built $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB)"
"$py" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$whl" pytest
mkdir "$work/run" && cd "$work/run"
"$work/venv/bin/python" - "$work/venv" <<'PY'
import os, sys, kcache
assert os.path.realpath(kcache.__file__).startswith(os.path.realpath(sys.argv[1])), kcache.__file__
print("wheel_check: kcache", kcache.__version__, "from", os.path.dirname(kcache.__file__))
PY
"$work/venv/bin/kcache" --version
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$root/python/tests" \
  "$root/python/tests/test_compile.py::test_cubin_and_outcomes" "$root/python/tests/test_compile.py::test_ptx"
echo "wheel_check: OK"
