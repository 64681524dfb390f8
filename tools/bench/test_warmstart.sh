#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_warmstart.sh BENCH — kcache-bench's warm start as processes (procs.c), small: the bundled manifest
# and a synthetic one of 8 graphs, 2 rounds, no peers, no page-cache eviction.  Checks what the figures
# rest on, never a time: every warm start was all hits, the synthetic graphs are 8 distinct graph
# entries with 8 distinct images (each its own key and compile unit), minread read the same files.
set -euo pipefail
bench=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kc-ws-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
TMPDIR=$tmp "$bench" --warmstart-only --quick --synth 8 --warmstart-runs 2 --warmstart-evict 0 --no-peers \
  --json "$tmp/ws.json" > "$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; echo "FAIL: kcache-bench exited $?" >&2; exit 1; }
python3 - "$tmp/ws.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["warmstart_procs"]
bundled, synth = w["manifests"]
def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what + ": " + json.dumps(w, indent=1)[:3000])
for m in (bundled, synth):
    check(m["have"], m["label"] + " measured")
    check(m["warm_runs_not_all_hits"] == 0, m["label"] + ": every warm start all hits")
    check(all(m[k]["n"] == 2 for k in ("warmstart_warm", "minread", "empty_main", "empty_main_with_libs", "kcache_help")),
          m["label"] + ": 2 runs each")
    check(m["entry_files"] >= 2 * m["graphs"], m["label"] + ": a graph entry and at least one image per graph")
check(bundled["label"] == "bundled" and synth["label"] == "synthetic-8", "labels")
check(synth["graphs"] == 8 and synth["entry_files"] == 16 and synth["distinct_entry_files"] == 16,
      "8 synthetic graphs: 8 distinct graph entries, 8 distinct images")
check(w["one_graph"]["have"] is False, "--no-peers: no peers")
print("test_warmstart: bundled %d graphs (%d files), synthetic %d graphs (%d distinct files), all hits"
      % (bundled["graphs"], bundled["entry_files"], synth["graphs"], synth["distinct_entry_files"]))
PY
