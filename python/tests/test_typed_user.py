# SPDX-License-Identifier: Apache-2.0
"""The package's public names are the ones its types promise, and the typed user program runs.

typed_user.py is what `mypy --strict` checks in CI as a user's program; here it runs, so that a type
that names something the package lacks fails a test, not only a user's type check."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import kcache

from conftest import KERNELS

HERE = Path(__file__).resolve().parent


def test_every_name_in_all_exists() -> None:
    missing = [n for n in kcache.__all__ if not hasattr(kcache, n)]
    assert missing == []
    # The graph part's value types are public: a forward returns Buffers and a Saved, specs list TensorSpecs.
    for name in ("Buffer", "Saved", "TensorSpec", "ArgSpec", "Graph", "GraphBuilder", "LoadedGraph"):
        assert name in kcache.__all__ and isinstance(getattr(kcache, name), type), name


def test_typed_user_program_runs(tmp_path: Path, capsys: object) -> None:
    spec = importlib.util.spec_from_file_location("typed_user", HERE / "typed_user.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    outcome, size, stats = mod.compile_once(str(tmp_path / "c"))
    assert outcome == "compile" and size > 0 and stats
    again = mod.compile_once(str(tmp_path / "c"))
    assert again[0] in ("disk", "memory")
    assert mod.describe(str(KERNELS / "adamw.json")).startswith("adamw: ")
