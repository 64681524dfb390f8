# SPDX-License-Identifier: Apache-2.0
"""kcache.Cache without a compile: import, errors, opening, settings, closing, bad input."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import kcache


def test_import_needs_no_cuda() -> None:
    # A fresh interpreter imports kcache and opens a cache; no CUDA library is mapped by then.
    code = ("import kcache, tempfile; c = kcache.Cache(tempfile.mkdtemp()); c.stats(); "
            "maps = open('/proc/self/maps').read(); "
            "print([l for l in maps.splitlines() if 'libcuda' in l or 'libnvrtc' in l])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_version() -> None:
    assert kcache.__version__ == kcache._kcache.version()
    assert kcache.__version__.count(".") == 2


def test_error_classes() -> None:
    subs = [kcache.MissError, kcache.NotCachedError, kcache.CompileError, kcache.NoNvrtcError, kcache.NoDriverError,
            kcache.CorruptError, kcache.UntrustedError, kcache.ReadOnlyError, kcache.DriverError,
            kcache.InvalidArgumentError, kcache.ClosedError]
    for cls in subs:
        assert issubclass(cls, kcache.Error) and cls is not kcache.Error
        others = [o for o in subs if o is not cls]
        assert not any(issubclass(cls, o) for o in others)
    assert issubclass(kcache.InvalidArgumentError, ValueError)
    assert issubclass(kcache.ClosedError, ValueError)
    assert kcache.MissError.status == -5 and kcache.MissError.status_name == "KC_MISS"


def test_cache_is_the_c_type(tmp_path: pathlib.Path) -> None:
    with kcache.Cache(tmp_path) as c:
        assert isinstance(c, kcache._kcache.Cache)
        assert c.dir == str(tmp_path)
        assert not c.closed
        assert "KC" not in repr(c) and str(tmp_path) in repr(c)
    assert c.closed


def test_dir_pathlike_and_str(tmp_path: pathlib.Path) -> None:
    with kcache.Cache(str(tmp_path / "a")) as a, kcache.Cache(dir=tmp_path / "b") as b:
        assert a.dir.endswith("/a") and b.dir.endswith("/b")
        assert os.path.isdir(a.dir) and os.path.isdir(b.dir)


def test_closed_cache_raises(tmp_path: pathlib.Path) -> None:
    c = kcache.Cache(tmp_path)
    c.close()
    c.close()  # idempotent
    assert c.closed
    calls = [c.stats, c.config, lambda: c.prewarm("m.json"), lambda: c.export(str(tmp_path / "b")),
             lambda: c.import_(str(tmp_path / "b")), lambda: c.coverage("m.json"),
             lambda: c.compile("x", "k", "sm_90")]
    for call in calls:
        with pytest.raises(kcache.ClosedError) as e:
            call()
        if call is c.stats:
            assert e.value.status == -3 and "closed" in e.value.message
    with pytest.raises(kcache.ClosedError):
        with c:
            pass
    assert c.dir == str(tmp_path)  # still known


def test_bad_paths(tmp_path: pathlib.Path) -> None:
    with pytest.raises(TypeError, match="dir must be str or os.PathLike, not bytes"):
        kcache.Cache(os.fsencode(tmp_path))
    with pytest.raises(ValueError, match="NUL"):
        kcache.Cache(str(tmp_path) + "\0x")
    with pytest.raises(TypeError, match="dir"):
        kcache.Cache(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="remote must be str"):
        kcache.Cache(tmp_path, b"redis://x:1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="at most 2 positional"):
        kcache.Cache(tmp_path, None, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values"):
        kcache.Cache(tmp_path, dir=tmp_path)  # type: ignore[misc]


def test_settings_reach_the_options_layer(tmp_path: pathlib.Path) -> None:
    with kcache.Cache(tmp_path, max_size="1G", require_hit=True, remote_deadline_ms=250) as c:
        cfg = c.config()
        assert cfg["require_hit"]["value"] == "true" and cfg["require_hit"]["origin"].startswith("options")
        assert cfg["remote_deadline_ms"]["value"] == "250"
        assert cfg["max_size"]["value"] == str(1 << 30)
        assert cfg["dir"]["value"] == str(tmp_path)
        assert all(set(v) >= {"value", "origin"} for v in cfg.values())
    with kcache.Cache(tmp_path, readonly=True) as c:
        assert c.config()["readonly"]["value"] == "true"


def test_bad_settings(tmp_path: pathlib.Path) -> None:
    with pytest.raises(kcache.InvalidArgumentError, match="no_such_setting") as e:
        kcache.Cache(tmp_path, no_such_setting=1)
    assert e.value.status == -3 and e.value.status_name == "KC_EINVAL" and e.value.message == str(e.value)
    with pytest.raises(kcache.InvalidArgumentError, match="max_size"):
        kcache.Cache(tmp_path, max_size="lots")
    with pytest.raises(kcache.InvalidArgumentError, match="log"):
        kcache.Cache(tmp_path, log="debug")  # the process's, not a cache's
    with pytest.raises(TypeError, match="max_size must be str, int or bool, not float"):
        kcache.Cache(tmp_path, max_size=1.5)
    with pytest.raises(TypeError, match="not bytes"):
        kcache.Cache(tmp_path, max_size=b"1G")
    with pytest.raises(ValueError, match="NUL"):
        kcache.Cache(tmp_path, max_size="1G\0")
    with pytest.raises(ValueError, match="="):
        kcache.Cache(tmp_path, **{"max_size=1G": "2G"})


def test_stats_names(cache: kcache.Cache) -> None:
    st = cache.stats()
    assert {"hits", "misses", "compiles", "memory_hits", "entries", "bytes"} <= set(st)
    assert all(isinstance(v, int) and v >= 0 for v in st.values())


def test_bad_manifest_and_bundle(cache: kcache.Cache, tmp_path: pathlib.Path) -> None:
    with pytest.raises(kcache.Error) as e:
        cache.prewarm(tmp_path / "missing.json")
    assert "missing.json" in e.value.message
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(kcache.Error, match="bad.json"):
        cache.coverage(bad)
    junk = tmp_path / "junk.kcb"
    junk.write_bytes(b"\0" * 100)
    with pytest.raises(kcache.Error):
        cache.import_(junk)
    with pytest.raises(TypeError):
        cache.prewarm(tmp_path / "m.json", jobs="2")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        cache.prewarm(tmp_path / "m.json", jobs=-1)
    with pytest.raises(ValueError, match="not a key"):
        cache.export(tmp_path / "b.kcb", graphs=["xyz"])
    with pytest.raises(TypeError, match="archs"):
        cache.export(tmp_path / "b.kcb", archs=[b"sm_90"])  # type: ignore[list-item]


def test_subclass_and_gc(tmp_path: pathlib.Path) -> None:
    class Mine(kcache.Cache):
        pass

    m = Mine(tmp_path)
    m.extra = m  # a cycle through the instance dict: the collector frees it
    del m
    import gc

    gc.collect()


def test_init_once(tmp_path: pathlib.Path) -> None:
    c = kcache.Cache(tmp_path)
    with pytest.raises(TypeError, match="open or closed"):
        c.__init__(tmp_path)  # type: ignore[misc]
    c.close()
    bare = kcache.Cache.__new__(kcache.Cache)  # never opened: every call is a ClosedError
    with pytest.raises(kcache.ClosedError):
        bare.stats()
