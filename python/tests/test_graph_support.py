# SPDX-License-Identifier: Apache-2.0
"""Shared by the graph tests (no tests here): the CUDA driver double, and device memory from it.

The double (tests/double: libkcache_cuda_double.so, given by KCACHE_TEST_DRIVER_DOUBLE or as
KCACHE_CUDA_DRIVER itself) validates
images and launches and runs nothing; libkcache reads KCACHE_CUDA_DRIVER once per process, so it is
set when this module is imported — at collection, before any test touches the driver.  With
KCACHE_REQUIRE_DOUBLE=1 a missing double fails the tests instead of skipping them.  Device pointers
come from the double's allocator through libkcache's exported kc_cuda_malloc.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

def _is_double(path: str) -> bool:
    """Whether `path` is the driver double (it exports its control API, kcd_*)."""
    try:
        return bool(path) and os.path.isfile(path) and hasattr(ctypes.CDLL(path), "kcd_launch_count")
    except OSError:
        return False


# KCACHE_TEST_DRIVER_DOUBLE names the double; a KCACHE_CUDA_DRIVER that is the double serves as well.
DOUBLE = os.environ.get("KCACHE_TEST_DRIVER_DOUBLE", "") or os.environ.get("KCACHE_CUDA_DRIVER", "")
REQUIRE = os.environ.get("KCACHE_REQUIRE_DOUBLE") == "1"
HAVE_DOUBLE = _is_double(DOUBLE)
if HAVE_DOUBLE:
    os.environ["KCACHE_CUDA_DRIVER"] = DOUBLE

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def need_double() -> None:
    """Skip (or fail, with KCACHE_REQUIRE_DOUBLE=1) without the driver double."""
    if HAVE_DOUBLE:
        return
    why = f"the CUDA driver double is missing (KCACHE_TEST_DRIVER_DOUBLE={DOUBLE!r})"
    if REQUIRE:
        pytest.fail(why + " and KCACHE_REQUIRE_DOUBLE=1")
    pytest.skip(why)


def libkcache() -> ctypes.CDLL:
    """The libkcache this process loaded with kcache._kcache (found in /proc/self/maps)."""
    import kcache  # noqa: F401  (loads it)

    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libkcache.so" in path:
                lib = ctypes.CDLL(path)
                lib.kc_cuda_malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_void_p]
                lib.kc_cuda_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
                lib.kc_cuda_copy_to_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
                lib.kc_cuda_copy_to_device.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
                return lib
    raise RuntimeError("libkcache is not loaded")


class Launch(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char_p), ("target", ctypes.c_char_p), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("device", ctypes.c_int), ("captured", ctypes.c_int), ("replayed", ctypes.c_int),
                ("seq", ctypes.c_ulonglong), ("nparams", ctypes.c_size_t),
                ("param_offset", ctypes.POINTER(ctypes.c_uint32)), ("param_size", ctypes.POINTER(ctypes.c_uint32)),
                ("args", ctypes.POINTER(ctypes.c_ubyte)), ("args_len", ctypes.c_size_t)]


class Double:
    """The double's control API (kcache/cuda_double.h)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(DOUBLE)
        self.lib.kcd_launch_arg_u64.restype = ctypes.c_uint64
        self.lib.kcd_launch_arg_u64.argtypes = [ctypes.POINTER(Launch), ctypes.c_size_t]
        self.lib.kcd_launch_count.restype = ctypes.c_size_t
        self.lib.kcd_defects.restype = ctypes.c_size_t
        self.lib.kcd_defects.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.lib.cuStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
        self.lib.cuStreamDestroy_v2.argtypes = [ctypes.c_void_p]

    def reset(self) -> None:
        self.lib.kcd_reset()

    def launches(self) -> List[Tuple[str, int, List[int]]]:
        """(kernel, stream, parameters as u64) of each launch since the last reset."""
        out = []
        for i in range(self.lib.kcd_launch_count()):
            rec = Launch()
            assert self.lib.kcd_launch_get(ctypes.c_size_t(i), ctypes.byref(rec)) == 0
            args = [self.lib.kcd_launch_arg_u64(ctypes.byref(rec), k) for k in range(rec.nparams)]
            out.append((rec.kernel.decode(), rec.stream or 0, args))
        return out

    def defects(self) -> str:
        buf = ctypes.create_string_buffer(8192)
        n = self.lib.kcd_defects(buf, len(buf))
        return "" if n == 0 else buf.value.decode(errors="replace")

    def stream(self) -> int:
        """A new non-blocking stream of device 0 (context made current through libkcache)."""
        lib = libkcache()
        assert lib.kc_cuda_push(0) == 0
        s = ctypes.c_void_p()
        try:
            assert self.lib.cuStreamCreate(ctypes.byref(s), 1) == 0
        finally:
            lib.kc_cuda_pop()  # pushes are paired: the double refuses a 65th unpopped one
        return int(s.value or 0)

    def destroy_stream(self, s: int) -> None:
        lib = libkcache()
        assert lib.kc_cuda_push(0) == 0
        self.lib.cuStreamDestroy_v2(ctypes.c_void_p(s))
        lib.kc_cuda_pop()


_TYPESTR = {"f32": ("<f4", 4), "f16": ("<f2", 2), "f64": ("<f8", 8), "i32": ("<i4", 4), "i64": ("<i8", 8)}


class DevArray:
    """Device memory from the double with __cuda_array_interface__ (v3), freed by free()."""

    def __init__(self, shape: Tuple[int, ...], dtype: str = "f32", strides: Optional[Tuple[int, ...]] = None,
                 extra: Optional[Dict[str, Any]] = None) -> None:
        lib = libkcache()
        assert lib.kc_cuda_push(0) == 0
        n = 1
        for s in shape:
            n *= s
        typestr, size = _TYPESTR[dtype]
        p = ctypes.c_void_p()
        rc = lib.kc_cuda_malloc(ctypes.byref(p), max(n * size, 1), None)
        lib.kc_cuda_pop()
        assert rc == 0
        self.ptr = int(p.value or 0)
        self.nbytes = n * size
        self.__cuda_array_interface__: Dict[str, Any] = {
            "shape": tuple(shape), "typestr": typestr, "data": (self.ptr, False), "version": 3,
            "strides": strides, "stream": None}
        if extra:
            self.__cuda_array_interface__.update(extra)

    def free(self) -> None:
        lib = libkcache()
        assert lib.kc_cuda_push(0) == 0
        lib.kc_cuda_free(ctypes.c_void_p(self.ptr), None)
        lib.kc_cuda_pop()


class FakeProducer:
    """A DLPack producer over another one (a kcache Buffer), recording how it was asked."""

    def __init__(self, inner: Any, device: Tuple[int, int] = (2, 0), versioned: bool = True) -> None:
        self.inner, self.device, self.versioned = inner, device, versioned
        self.calls: List[Dict[str, Any]] = []

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream: Any = None, **kw: Any) -> Any:
        if not self.versioned and "max_version" in kw:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.calls.append(dict(kw, stream=stream))
        return self.inner.__dlpack__(stream=stream, **kw)
