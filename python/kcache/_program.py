# SPDX-License-Identifier: Apache-2.0
"""Program and Param: what Cache.compile returns (kc_program, as Python values).

The one idea: an immutable record of one cached compile (kc_cache_compile): the image, the lowered
names and parameter tables by name expression, the key and where it came from.  It holds values
only; nothing here decides anything.  Callers: kcache._cache.Cache.compile.
"""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Tuple


class Param(NamedTuple):
    """One kernel parameter as the compiler laid it out."""

    offset: int
    """Bytes into the parameter buffer."""
    size: int
    """Bytes."""
    align: int
    """Declared alignment (PTX); 0 when the image does not record it (cubin)."""
    cls: str
    """"int", "float", "bytes" (a struct or half by value), or "any" (cubin: unknown)."""


class Program:
    """A compiled source, through the cache: what Cache.compile returns (immutable)."""

    __slots__ = ("image", "is_ptx", "target", "names", "lowered_names", "params", "key", "outcome", "log",
                 "compile_seconds")
    image: bytes
    is_ptx: bool
    target: str
    names: Tuple[str, ...]
    lowered_names: Dict[str, str]
    params: Dict[str, Tuple[Param, ...]]
    key: str
    outcome: str
    log: str
    compile_seconds: float

    def __init__(self, raw: Tuple[Any, ...]) -> None:
        image, is_ptx, target, names, lowered, params, key, outcome, log, seconds = raw
        put = object.__setattr__
        put(self, "image", image)
        put(self, "is_ptx", bool(is_ptx))
        put(self, "target", target)
        put(self, "names", tuple(names))
        put(self, "lowered_names", dict(zip(names, lowered)))
        put(self, "params", {n: tuple(Param(*p) for p in ps) for n, ps in zip(names, params)})
        put(self, "key", key)
        put(self, "outcome", outcome)
        put(self, "log", log)
        put(self, "compile_seconds", float(seconds))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("kcache.Program is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("kcache.Program is immutable")

    def lowered_name(self, expr: str) -> str:
        """The symbol (lowered name) of the name expression `expr`; KeyError naming those asked."""
        try:
            return self.lowered_names[expr]
        except KeyError:
            raise KeyError(f"{expr!r} is not a name expression of this program (asked: {list(self.names)})") from None

    def __repr__(self) -> str:
        kind = "PTX" if self.is_ptx else "cubin"
        return (f"<kcache.Program {self.target} {kind} {len(self.image)} bytes key={self.key} "
                f"outcome={self.outcome} names={list(self.names)}>")
