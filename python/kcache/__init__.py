# SPDX-License-Identifier: Apache-2.0
"""kcache: a cache of compiled GPU kernels, from Python.

The extension kcache._kcache wraps libkcache; this package re-exports it and adds the small
Python shapes (Program, Param).  Importing needs no CUDA: libkcache loads NVRTC and the driver when
a call first needs them.
"""
from ._kcache import (
    ClosedError,
    CompileError,
    CorruptError,
    DriverError,
    Error,
    InvalidArgumentError,
    MissError,
    NoDriverError,
    NoNvrtcError,
    NotCachedError,
    ReadOnlyError,
    UntrustedError,
)
from ._cache import Cache
from ._program import Param, Program
from ._kcache import __version__

from ._graph import ArgSpec, Buffer, Graph, GraphBuilder, LoadedGraph, Saved, TensorSpec  # the graph part

__all__ = [
    "ArgSpec",
    "Buffer",
    "Cache",
    "ClosedError",
    "CompileError",
    "CorruptError",
    "DriverError",
    "Error",
    "Graph",
    "GraphBuilder",
    "InvalidArgumentError",
    "LoadedGraph",
    "MissError",
    "NoDriverError",
    "NoNvrtcError",
    "NotCachedError",
    "Param",
    "Program",
    "ReadOnlyError",
    "Saved",
    "TensorSpec",
    "UntrustedError",
    "__version__",
]
