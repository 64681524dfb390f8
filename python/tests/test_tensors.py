# SPDX-License-Identifier: Apache-2.0
"""The framework paths of LoadedGraph on the driver double, with stand-ins for PyTorch and CuPy
(modules named torch and cupy put in sys.modules): the default stream is the framework's current
one, outputs come back through its from_dlpack, a tensor requiring a gradient is read detached, an
aliased output is the caller's own tensor, and the stream object outlives the memory made on it.
Marked `double` (see test_graph.py)."""
from __future__ import annotations

import gc
import sys
import types
import weakref
from typing import Any, Iterator, List

import pytest

from test_graph_support import KERNELS, DevArray, Double, need_double

import kcache

pytestmark = pytest.mark.double


class Stream:
    """A framework's stream object (weak-referenceable, to see how long kcache keeps it)."""

    def __init__(self, handle: int) -> None:
        self.cuda_stream = handle
        self.ptr = handle


def _tensor_type(module: str) -> type:
    class T:
        def __init__(self, arr: DevArray, requires_grad: bool = False) -> None:
            self.arr, self.requires_grad, self.detached = arr, requires_grad, 0
            self.__cuda_array_interface__ = arr.__cuda_array_interface__

        def detach(self) -> "T":
            self.detached += 1
            return type(self)(self.arr)

    T.__module__ = module
    return T


@pytest.fixture(scope="module")
def dbl() -> Double:
    need_double()
    return Double()


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch, dbl: Double) -> Iterator[types.SimpleNamespace]:
    handle = dbl.stream()
    ns = types.SimpleNamespace(stream=Stream(handle), wrapped=[], handle=handle)
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(current_stream=lambda device: ns.stream)  # type: ignore[attr-defined]
    torch.from_dlpack = lambda buf: ("torch", buf)  # type: ignore[attr-defined]
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: ns.stream)  # type: ignore[attr-defined]
    cupy.from_dlpack = lambda buf: ("cupy", buf)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    ns.torch_tensor, ns.cupy_array = _tensor_type("torch"), _tensor_type("cupy")
    yield ns
    gc.collect()
    dbl.destroy_stream(handle)


@pytest.fixture(scope="module")
def softmax(tmp_path_factory: Any, dbl: Double) -> Iterator[kcache.LoadedGraph]:
    with kcache.Cache(str(tmp_path_factory.mktemp("kc"))) as c:
        yield c.get(kcache.Graph.from_spec(KERNELS / "softmax.json"))


@pytest.mark.parametrize("fw", ["torch", "cupy"])
def test_framework_stream_and_outputs(fw: str, fakes: Any, softmax: kcache.LoadedGraph, dbl: Double) -> None:
    T = fakes.torch_tensor if fw == "torch" else fakes.cupy_array
    x, gy = T(DevArray((37, 1000)), requires_grad=True), T(DevArray((37, 1000)))
    dbl.reset()
    (y,), saved = softmax.forward(x)  # stream=None: the framework's current stream
    assert saved is not None  # softmax's input requires a gradient: saved by default
    assert y[0] == fw and isinstance(y[1], kcache._graph.Buffer)
    assert x.detached == (1 if fw == "torch" else 0)  # PyTorch will not export a tensor requiring a gradient
    (gx,) = softmax.backward(saved, gy)
    assert gx[0] == fw
    assert [ln[1] for ln in dbl.launches()] == [fakes.handle, fakes.handle]
    # the stream object is kept while memory made on it lives (it is freed on that stream)
    ref = weakref.ref(fakes.stream)
    fakes.stream = None
    gc.collect()
    assert ref() is not None
    del y, gx, saved
    gc.collect()
    assert ref() is None
    assert dbl.defects() == ""


def test_explicit_stream_wins_over_the_framework(fakes: Any, softmax: kcache.LoadedGraph, dbl: Double) -> None:
    x = fakes.torch_tensor(DevArray((37, 1000)))
    dbl.reset()
    softmax.forward(x, stream=0, save=False)
    softmax.forward(x, stream=1, save=False)
    assert [ln[1] for ln in dbl.launches()] == [0, 1]


def test_non_framework_tensors_come_back_as_buffers(softmax: kcache.LoadedGraph) -> None:
    (y,), _ = softmax.forward(DevArray((37, 1000)), save=False)
    assert isinstance(y, kcache._graph.Buffer) and y.device == 0 and y.ptr != 0


def test_refused_dlpack_tensor_keeps_its_error(softmax: kcache.LoadedGraph, tmp_path: Any) -> None:
    # A kcache Buffer is a real DLPack producer: refusing it drops its capsule (its deleter runs) while
    # the refusal is being raised, and that must not lose the exception (PyTorch's tensors do the same).
    (y,), _ = softmax.forward(DevArray((37, 1000)), save=False)
    assert isinstance(y, kcache._graph.Buffer)
    with kcache.Cache(str(tmp_path)) as c:
        amg = c.get(kcache.Graph.from_spec(KERNELS / "add_mul_gelu.json"))  # f32 of sizes (N,)
        for _ in range(3):
            with pytest.raises(ValueError, match="input 0: a f32 tensor of shape \\(37, 1000\\)"):
                amg.forward(y, y, y, save=False)
        rms = c.get(kcache.Graph.from_spec(KERNELS / "rmsnorm_bf16.json"))  # bf16 of sizes (R, C)
        with pytest.raises(TypeError, match="wants bf16"):
            rms.forward(y, y, save=False)
        amg.close(), rms.close()


ALIAS = r"""
extern "C" __global__ void bump(float *p, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1.0f;
}
"""


def test_aliased_output_is_the_callers_tensor(fakes: Any, tmp_path: Any, dbl: Double) -> None:
    b = kcache.Graph.build("bump")
    k = b.add_kernel(ALIAS, "bump")
    b.add_input("f32", ["N"])
    b.add_output("f32", ["N"], alias=0)
    b.add_step("forward", k, ["ceildiv(N, 256)", 1, 1], [256, 1, 1], ["input:0", "e64:N"])
    g = b.finish()
    with kcache.Cache(str(tmp_path)) as c:
        lg = c.get(g)
        x = fakes.torch_tensor(DevArray((100,)), requires_grad=True)
        (y,), saved = lg.forward(x, save=False)
        assert y is x and saved is None
        raw = DevArray((100,))
        (z,), _ = lg.forward(raw)
        assert z is raw


def test_many_buffers_freed(softmax: kcache.LoadedGraph, dbl: Double) -> None:
    x = DevArray((37, 1000))
    keep: List[Any] = []
    for _ in range(50):
        (y,), _ = softmax.forward(x, save=False)
        keep.append(y.__dlpack__())  # a capsule nobody consumed still frees its buffer
    del keep, y
    gc.collect()
    assert dbl.defects() == ""
