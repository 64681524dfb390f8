# SPDX-License-Identifier: Apache-2.0
"""On a GPU (marker `gpu`; skipped without one, or when the driver double stands in): PyTorch and CuPy
tensors through LoadedGraph.forward/backward of two bundled graphs (softmax, add_mul_gelu), on the
default stream and on a non-default one (current, and passed as stream=), against a NumPy reference
(the one `kcache demo` checks with: tools/kcache/check.c; same tolerances)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, List, Tuple

import pytest

np = pytest.importorskip("numpy")

import kcache  # noqa: E402

pytestmark = pytest.mark.gpu

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _no_double() -> None:
    if os.environ.get("KCACHE_CUDA_DRIVER") or os.environ.get("KCACHE_TEST_DRIVER_DOUBLE"):
        pytest.skip("the driver double stands in for the driver in this process")


def _torch() -> Any:
    _no_double()
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for PyTorch")
    return torch


# cudaErrorInsufficientDriver, cudaErrorNoDevice: the statuses that mean "no GPU here" (a skip).
_CUDA_NO_DEVICE = (35, 100)


def _cupy() -> Any:
    _no_double()
    cupy = pytest.importorskip("cupy")
    rt = cupy.cuda.runtime
    try:
        n = rt.getDeviceCount()
    except rt.CUDARuntimeError as e:  # only no driver or no device skips; any other error fails the test
        if getattr(e, "status", None) in _CUDA_NO_DEVICE:
            pytest.skip(f"no CUDA device for CuPy: {e}")
        raise
    if n < 1:
        pytest.skip("no CUDA device for CuPy")
    return cupy


# ---- the references (float64 where check.c sums in double; the kernels' fast exp is within tolerance) ----

def _gelu(x: Any) -> Any:
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _gelu_grad(x: Any) -> Any:
    u = 0.7978845608 * (x + 0.044715 * x ** 3)
    t = np.tanh(u)
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x)


def ref_softmax(x: Any, gy: Any) -> Tuple[List[Any], List[Any]]:
    x, gy = x.astype(np.float64), gy.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    gx = y * (gy - (gy * y).sum(axis=1, keepdims=True))
    return [y], [gx]


def ref_add_mul_gelu(a: Any, b: Any, c: Any, gy: Any) -> Tuple[List[Any], List[Any]]:
    a, b, c, gy = (v.astype(np.float64) for v in (a, b, c, gy))
    t = a + b
    u = t * c
    gu = gy * _gelu_grad(u)
    return [_gelu(u)], [gu * c, gu * c, gu * t]


CASES: List[Tuple[str, List[Tuple[int, ...]], List[float], Callable[..., Any]]] = [
    ("softmax", [(37, 1000)], [3.0], ref_softmax),
    ("add_mul_gelu", [(5000,), (5000,), (5000,)], [1.0, 1.0, 2.0], ref_add_mul_gelu),
]


def _close(what: str, got: Any, want: Any, rtol: float) -> None:
    scale = max(float(np.abs(want).max()), 1e-6)
    err = float(np.abs(got.astype(np.float64) - want).max())
    assert err <= rtol * scale, f"{what}: max error {err:.3g} against scale {scale:.3g} (tolerance {rtol})"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: Any) -> Any:
    with kcache.Cache(str(tmp_path_factory.mktemp("kc-gpu"))) as c:
        yield c


def _inputs(shapes: List[Tuple[int, ...]], scales: List[float], seed: int) -> Tuple[List[Any], Any]:
    rng = np.random.default_rng(seed)
    xs = [(rng.uniform(-1, 1, s) * k).astype(np.float32) for s, k in zip(shapes, scales)]
    return xs, rng


def _run(lg: Any, xs_dev: List[Any], gy_dev: Any, stream: Any) -> Tuple[Any, Any]:
    outs, saved = lg.forward(*xs_dev, stream=stream)
    assert saved is not None
    grads = lg.backward(saved, gy_dev, stream=stream)
    return outs, grads


def _check(name: str, ref: Callable[..., Any], xs: List[Any], gy: Any, outs: List[Any], grads: List[Any]) -> None:
    want_y, want_g = ref(*xs, gy)
    for i, (o, w) in enumerate(zip(outs, want_y)):
        _close(f"{name} output {i}", o, w, 2e-3)
    for i, (g, w) in enumerate(zip(grads, want_g)):
        _close(f"{name} grad of input {i}", g, w, 5e-3)


@pytest.mark.parametrize("name,shapes,scales,ref", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("where", ["default", "current", "passed"])
def test_torch(cache: Any, name: str, shapes: Any, scales: Any, ref: Any, where: str) -> None:
    torch = _torch()
    lg = cache.get(kcache.Graph.from_spec(KERNELS / f"{name}.json"), 0)
    xs, rng = _inputs(shapes, scales, 1)
    gy = rng.uniform(-1, 1, shapes[0]).astype(np.float32)
    s = torch.cuda.Stream() if where != "default" else None
    if where == "current":
        with torch.cuda.stream(s):
            dev = [torch.from_numpy(x).cuda() for x in xs]
            outs, grads = _run(lg, dev, torch.from_numpy(gy).cuda(), None)
            assert all(o.is_cuda and o.dtype == torch.float32 for o in outs + grads)
            s.synchronize()
            got_o = [o.cpu().numpy() for o in outs]
            got_g = [g.cpu().numpy() for g in grads]
        s.synchronize()
    else:
        dev = [torch.from_numpy(x).cuda().requires_grad_(True) for x in xs]  # detached by kcache
        gy_dev = torch.from_numpy(gy).cuda()
        outs, grads = _run(lg, dev, gy_dev, s)
        assert all(isinstance(o, torch.Tensor) and o.device == torch.device("cuda", 0) for o in outs + grads)
        got_o = [o.cpu().numpy() for o in outs]
        got_g = [g.cpu().numpy() for g in grads]
    torch.cuda.synchronize()
    _check(name, ref, xs, gy, got_o, got_g)


@pytest.mark.parametrize("name,shapes,scales,ref", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("where", ["default", "current", "passed"])
def test_cupy(cache: Any, name: str, shapes: Any, scales: Any, ref: Any, where: str) -> None:
    cupy = _cupy()
    lg = cache.get(kcache.Graph.from_spec(KERNELS / f"{name}.json"), 0)
    xs, rng = _inputs(shapes, scales, 2)
    gy = rng.uniform(-1, 1, shapes[0]).astype(np.float32)
    s = cupy.cuda.Stream(non_blocking=True) if where != "default" else None
    if where == "current":
        with s:
            dev, gy_dev = [cupy.asarray(x) for x in xs], cupy.asarray(gy)
            outs, grads = _run(lg, dev, gy_dev, None)
            assert all(isinstance(o, cupy.ndarray) for o in outs + grads)
            s.synchronize()
            got_o = [cupy.asnumpy(o) for o in outs]
            got_g = [cupy.asnumpy(g) for g in grads]
    else:
        dev, gy_dev = [cupy.asarray(x) for x in xs], cupy.asarray(gy)  # alive until the stream's work is done
        outs, grads = _run(lg, dev, gy_dev, s)
        assert all(isinstance(o, cupy.ndarray) for o in outs + grads)
        got_o = [cupy.asnumpy(o) for o in outs]
        got_g = [cupy.asnumpy(g) for g in grads]
    cupy.cuda.Device(0).synchronize()
    _check(name, ref, xs, gy, got_o, got_g)


def test_torch_wrong_device_and_cpu(cache: Any) -> None:
    torch = _torch()
    lg = cache.get(kcache.Graph.from_spec(KERNELS / "softmax.json"), 0)
    with pytest.raises(ValueError, match="CPU"):
        lg.forward(torch.zeros(37, 1000))
    with pytest.raises(TypeError, match="f16"):
        lg.forward(torch.zeros(37, 1000, device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match="not C-contiguous"):
        lg.forward(torch.zeros(1000, 37, device="cuda").t())
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="cuda:0"):
            lg.forward(torch.zeros(37, 1000, device="cuda:1"))
