# SPDX-License-Identifier: Apache-2.0
"""One Cache from many threads: the same and different sources, and close() under running calls.

No test here depends on which thread wins a race: each asserts what holds for every interleaving."""
from __future__ import annotations

import pathlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List

import kcache

N = 8


def test_same_source_compiles_once(tmp_path: pathlib.Path) -> None:
    src = 'extern "C" __global__ void same(float *y) { y[0] = 7.0f; }\n'
    with kcache.Cache(tmp_path) as c:
        s0 = c.stats()
        barrier = threading.Barrier(N)

        def one(_: int) -> kcache.Program:
            barrier.wait()
            return c.compile(src, "same", "sm_90")

        with ThreadPoolExecutor(N) as ex:
            progs = list(ex.map(one, range(N)))
        s1 = c.stats()
    assert len({p.key for p in progs}) == 1 and len({p.image for p in progs}) == 1
    outcomes = [p.outcome for p in progs]
    assert outcomes.count("compile") == 1, outcomes  # single-flight
    assert s1["misses"] - s0["misses"] == 1
    hits = (s1["memory_hits"] - s0["memory_hits"]) + (s1["hits"] - s0["hits"])
    assert hits == N - 1 == outcomes.count("memory") + outcomes.count("disk")


def test_different_sources(tmp_path: pathlib.Path) -> None:
    with kcache.Cache(tmp_path) as c:
        def one(i: int) -> kcache.Program:
            return c.compile(f'extern "C" __global__ void k(float *y) {{ y[0] = {i}.0f; }}\n', "k", "sm_90")

        with ThreadPoolExecutor(N) as ex:
            progs = list(ex.map(one, range(N)))
        assert len({p.key for p in progs}) == N
        assert all(p.outcome == "compile" for p in progs)
        assert c.stats()["misses"] == N


def test_close_under_running_calls(tmp_path: pathlib.Path) -> None:
    """Threads call until the cache closes: each call gives a result or ClosedError, nothing else."""
    c = kcache.Cache(tmp_path)
    started = threading.Barrier(N + 1)
    errors: List[BaseException] = []
    results: List[int] = [0] * N

    def worker(i: int) -> None:
        started.wait()
        calls: List[Any] = [c.stats, c.config]
        calls.append(lambda: c.compile(f'extern "C" __global__ void t{i}() {{}}\n', f"t{i}", "sm_90"))
        n = 0
        while True:
            try:
                calls[n % len(calls)]()
                n += 1
            except kcache.ClosedError:
                results[i] = n
                return
            except BaseException as e:  # anything else is a defect
                errors.append(e)
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    started.wait()
    c.close()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert c.closed


def test_concurrent_close(tmp_path: pathlib.Path) -> None:
    c = kcache.Cache(tmp_path)
    with ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda _: c.close(), range(4)))
    assert c.closed
