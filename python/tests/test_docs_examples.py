# SPDX-License-Identifier: Apache-2.0
"""test_docs_examples.py — every ```python block of README.md and docs/*.md runs.

The one idea: what a reader copies must work, so the suite runs it as the reader would: each block
in a fresh interpreter (this one's executable and environment), in a scratch folder that holds the
repository's `kernels/` (the paths the text uses), with KCACHE_DIR a fresh directory and no other
KCACHE_ variable but the driver double's.

  - A block without a marker is compile-only: it runs everywhere (real NVRTC; loads go to the driver
    double when the suite has one).  The unmarked blocks of one document run in order in one folder
    and one cache, as one test (a later block may use what an earlier one wrote, as the text says);
    a failure names the block's line.
  - A block whose first line is `# requires: gpu` needs a GPU (and whatever it imports: CuPy,
    PyTorch, cuda.core): it is its own test, marked `gpu`, skipped where no GPU answers, run on the
    real driver where one does.
  - Any other `# requires:` line fails: no block is skipped without saying why.

Callers: pytest (python/tests).  Must not: skip an unmarked block, or run a gpu block on the double.
"""
from __future__ import annotations

import ctypes
import glob
import os
import re
import subprocess
import sys
from typing import Dict, List, Tuple

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REQUIRES = re.compile(r"^#\s*requires:\s*(.*)$")
KNOWN = {"gpu"}

Block = Tuple[str, int, str, frozenset]  # document (relative), line of the fence, text, requirements


def blocks_of(path: str) -> List[Block]:
    """The ```python blocks of one Markdown file, with the requirements their first line names."""
    rel = os.path.relpath(path, ROOT)
    lines = open(path, encoding="utf-8").read().split("\n")
    out: List[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            k = i + 1
            while k < len(lines) and lines[k].strip() != "```":
                k += 1
            if k == len(lines):
                raise ValueError("%s:%d: a ```python block is never closed" % (rel, i + 1))
            text = "\n".join(lines[i + 1:k]) + "\n"
            m = REQUIRES.match(lines[i + 1].strip()) if i + 1 < k else None
            req = frozenset(r.strip() for r in m.group(1).split(",") if r.strip()) if m else frozenset()
            out.append((rel, i + 1, text, req))
            i = k
        i += 1
    return out


def all_blocks() -> List[Block]:
    docs = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return [b for d in docs for b in blocks_of(d)]


def gpu_present() -> bool:
    """Whether the real CUDA driver answers with at least one device (never the double)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        n = ctypes.c_int(0)
        return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0
    except (OSError, AttributeError):
        return False


def driver_double() -> str:
    """The driver double's path: KCACHE_TEST_DRIVER_DOUBLE or KCACHE_CUDA_DRIVER as the suite set them,
    else a build's."""
    for var in ("KCACHE_TEST_DRIVER_DOUBLE", "KCACHE_CUDA_DRIVER"):
        d = os.environ.get(var, "")
        if d and os.path.exists(d):
            return d
    found = sorted(glob.glob(os.path.join(ROOT, "build*", "tests", "double", "libkcache_cuda_double.so")))
    return found[0] if found else ""


def scratch(tmp: str) -> Dict[str, str]:
    """A reader's folder (kernels/ from the repository) and the environment a block runs with."""
    os.symlink(os.path.join(ROOT, "kernels"), os.path.join(tmp, "kernels"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCACHE_")}
    env["KCACHE_DIR"] = os.path.join(tmp, "kcache-dir")
    return env


def run_block(block: Block, cwd: str, env: Dict[str, str]) -> None:
    rel, line, text, _ = block
    name = "%s_%d.py" % (os.path.basename(rel).replace(".", "_"), line)
    path = os.path.join(cwd, ".block_" + name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    r = subprocess.run([sys.executable, path], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode:
        pytest.fail("%s:%d: the block exits %d:\n%s%s" % (rel, line, r.returncode, r.stdout[-3000:], r.stderr[-6000:]))


BLOCKS = all_blocks()
DOCS = sorted({b[0] for b in BLOCKS if not b[3]})
GPU_BLOCKS = [b for b in BLOCKS if b[3]]


def test_blocks_found_and_marked() -> None:
    """The extractor finds the guide's blocks, and every marker is one the suite knows."""
    assert any(b[0] == os.path.join("docs", "python.md") for b in BLOCKS), "no ```python block in docs/python.md"
    assert DOCS, "no unmarked ```python block: the extractor is broken"
    for rel, line, _, req in BLOCKS:
        assert req <= KNOWN, "%s:%d: unknown requirement %s (known: %s)" % (rel, line, sorted(req - KNOWN),
                                                                            sorted(KNOWN))


@pytest.mark.parametrize("doc", DOCS)
def test_doc_blocks_run(doc: str, tmp_path: "os.PathLike[str]") -> None:
    """The unmarked blocks of one document, in order, in one folder and one cache."""
    env = scratch(str(tmp_path))
    dbl = driver_double()
    if dbl:
        env["KCACHE_CUDA_DRIVER"] = dbl
    for b in BLOCKS:
        if b[0] == doc and not b[3]:
            run_block(b, str(tmp_path), env)


@pytest.mark.gpu
@pytest.mark.parametrize("block", GPU_BLOCKS, ids=["%s:%d" % (b[0], b[1]) for b in GPU_BLOCKS])
def test_gpu_block_runs(block: Block, tmp_path: "os.PathLike[str]") -> None:
    """A `# requires: gpu` block, alone, on the real driver."""
    if not gpu_present():
        pytest.skip("%s:%d requires a GPU: no CUDA device answers here" % (block[0], block[1]))
    run_block(block, str(tmp_path), scratch(str(tmp_path)))
