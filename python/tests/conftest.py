# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures of the kcache package's tests (pytest python/tests).

Environment: KCACHE_CLI, the `kcache` command of the same build (the tests that compare with the C
side use it; with KCACHE_REQUIRE_CLI=1 they fail, not skip, when it is missing).  Every test opens
its own cache directory under tmp_path; nothing reads the user's cache.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, List

import pytest

import kcache

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"

# A kernel with a template, so that a name expression lowers to a mangled symbol.
SAXPY = r"""
template <typename T>
__global__ void saxpy(T a, const T *x, T *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void scale(float *y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= s;
}
"""


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "gpu: needs a real GPU (run by tools/gpu/verify.sh where one is lent)")


@pytest.fixture
def cache(tmp_path: Path):  # type: ignore[no-untyped-def]
    with kcache.Cache(tmp_path / "cache") as c:
        yield c


@pytest.fixture
def cli() -> str:
    """The kcache command (env KCACHE_CLI)."""
    path = os.environ.get("KCACHE_CLI", "")
    if path and os.access(path, os.X_OK):
        return path
    why = f"KCACHE_CLI={path!r} is not an executable kcache command" if path else "KCACHE_CLI is not set"
    if os.environ.get("KCACHE_REQUIRE_CLI") == "1":
        pytest.fail(f"{why} (KCACHE_REQUIRE_CLI=1)")
    pytest.skip(why)


def run_cli(cli: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([cli, *args], capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"kcache {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def cli_json(cli: str, *args: str) -> Any:
    return json.loads(run_cli(cli, *args).stdout)


def entry_files(cache_dir: Path) -> List[str]:
    """The stored objects of a cache directory: its entry files (*.kce: graph entries, images, unit
    records), as paths relative to it."""
    return sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*.kce") if p.is_file())
