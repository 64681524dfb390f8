#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_stats_metrics.sh — `kcache stats --format openmetrics|prometheus`, read by the real parsers
# (prometheus_client: the OpenMetrics parser, and the classic text-format parser), agrees with
# `stats --json` number by number: lookups by outcome, the latency histogram (its _count equals
# the lookup counter of its outcome, exactly; +Inf equals _count; the buckets are the JSON's,
# summed), refusals by reason, time saved, sizes, every other counter of the table.  Lookups made
# by two processes (a compile, then a disk hit) are seen by a third.  --zero empties the histogram.
# prometheus_client missing is a failure, not a skip (tools/deps.sh installs python3-prometheus-client).
#   test_stats_metrics.sh KCACHE KERNELS_DIR
set -u
KC=$1
KDIR=$2
T=$(mktemp -d /tmp/kctest-metrics-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
PY=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import prometheus_client.openmetrics.parser, prometheus_client.parser' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "FAIL: no python3 with prometheus_client (apt-get install python3-prometheus-client: tools/deps.sh)" >&2
  exit 1
fi
C="$T/c"
"$KC" --cache-dir "$C" get "$KDIR/dropout.json" --arch sm_80 >/dev/null || bad "get (compile) failed"
"$KC" --cache-dir "$C" get "$KDIR/dropout.json" --arch sm_80 >/dev/null || bad "get (disk hit) failed"
"$KC" --cache-dir "$C" get "$KDIR/dropout.json" --arch sm_86 >/dev/null || bad "get (a second compile) failed"
"$KC" --cache-dir "$C" stats --format openmetrics >"$T/om.txt" || bad "stats --format openmetrics failed"
"$KC" --cache-dir "$C" stats --format=prometheus >"$T/prom.txt" || bad "stats --format=prometheus failed"
"$KC" --cache-dir "$C" stats --json >"$T/s.json" || bad "stats --json failed"
"$KC" --cache-dir "$C" stats --format json >"$T/s2.json" || bad "stats --format json failed"
"$PY" - "$T/om.txt" "$T/prom.txt" "$T/s.json" "$T/s2.json" <<'PY' || bad "the exposition and stats --json disagree"
import json, math, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as prom_parse
om_text, prom_text = open(sys.argv[1]).read(), open(sys.argv[2]).read()
s = json.load(open(sys.argv[3]))
assert json.load(open(sys.argv[4])).keys() == s.keys()
assert om_text.endswith("# EOF\n") and "# EOF" not in prom_text
outcome_stat = {"memory": "memory_hits", "disk": "hits", "remote": "remote_hits", "compile": "misses", "bypass": "bypasses"}

def samples(fams):
    fams = list(fams)
    out = {}
    for f in fams:
        for x in f.samples:
            out[(x.name, tuple(sorted(x.labels.items())))] = x.value
    return out, {f.name: f for f in fams}

for text, parse, om in ((om_text, om_parse, True), (prom_text, prom_parse, False)):
    got, fams = samples(parse(text))
    v = lambda name, **lb: got[(name, tuple(sorted(lb.items())))]
    assert all(n.startswith("kcache_") for n in fams), list(fams)
    if om:
        assert fams["kcache_lookup_duration_seconds"].unit == "seconds"
        assert fams["kcache_size_bytes"].unit == "bytes"
    assert fams["kcache_lookup_duration_seconds"].type == "histogram"
    total = 0
    for o, st in outcome_stat.items():
        n = v("kcache_lookups_total", outcome=o)
        assert n == s[st], (o, n, s[st])
        total += n
        lat = s["latency"][o]
        assert v("kcache_lookup_duration_seconds_count", outcome=o) == n == lat["count"], (o, n, lat)
        assert v("kcache_lookup_duration_seconds_bucket", outcome=o, le="+Inf") == n
        cum = 0
        for b, c in zip(s["latency"]["bounds_seconds"], lat["counts"]):
            cum += c
            le = [k for k in got if k[0] == "kcache_lookup_duration_seconds_bucket" and dict(k[1]).get("outcome") == o
                  and dict(k[1])["le"] not in ("+Inf",) and math.isclose(float(dict(k[1])["le"]), b)]
            assert len(le) == 1 and got[le[0]] == cum, (o, b, le, cum)
        assert math.isclose(v("kcache_lookup_duration_seconds_sum", outcome=o), lat["sum_seconds"], rel_tol=1e-6, abs_tol=1e-9)
    assert total == 3 and s["misses"] == 2 and s["hits"] == 1, s
    assert s["latency"]["compile"]["sum_seconds"] > 0
    for r in ("load_refused", "mac_rejected", "publish_refused", "compiles_refused", "images_missing", "corrupt"):
        assert v("kcache_refusals_total", reason=r) == s[r], r
    assert math.isclose(v("kcache_compile_time_saved_seconds_total"), s["compile_us_saved"] / 1e6, abs_tol=1e-6)
    assert v("kcache_size_bytes") == s["bytes"] and v("kcache_entries") == s["entries"] > 0
    assert v("kcache_max_size_bytes") == s["max_size"]
    for name in ("puts", "evictions", "compiles", "compile_errors", "unit_compiles", "unit_hits", "compile_waits"):
        assert v("kcache_%s_total" % name) == s[name], name
    assert v("kcache_tier_reads_total", tier="0", url="local", result="hit") >= 0
PY
"$KC" --cache-dir "$C" stats --zero --format openmetrics >"$T/z.txt" || bad "stats --zero --format openmetrics failed"
grep -q '^kcache_lookup_duration_seconds_count{outcome="compile"} 0$' "$T/z.txt" || bad "--zero left the histogram"
"$KC" --cache-dir "$C" stats --format yaml >/dev/null 2>"$T/e.txt"; rc=$?
[ "$rc" = 2 ] && grep -q "openmetrics" "$T/e.txt" || bad "an unknown format: exit $rc, $(cat "$T/e.txt")"
[ "$fails" = 0 ] && echo "test_stats_metrics: passed"
[ "$fails" = 0 ]
