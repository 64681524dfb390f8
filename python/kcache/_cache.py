# SPDX-License-Identifier: Apache-2.0
"""kcache.Cache: the C type kcache._kcache.Cache with its Python-shaped methods.

The one idea: the C type owns the kc_cache and every call into libkcache (thread safety, the GIL,
close); this subclass only gives compile's result its Python shape (Program) and hands graphs to
the graph part (kcache._graph).  Callers: users, through kcache.Cache.  Must not: add logic of its
own to what libkcache decides.
"""
from __future__ import annotations


from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Union

from . import _kcache
from ._program import Program

if TYPE_CHECKING:  # the graph part is imported when first used
    from ._graph import Graph, LoadedGraph


class Cache(_kcache.Cache):
    """One kcache cache (a directory, and any remotes); thread-safe; a context manager.

    Cache(dir=None, remote=None, *, readonly=None, **settings): settings are the configuration
    table's names (max_size=..., require_hit=True, remote_deadline_ms=200, ...): bool as "1"/"0",
    int in decimal, str as is; libkcache checks each and says what it accepts.
    """

    def compile(self, source: str, name_expressions: Union[str, Sequence[str]], target: str,
                options: Sequence[str] = (), headers: Mapping[str, str] = {}, toolkit_headers: bool = False,
                file: Optional[str] = None) -> Program:
        """Compile `source` for `target` through the cache (kc_cache_compile) -> Program."""
        return Program(self._compile(source, name_expressions, target, options, headers, toolkit_headers, file))

    def get(self, graph: Graph, device: int = 0) -> LoadedGraph:
        """Load `graph` for `device` through the cache -> LoadedGraph."""
        from . import _graph  # the graph part; imported when first used

        return _graph.get(self, graph, device)

    def explain(self, graph: Graph, target: str) -> Dict[str, Any]:
        """Why `graph` for `target` would hit or miss, as a dict."""
        from . import _graph

        report: Dict[str, Any] = _graph.explain(self, graph, target)
        return report


__all__ = ["Cache"]
