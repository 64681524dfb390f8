#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_contended.sh BENCH — kcache-bench --contended-only (contended.c), small so that it cannot rot.  Checks
# what its figures rest on, never a time: every pass compiled and wrote a toolkit direct manifest, every
# warm get ran, the neighbour read files of the tree the compile watched and its reads reached the
# unfiltered compile's manifest (more files listed than the compile alone read), every pass lists the
# same folders (the whole tree), and nothing was left in its TMPDIR.  Where fanotify can mark the tree,
# the filtered manifest lists exactly the files the compile alone read (the same lines); where it cannot,
# the filter is off and that is said, not failed.
set -euo pipefail
bench=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kc-ct-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir "$tmp/t"
TMPDIR=$tmp/t "$bench" --contended-only --quick --contended-runs 3 --json "$tmp/ct.json" \
  > "$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; fail "kcache-bench --contended-only failed"; }
cat "$tmp/out.txt"
[ -z "$(ls -A "$tmp/t")" ] || fail "left in TMPDIR: $(ls -A "$tmp/t")"
python3 - "$tmp/ct.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["contended"]
print(json.dumps(c, indent=1))
p = {x["pass"]: x for x in c["passes"]}
alone, filt, unf = p["alone"], p["beside, filtered"], p["beside, unfiltered"]
for x in (alone, filt, unf):
    if x["why"] or x["files_listed"] < 1 or x["warm_get"]["n"] != 3:
        sys.exit("FAIL: pass " + json.dumps(x))
if len({x["folders_listed"] for x in (alone, filt, unf)}) != 1:
    sys.exit("FAIL: the passes list different folders")
if not (filt["neighbour_files_read"] > 0 and unf["neighbour_files_read"] > 0):
    sys.exit("FAIL: the neighbour read nothing of " + c["tree"])
if not unf["files_listed"] > alone["files_listed"]:
    sys.exit("FAIL: the neighbour's reads are not in the unfiltered manifest")
if not filt["files_listed"] <= unf["files_listed"]:
    sys.exit("FAIL: the filtered manifest lists more than the unfiltered one")
same = (filt["files_listed"], filt["files_digest"]) == (alone["files_listed"], alone["files_digest"])
if c["fanotify"] and not same:
    sys.exit("FAIL: with fanotify, the filtered manifest is not the one the compile made alone")
if not c["fanotify"]:
    print("note: fanotify cannot mark %s here: the filter was off in every pass" % c["tree"])
PY
echo "ok: test_contended"
