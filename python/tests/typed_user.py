# SPDX-License-Identifier: Apache-2.0
"""A user's typed program: `mypy --strict` over it checks the package's types as a user meets them
(.ci/run python).  It is also run by test_typed_user.py, against the driver double."""
from __future__ import annotations

import sys
from typing import Dict, Tuple

import kcache

SOURCE = 'extern "C" __global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n'


def compile_once(cache_dir: str) -> Tuple[str, int, Dict[str, int]]:
    with kcache.Cache(cache_dir, max_size="1G") as cache:
        prog: kcache.Program = cache.compile(SOURCE, ["scale"], "sm_90")
        first: kcache.Param = prog.params["scale"][0]
        symbol: str = prog.lowered_name("scale")
        stats: Dict[str, int] = cache.stats()
        assert first.size == 8 and symbol == "scale"
        return prog.outcome, len(prog.image), stats


def describe(path: str) -> str:
    graph: kcache.Graph = kcache.Graph.from_spec(path)
    specs: Tuple[kcache.TensorSpec, ...] = graph.inputs
    return f"{graph.name}: {len(specs)} inputs"


def main(argv: list[str]) -> int:
    try:
        outcome, size, _ = compile_once(argv[1])
    except kcache.CompileError as e:
        print(e.log, file=sys.stderr)
        return 1
    except kcache.Error as e:
        print(f"{e.status_name}: {e.message}", file=sys.stderr)
        return 2
    print(outcome, size)
    if len(argv) > 2:
        print(describe(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
