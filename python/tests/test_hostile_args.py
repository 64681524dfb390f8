# SPDX-License-Identifier: Apache-2.0
"""Arguments that fight back: a headers mapping another thread changes while kcache compiles without
the GIL, mappings that are not dicts (UserDict, items() giving lists), readonly that is not a bool,
an __fspath__ that raises, and the GPU tests' CuPy probe (only a missing CuPy or device skips)."""
from __future__ import annotations

import collections
import importlib
import pathlib
import sys
import threading
import types
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import kcache

SRC = '#include "a.h"\nextern "C" __global__ void k(int *p) { *p = V; }\n'
SCALE = 'extern "C" __global__ void scale(float *x, float a, int n) { if (n) x[0] *= a; }\n'


def _text(v: int, pad: str) -> str:
    # A new str object each call (joined at run time), big enough that freeing it returns real memory.
    return "".join(["#define V ", str(v), "\n/*", pad * 100000, "*/\n"])


class _ListItems(dict):  # type: ignore[type-arg]
    """A dict subclass whose items() returns the list it stores (PyMapping_Items hands that very list
    back), which another thread replaces the contents of."""

    def __init__(self, lst: List[Tuple[str, str]]) -> None:
        super().__init__()
        self.lst = lst

    def __getitem__(self, k: str) -> str:
        return dict(self.lst)[k]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self.lst))

    def __len__(self) -> int:
        return len(self.lst)

    def items(self) -> List[Tuple[str, str]]:  # type: ignore[override]
        return self.lst


def test_headers_changed_by_another_thread_never_give_a_wrong_key(tmp_path: pathlib.Path) -> None:
    # Every compile must be keyed by one whole header text (either one): kcache holds its own copy of
    # the pairs while the GIL is released, so the other thread frees nothing kcache reads.  With
    # borrowed pointers into the mapping's list, the freed texts (overwritten by the junk) gave
    # another key, an error, or a crash.  It passes whatever the interleaving; it can only fail when
    # kcache reads a header it does not own.
    with kcache.Cache(tmp_path) as c:
        good: Dict[str, bytes] = {}
        for v, pad in ((1, "x"), (2, "y")):
            p = c.compile(SRC, "k", "sm_90", headers={"a.h": _text(v, pad)})
            good[p.key] = p.image
        assert len(good) == 2
        m = _ListItems([("a.h", _text(1, "x"))])
        stop = threading.Event()

        def churn() -> None:
            i = 0
            while not stop.is_set():
                m.lst[:] = [("a.h", _text(1 + i % 2, "xy"[i % 2]))]
                junk = [bytearray(b"\xff" * 100040) for _ in range(4)]
                del junk
                i += 1

        t = threading.Thread(target=churn)
        t.start()
        try:
            seen = [c.compile(SRC, "k", "sm_90", headers=m) for _ in range(600)]
        finally:
            stop.set()
            t.join()
    for p in seen:
        assert p.key in good and p.image == good[p.key]


def test_headers_any_mapping_with_items(tmp_path: pathlib.Path) -> None:
    # A Mapping that is not a dict (UserDict: a sequence-like __getitem__ too) is a mapping.
    with kcache.Cache(tmp_path) as c:
        want = c.compile(SRC, "k", "sm_90", headers={"a.h": "#define V 3\n"}).key
        got = c.compile(SRC, "k", "sm_90", headers=collections.UserDict({"a.h": "#define V 3\n"}))
        assert got.key == want
        for bad in (["a.h"], ("a.h", "x"), "a.h", b"a.h", 3):
            with pytest.raises(TypeError, match="headers must be a mapping"):
                c.compile(SRC, "k", "sm_90", headers=bad)  # type: ignore[arg-type]


class _PairsAsLists(collections.abc.Mapping):  # type: ignore[type-arg]
    def __init__(self, pairs: List[List[Any]]) -> None:
        self.pairs = pairs

    def __getitem__(self, k: str) -> str:
        return {p[0]: p[1] for p in self.pairs}[k]

    def __iter__(self) -> Iterator[str]:
        return iter([p[0] for p in self.pairs])

    def __len__(self) -> int:
        return len(self.pairs)

    def items(self) -> Any:
        return self.pairs


def test_headers_items_as_lists(tmp_path: pathlib.Path) -> None:
    with kcache.Cache(tmp_path) as c:
        want = c.compile(SRC, "k", "sm_90", headers={"a.h": "#define V 4\n"}).key
        assert c.compile(SRC, "k", "sm_90", headers=_PairsAsLists([["a.h", "#define V 4\n"]])).key == want
        with pytest.raises(TypeError, match="headers: items.. must give .name, source. pairs"):
            c.compile(SRC, "k", "sm_90", headers=_PairsAsLists([["a.h", "x", "y"]]))
        with pytest.raises(TypeError, match="headers: items.. must give .name, source. pairs, not str"):
            c.compile(SRC, "k", "sm_90", headers=_PairsAsLists(["ab"]))  # type: ignore[list-item]
        with pytest.raises(TypeError, match="header's source must be str, not bytes"):
            c.compile(SRC, "k", "sm_90", headers=_PairsAsLists([["a.h", b"x"]]))


def test_builder_headers_mappings() -> None:
    b = kcache.Graph.build("hostile")
    # items() giving lists: a TypeError naming headers (it was a SystemError).
    with pytest.raises(TypeError, match="headers"):
        b.add_kernel(SCALE, "scale", headers=_PairsAsLists([["a.h", 1]]))
    with pytest.raises(TypeError, match="headers must be a mapping"):
        b.add_kernel(SCALE, "scale", headers=["a.h"])  # type: ignore[arg-type]
    assert b.add_kernel(SCALE, "scale", headers=_PairsAsLists([["a.h", "#define V 1\n"]])) == 0
    assert b.add_kernel(SCALE, "scale", headers=collections.UserDict({"a.h": "x"})) == 1
    m = _ListItems([("a.h", "#define V 1\n")])
    assert b.add_kernel(SCALE, "scale", headers=m, options=["-O3"]) == 2


def test_readonly_is_a_bool(tmp_path: pathlib.Path) -> None:
    for bad in ("false", "0", 0, 1, [], "yes"):
        with pytest.raises(TypeError, match="readonly must be True, False or None"):
            kcache.Cache(tmp_path, readonly=bad)  # type: ignore[arg-type]
    with kcache.Cache(tmp_path, readonly=False) as c:
        assert c.config()["readonly"]["value"] in ("0", "false", "off", "no")
    with kcache.Cache(tmp_path, readonly=None):
        pass


class _Boom(Exception):
    pass


class _BadPath:
    def __fspath__(self) -> str:
        raise _Boom("no path today")


class _BytesPath:
    def __fspath__(self) -> bytes:
        return b"/tmp"


def test_fspath_exception_kept(tmp_path: pathlib.Path) -> None:
    with pytest.raises(_Boom, match="no path today"):
        kcache.Cache(_BadPath())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be str or os.PathLike, not int"):
        kcache.Cache(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="__fspath__ gave bytes"):
        kcache.Cache(_BytesPath())  # type: ignore[arg-type]


def _fake_cupy(exc: BaseException) -> types.ModuleType:
    cupy = types.ModuleType("cupy")

    class CUDARuntimeError(RuntimeError):
        def __init__(self, status: int) -> None:
            super().__init__(f"cudaError {status}")
            self.status = status

    def count() -> int:
        raise exc

    runtime = types.SimpleNamespace(CUDARuntimeError=CUDARuntimeError, getDeviceCount=count)
    cupy.cuda = types.SimpleNamespace(runtime=runtime)  # type: ignore[attr-defined]
    return cupy


def test_gpu_cupy_probe_fails_on_other_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    if "numpy" not in sys.modules:
        try:
            importlib.import_module("numpy")
        except ImportError:
            monkeypatch.setitem(sys.modules, "numpy", types.ModuleType("numpy"))
    gpu = importlib.import_module("test_gpu_graph")
    monkeypatch.delenv("KCACHE_CUDA_DRIVER", raising=False)
    monkeypatch.delenv("KCACHE_TEST_DRIVER_DOUBLE", raising=False)
    fake = _fake_cupy(KeyError("a bug in the probe"))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    try:
        with pytest.raises(KeyError, match="a bug in the probe"):
            gpu._cupy()
    except pytest.skip.Exception as e:
        pytest.fail(f"the CuPy probe turned an error into a skip: {e}")
    rt = fake.cuda.runtime  # type: ignore[attr-defined]
    for status, skips in ((100, True), (35, True), (2, False)):

        def count(s: int = status) -> int:
            raise rt.CUDARuntimeError(s)

        monkeypatch.setattr(rt, "getDeviceCount", count)
        if skips:
            with pytest.raises(pytest.skip.Exception):
                gpu._cupy()
        else:
            with pytest.raises(rt.CUDARuntimeError):
                gpu._cupy()
    monkeypatch.setattr(rt, "getDeviceCount", lambda: 0)
    with pytest.raises(pytest.skip.Exception):
        gpu._cupy()
