# SPDX-License-Identifier: Apache-2.0
# The public API of the kcache package (PEP 484 stubs).  What each call does: docs/python.md.
import os
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

_Path = Union[str, "os.PathLike[str]"]   # bytes paths are refused (TypeError): kcache takes text
_Strs = Union[str, Sequence[str]]        # one str, or a sequence of them
_C = TypeVar("_C", bound="Cache")

__version__: str                         # the running libkcache's version (kc_version)

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

class Param(NamedTuple):
    offset: int                          # bytes into the parameter buffer
    size: int                            # bytes
    align: int                           # declared alignment (PTX); 0 when unknown (cubin)
    cls: str                             # "int", "float", "bytes" or "any"

class Program:
    """What Cache.compile returns (immutable)."""
    image: bytes                         # cubin (ELF) or PTX text (without a NUL)
    is_ptx: bool
    target: str                          # "sm_90", "compute_80"
    names: Tuple[str, ...]               # the name expressions asked, in order
    lowered_names: Dict[str, str]        # name expression -> symbol (CuPy get_function, cuda.core get_kernel)
    params: Dict[str, Tuple[Param, ...]] # name expression -> parameter table
    key: str                             # 32 hex: what it is stored under
    outcome: str                         # "memory", "disk", "remote", "compile" or "bypass"
    log: str                             # NVRTC's log when this call compiled, else ""
    compile_seconds: float               # time in NVRTC by this call (0 on a hit)
    def lowered_name(self, expr: str) -> str: ...

class Cache:
    """One cache (a directory, and any remotes); thread-safe; a context manager (closes on exit)."""
    def __init__(self, dir: Optional[_Path] = None, remote: Optional[str] = None, *, readonly: Optional[bool] = None,
                 **settings: Union[str, int, bool]) -> None: ...
    @property
    def dir(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self: _C) -> _C: ...
    def __exit__(self, *exc: Any) -> bool: ...
    def compile(self, source: str, name_expressions: _Strs, target: str, options: Sequence[str] = (),
                headers: Mapping[str, str] = {}, toolkit_headers: bool = False,
                file: Optional[str] = None) -> Program: ...
    def prewarm(self, manifest: _Path, archs: Optional[_Strs] = None, jobs: int = 0) -> Dict[str, Any]: ...
    def export(self, path: _Path, *, graphs: Optional[_Strs] = None, archs: Optional[_Strs] = None,
               manifest: Optional[_Path] = None) -> Dict[str, Any]: ...
    def import_(self, path: _Path, *, dry_run: bool = False) -> Dict[str, Any]: ...
    def coverage(self, manifest: _Path, device: int = -1) -> Dict[str, Any]: ...
    def stats(self) -> Dict[str, int]: ...
    def config(self) -> Dict[str, Dict[str, str]]: ...
    def get(self, graph: Any, device: int = 0) -> Any: ...        # -> LoadedGraph (the graph part)
    def explain(self, graph: Any, target: str) -> Dict[str, Any]: ...

# The graph part (kcache/_graph.py, typed inline): Graph.from_spec(path) / Graph.build(name) -> GraphBuilder;
# Cache.get(graph, device) -> LoadedGraph, whose forward(*tensors, stream=None, save=None, **args) returns
# (outputs, saved) — outputs a tuple in the first tensor's framework (torch/cupy/jax via DLPack, else
# kcache Buffers), allocated by kcache on the call's stream; saved a Saved (None with save=False) — and
# backward(saved, *grad_outputs, stream=None, accumulate=None, retain_graph=False, **args) returns the
# inputs' gradients.  stream=None: the current stream of the first tensor's framework (else legacy 0).
from ._graph import ArgSpec as ArgSpec, Buffer as Buffer, Graph as Graph, GraphBuilder as GraphBuilder
from ._graph import LoadedGraph as LoadedGraph, Saved as Saved, TensorSpec as TensorSpec
