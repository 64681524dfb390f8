# SPDX-License-Identifier: Apache-2.0
"""Cache.compile with the real NVRTC (no GPU): images, names, parameter tables, keys, outcomes,
counters, and bad input.  The compile-only test the wheel check runs is test_cubin_and_outcomes."""
from __future__ import annotations

import pathlib
import re

import pytest

import kcache
from conftest import SAXPY


def test_cubin_and_outcomes(tmp_path: pathlib.Path) -> None:
    with kcache.Cache(tmp_path) as c:
        s0 = c.stats()
        p = c.compile(SAXPY, ["saxpy<float>", "scale"], "sm_90", file="saxpy.cu")
        assert p.outcome == "compile"
        assert isinstance(p.log, str)  # NVRTC's log, as the stubs say (str, not bytes)
        assert p.image[:4] == b"\x7fELF" and not p.is_ptx and p.target == "sm_90"
        assert re.fullmatch(r"[0-9a-f]{32}", p.key)
        assert p.names == ("saxpy<float>", "scale")
        assert p.lowered_names["scale"] == "scale"
        assert p.lowered_name("saxpy<float>").startswith("_Z") and "saxpy" in p.lowered_name("saxpy<float>")
        assert [q.size for q in p.params["scale"]] == [8, 4, 4]
        assert [q.offset for q in p.params["scale"]] == [0, 8, 12]
        assert all(isinstance(q, kcache.Param) for q in p.params["saxpy<float>"])
        assert len(p.params["saxpy<float>"]) == 4
        s1 = c.stats()
        assert s1["misses"] - s0["misses"] == 1 and s1["compiles"] >= s0["compiles"]
        again = c.compile(SAXPY, ["saxpy<float>", "scale"], "sm_90", file="saxpy.cu")
        assert again.outcome == "memory" and again.key == p.key and again.image == p.image
        assert again.compile_seconds == 0
        s2 = c.stats()
        assert s2["memory_hits"] - s1["memory_hits"] == 1 and s2["misses"] == s1["misses"]
    with kcache.Cache(tmp_path) as c2:
        s3 = c2.stats()
        d = c2.compile(SAXPY, ["saxpy<float>", "scale"], "sm_90", file="saxpy.cu")
        assert d.outcome == "disk" and d.key == p.key and d.image == p.image
        assert dict(d.lowered_names) == dict(p.lowered_names) and d.params == p.params
        assert c2.stats()["hits"] - s3["hits"] == 1


def test_ptx(cache: kcache.Cache) -> None:
    p = cache.compile(SAXPY, "saxpy<double>", "compute_80")
    assert p.is_ptx and p.target == "compute_80" and p.outcome == "compile"
    assert b".version" in p.image and b".target sm_80" in p.image and not p.image.endswith(b"\0")
    assert p.lowered_names["saxpy<double>"].encode() in p.image
    assert p.params["saxpy<double>"][0].size == 8


def test_key_follows_what_nvrtc_reads(cache: kcache.Cache) -> None:
    src = '#include "k.h"\nextern "C" __global__ void k(float *y) { y[0] = K; }\n'
    a = cache.compile(src, "k", "sm_90", headers={"k.h": "#define K 1.0f\n"})
    b = cache.compile(src, "k", "sm_90", headers={"k.h": "#define K 2.0f\n"})
    c = cache.compile(src, "k", "sm_90", headers={"k.h": "#define K 1.0f\n"}, options=["-DUNUSED=1"])
    d = cache.compile(src, "k", "sm_80", headers={"k.h": "#define K 1.0f\n"})
    assert len({a.key, b.key, c.key, d.key}) == 4
    assert cache.compile(src, "k", "sm_90", headers={"k.h": "#define K 1.0f\n"}).outcome == "memory"


def test_compile_error_carries_the_log(cache: kcache.Cache) -> None:
    s0 = cache.stats()
    with pytest.raises(kcache.CompileError) as e:
        cache.compile('extern "C" __global__ void k() { undeclared_x = 1; }\n', "k", "sm_90", file="bad.cu")
    err = e.value
    assert err.status == -10 and err.status_name == "KC_ECOMPILE"
    assert "undeclared_x" in err.log and "bad.cu(1)" in err.log
    assert err.message == str(err) and "undeclared_x" in err.message
    # .log is kcache's message with NVRTC's log in it (as the stubs say): the same text as .message
    assert err.log == err.message and err.log.startswith("kc_cache_compile of ")
    assert cache.stats()["compile_errors"] - s0["compile_errors"] == 1


def test_bad_input(cache: kcache.Cache) -> None:
    ok = 'extern "C" __global__ void k() {}\n'
    with pytest.raises(TypeError, match="source must be str, not bytes"):
        cache.compile(ok.encode(), "k", "sm_90")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="target must be str"):
        cache.compile(ok, "k", 90)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name_expressions"):
        cache.compile(ok, b"k", "sm_90")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"name_expressions\[1\] must be str"):
        cache.compile(ok, ["k", 3], "sm_90")  # type: ignore[list-item]
    with pytest.raises(TypeError, match="options must be a sequence of str, not str"):
        cache.compile(ok, "k", "sm_90", options="-O3")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="headers"):
        cache.compile(ok, "k", "sm_90", headers=["a.h"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="header's source must be str, not bytes"):
        cache.compile(ok, "k", "sm_90", headers={"a.h": b"x"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="source contains a NUL"):
        cache.compile(ok + "\0", "k", "sm_90")
    with pytest.raises(ValueError, match="NUL"):
        cache.compile(ok, "k\0x", "sm_90")
    with pytest.raises(ValueError, match="NUL"):
        cache.compile(ok, "k", "sm_90", file="a\0.cu")
    with pytest.raises(kcache.InvalidArgumentError):
        cache.compile(ok, [], "sm_90")
    with pytest.raises(kcache.InvalidArgumentError):
        cache.compile(ok, ["k", "k"], "sm_90")
    with pytest.raises(kcache.Error) as e:
        cache.compile(ok, "k", "sm_nine")
    assert e.value.status_name == "KC_EARCH" and "sm_nine" in e.value.message
    with pytest.raises(TypeError):
        cache.compile(ok, "k")  # type: ignore[call-arg]
    with pytest.raises(kcache.InvalidArgumentError):
        cache.compile(ok, [f"k{i}" for i in range(300)], "sm_90")  # over KC_PROGRAM_NAMES_MAX


def test_require_hit(tmp_path: pathlib.Path) -> None:
    ok = 'extern "C" __global__ void k() {}\n'
    with kcache.Cache(tmp_path, require_hit=True) as c:
        with pytest.raises(kcache.NotCachedError) as e:
            c.compile(ok, "k", "sm_90")
        assert e.value.status_name == "KC_ENOTCACHED" and e.value.message
    with kcache.Cache(tmp_path) as c:
        key = c.compile(ok, "k", "sm_90").key
    with kcache.Cache(tmp_path, require_hit=True) as c:
        hit = c.compile(ok, "k", "sm_90")
        assert hit.outcome == "disk" and hit.key == key


def test_program_is_immutable(cache: kcache.Cache) -> None:
    p = cache.compile('extern "C" __global__ void k() {}\n', "k", "sm_90")
    with pytest.raises(AttributeError):
        p.key = "x"  # type: ignore[misc]
    with pytest.raises(KeyError, match="not a name expression"):
        p.lowered_name("nope")
    assert "sm_90" in repr(p)
