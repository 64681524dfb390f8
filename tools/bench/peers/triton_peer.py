# SPDX-License-Identifier: Apache-2.0
"""triton_peer.py — kcache-bench's Triton peer: one triton.compile of a row softmax (the bundled
softmax graph's forward, written in Triton) for a named target without a GPU
(GPUTarget("cuda", 90, 32)), through Triton's own cache (TRITON_CACHE_DIR), in one fresh process.

    TRITON_CACHE_DIR=DIR python triton_peer.py [--cc 90] [--import-only]

Prints "hit" or "miss" (a miss stored new files in TRITON_CACHE_DIR) and the cubin's size; exit 0.
--import-only: only the imports (the peer's own process floor).
"""
import argparse
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--cc", type=int, default=90)
ap.add_argument("--import-only", action="store_true")
a = ap.parse_args()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

if a.import_only:
    sys.exit(0)


@triton.jit
def softmax_fwd(x_ptr, y_ptr, C, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < C
    x = tl.load(x_ptr + row * C + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * C + offs, e / tl.sum(e, axis=0), mask=mask)


def files(d):
    return sum(len(f) for _, _, f in os.walk(d))


d = os.environ["TRITON_CACHE_DIR"]
before = files(d)
src = ASTSource(fn=softmax_fwd, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "C": "i32", "BLOCK": "constexpr"},
                constexprs={"BLOCK": 1024})
k = triton.compile(src, target=GPUTarget("cuda", a.cc, 32))
print("miss" if files(d) > before else "hit", len(k.asm["cubin"]))
