# SPDX-License-Identifier: Apache-2.0
"""Graphs from Python against the CUDA driver double: specs, get, forward/backward launches, the
runtime arguments, streams, saved handles, a closed cache, threads, explain.  Marked `double`: the
CI step sets KCACHE_TEST_DRIVER_DOUBLE (and KCACHE_REQUIRE_DOUBLE=1, so a missing double fails)."""
from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from test_graph_support import KERNELS, DevArray, Double, FakeProducer, need_double

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


@pytest.fixture(scope="module")
def softmax(cache: kcache.Cache) -> kcache.LoadedGraph:
    return cache.get(kcache.Graph.from_spec(KERNELS / "softmax.json"), 0)


def test_every_bundled_spec_loads_and_reads_back() -> None:
    specs = sorted(KERNELS.glob("*.json"))
    specs = [p for p in specs if p.name != "manifest.json"]
    assert len(specs) >= 10
    for p in specs:
        g = kcache.Graph.from_spec(p)  # a PathLike
        assert g.name and g.inputs and g.outputs, p
        assert all(t.rank == len(t.sizes) for t in g.inputs + g.outputs)
    g = kcache.Graph.from_spec(str(KERNELS / "softmax.json"))
    assert g.name == "softmax"
    assert g.inputs == (kcache._graph.TensorSpec("f32", 2, ("R", "C"), True),)
    assert g.outputs[0].sizes == ("R", "C") and g.args == ()
    assert kcache.Graph.from_spec(KERNELS / "attn_softmax.json").args == (("scale", "f32"),)


def test_from_spec_refuses_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(kcache.Error) as e:
        kcache.Graph.from_spec(tmp_path / "none.json")
    assert "none.json" in e.value.message
    (tmp_path / "bad.json").write_text("{ not json")
    with pytest.raises(kcache.Error) as e:
        kcache.Graph.from_spec(tmp_path / "bad.json")
    assert "bad.json" in str(e.value)
    with pytest.raises(TypeError):
        kcache.Graph.from_spec(b"/kernels/softmax.json")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        kcache.Graph.from_spec(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        kcache.Graph.from_spec("a\0b")
    with pytest.raises(TypeError):
        kcache.Graph("x")


def test_get_then_forward_and_backward_launch(cache: kcache.Cache, softmax: kcache.LoadedGraph, dbl: Double) -> None:
    assert softmax.info["source"] in ("compile", "disk", "memory") and len(softmax.info["key"]) == 32
    again = cache.get(softmax.graph, 0)
    assert again.info["source"] == "memory" and again.info["key"] == softmax.info["key"]
    x, gy = DevArray((37, 1000)), DevArray((37, 1000))
    dbl.reset()
    (y,), saved = softmax.forward(x)
    assert isinstance(y, kcache._graph.Buffer) and y.shape == (37, 1000) and y.dtype == "f32"
    assert isinstance(saved, kcache._graph.Saved) and not saved.released
    (gx,) = softmax.backward(saved, gy)
    assert saved.released  # PyTorch's habit: freed after backward unless retain_graph
    assert gx.shape == (37, 1000)
    launches = dbl.launches()
    assert [k for k, _, _ in launches] == ["softmax_fwd", "softmax_bwd"]
    assert launches[0][2][:2] == [x.ptr, y.ptr] and launches[0][1] == 0  # the legacy default stream
    assert launches[1][2][:3] == [gy.ptr, y.ptr, gx.ptr]
    cai = y.__cuda_array_interface__
    assert cai["shape"] == (37, 1000) and cai["typestr"] == "<f4" and cai["data"][0] == y.ptr
    assert cai["version"] == 3 and cai["strides"] == (4000, 4)
    del y, gx
    x.free()
    gy.free()
    assert dbl.defects() == ""


def test_outputs_are_dlpack_capsules_consumed_once(softmax: kcache.LoadedGraph, dbl: Double) -> None:
    x = DevArray((37, 1000))
    (y,), _ = softmax.forward(x, save=False)
    assert y.__dlpack_device__() == (2, 0)
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.restype, is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    cap = y.__dlpack__()
    assert is_valid(cap, b"dltensor") == 1
    cap1 = y.__dlpack__(max_version=(1, 0))
    assert is_valid(cap1, b"dltensor_versioned") == 1
    del cap, cap1  # never consumed: their destructors free them
    # A Buffer as the input of another forward: imported through DLPack (versioned, renamed, freed once).
    p = FakeProducer(y)
    (z,), _ = softmax.forward(p, save=False)
    assert p.calls == [{"max_version": (1, 0), "stream": 1}]  # the legacy default stream is 1 in DLPack
    old = FakeProducer(y, versioned=False)
    (z2,), _ = softmax.forward(old, save=False)
    assert old.calls == [{"stream": 1}]
    del y, z, z2
    x.free()
    assert dbl.defects() == ""


def test_streams(softmax: kcache.LoadedGraph, dbl: Double) -> None:
    x = DevArray((37, 1000))
    s = dbl.stream()

    class TorchLike:
        cuda_stream = s

    class CupyLike:
        ptr = s

    class CoreLike:
        def __cuda_stream__(self) -> Any:
            return (0, s)

    for st in (s, TorchLike(), CupyLike(), CoreLike()):
        dbl.reset()
        (y,), saved = softmax.forward(x, stream=st)
        p = FakeProducer(y)
        softmax.forward(p, stream=st, save=False)
        assert p.calls[0]["stream"] == s  # handed to the producer's __dlpack__
        assert [ln[1] for ln in dbl.launches()] == [s, s]
        del y, saved, p  # before the stream is destroyed: their memory is freed on it
    for bad in ("1", 1.5, True, object(), -1, 1 << 64):
        with pytest.raises((TypeError, ValueError)) as e:
            softmax.forward(x, stream=bad)
        assert "stream" in str(e.value)

    class BadCore:
        def __cuda_stream__(self) -> Any:
            return 5

    with pytest.raises(TypeError):
        softmax.forward(x, stream=BadCore())
    with pytest.raises(kcache.Error) as e:  # not a stream: the driver (here the double) refuses it
        softmax.forward(x, stream=0x1230)
    assert isinstance(e.value, kcache.Error) and e.value.status < 0
    dbl.destroy_stream(s)
    x.free()


def test_wrong_tensors_name_the_argument(softmax: kcache.LoadedGraph) -> None:
    x = DevArray((37, 1000))
    with pytest.raises(TypeError, match=r"input 0: a f16 tensor of shape \(37, 1000\); graph 'softmax' wants f32"):
        softmax.forward(DevArray((37, 1000), "f16"))
    with pytest.raises(ValueError, match=r"input 0: a f32 tensor of shape \(37,\); .*sizes \(R, C\)"):
        softmax.forward(DevArray((37,)))
    with pytest.raises(ValueError, match="not C-contiguous"):
        softmax.forward(DevArray((37, 1000), strides=(4, 148)))
    with pytest.raises(ValueError, match="masked"):
        softmax.forward(DevArray((37, 1000), extra={"mask": DevArray((37, 1000))}))
    with pytest.raises(TypeError, match="takes 1 input tensors; 2 given"):
        softmax.forward(x, x)
    with pytest.raises(TypeError, match="not a tensor kcache takes"):
        softmax.forward([[1.0]])
    with pytest.raises(TypeError, match="typestr"):
        softmax.forward(DevArray((37, 1000), extra={"typestr": "<c8"}))
    with pytest.raises(ValueError, match=r"cuda:0"):
        softmax.forward(FakeProducer(None, device=(2, 1)))
    with pytest.raises(ValueError, match="CPU"):
        softmax.forward(FakeProducer(None, device=(1, 0)))
    with pytest.raises(TypeError, match="unknown keyword"):
        softmax.forward(x, lr=1.0)
    with pytest.raises(ValueError, match="NULL data pointer"):
        softmax.forward(DevArray((37, 1000), extra={"data": (0, False)}))
    with pytest.raises(ValueError, match="overflow"):
        softmax.forward(DevArray((37, 1000), extra={"shape": (1 << 40, 1 << 40)}))
    with pytest.raises(ValueError, match="negative"):
        softmax.forward(DevArray((37, 1000), extra={"shape": (-37, 1000)}))
    with pytest.raises((TypeError, ValueError)):
        softmax.forward(DevArray((37, 1000), extra={"shape": "37x1000"}))
    x.free()


def test_numpy_tensor_is_refused() -> None:
    np = pytest.importorskip("numpy")
    need_double()
    g = kcache.Graph.from_spec(KERNELS / "softmax.json")
    with kcache.Cache() as c:
        lg = c.get(g)
        with pytest.raises(ValueError, match="CPU"):
            lg.forward(np.zeros((37, 1000), np.float32))


def test_runtime_arguments(cache: kcache.Cache, dbl: Double) -> None:
    lg = cache.get(kcache.Graph.from_spec(KERNELS / "attn_softmax.json"))
    x = DevArray((4, 256))
    with pytest.raises(TypeError, match="missing the runtime argument scale="):
        lg.forward(x)
    with pytest.raises(TypeError, match="scale=: a float"):
        lg.forward(x, scale="0.5")
    with pytest.raises(TypeError, match="unknown keyword"):
        lg.forward(x, scale=0.5, other=1)
    dbl.reset()
    (y,), saved = lg.forward(x, scale=0.5)
    assert ctypes.c_float.from_buffer_copy(dbl.launches()[0][2][3].to_bytes(4, "little")).value == 0.5
    lg.backward(saved, DevArray((4, 256)), retain_graph=True)  # the forward's value
    lg.backward(saved, DevArray((4, 256)), scale=2.0)
    launches = dbl.launches()
    assert [ctypes.c_float.from_buffer_copy(ln[2][4].to_bytes(4, "little")).value for ln in launches[1:]] == [0.5, 2.0]


def test_saved_handles(cache: kcache.Cache, softmax: kcache.LoadedGraph) -> None:
    x, gy = DevArray((37, 1000)), DevArray((37, 1000))
    (_,), saved = softmax.forward(x)
    with pytest.raises(ValueError, match="output 0"):
        softmax.backward(saved, DevArray((37, 999)))
    with pytest.raises(TypeError, match="f16"):
        softmax.backward(saved, DevArray((37, 1000), "f16"))
    with pytest.raises(TypeError, match="takes 1 gradients"):
        softmax.backward(saved)
    other = cache.get(kcache.Graph.from_spec(KERNELS / "attn_softmax.json"))
    with pytest.raises(ValueError, match="another LoadedGraph"):
        other.backward(saved, gy)
    softmax.backward(saved, gy)
    with pytest.raises(ValueError, match="released"):
        softmax.backward(saved, gy)
    with pytest.raises(TypeError):
        softmax.backward("saved", gy)
    (_,), none = softmax.forward(x, save=False)
    assert none is None


def test_accumulating_gradients(cache: kcache.Cache, dbl: Double) -> None:
    lg = cache.get(kcache.Graph.from_spec(KERNELS / "linear.json"))
    x, w, b = DevArray((5, 7)), DevArray((3, 7)), DevArray((3,))
    (y,), saved = lg.forward(x, w, b)
    gy = DevArray((5, 3))
    with pytest.raises(TypeError, match="accumulate"):
        lg.backward(saved, gy, retain_graph=True)
    with pytest.raises(ValueError, match="does not accumulate"):
        lg.backward(saved, gy, accumulate={0: x, 1: w, 2: b}, retain_graph=True)
    dw, db = DevArray((3, 7)), DevArray((3,))
    gx, gw, gb = lg.backward(saved, gy, accumulate={1: dw, 2: db})
    assert gw is dw and gb is db and gx.shape == (5, 7)
    assert dbl.defects() == ""


def test_closed_cache_and_closed_graph(tmp_path: Path, dbl: Double) -> None:
    g = kcache.Graph.from_spec(KERNELS / "softmax.json")
    c = kcache.Cache(str(tmp_path))
    lg = c.get(g)
    c.close()
    with pytest.raises(kcache.ClosedError):
        c.get(g)
    with pytest.raises(kcache.ClosedError):
        c.explain(g, "sm_90")
    x = DevArray((37, 1000))
    lg.forward(x, save=False)  # a loaded graph outlives its cache's handle
    with lg:
        pass
    assert lg.closed
    with pytest.raises(ValueError, match="closed"):
        lg.forward(x)
    with pytest.raises(TypeError):
        c.get("softmax.json")  # type: ignore[arg-type]


def test_threads_share_one_loaded_graph(softmax: kcache.LoadedGraph, dbl: Double) -> None:
    x, gy = DevArray((37, 1000)), DevArray((37, 1000))
    errors: list = []
    dbl.reset()

    def work() -> None:
        try:
            for _ in range(25):
                (y,), saved = softmax.forward(x)
                softmax.backward(saved, gy)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(dbl.launches()) == 8 * 25 * 2
    assert dbl.defects() == ""


def test_explain(cache: kcache.Cache, softmax: kcache.LoadedGraph) -> None:
    e = cache.explain(softmax.graph, softmax.info["variant"])
    assert e["hit"] is True and e["key"] == softmax.info["key"] and e["variant"] == softmax.info["variant"]
    assert isinstance(e["digests"], dict) and e["digests"] and e["diffs"] == []
    miss = cache.explain(softmax.graph, "sm_80")
    assert miss["hit"] is False and miss["key"] == e["key"]
    assert miss["nearest"] is not None and "arch" in miss["diffs"]
    with pytest.raises(TypeError):
        cache.explain(softmax.graph, b"sm_90")  # type: ignore[arg-type]
    with pytest.raises(kcache.Error):
        cache.explain(softmax.graph, "sm_9x")


SCALE = r"""
extern "C" __global__ void scale(const float *x, float *y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""


def test_builder(cache: kcache.Cache, dbl: Double) -> None:
    b = kcache.Graph.build("scale")
    k = b.add_kernel(SCALE, "scale", file="scale.cu")
    assert b.add_input("f32", ["N"], requires_grad=True) == 0
    assert b.add_output("f32", ["N"]) == 0
    b.add_arg("a", "f32")
    b.add_step("forward", k, ["ceildiv(N, 128)", 1, 1], [128, 1, 1], ["input:0", "output:0", "e64:N", "arg:a"])
    b.add_step("backward", k, ["ceildiv(N, 128)", 1, 1], [128, 1, 1], ["grad_out:0", "grad_in:0", "e64:N", "arg:a"])
    g = b.finish()
    assert g.name == "scale" and g.inputs[0].sizes == ("N",) and g.args == (("a", "f32"),)
    with pytest.raises(ValueError, match="finished"):
        b.add_arg("b", "f32")
    x = DevArray((1000,))
    lg = cache.get(g)
    dbl.reset()
    (y,), saved = lg.forward(x, a=3.0)
    (gx,) = lg.backward(saved, DevArray((1000,)))
    (fwd, _, fargs), (bwd, _, _) = dbl.launches()
    assert fwd == bwd == "scale" and fargs[:3] == [x.ptr, y.ptr, 1000]
    bad = kcache.Graph.build("bad")
    with pytest.raises(ValueError, match="unknown dtype"):
        bad.add_input("float", [4])
    with pytest.raises(TypeError):
        bad.add_kernel(SCALE.encode(), "scale")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        bad.add_input("f32", "N")
    with pytest.raises(ValueError, match="forward"):
        bad.add_scratch("sideways", 4)
    with pytest.raises(ValueError, match="f32 f64"):
        bad.add_arg("a", "f16")
    with pytest.raises(kcache.Error):
        bad.add_step("forward", 7, [1, 1, 1], [1, 1, 1], [])
