# SPDX-License-Identifier: Apache-2.0
"""test_bench_hook.py — the benchmark's C side, kcache._kcache._compile_loop, is the C call it claims.

The one idea: tools/bench/python_compile.py subtracts _compile_loop's time per call from
Cache.compile's, so the loop must make exactly n kc_cache_compile calls on the Cache's own
kc_cache (the same key, counted as n lookups of the outcome Cache.compile sees), refuse what
Cache.compile refuses, and fail as Cache.compile fails (status and message).
"""
from __future__ import annotations

import os
from typing import Any

import pytest

import kcache

loop = kcache._kcache._compile_loop

SRC = r"""
extern "C" __global__ void hook_scale(float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= a;
}
"""


def test_loop_counts_n_memory_hits(tmp_path: "os.PathLike[str]") -> None:
    with kcache.Cache(dir=os.path.join(str(tmp_path), "c")) as c:
        first = c.compile(SRC, "hook_scale", "sm_90")
        assert first.outcome == "compile"
        before = c.stats()
        secs: Any = loop(c, SRC, ["hook_scale"], "sm_90", 25)
        after = c.stats()
        assert isinstance(secs, float) and secs > 0
        assert after["memory_hits"] - before["memory_hits"] == 25
        assert after["misses"] == before["misses"] and after["compiles"] == before["compiles"]
        assert c.compile(SRC, "hook_scale", "sm_90").key == first.key


def test_loop_fails_as_compile_fails(tmp_path: "os.PathLike[str]") -> None:
    with kcache.Cache(dir=os.path.join(str(tmp_path), "c")) as c:
        with pytest.raises(kcache.CompileError) as e:
            loop(c, "__global__ void k() { int x = ; }", "k", "sm_90", 3)
        assert e.value.status_name == "KC_ECOMPILE" and "kc_cache_compile" in e.value.message
        with pytest.raises(TypeError):
            loop(c, SRC, [b"hook_scale"], "sm_90", 1)
        with pytest.raises(TypeError):
            loop(c, b"bytes", "hook_scale", "sm_90", 1)
        for n in (0, -1):
            with pytest.raises(ValueError):
                loop(c, SRC, "hook_scale", "sm_90", n)
        with pytest.raises(ValueError):
            loop(c, SRC, [], "sm_90", 1)
    with pytest.raises(kcache.ClosedError):
        loop(c, SRC, "hook_scale", "sm_90", 1)
    with pytest.raises(TypeError):
        loop(object(), SRC, "hook_scale", "sm_90", 1)
