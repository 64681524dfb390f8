# SPDX-License-Identifier: Apache-2.0
"""Python and the C side agree: the same kernel compiled from Python, from the C API (libkcache
itself, through ctypes) and from the CLI gives one key and one entry; a bundle exported from
Python imports with the CLI; prewarm then coverage."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import kcache
from conftest import KERNELS, SAXPY, cli_json, entry_files, run_cli

# kc_cache_compile called from C (the library the package loads), in a process of its own whose
# cache directory is KCACHE_DIR: prints the key and the outcome.
C_API = textwrap.dedent(r"""
    import ctypes, os, sys
    import kcache._kcache as m
    lib = ctypes.CDLL(os.path.join(os.path.dirname(m.__file__), "libkcache.so.0"))
    class Src(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint), ("file", ctypes.c_char_p), ("source", ctypes.c_char_p),
                    ("name", ctypes.c_char_p), ("headers", ctypes.c_void_p), ("nheaders", ctypes.c_size_t),
                    ("options", ctypes.c_void_p), ("noptions", ctypes.c_size_t),
                    ("include_digest", ctypes.c_char_p), ("flags", ctypes.c_uint)]
    class Prog(ctypes.Structure):
        _fields_ = [("size", ctypes.c_size_t), ("image", ctypes.c_void_p), ("len", ctypes.c_size_t),
                    ("is_ptx", ctypes.c_int), ("target", ctypes.c_char_p), ("nnames", ctypes.c_size_t),
                    ("names", ctypes.c_void_p), ("lowered", ctypes.c_void_p), ("params", ctypes.c_void_p),
                    ("nparams", ctypes.c_void_p), ("key", ctypes.c_char * 33), ("outcome", ctypes.c_int)]
    cache = ctypes.c_void_p()
    assert lib.kc_cache_open(ctypes.byref(cache), None) == 0
    src = Src(1, sys.argv[1].encode(), open(sys.argv[2], "rb").read(), None, None, 0, None, 0, None, 0)
    names = (ctypes.c_char_p * 2)(b"saxpy<float>", b"scale")
    out = ctypes.POINTER(Prog)()
    rc = lib.kc_cache_compile(cache, ctypes.byref(src), names, 2, b"sm_90", ctypes.byref(out))
    assert rc == 0, rc
    print(out.contents.key.decode(), out.contents.outcome)
    lib.kc_program_free(out)
    lib.kc_cache_close(cache)
""")
OUTCOME = {0: "memory", 1: "disk", 2: "remote", 3: "compile", 4: "bypass"}


def c_api_compile(cache_dir: pathlib.Path, src_file: pathlib.Path) -> tuple:
    env = dict(os.environ, KCACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", C_API, "saxpy.cu", str(src_file)], env=env, capture_output=True,
                         text=True, check=True, timeout=300).stdout.split()
    return out[0], OUTCOME[int(out[1])]


@pytest.mark.parametrize("python_first", [True, False])
def test_python_and_c_api_one_key_one_entry(tmp_path: pathlib.Path, python_first: bool) -> None:
    d = tmp_path / "cache"
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY)

    def py() -> kcache.Program:
        with kcache.Cache(d) as c:
            return c.compile(SAXPY, ["saxpy<float>", "scale"], "sm_90", file="saxpy.cu")

    if python_first:
        p = py()
        files = sorted(entry_files(d))
        key, outcome = c_api_compile(d, src)
        assert (key, outcome) == (p.key, "disk")
    else:
        key, outcome = c_api_compile(d, src)
        assert outcome == "compile"
        files = sorted(entry_files(d))
        p = py()
        assert (p.key, p.outcome) == (key, "disk")
    assert files and sorted(entry_files(d)) == files  # nothing new stored by the second


def test_python_and_cli_compile_one_key(tmp_path: pathlib.Path, cli: str) -> None:
    d = tmp_path / "cache"
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY)
    names = ["--name", "saxpy<float>", "--name", "scale", "--target", "sm_90", "--json"]
    with kcache.Cache(d) as c:
        p = c.compile(SAXPY, ["saxpy<float>", "scale"], "sm_90")  # no file name: the CLI's default
        named = c.compile(SAXPY, ["saxpy<float>", "scale"], "sm_90", file="saxpy.cu")
    assert named.key != p.key  # the file name is in the key (__FILE__ and line information carry it)
    files = sorted(entry_files(d))
    doc = json.loads(run_cli(cli, "--cache-dir", str(d), "compile", str(src), *names).stdout)
    assert doc["key"] == p.key and doc["outcome"] == "disk", doc
    doc = json.loads(run_cli(cli, "--cache-dir", str(d), "compile", str(src), "--file-name", "saxpy.cu", *names).stdout)
    assert doc["key"] == named.key and doc["outcome"] == "disk", doc
    assert sorted(entry_files(d)) == files


def small_manifest(tmp_path: pathlib.Path) -> pathlib.Path:
    """kernels/manifest.json's graphs (their spec paths made absolute), for one target."""
    doc = json.loads((KERNELS / "manifest.json").read_text())
    doc["graphs"] = [str(KERNELS / g) for g in doc["graphs"]]
    doc["archs"] = ["sm_90"]
    m = tmp_path / "manifest.json"
    m.write_text(json.dumps(doc))
    return m


def test_prewarm_coverage_export_cli_import(tmp_path: pathlib.Path, cli: str) -> None:
    d = tmp_path / "cache"
    with kcache.Cache(d) as c:
        before = c.coverage(KERNELS / "manifest.json")
        assert before["missing"] == before["graphs"] * len(before["targets"]) > 0
        rep = c.prewarm(KERNELS / "manifest.json", archs="sm_90", jobs=2)
        assert rep["failed"] == 0 and rep["variants"] == rep["graphs"] > 0
        assert rep["compiled"] + rep["hits"] + rep["bypassed"] == rep["variants"]
        assert {r["result"] for r in rep["results"]} <= {"compiled", "hit", "bypassed"}
        again = c.prewarm(KERNELS / "manifest.json", archs=["sm_90"])
        assert again["hits"] == again["variants"] and again["compiled"] == 0
        cov = c.coverage(small_manifest(tmp_path))
        assert cov["missing"] == 0 and cov["covered"] == cov["graphs"] == rep["graphs"]
        assert all(r["hit"] and r["variant"] == "sm_90" for r in cov["results"])
        with pytest.raises(kcache.MissError, match="not in the cache"):
            c.export(tmp_path / "partial.kcb", manifest=KERNELS / "manifest.json")  # sm_80 is missing
        ex = c.export(tmp_path / "b.kcb", manifest=KERNELS / "manifest.json", archs="sm_90")
        assert ex["graphs"] == rep["graphs"] and ex["coverage"]["missing"] == 0
        plain = c.export(tmp_path / "all.kcb")
        assert plain["graphs"] == rep["graphs"] and plain["entries"] >= plain["graphs"]
    other = tmp_path / "other"
    imp = cli_json(cli, "--cache-dir", str(other), "import", str(tmp_path / "b.kcb"), "--json")
    assert imp["graphs_written"] == ex["graphs"] or imp.get("written", 0) == ex["entries"], imp
    with kcache.Cache(other) as o:
        assert o.coverage(small_manifest(tmp_path))["missing"] == 0
        dry = o.import_(tmp_path / "all.kcb", dry_run=True)
        assert dry["dry_run"] and dry["entries"] == plain["entries"] and dry["written"] == 0
