# SPDX-License-Identifier: Apache-2.0
# Types of the extension module kcache._kcache (python/src/*.c).  Users import from kcache, whose
# modules (__init__.py, _cache.py, _program.py, _graph.py) are typed inline over these.
import os
from typing import Any, Dict, Literal, Mapping, Optional, Sequence, Tuple, TypeVar, Union

_Path = Union[str, "os.PathLike[str]"]
_Strs = Union[str, Sequence[str]]
_C = TypeVar("_C", bound="Cache")          # `with kcache.Cache() as c`: c is the subclass

__version__: str
KC_OPTIONS_VERSION: int

def version() -> str: ...

class Error(Exception):
    """Every kcache failure; an instance of exactly one subclass below (or of Error itself)."""
    status: int                          # the kc_status value (negative), e.g. -3
    status_name: str                     # "KC_EINVAL"
    message: str                         # kcache's whole message (kc_error_last()); also str(exc)
class MissError(Error): ...              # KC_MISS
class NotCachedError(Error): ...         # KC_ENOTCACHED: must hit (require_hit) and not stored
class CompileError(Error):               # KC_ECOMPILE
    log: str                             # kcache's message, NVRTC's log included (the same text as .message)
class NoNvrtcError(Error): ...           # KC_ENONVRTC
class NoDriverError(Error): ...          # KC_ENODRIVER
class CorruptError(Error): ...           # KC_ECORRUPT
class UntrustedError(Error): ...         # KC_EUNTRUSTED
class ReadOnlyError(Error): ...          # KC_EREADONLY
class DriverError(Error): ...            # KC_EDRIVER, KC_EREFUSED
class InvalidArgumentError(Error, ValueError): ...  # KC_EINVAL
class ClosedError(Error, ValueError): ...           # a call on a closed Cache (status KC_EINVAL)

class Cache:
    def __init__(self, dir: Optional[_Path] = None, remote: Optional[str] = None, *, readonly: Optional[bool] = None,
                 **settings: Union[str, int, bool]) -> None: ...
    @property
    def dir(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self: _C) -> _C: ...
    def __exit__(self, *exc: Any) -> Literal[False]: ...  # never swallows the exception
    def stats(self) -> Dict[str, int]: ...
    def config(self) -> Dict[str, Dict[str, str]]: ...
    def prewarm(self, manifest: _Path, archs: Optional[_Strs] = None, jobs: int = 0) -> Dict[str, Any]: ...
    def export(self, path: _Path, *, graphs: Optional[_Strs] = None, archs: Optional[_Strs] = None,
               manifest: Optional[_Path] = None) -> Dict[str, Any]: ...
    def import_(self, path: _Path, *, dry_run: bool = False) -> Dict[str, Any]: ...
    def coverage(self, manifest: _Path, device: int = -1) -> Dict[str, Any]: ...
    def _compile(self, source: str, name_expressions: _Strs, target: str, options: Sequence[str] = ...,
                 headers: Mapping[str, str] = ..., toolkit_headers: bool = ...,
                 file: Optional[str] = ...) -> Tuple[Any, ...]: ...

# ---- the graph part (python/src/graph.c, tensor.c, loaded.c; kcache/_graph.py gives them their shape) ----
_TensorRow = Tuple[str, int, Tuple[str, ...], bool]   # dtype, rank, sizes as written, requires_grad

class _Graph:
    @classmethod
    def from_spec(cls, path: _Path) -> "_Graph": ...
    @classmethod
    def new_builder(cls, name: str) -> "_Graph": ...
    name: str
    inputs: Tuple[_TensorRow, ...]
    outputs: Tuple[_TensorRow, ...]
    saved: Tuple[_TensorRow, ...]
    args: Tuple[Tuple[str, str], ...]
    def add_kernel(self, source: str, name: str, *, file: Optional[str] = ..., headers: Optional[Mapping[str, str]] = ...,
                   options: Optional[Sequence[str]] = ..., toolkit_headers: bool = ...) -> int: ...
    def add_input(self, dtype: str, sizes: Sequence[str], *, strides: Optional[Sequence[str]] = ...,
                  requires_grad: bool = ...) -> int: ...
    def add_tensor(self, role: int, dtype: str, sizes: Sequence[str]) -> int: ...
    def add_step(self, pass_: int, kernel: int, grid: Sequence[str], block: Sequence[str], args: Sequence[str],
                 shared: Optional[str] = ...) -> None: ...
    def add_scratch(self, pass_: int, nbytes: str) -> None: ...
    def add_arg(self, name: str, type: str) -> None: ...
    def mark(self, what: int, a: int, b: int = ...) -> None: ...
    def add_zero(self, pass_: int, role: int, index: int, offset: Optional[str] = ..., count: Optional[str] = ...) -> None: ...
    def finish(self) -> "_Graph": ...

class Buffer:
    """Device memory kcache allocated (an output or a gradient): DLPack and __cuda_array_interface__
    v3; freed on the stream it was made on when the last user lets go."""
    shape: Tuple[int, ...]
    dtype: str
    ptr: int
    device: int
    __cuda_array_interface__: Dict[str, Any]
    def __dlpack__(self, *, stream: Optional[int] = ..., max_version: Optional[Tuple[int, int]] = ...,
                   dl_device: Any = ..., copy: Optional[bool] = ...) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...

class Saved:
    """What a forward keeps for its backward; freed by release(), by a backward without
    retain_graph, or when dropped."""
    released: bool
    def release(self) -> None: ...

class _LoadedGraph:
    info: Dict[str, Any]
    graph: _Graph
    device: int
    closed: bool
    def forward(self, tensors: Tuple[Any, ...], stream: int, stream_obj: Any, args: Optional[Dict[str, Any]],
                save: bool) -> Tuple[Tuple[Any, ...], Optional[Saved]]: ...
    def backward(self, saved: Saved, grads: Tuple[Any, ...], stream: int, stream_obj: Any,
                 args: Optional[Dict[str, Any]], accumulate: Optional[Dict[int, Any]]) -> Tuple[Any, ...]: ...
    def close(self) -> None: ...

def graph_get(cache: Cache, graph: _Graph, device: int) -> _LoadedGraph: ...
def graph_explain(cache: Cache, graph: _Graph, target: str) -> Dict[str, Any]: ...
