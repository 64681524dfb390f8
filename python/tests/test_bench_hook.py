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


def test_loop_holds_its_names_while_another_thread_changes_the_list(tmp_path: "os.PathLike[str]") -> None:
    # The loop runs without the GIL: it must read its own copy of the names, not the caller's list,
    # which another thread changes (each old name freed, its memory taken by strings of the same size).
    # It passes whatever the interleaving; it can fail only when the loop reads a name it does not own.
    import threading

    with kcache.Cache(dir=os.path.join(str(tmp_path), "c")) as c:
        c.compile(SRC, "hook_scale", "sm_90")
        names = ["".join(["hook_", "scale"])]
        stop = threading.Event()

        def churn() -> None:
            while not stop.is_set():
                names[0] = "".join(["hook_", "scale"])
                junk = ["".join(["zzzzz", "zzzzz"]) for _ in range(64)]
                del junk

        t = threading.Thread(target=churn)
        t.start()
        try:
            before = c.stats()
            for _ in range(1000):
                loop(c, SRC, names, "sm_90", 5)
            after = c.stats()
        finally:
            stop.set()
            t.join()
        assert after["memory_hits"] - before["memory_hits"] == 5000
        assert after["misses"] == before["misses"]
