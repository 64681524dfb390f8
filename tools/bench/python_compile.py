#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""python_compile.py — a warm single-source compile from Python, in one process: kcache against
the compile caches Python users have today, and Python's call overhead over the C call.

The one idea: every contestant gets the same kernel source (one extern "C" kernel: cuda.core's
cache refuses name expressions) for the same target, is warmed once, and is then timed call by
call, interleaved round by round in a rotating order so that drift favours none; each call's
outcome is checked (a "hit" that compiled would be a wrong figure), and a contestant that cannot
run here (a package missing, no GPU) is listed with why, never timed with something else.

  kcache memory     Cache.compile, warm repeat on one Cache (outcome "memory")
  kcache disk       Cache.compile on a fresh Cache over the warm directory (outcome "disk";
                    the Cache's opening is not timed)
  cuda.core memory  Program(...).compile("cubin", cache=InMemoryProgramCache()) hit
  cuda.core disk    the same with FileStreamProgramCache(dir) (its hit reads the file each time)
  CuPy memory       RawModule(code=...).get_function(name): CuPy's per-process memo (a loaded
                    module: CuPy's hit always ends in cuModuleLoadData, so CuPy needs a GPU)
  CuPy disk         cupy.cuda.compiler._compile_module_with_cache (the memo bypassed: its disk
                    cache read and the module load)
  kcache memory+load  kcache memory, then cupy.cuda.Module().load(image) and get_function: like
                    with like against CuPy's hits, which hand back a loaded module
  Python over C     batches of Cache.compile against kcache._kcache._compile_loop (the same
                    kc_cache_compile calls, looped in C with the GIL released): the difference of
                    the per-call means is what the Python layer adds

    python3 tools/bench/python_compile.py [--json FILE] [--rounds N] [--batch K] [--target sm_90]

Needs the kcache package (pip install . from the repository's root); cuda.core and CuPy are
optional (tools/deps.sh --bench installs them into .venv-bench).  About 10 to 60 s.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

SOURCE = r"""
extern "C" __global__ void kc_pybench_scale(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""
NAME = "kc_pybench_scale"


def pct(xs: List[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))]


def summary(xs: List[float]) -> Dict[str, Any]:
    """Microseconds: median, p10, p90, p99 and the count."""
    us = [x * 1e6 for x in xs]
    return {"median_us": round(statistics.median(us), 2), "p10_us": round(pct(us, 10), 2),
            "p90_us": round(pct(us, 90), 2), "p99_us": round(pct(us, 99), 2), "n": len(us)}


class Contestant:
    """One way to get the compiled kernel again: prepare (untimed), call (timed), check."""

    def __init__(self, name: str, call: Callable[[], Any], check: Callable[[Any], Optional[str]],
                 prepare: Optional[Callable[[], None]] = None, note: str = "") -> None:
        self.name, self.call, self.check, self.prepare, self.note = name, call, check, prepare, note
        self.times: List[float] = []
        self.wrong: List[str] = []


def kcache_contestants(kcache: Any, tmp: str, target: str) -> Tuple[List[Contestant], Any]:
    warm = kcache.Cache(dir=os.path.join(tmp, "kcache"))
    first = warm.compile(SOURCE, NAME, target)
    if first.outcome not in ("compile", "disk"):
        raise SystemExit("kcache: the first compile's outcome is %r in an empty cache" % first.outcome)
    holder: Dict[str, Any] = {}

    def fresh() -> None:
        if "c" in holder:
            holder["c"].close()
        holder["c"] = kcache.Cache(dir=os.path.join(tmp, "kcache"))

    def want(o: str) -> Callable[[Any], Optional[str]]:
        return lambda p: None if p.outcome == o else "outcome %r, not %r" % (p.outcome, o)

    return [Contestant("kcache memory", lambda: warm.compile(SOURCE, NAME, target), want("memory")),
            Contestant("kcache disk", lambda: holder["c"].compile(SOURCE, NAME, target), want("disk"), fresh,
                       "a fresh Cache each call (its opening not timed)")], warm


def cuda_core_contestants(tmp: str, target: str) -> List[Contestant]:
    from cuda.core import Program, ProgramOptions
    from cuda.core.utils import FileStreamProgramCache, InMemoryProgramCache

    def counting(cls: Any) -> Any:
        class Counting(cls):  # type: ignore[misc, valid-type]
            stores = 0

            def __setitem__(self, key: Any, value: Any) -> None:  # a miss stores; a hit never does
                type(self).stores += 1
                super().__setitem__(key, value)
        return Counting

    out = []
    for label, cache in (("memory", counting(InMemoryProgramCache)()),
                         ("disk", counting(FileStreamProgramCache)(os.path.join(tmp, "cuda_core")))):
        def call(cache: Any = cache) -> Any:
            return Program(SOURCE, "c++", options=ProgramOptions(arch=target)).compile("cubin", cache=cache)
        call()  # the miss that fills it
        base = type(cache).stores

        def check(_: Any, cache: Any = cache, base: int = base) -> Optional[str]:
            return None if type(cache).stores == base else "it stored: a miss"
        out.append(Contestant("cuda.core " + label, call, check,
                              note="Program(...) built each call, as a user's code does"))
    return out


def cupy_contestants(kcache_cache: Any, target: str) -> List[Contestant]:
    """CuPy's hits end in a module load: they need a GPU.  Raises when CuPy cannot run here."""
    import cupy
    from cupy.cuda import compiler

    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        raise RuntimeError("CuPy's hits end in a module load, so they need a GPU (%s)" % str(e).split("\n")[0]) from e
    arch = target.split("_")[1]
    calls = {"compile": 0}
    real = compiler._compile_using_nvrtc_no_warning

    def counted(*a: Any, **k: Any) -> Any:
        calls["compile"] += 1
        return real(*a, **k)
    compiler._compile_using_nvrtc_no_warning = counted

    def memo() -> Any:
        return cupy.RawModule(code=SOURCE).get_function(NAME)

    def disk() -> Any:
        return compiler._compile_module_with_cache(SOURCE, (), arch=arch).get_function(NAME)

    def kc_load() -> Any:
        p = kcache_cache.compile(SOURCE, NAME, target)
        m = cupy.cuda.Module()
        m.load(p.image)
        return m.get_function(p.lowered_name(NAME))
    memo(), disk()
    base = calls["compile"]

    def no_compile(_: Any) -> Optional[str]:
        return None if calls["compile"] == base else "CuPy compiled: a miss"
    return [Contestant("CuPy memory", memo, no_compile, note="RawModule's per-process memo: a loaded module"),
            Contestant("CuPy disk", disk, no_compile, note="its disk cache read, then cuModuleLoadData"),
            Contestant("kcache memory+load", kc_load, lambda p: None,
                       note="Cache.compile hit, then cupy.cuda.Module().load(image)")]


def run_rounds(cs: List[Contestant], rounds: int) -> None:
    for r in range(rounds):
        k = r % len(cs)
        for c in cs[k:] + cs[:k]:
            if c.prepare:
                c.prepare()
            t0 = time.perf_counter()
            res = c.call()
            c.times.append(time.perf_counter() - t0)
            why = c.check(res)
            if why and len(c.wrong) < 5:
                c.wrong.append(why)


def python_over_c(kcache: Any, cache: Any, target: str, rounds: int, batch: int) -> Dict[str, Any]:
    """Per-call means of batches: Cache.compile (the whole Python call), its C half alone
    (Cache._compile: the extension's parsing and result tuple, without the Program object), and
    _compile_loop (kc_cache_compile looped in C).  The three sides rotate round by round."""
    loop = getattr(kcache._kcache, "_compile_loop", None)
    if loop is None:
        return {"skipped": "this build of kcache._kcache has no _compile_loop (the benchmark hook)"}
    half = getattr(cache, "_compile", None)

    def py() -> float:
        t0 = time.perf_counter()
        for _ in range(batch):
            cache.compile(SOURCE, NAME, target)
        return (time.perf_counter() - t0) / batch

    def ext() -> float:
        t0 = time.perf_counter()
        for _ in range(batch):
            half(SOURCE, NAME, target, (), {}, False, None)
        return (time.perf_counter() - t0) / batch

    sides: List[Tuple[str, Callable[[], float]]] = [("python", py), ("c", lambda: loop(cache, SOURCE, [NAME], target,
                                                                                       batch) / batch)]
    if half is not None:
        sides.append(("extension", ext))
    times: Dict[str, List[float]] = {k: [] for k, _ in sides}
    for r in range(rounds):
        k = r % len(sides)
        for name, fn in sides[k:] + sides[:k]:
            times[name].append(fn())
    out: Dict[str, Any] = {"batch": batch}
    for name in times:
        out[name] = summary(times[name])
    ps, cs = out["python"], out["c"]
    out["overhead_us"] = round(ps["median_us"] - cs["median_us"], 2)
    out["ratio"] = round(ps["median_us"] / cs["median_us"], 3) if cs["median_us"] else None
    return out


def machine() -> Dict[str, Any]:
    m: Dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
                         "cpus": os.cpu_count(), "loadavg": list(os.getloadavg())}
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                m["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return m


def import_kcache() -> Any:
    """The installed kcache; else one built by CMake with -DKCACHE_PYTHON=ON in a build folder of this
    repository for this interpreter (build*/python/kcache), staged with python/kcache's files."""
    try:
        import kcache
        return kcache
    except ImportError as e:
        first = e
    import glob
    import shutil
    import sysconfig
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    for so in sorted(glob.glob(os.path.join(root, "build*", "python", "kcache", "_kcache*" + suffix))):
        pkg = tempfile.mkdtemp(prefix="kcache-pybench-pkg.")
        os.mkdir(os.path.join(pkg, "kcache"))
        for f in glob.glob(os.path.join(root, "python", "kcache", "*.py")):
            shutil.copy(f, os.path.join(pkg, "kcache"))
        os.symlink(so, os.path.join(pkg, "kcache", os.path.basename(so)))
        sys.path.insert(0, pkg)
        try:
            import kcache
            print("python_compile: kcache from %s" % so)
            return kcache
        except ImportError:
            sys.path.remove(pkg)
    raise SystemExit("python_compile: cannot import kcache (%s): pip install . from the repository's root, or build "
                     "it with cmake -DKCACHE_PYTHON=ON into build*/" % first)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the results here as JSON")
    ap.add_argument("--rounds", type=int, default=400, help="timed calls of each contestant (400)")
    ap.add_argument("--batch", type=int, default=50, help="calls per batch for Python over C (50)")
    ap.add_argument("--target", default="sm_90")
    a = ap.parse_args()
    t_start = time.perf_counter()
    kcache = import_kcache()
    res: Dict[str, Any] = {"bench": "python_compile", "target": a.target, "rounds": a.rounds,
                           "machine": machine(), "versions": {"kcache": kcache.__version__},
                           "contestants": {}, "skipped": {}}
    with tempfile.TemporaryDirectory(prefix="kcache-pybench.") as tmp:
        os.environ["CUPY_CACHE_DIR"] = os.path.join(tmp, "cupy")  # read by CuPy when it first caches
        ks, warm = kcache_contestants(kcache, tmp, a.target)
        cs: List[Contestant] = list(ks)
        for label, make in (("cuda.core", lambda: cuda_core_contestants(tmp, a.target)),
                            ("CuPy", lambda: cupy_contestants(warm, a.target))):
            try:
                cs += make()
                mod = __import__("cupy" if label == "CuPy" else "cuda.core", fromlist=["__version__"])
                res["versions"][label] = getattr(mod, "__version__", "?")
            except Exception as e:  # noqa: BLE001 - said in the output, never timed as something else
                res["skipped"][label] = "%s: %s" % (type(e).__name__, str(e).split("\n")[0][:300])
        run_rounds(cs, a.rounds)
        for c in cs:
            res["contestants"][c.name] = dict(summary(c.times), note=c.note, wrong=c.wrong)
        res["python_over_c"] = python_over_c(kcache, warm, a.target, max(20, a.rounds // 4), a.batch)
        warm.close()
    res["seconds"] = round(time.perf_counter() - t_start, 1)
    report(res)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
    return 1 if any(c["wrong"] for c in res["contestants"].values()) else 0


def report(res: Dict[str, Any]) -> None:
    m = res["machine"]
    print("python_compile: a warm compile of one kernel for %s from Python, %d rounds (median [p10 .. p90] us)"
          % (res["target"], res["rounds"]))
    print("machine: %s, %s cpus, load %s; Python %s; %s" % (m.get("cpu", "?"), m["cpus"],
          " ".join("%.1f" % x for x in m["loadavg"]), m["python"],
          ", ".join("%s %s" % kv for kv in res["versions"].items())))
    base = res["contestants"]["kcache memory"]["median_us"]
    for name, c in res["contestants"].items():
        print("  %-20s %9.1f [%8.1f .. %8.1f]  p99 %8.1f  %7.1fx  %s%s" % (
            name, c["median_us"], c["p10_us"], c["p90_us"], c["p99_us"], c["median_us"] / base, c["note"],
            ("  WRONG: " + "; ".join(c["wrong"])) if c["wrong"] else ""))
    for name, why in res["skipped"].items():
        print("  %-20s not run: %s" % (name, why))
    po = res["python_over_c"]
    if "skipped" in po:
        print("  Python over C: not run: " + po["skipped"])
    else:
        print("  Python over C (batches of %d, per call): Python %.2f us [%.2f .. %.2f], C %.2f us [%.2f .. %.2f]: "
              "+%.2f us (%.2fx)" % (po["batch"], po["python"]["median_us"], po["python"]["p10_us"],
                                    po["python"]["p90_us"], po["c"]["median_us"], po["c"]["p10_us"],
                                    po["c"]["p90_us"], po["overhead_us"], po["ratio"]))
        if "extension" in po:
            e = po["extension"]
            print("    of which the extension's C half (Cache._compile, no Program object): %.2f us [%.2f .. %.2f]"
                  % (e["median_us"], e["p10_us"], e["p90_us"]))
    print("total %.1f s" % res["seconds"])


if __name__ == "__main__":
    sys.exit(main())
