# SPDX-License-Identifier: Apache-2.0
"""cuda_core_peer.py — kcache-bench's cuda.core peer: one NVRTC compile of kernels/softmax.cu for a
target through cuda.core's persistent program cache (cuda.core.utils.FileStreamProgramCache), in
one fresh process, as a Python runtime that uses cuda.core would.

    python cuda_core_peer.py --cache-dir DIR [--kernels DIR] [--arch sm_90] [--import-only]

Prints "hit" or "miss" (a miss stored a new entry file in DIR) and the cubin's size; exit 0.
--import-only: only the imports (the peer's own process floor).  The source is softmax.cu with
common.cuh pasted in place of its #include: cuda.core's cache refuses include paths (they would
need an extra digest), and both kernels are extern "C" (it refuses name expressions too).
"""
import argparse
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--cache-dir", required=True)
ap.add_argument("--kernels", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "kernels"))
ap.add_argument("--arch", default="sm_90")
ap.add_argument("--import-only", action="store_true")
a = ap.parse_args()

from cuda.core import Program, ProgramOptions  # noqa: E402
from cuda.core.utils import FileStreamProgramCache  # noqa: E402

if a.import_only:
    sys.exit(0)


def files(d):
    return sum(len(f) for _, _, f in os.walk(d))


with open(os.path.join(a.kernels, "common.cuh")) as f:
    common = f.read()
with open(os.path.join(a.kernels, "softmax.cu")) as f:
    src = f.read().replace('#include "common.cuh"', common)
cache = FileStreamProgramCache(a.cache_dir)
before = files(a.cache_dir)
obj = Program(src, "c++", options=ProgramOptions(arch=a.arch)).compile("cubin", cache=cache)
print("miss" if files(a.cache_dir) > before else "hit", len(bytes(obj.code)))
