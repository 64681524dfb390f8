# SPDX-License-Identifier: Apache-2.0
"""Graphs from Python: kcache.Graph (a spec or a built description), GraphBuilder, LoadedGraph.

The one idea: the C half (kcache._kcache: _Graph, _LoadedGraph, Saved, Buffer) does every kcache
call and every check of a tensor against the graph; this file only gives them their Python shape —
which stream a call runs on, and in which framework its outputs come back.  Callers: users, and
kcache.Cache.get/explain (get, explain below).  Must not: decide anything kcache decides.

Streams (`stream=`): None is the current stream of the framework the first tensor belongs to
(torch.cuda.current_stream(device) for a PyTorch tensor, cupy.cuda.get_current_stream() for CuPy,
else the legacy default stream); else an object with __cuda_stream__() (cuda.core's protocol,
returning (version, handle)), .cuda_stream (PyTorch) or .ptr (CuPy), or an int handle (0 or 1: the
legacy default stream, 2: the per-thread one).  The stream is handed to each input's __dlpack__ so
its producer orders its work before kcache's.

Outputs: kcache allocates outputs and gradients on the call's stream (the driver's stream-ordered
allocator) and hands them back in the first input's framework (torch.from_dlpack, cupy.from_dlpack,
jax.dlpack.from_dlpack), or as kcache.Buffer (DLPack, __cuda_array_interface__ v3) for others.  The
memory is freed on that stream when the last tensor viewing it is dropped; a stream object (given,
or the framework's current one) is kept alive until then, a raw int handle must outlive the outputs.  An output the graph
declares an alias of an input is that input object itself.
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _kcache

Buffer = _kcache.Buffer  # device memory kcache allocated (typed in _kcache.pyi)
Saved = _kcache.Saved    # what a forward keeps for its backward

_PASSES = {"forward": 0, "backward": 1}
_ROLES = {"input": 0, "output": 1, "saved": 2, "scratch": 3, "grad_out": 4, "grad_in": 5}


class TensorSpec(NamedTuple):
    """A tensor of a graph as written: dtype ("f32", "bf16", ...), rank, sizes (numbers, symbols or
    expressions over the symbols, as text), and for an input whether it requires a gradient."""

    dtype: str
    rank: int
    sizes: Tuple[str, ...]
    requires_grad: bool = False


class ArgSpec(NamedTuple):
    """A runtime argument of a graph: its name and type ("f32", "f64", "i32", "u32", "i64", "u64")."""

    name: str
    type: str


class Graph:
    """A graph description: its kernels, tensors and launch steps (kcache/graph.h).

    Graph.from_spec(path) loads a spec (JSON; kernel files read beside it); Graph.build(name) starts a
    GraphBuilder.  Immutable once built; shareable by threads.
    """

    __slots__ = ("_g",)

    def __init__(self, _g: Any) -> None:
        if not isinstance(_g, _kcache._Graph):
            raise TypeError("use Graph.from_spec(path) or Graph.build(name)")
        self._g = _g

    @staticmethod
    def from_spec(path: Union[str, "os.PathLike[str]"]) -> "Graph":
        """Load the graph spec at `path` (kc_graph_desc_load); errors name the file and the place."""
        return Graph(_kcache._Graph.from_spec(path))

    @staticmethod
    def build(name: str) -> "GraphBuilder":
        """A builder for a graph named `name` (the C builder kc_graph_add_*, step by step)."""
        return GraphBuilder(name)

    @property
    def name(self) -> str:
        return str(self._g.name)

    @property
    def inputs(self) -> Tuple[TensorSpec, ...]:
        return tuple(TensorSpec(d, r, tuple(s), bool(g)) for d, r, s, g in self._g.inputs)

    @property
    def outputs(self) -> Tuple[TensorSpec, ...]:
        return tuple(TensorSpec(d, r, tuple(s)) for d, r, s, _ in self._g.outputs)

    @property
    def saved(self) -> Tuple[TensorSpec, ...]:
        return tuple(TensorSpec(d, r, tuple(s)) for d, r, s, _ in self._g.saved)

    @property
    def args(self) -> Tuple[ArgSpec, ...]:
        return tuple(ArgSpec(n, t) for n, t in self._g.args)

    def __repr__(self) -> str:
        return f"<kcache.Graph {self.name!r}: {len(self._g.inputs)} inputs, {len(self._g.outputs)} outputs>"


def _exprs(values: Sequence[Union[str, int]], what: str) -> Tuple[str, ...]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what}: a sequence of expressions (str or int), not one {type(values).__name__}")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise TypeError(f"{what}[{i}]: an expression is a str or an int, not {type(v).__name__}")
        out.append(str(v))
    return tuple(out)


def _pass(p: str) -> int:
    if p not in _PASSES:
        raise ValueError(f"pass {p!r}: 'forward' or 'backward'")
    return _PASSES[p]


class GraphBuilder:
    """Builds a Graph as the C builder does (every call is kc_graph_add_* or kc_graph_set_*).

    Expressions (sizes, grid, block, shared memory, scratch bytes) are str or int; step arguments are
    kcache's strings ("input:0", "output:0", "saved:1", "scratch:0", "e64:N", "f32:0.5", "arg:lr", ...).
    """

    def __init__(self, name: str) -> None:
        self._g = _kcache._Graph.new_builder(name)

    def add_kernel(self, source: str, name: str, *, file: Optional[str] = None,
                   headers: Optional[Mapping[str, str]] = None, options: Sequence[str] = (),
                   toolkit_headers: bool = False) -> int:
        """Add a kernel (CUDA C++ `source`, entry `name`: an extern "C" name or a name expression);
        returns its index for add_step."""
        return int(self._g.add_kernel(source, name, file=file, headers=headers, options=options,
                                      toolkit_headers=toolkit_headers))

    def add_input(self, dtype: str, sizes: Sequence[Union[str, int]], *,
                  strides: Optional[Sequence[Union[str, int]]] = None, requires_grad: bool = False,
                  inplace: bool = False, grad_accumulate: bool = False) -> int:
        """Add a forward input (sizes: numbers or symbol names); returns its index."""
        i = int(self._g.add_input(dtype, _exprs(sizes, "sizes"),
                                  strides=None if strides is None else _exprs(strides, "strides"),
                                  requires_grad=bool(requires_grad)))
        if inplace:
            self._g.mark(0, i)
        if grad_accumulate:
            self._g.mark(1, i)
        return i

    def add_output(self, dtype: str, sizes: Sequence[Union[str, int]], *, alias: Optional[int] = None) -> int:
        """Add a forward output (sizes: expressions); `alias`: the input it is (updated in place)."""
        i = int(self._g.add_tensor(1, dtype, _exprs(sizes, "sizes")))
        if alias is not None:
            self._g.mark(2, i, alias)
        return i

    def add_saved(self, dtype: str, sizes: Sequence[Union[str, int]]) -> int:
        """Add a tensor forward saves for backward; returns its index ("saved:I")."""
        return int(self._g.add_tensor(2, dtype, _exprs(sizes, "sizes")))

    def add_scratch(self, pass_: str, nbytes: Union[str, int]) -> None:
        """Add a scratch buffer of `nbytes` (an expression) to a pass ("scratch:I")."""
        self._g.add_scratch(_pass(pass_), _exprs([nbytes], "nbytes")[0])

    def add_arg(self, name: str, type: str) -> None:
        """Declare a runtime argument (passed to forward/backward as a keyword; "arg:NAME" in steps)."""
        self._g.add_arg(name, type)

    def add_step(self, pass_: str, kernel: int, grid: Sequence[Union[str, int]], block: Sequence[Union[str, int]],
                 args: Sequence[str], shared: Union[str, int, None] = None) -> None:
        """Add a launch step of `kernel` to a pass: grid and block (three expressions each), its
        arguments, dynamic shared memory bytes."""
        if isinstance(kernel, bool) or not isinstance(kernel, int):
            raise TypeError("kernel: the index add_kernel returned")
        self._g.add_step(_pass(pass_), kernel, _exprs(grid, "grid"), _exprs(block, "block"), tuple(args),
                         None if shared is None else _exprs([shared], "shared")[0])

    def add_zero(self, pass_: str, tensor: str, offset: Union[str, int, None] = None,
                 count: Union[str, int, None] = None) -> None:
        """Zero a tensor ("output:0", "saved:1", "grad_in:0", "scratch:0", an in-place "input:I") in
        order with the steps; `offset`/`count` in elements (scratch: bytes)."""
        role, sep, idx = tensor.partition(":")
        if not sep or role not in _ROLES or not idx.isdigit():
            raise ValueError(f"add_zero: {tensor!r} is not ROLE:INDEX (input, output, saved, scratch, grad_in)")
        self._g.add_zero(_pass(pass_), _ROLES[role], int(idx),
                         None if offset is None else _exprs([offset], "offset")[0],
                         None if count is None else _exprs([count], "count")[0])

    def finish(self) -> Graph:
        """The Graph; the builder takes no more calls."""
        return Graph(self._g.finish())


# ---- streams and frameworks ----

def _framework(t: Any) -> str:
    mod = type(t).__module__.split(".")[0]
    return mod if mod in ("torch", "cupy", "jax", "jaxlib") else ""


def _handle(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"stream: {what} is not an int handle ({type(v).__name__})")
    if v < 0 or v >= 1 << 64:
        raise ValueError(f"stream: handle {v} is not a CUstream value")
    return v


def _stream(stream: Any, first: Any, device: int) -> Tuple[int, Any]:
    """The CUstream handle of `stream=` (see the module's docstring), and the object to keep alive
    while memory made on it may still be freed on it (None for an int handle)."""
    if stream is None:
        fw = _framework(first) if first is not None else ""
        if fw == "torch":
            torch: Any = importlib.import_module("torch")
            s = torch.cuda.current_stream(device)
            return _handle(s.cuda_stream, "torch's current stream"), s
        if fw == "cupy":
            cupy: Any = importlib.import_module("cupy")
            s = cupy.cuda.get_current_stream()
            return _handle(s.ptr, "CuPy's current stream"), s
        return 0, None
    if isinstance(stream, bool):
        raise TypeError("stream: a stream object or an int handle, not a bool")
    if isinstance(stream, int):
        return _handle(stream, "the handle"), None
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        got = proto() if callable(proto) else proto
        if not isinstance(got, tuple) or len(got) != 2:
            raise TypeError("stream: __cuda_stream__() did not return (version, handle)")
        return _handle(got[1], "__cuda_stream__()'s handle"), stream
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return _handle(getattr(stream, attr), f".{attr}"), stream
    raise TypeError(f"stream: a {type(stream).__name__} is not a stream (pass a torch.cuda.Stream, a cupy Stream, "
                    "an object with __cuda_stream__, or an int handle)")


def _plain(tensors: Tuple[Any, ...]) -> Tuple[Any, ...]:
    """PyTorch refuses to export a tensor that requires a gradient (as inside autograd.Function.forward):
    kcache reads it detached (the same memory)."""
    return tuple(t.detach() if _framework(t) == "torch" and getattr(t, "requires_grad", False) else t
                 for t in tensors)


def _wrap(buf: Any, fw: str) -> Any:
    """A kcache Buffer as a tensor of framework `fw` (zero copy, DLPack)."""
    if not isinstance(buf, Buffer):
        return buf  # an aliased output, or an accumulated gradient: the caller's own tensor
    if fw == "torch":
        torch: Any = importlib.import_module("torch")
        return torch.from_dlpack(buf)
    if fw == "cupy":
        cupy: Any = importlib.import_module("cupy")
        return cupy.from_dlpack(buf)
    if fw in ("jax", "jaxlib"):
        jdl: Any = importlib.import_module("jax.dlpack")
        return jdl.from_dlpack(buf)
    return buf


class LoadedGraph:
    """A graph loaded on a device (Cache.get): forward and backward over the caller's tensors.

    Thread-safe: threads may call forward on one LoadedGraph (each call its own outputs); a Saved is
    used by one backward at a time.

    Producers are ordered before kcache's launch: DLPack tensors are asked for on kcache's stream;
    a __cuda_array_interface__ tensor whose "stream" is another stream is waited for by
    synchronizing the device (libkcache has no public stream-to-stream wait; pass stream= the
    producer's stream to avoid the stall; "stream": 0 is refused).  A tensor kcache writes (an
    in-place input, an accumulate= buffer) marked read-only (CAI data[1], DLPack 1.x's flag) is
    refused with a ValueError naming it.  close() (or the end of a `with` block) releases it once the calls
    in flight end; later calls raise ValueError.
    """

    __slots__ = ("_lg",)

    def __init__(self, _lg: Any) -> None:
        check: Any = _lg  # (checked on a copy: _lg itself stays Any, as the C half is used untyped here)
        if not isinstance(check, _kcache._LoadedGraph):
            raise TypeError("use Cache.get(graph, device) for a LoadedGraph")
        self._lg = _lg

    @property
    def graph(self) -> Graph:
        return Graph(self._lg.graph)

    @property
    def device(self) -> int:
        return int(self._lg.device)

    @property
    def info(self) -> Dict[str, Any]:
        """Where the lookup found it: source ("memory", "disk", "remote", "compile", "bypass"),
        variant, key, miss_reason, kernels, total_us."""
        return dict(self._lg.info)

    @property
    def closed(self) -> bool:
        return bool(self._lg.closed)

    def close(self) -> None:
        self._lg.close()

    def __enter__(self) -> "LoadedGraph":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def forward(self, *tensors: Any, stream: Any = None, save: Optional[bool] = None,
                **args: Union[int, float]) -> Tuple[Tuple[Any, ...], Optional[Saved]]:
        """Run the forward pass -> (outputs, saved).

        `tensors`: one per graph input, each with __dlpack__ or __cuda_array_interface__, on this
        graph's CUDA device, of the dtype, rank and sizes the graph declares, C-contiguous.
        `args`: the graph's runtime arguments by name.  `outputs`: a tuple, one per graph output, in
        the first tensor's framework.  `saved`: what backward needs (None with save=False; the
        default saves when an input requires a gradient) — pass it to backward, as PyTorch's
        ctx.saved_tensors; it keeps the inputs and outputs alive until it is released.  With
        save=False kcache keeps nothing alive past the call: on a stream other than the one that
        made the tensors, keep them alive until that stream's work is done (PyTorch's
        record_stream).  A tensor kcache writes (an in-place input) that says it is read-only is
        refused (ValueError); a __cuda_array_interface__ tensor made on another stream is waited for
        (see LoadedGraph).
        """
        first = tensors[0] if tensors else None
        s, keep = _stream(stream, first, self.device)
        if save is None:
            save = any(rg for _, _, _, rg in self._lg.graph.inputs)
        plain = _plain(tensors)
        outs, saved = self._lg.forward(plain, s, keep, args or None, bool(save))
        fw = _framework(first) if first is not None else ""
        mine = {id(p): t for p, t in zip(plain, tensors)}  # an aliased output is the caller's own input
        return tuple(mine.get(id(o), o) if not isinstance(o, Buffer) else _wrap(o, fw) for o in outs), saved

    def backward(self, saved: Saved, *grad_outputs: Any, stream: Any = None,
                 accumulate: Optional[Mapping[int, Any]] = None, retain_graph: bool = False,
                 **args: Union[int, float]) -> Tuple[Any, ...]:
        """Run the backward pass over what `saved` holds -> the gradients of the forward's inputs.

        `grad_outputs`: one per forward output (its dtype and shape).  An input whose gradient
        accumulates takes the caller's buffer in `accumulate` ({input index: tensor}); kcache adds
        into it and returns it.  The others are allocated (in the first gradient's framework).
        `saved` is released after the call unless retain_graph=True (PyTorch's habit).  Runtime
        arguments default to the forward's values.
        """
        first = grad_outputs[0] if grad_outputs else None
        s, keep = _stream(stream, first, self.device)
        acc = None if accumulate is None else dict(accumulate)
        grads = self._lg.backward(saved, _plain(grad_outputs), s, keep, args or None,
                                  None if acc is None else dict(zip(acc, _plain(tuple(acc.values())))))
        if not retain_graph:
            saved.release()
        fw = _framework(first) if first is not None else ""
        return tuple(acc[i] if acc is not None and i in acc else _wrap(g, fw) for i, g in enumerate(grads))

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"device {self.device}"
        return f"<kcache.LoadedGraph {self.graph.name!r} ({state})>"


def get(cache: Any, graph: Graph, device: int = 0) -> LoadedGraph:
    """Cache.get: `graph` loaded on CUDA device `device` through `cache` (kc_graph_get)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph: a kcache.Graph, not {type(graph).__name__}")
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device: an int ordinal, not {type(device).__name__}")
    return LoadedGraph(_kcache.graph_get(cache, graph._g, device))


def explain(cache: Any, graph: Graph, target: str) -> Dict[str, Any]:
    """Cache.explain: why a lookup of `graph` for `target` hits or misses (kc_graph_explain) -> a dict
    with key, variant, hit, digests {name: digest}, nearest ("<key>.<variant>" or None),
    nearest_shares_graph, diffs [names that differ]."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph: a kcache.Graph, not {type(graph).__name__}")
    if not isinstance(target, str):
        raise TypeError(f"target: a str (\"sm_90\", \"compute_80\"), not {type(target).__name__}")
    return dict(_kcache.graph_explain(cache, graph._g, target))


__all__ = ["ArgSpec", "Buffer", "Graph", "GraphBuilder", "LoadedGraph", "Saved", "TensorSpec", "explain", "get"]
