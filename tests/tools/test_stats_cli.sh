#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_stats_cli.sh — `kcache stats` reads the statistics' one table (kcache/stats.h):
#  - `stats --describe --json` lists every statistic with its kind and what it counts, and
#    `stats --json` prints exactly those names (and its own extras: dir, graphs, hit_rate, …);
#  - the text prints each statistic once, a microseconds one in seconds.
#   test_stats_cli.sh KCACHE
set -u
KC=$1
T=$(mktemp -d /tmp/kctest-stats-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
"$KC" stats --describe --json >"$T/d.json" || bad "stats --describe --json failed"
"$KC" --cache-dir "$T/c" stats --json >"$T/s.json" || bad "stats --json failed"
"$KC" --cache-dir "$T/c" stats >"$T/s.txt" || bad "stats failed"
python3 - "$T/d.json" "$T/s.json" "$T/s.txt" <<'PY' || bad "the table and the outputs disagree"
import json, sys
d = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2])); txt = open(sys.argv[3]).read().splitlines()
names = [r["name"] for r in d]
assert len(names) == len(set(names)) >= 29, names
assert all(r["kind"] in ("counter", "gauge", "bytes", "microseconds") and len(r["doc"]) > 10 for r in d), d
extras = {"dir", "mode", "max_size", "graphs", "images", "units", "graph_bytes", "image_bytes", "unit_bytes", "profiles",
          "profile_bytes", "hit_rate", "latency", "remote"}
assert set(s) - extras == set(names), set(s) ^ (set(names) | extras)
for r in d:
    if r["name"] in ("bytes", "entries"):
        continue  # the "size" line
    line = [l for l in txt if l.split()[:1] == [r["name"]]]
    assert len(line) == 1, (r["name"], line)
    if r["kind"] == "microseconds":
        assert line[0].endswith(" s"), line
PY
[ "$fails" = 0 ] && echo "test_stats_cli: passed"
[ "$fails" = 0 ]
