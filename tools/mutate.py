#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
mutate.py — the project's mutation run: one-line mutants of the safety checks, each built and
run against the tests that must notice it (tools/mutants.txt).

The one idea: a safety check (a key component, a bound, a signature or MAC, the trust order, the
launch ABI, variant selection, entry and bundle decoding, the tiers, the toolkit direct mode, the
cacheability scan, the lookup counters, gc) is only as good as the test that fails without it.
Each mutant breaks one check in one place, plausibly (a comparison loosened, a clause dropped, a
length halved); a mutant the listed tests do not notice *survived*: a check whose loss nobody
would see.  Every mutant in the list is of a safety check, so any survivor fails the run.

How: the working tree (tracked and untracked, not ignored files) is copied into a scratch folder
(default /tmp/kcache-mutate-<user>-<hash of the tree's path>) with its own build folder, built once
(RelWithDebInfo, tests on, -Werror off so a mutant's new warning is not a kill); a later run copies
only the files whose bytes changed, so its builds are incremental.  The tests a mutant names are
run unmutated first (the baseline: a kill counts only against a green test).  Then, per mutant:
its one edit made in the scratch copy, the tests' own targets rebuilt with ninja (an object, the
library, the test programs), the tests run with ctest (--stop-on-failure, a timeout per mutant),
and the file restored — whatever happens, Ctrl-C included.  A mutant that does not build is a
mistake in the list (exit 2), not a kill.

The list is validated before anything is built: every file exists and every original text is
found exactly once in it (a literal, or with `re:` a Python regular expression), so a refactor
that moves a check fails the run instead of silently dropping its mutant.  `--check` does only
that (cheap: the test test_mutants_list runs it with the suite).

Usage:
  python3 tools/mutate.py                    # every mutant
  python3 tools/mutate.py --class bound      # one class (repeatable)
  python3 tools/mutate.py --id mac-half      # one mutant (repeatable, or a comma list)
  python3 tools/mutate.py --check            # validate the list only
  python3 tools/mutate.py --list             # print the list
  options: -j N (ctest's and ninja's parallelism, default: the CPUs), --timeout S (per mutant's
  tests, default 900), --scratch DIR, --json FILE (results), --no-baseline.
Exit: 0 every mutant killed; 1 a mutant survived; 2 the list is invalid, the baseline fails, or a
mutant did not build.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "tools", "mutants.txt")
SEP = " @@ "
CLASSES = ["key", "variant", "entry", "signature-mac", "trust-order", "abi", "bound", "bundle", "tier",
           "toolkit-direct", "cacheability", "counters", "gc"]


class Mutant:
    def __init__(self, lineno, id_, cls, path, tests, original, replacement):
        self.lineno, self.id, self.cls, self.path, self.tests = lineno, id_, cls, path, tests
        self.original, self.replacement = original, replacement

    def apply(self, text):
        """The mutated text, or raise ValueError when the original is not found exactly once."""
        if self.original.startswith("re:"):
            rx = re.compile(self.original[3:])
            n = len(rx.findall(text))
            if n != 1:
                raise ValueError("regular expression matches %d times (want exactly 1)" % n)
            return rx.sub(lambda m: m.expand(self.replacement), text, count=1)
        n = text.count(self.original)
        if n != 1:
            raise ValueError("original text found %d times (want exactly 1)" % n)
        return text.replace(self.original, self.replacement, 1)


def parse_list(path):
    mutants, errors, ids = [], [], set()
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(SEP)
            if len(parts) != 6:
                errors.append("%s:%d: want 6 fields separated by '%s', got %d" % (path, lineno, SEP.strip(), len(parts)))
                continue
            if not parts[4].startswith("re:"):  # a literal: "\\n" stands for a line break
                parts[4], parts[5] = parts[4].replace("\\n", "\n"), parts[5].replace("\\n", "\n")
            m = Mutant(lineno, *parts)
            if m.cls not in CLASSES:
                errors.append("%s:%d: %s: unknown class '%s' (%s)" % (path, lineno, m.id, m.cls, ", ".join(CLASSES)))
            if m.id in ids:
                errors.append("%s:%d: id '%s' twice" % (path, lineno, m.id))
            ids.add(m.id)
            mutants.append(m)
    return mutants, errors


def validate(mutants, root):
    errors = []
    for m in mutants:
        p = os.path.join(root, m.path)
        try:
            with open(p, encoding="utf-8") as f:
                text = f.read()
            if m.apply(text) == text:
                errors.append("%s (line %d): the replacement changes nothing" % (m.id, m.lineno))
        except OSError as e:
            errors.append("%s (line %d): %s: %s" % (m.id, m.lineno, m.path, e.strerror))
        except (ValueError, re.error) as e:
            errors.append("%s (line %d): %s: %s" % (m.id, m.lineno, m.path, e))
        try:
            re.compile(m.tests)
        except re.error as e:
            errors.append("%s (line %d): test regex: %s" % (m.id, m.lineno, e))
    return errors


def log(msg):
    print(msg, flush=True)


def run(cmd, timeout=None, **kw):
    """(returncode, output); a timeout kills the whole process group and returns 124."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, **kw)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return 124, out.decode("utf-8", "replace")


def sync_tree(src, dst):
    """Copy the tree's files into dst, only those whose bytes differ (so builds stay incremental)."""
    rc, out = run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    if rc != 0:
        sys.exit("mutate: git ls-files failed in %s:\n%s" % (src, out))
    copied = 0
    for rel in filter(None, out.split("\0")):
        s, d = os.path.join(src, rel), os.path.join(dst, rel)
        if not os.path.isfile(s) or os.path.islink(s):
            continue
        with open(s, "rb") as f:
            data = f.read()
        try:
            with open(d, "rb") as f:
                if f.read() == data:
                    continue
        except OSError:
            os.makedirs(os.path.dirname(d), exist_ok=True)
        with open(d, "wb") as f:
            f.write(data)
        shutil.copymode(s, d)
        copied += 1
    return copied


def targets_of(build, tests):
    """Build outputs (paths relative to build/) the tests run: their commands and environment."""
    out = set()
    for t in tests:
        words = list(t.get("command", []))
        for p in t.get("properties", []):
            if p.get("name") == "ENVIRONMENT":
                words += [v.split("=", 1)[1] for v in p["value"] if "=" in v]
        for w in words:
            if isinstance(w, str) and w.startswith(build + os.sep) and os.path.isfile(w):
                out.add(os.path.relpath(w, build))
    return sorted(out)


def ctest_list(build, regex):
    rc, out = run(["ctest", "--test-dir", build, "--show-only=json-v1", "-R", regex])
    if rc != 0:
        raise RuntimeError("ctest --show-only failed: " + out[-2000:])
    return json.loads(out).get("tests", [])


def parse_args():
    ap = argparse.ArgumentParser(description="one-line mutants of the safety checks, against their tests")
    ap.add_argument("--list-file", default=LIST)
    ap.add_argument("--class", dest="classes", action="append", default=[])
    ap.add_argument("--id", dest="ids", action="append", default=[])
    ap.add_argument("--check", action="store_true", help="validate the list only")
    ap.add_argument("--list", action="store_true", help="print the list")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=900, help="seconds for one mutant's tests")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--no-baseline", action="store_true")
    return ap.parse_args()


def choose(a):
    """The list read and validated, and the mutants --id and --class choose: (mutants, chosen), or (None, exit code)."""
    mutants, errors = parse_list(a.list_file)
    errors += validate(mutants, ROOT)
    if errors:
        log("mutate: the mutant list is invalid (%s):" % a.list_file)
        for e in errors:
            log("  " + e)
        return None, 2
    ids = {i for x in a.ids for i in x.split(",") if i}
    unknown = ids - {m.id for m in mutants} | (set(a.classes) - set(CLASSES))
    if unknown:
        log("mutate: no such mutant or class: " + ", ".join(sorted(unknown)))
        return None, 2
    return mutants, [m for m in mutants if (not ids or m.id in ids) and (not a.classes or m.cls in a.classes)]


def build_scratch(a, chosen):
    """The working tree copied into the scratch folder and built there: its build folder, or None."""
    user = os.environ.get("USER", str(os.getuid()))
    scratch = a.scratch or "/tmp/kcache-mutate-%s-%s" % (user, hashlib.sha1(ROOT.encode()).hexdigest()[:8])
    src, build = os.path.join(scratch, "src"), os.path.join(scratch, "build")
    os.makedirs(src, exist_ok=True)
    t0 = time.time()
    n = sync_tree(ROOT, src)
    log("mutate: %d mutants; scratch tree %s (%d files copied)" % (len(chosen), scratch, n))
    if not os.path.exists(os.path.join(build, "build.ninja")):
        rc, out = run(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                       "-DKCACHE_BUILD_TESTS=ON", "-DKCACHE_WERROR=OFF"])
        if rc != 0:
            log(out[-4000:])
            return None
    rc, out = run(["cmake", "--build", build, "-j", str(a.j)])
    if rc != 0:
        log(out[-4000:])
        log("mutate: the unmutated tree does not build")
        return None
    log("mutate: built in %.0f s" % (time.time() - t0))
    return src, build


def plan_tests(build, chosen):
    """Per mutant, the targets its tests need ({id: targets}), and every test's name; None when a regex selects none."""
    plan, names = {}, set()
    for m in chosen:
        tests = ctest_list(build, m.tests)
        if not tests:
            log("mutate: %s: its test regex '%s' selects no test" % (m.id, m.tests))
            return None, None
        plan[m.id] = targets_of(build, tests)
        names |= {t["name"] for t in tests}
    return plan, names


def baseline(a, ctest, names):
    """The listed tests, unmutated: True when green."""
    union = "^(%s)$" % "|".join(re.escape(n) for n in sorted(names))  # CMake's regex allows few groups
    t1 = time.time()
    rc, out = run(ctest + ["-R", union], timeout=a.timeout * 4)
    if rc != 0 or "No tests were found" in out:
        log(out[-6000:])
        log("mutate: the baseline (the listed tests, unmutated) fails: fix that first")
        return False
    log("mutate: baseline green in %.0f s" % (time.time() - t1))
    return True


def verdict_of(a, ctest, build, m, targets):
    """One mutant, already applied: rebuilt and its tests run; (verdict, detail)."""
    rc, out = run(["ninja", "-C", build, "-j", str(a.j)] + targets, timeout=a.timeout)
    if rc != 0:
        return "no-build", out[-1500:]
    rc, out = run(ctest + ["--stop-on-failure", "-R", m.tests], timeout=a.timeout + 60)
    failed = re.findall(r"^\s*\d+ - (\S+) \(", out, re.M)
    if rc == 0 and "No tests were found" in out:
        return "no-build", "ctest ran no test for '%s'" % m.tests
    if rc == 0:
        return "survived", ""
    return "killed", ", ".join(failed) if failed else ("timeout" if rc == 124 else "ctest exit %d" % rc)


def run_mutants(a, ctest, src, build, chosen, plan):
    """Each mutant applied in the scratch copy, judged, and its file restored whatever happens: the results."""
    results = []
    current = {}

    def restore(*_):
        if current:
            with open(current["path"], "w", encoding="utf-8") as f:
                f.write(current["text"])
            current.clear()

    def on_signal(sig, _):
        restore()
        sys.exit(130)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        for i, m in enumerate(chosen, 1):
            path = os.path.join(src, m.path)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            current.update(path=path, text=text)
            with open(path, "w", encoding="utf-8") as f:
                f.write(m.apply(text))
            t1 = time.time()
            verdict, detail = verdict_of(a, ctest, build, m, plan[m.id])
            restore()
            results.append({"id": m.id, "class": m.cls, "file": m.path, "verdict": verdict, "by": detail if verdict == "killed" else "",
                            "seconds": round(time.time() - t1, 1)})
            log("[%d/%d] %-28s %-15s %-9s %5.0f s  %s" % (i, len(chosen), m.id, m.cls, verdict, time.time() - t1,
                                                       detail if verdict != "no-build" else ""))
            if verdict == "no-build":
                log(detail)
    finally:
        restore()
    return results


def report(a, results, t0):
    """The table by class, the kill rate, the survivors and (--json) the results file: the exit code."""
    log("\nclass            mutants  killed  survived  no-build")
    for c in CLASSES:
        rs = [r for r in results if r["class"] == c]
        if rs:
            log("%-16s %7d %7d %9d %9d" % (c, len(rs), sum(r["verdict"] == "killed" for r in rs),
                                          sum(r["verdict"] == "survived" for r in rs), sum(r["verdict"] == "no-build" for r in rs)))
    killed = sum(r["verdict"] == "killed" for r in results)
    valid = sum(r["verdict"] != "no-build" for r in results)
    survivors = [r["id"] for r in results if r["verdict"] == "survived"]
    log("total            %7d %7d %9d %9d" % (len(results), killed, len(survivors), len(results) - valid))
    log("kill rate: %d of %d (%.1f%%) in %.0f min" % (killed, valid, 100.0 * killed / valid if valid else 0, (time.time() - t0) / 60))
    if survivors:
        log("survived: " + ", ".join(survivors))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "killed": killed, "valid": valid}, f, indent=1)
    if len(results) != valid:
        return 2
    return 1 if survivors else 0


def main():
    a = parse_args()
    mutants, chosen = choose(a)
    if mutants is None:
        return chosen
    if a.check:
        log("mutate: %d mutants, every original found exactly once" % len(mutants))
        return 0
    if a.list:
        for m in chosen:
            log("%-28s %-15s %s  [%s]" % (m.id, m.cls, m.path, m.tests))
        return 0
    t0 = time.time()
    built = build_scratch(a, chosen)
    if built is None:
        return 2
    src, build = built
    plan, names = plan_tests(build, chosen)
    if plan is None:
        return 2
    ctest = ["ctest", "--test-dir", build, "-j", str(a.j), "--timeout", str(a.timeout), "--output-on-failure"]
    if not a.no_baseline and not baseline(a, ctest, names):
        return 2
    results = run_mutants(a, ctest, src, build, chosen, plan)
    return report(a, results, t0)


if __name__ == "__main__":
    sys.exit(main())
