# SPDX-License-Identifier: Apache-2.0
"""Hostile uses of the graph part against the CUDA driver double: the internal C types cannot be
made empty from Python, runtime arguments keep their range, a tensor's own Python code may touch the
graph it is passed to, and what kcache writes or reads is refused or ordered when the caller's
tensor says it is read-only or made on another stream.  Marked `double` (see test_graph.py)."""
from __future__ import annotations

import ctypes
import subprocess
import sys
from typing import Any, Iterator

import pytest

from test_graph_support import KERNELS, DevArray, Double, need_double

import kcache

pytestmark = pytest.mark.double


@pytest.fixture(scope="module")
def dbl() -> Double:
    need_double()
    return Double()


@pytest.fixture(scope="module")
def cache(tmp_path_factory: Any, dbl: Double) -> Iterator[kcache.Cache]:
    with kcache.Cache(str(tmp_path_factory.mktemp("kc"))) as c:
        yield c


# ---- the internal types ----

_EMPTY = """
import kcache, kcache._kcache as K
for name, use in [("_Graph", lambda o: o.inputs), ("_LoadedGraph", lambda o: o.info),
                  ("Saved", lambda o: o.release()), ("Buffer", lambda o: o.__dlpack__())]:
    try:
        use(getattr(K, name)())
        print(name, "MADE")
    except TypeError:
        print(name, "refused")
    try:
        object.__new__(getattr(K, name))
        print(name, "MADE by object.__new__")
    except TypeError:
        pass
for wrap in (kcache.Graph, kcache.LoadedGraph):
    try:
        wrap(object())
        print(wrap.__name__, "wrapped a foreign object")
    except TypeError:
        print(wrap.__name__, "refused")
"""


def test_internal_types_cannot_be_made_empty() -> None:
    # in a child: without the refusal the interpreter dies on the empty object
    p = subprocess.run([sys.executable, "-c", _EMPTY], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split("\n")[:-1] == ["_Graph refused", "_LoadedGraph refused", "Saved refused",
                                        "Buffer refused", "Graph refused", "LoadedGraph refused"], p.stdout


# ---- runtime arguments ----

def test_u64_argument_refuses_negative_values(cache: kcache.Cache, dbl: Double) -> None:
    b = kcache.Graph.build("u64arg")
    k = b.add_kernel('extern "C" __global__ void k(float *x, unsigned long long n) {}', "k")
    b.add_input("f32", [4])
    b.add_arg("n", "u64")
    b.add_step("forward", k, [1, 1, 1], [1, 1, 1], ["input:0", "arg:n"])
    lg = cache.get(b.finish())
    x = DevArray((4,))
    for n in (-1, -2**63, -2**64, 2**64):
        dbl.reset()
        with pytest.raises(ValueError, match="n=.* out of range"):
            lg.forward(x, n=n, save=False)
        assert dbl.launches() == [], n  # nothing launched with a wrapped value
    for n in (0, 5, 2**63 - 1, 2**63, 2**64 - 1):
        dbl.reset()
        lg.forward(x, n=n, save=False)
        assert dbl.launches()[0][2][1] == n
    x.free()


# ---- a tensor's own Python code runs outside the graph's lock ----

_REENTER = """
import sys
sys.path.insert(0, %r)
from test_graph_support import KERNELS, DevArray, Double
import kcache
dbl = Double()
c = kcache.Cache(%r)
lg = c.get(kcache.Graph.from_spec(KERNELS / "softmax.json"))
real, grad = DevArray((2, 3)), DevArray((2, 3))
class Sneaky:
    def __init__(self, arr):
        self.arr = arr
    @property
    def __cuda_array_interface__(self):
        lg.graph.inputs  # the same graph, from inside the tensor's interface
        lg.info
        return self.arr.__cuda_array_interface__
outs, saved = lg.forward(Sneaky(real))
lg.backward(saved, Sneaky(grad))
print("done")
"""


def test_tensor_code_may_touch_the_same_graph(tmp_path: Any, dbl: Double) -> None:
    here = str(__import__("pathlib").Path(__file__).parent)
    p = subprocess.run([sys.executable, "-c", _REENTER % (here, str(tmp_path))], capture_output=True, text=True,
                       timeout=60)  # without the fix: a deadlock, ended by the timeout
    assert p.returncode == 0 and p.stdout.strip() == "done", p.stderr[-2000:]


# ---- read-only tensors, the producer's stream, DLPack's byte_offset ----

@pytest.fixture(scope="module")
def inplace(cache: kcache.Cache) -> kcache.LoadedGraph:
    b = kcache.Graph.build("inplace")
    k = b.add_kernel('extern "C" __global__ void k(float *x, const float *y) { x[0] = y[0]; }', "k")
    b.add_input("f32", [4], inplace=True)
    b.add_input("f32", [4])
    b.add_output("f32", [4], alias=0)
    b.add_step("forward", k, [1, 1, 1], [1, 1, 1], ["input:0", "input:1"])
    return cache.get(b.finish())


def _read_only(arr: DevArray) -> DevArray:
    arr.__cuda_array_interface__["data"] = (arr.ptr, True)
    return arr


def test_read_only_cai_refused_where_kcache_writes(inplace: kcache.LoadedGraph, dbl: Double) -> None:
    dbl.reset()
    with pytest.raises(ValueError, match="input 0 is read-only"):
        inplace.forward(_read_only(DevArray((4,))), DevArray((4,)), save=False)
    assert dbl.launches() == []
    (y,), _ = inplace.forward(DevArray((4,)), _read_only(DevArray((4,))), save=False)  # read only: fine
    assert len(dbl.launches()) == 1


def test_read_only_accumulate_buffer_refused(cache: kcache.Cache, dbl: Double) -> None:
    lg = cache.get(kcache.Graph.from_spec(KERNELS / "linear.json"))
    (y,), saved = lg.forward(DevArray((5, 7)), DevArray((3, 7)), DevArray((3,)))
    dbl.reset()
    with pytest.raises(ValueError, match=r"accumulate\[1\] is read-only"):
        lg.backward(saved, DevArray((5, 3)), accumulate={1: _read_only(DevArray((3, 7))), 2: DevArray((3,))},
                    retain_graph=True)
    assert dbl.launches() == []
    lg.backward(saved, _read_only(DevArray((5, 3))), accumulate={1: DevArray((3, 7)), 2: DevArray((3,))})
    assert dbl.launches()


class Patched:
    """A DLPack producer over a kcache Buffer whose versioned capsule is altered before kcache reads it."""

    def __init__(self, inner: Any, flags: int = 0, data: Any = None, byte_offset: int = 0) -> None:
        self.inner, self.flags, self.data, self.byte_offset = inner, flags, data, byte_offset

    def __dlpack_device__(self) -> Any:
        return self.inner.__dlpack_device__()

    def __dlpack__(self, *, stream: Any = None, **kw: Any) -> Any:
        cap = self.inner.__dlpack__(stream=stream, max_version=(1, 0))
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        base = get(cap, b"dltensor_versioned")
        ctypes.c_uint64.from_address(base + 24).value = self.flags  # DLManagedTensorVersioned.flags
        if self.data is not None:
            ctypes.c_uint64.from_address(base + 32).value = self.data  # .dl_tensor.data
        ctypes.c_uint64.from_address(base + 72).value = self.byte_offset  # .dl_tensor.byte_offset
        return cap


def test_dlpack_read_only_and_byte_offset(cache: kcache.Cache, dbl: Double) -> None:
    sm = cache.get(kcache.Graph.from_spec(KERNELS / "softmax.json"))
    (out,), _ = sm.forward(DevArray((2, 2)), save=False)  # a kcache Buffer: a DLPack producer
    b = kcache.Graph.build("inplace22")
    k = b.add_kernel('extern "C" __global__ void k(float *x, const float *y) { x[0] = y[0]; }', "k")
    b.add_input("f32", [2, 2], inplace=True)
    b.add_input("f32", [2, 2])
    b.add_output("f32", [2, 2], alias=0)
    b.add_step("forward", k, [1, 1, 1], [1, 1, 1], ["input:0", "input:1"])
    g = cache.get(b.finish())
    dbl.reset()
    with pytest.raises(ValueError, match="input 0 is read-only"):
        g.forward(Patched(out, flags=1), DevArray((2, 2)), save=False)
    g.forward(DevArray((2, 2)), Patched(out, flags=1), save=False)  # only read: fine
    with pytest.raises(ValueError, match="input 1: .*byte_offset .* overflows"):
        g.forward(DevArray((2, 2)), Patched(out, byte_offset=2**64 - 8), save=False)
    with pytest.raises(ValueError, match="input 1: .*byte_offset 64 is added to a NULL data pointer"):
        g.forward(DevArray((2, 2)), Patched(out, data=0, byte_offset=64), save=False)
    assert len(dbl.launches()) == 1


def test_cai_stream_of_the_producer(inplace: kcache.LoadedGraph, dbl: Double) -> None:
    dbl.lib.kcd_calls.restype, dbl.lib.kcd_calls.argtypes = ctypes.c_ulong, [ctypes.c_char_p]
    other = dbl.stream()
    try:
        syncs = dbl.lib.kcd_calls(b"cuCtxSynchronize")
        inplace.forward(DevArray((4,)), DevArray((4,), extra={"stream": other}), save=False, stream=0)
        assert dbl.lib.kcd_calls(b"cuCtxSynchronize") == syncs + 1  # the producer's work is waited for
        inplace.forward(DevArray((4,)), DevArray((4,), extra={"stream": other}), save=False, stream=other)
        inplace.forward(DevArray((4,), extra={"stream": 1}), DevArray((4,)), save=False, stream=0)
        assert dbl.lib.kcd_calls(b"cuCtxSynchronize") == syncs + 1  # kcache's own stream: ordered already
        with pytest.raises(ValueError, match=r'input 1: __cuda_array_interface__\["stream"\] is 0'):
            inplace.forward(DevArray((4,)), DevArray((4,), extra={"stream": 0}), save=False)
        with pytest.raises(TypeError, match="input 0: .*stream.* not an int"):
            inplace.forward(DevArray((4,), extra={"stream": "s"}), DevArray((4,)), save=False)
    finally:
        dbl.destroy_stream(other)
