#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_pch.sh BENCH KCACHE KERNELS — kcache-bench's cold prewarm with and without precompiled headers
# (--pch-only, pch.c) and its generated bf16 manifest (synth_bf16.c), small so they cannot rot.  Checks
# what the figures rest on, never a time: the generator writes 32 specs sharing one include prefix, each
# its own key; a tiny run (the bundled rmsnorm_bf16 graph, 2 generated graphs, 1 for the single target,
# one pair, sm_90) measured every workload, every run compiled everything, the caches written with and
# without PCH hold the same entries (names one for one; images by content, NVRTC's per-process names
# masked: rmsnorm_bf16's cubin differs between any two processes), and nothing was left in a TMPDIR.
set -euo pipefail
bench=$1 kcache=$2 kernels=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kc-pch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# the generator: 32 graphs for three targets, one header set, 32 keys
"$bench" --write-bf16 "$tmp/gen" --pch-graphs 32 --pch-targets sm_80,sm_90,sm_100 > "$tmp/gen.txt"
[ "$(cat "$tmp/gen.txt")" = "$tmp/gen/manifest.json" ] || fail "--write-bf16 printed $(cat "$tmp/gen.txt")"
[ "$(ls "$tmp/gen"/b*.json | wc -l)" = 32 ] || fail "32 specs"
prefix=$(sed -n 2,5p "$tmp/gen/b000.cu")
for cu in "$tmp/gen"/b*.cu; do
  [ "$(sed -n 2,5p "$cu")" = "$prefix" ] || fail "$cu: another include prefix"
done
grep -q 'cuda_bf16.h' <<< "$prefix" && grep -q 'cooperative_groups.h' <<< "$prefix" || fail "prefix: $prefix"
for s in "$tmp/gen"/b*.json; do
  "$kcache" -d "$tmp/keys" explain "$s" --arch sm_90 --json 2>/dev/null \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])' >> "$tmp/keys.txt" || fail "explain $s"
done
[ "$(sort -u "$tmp/keys.txt" | wc -l)" = 32 ] || fail "32 distinct keys: $(sort "$tmp/keys.txt" | uniq -d)"
python3 - "$tmp/gen/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
if m["archs"] != ["sm_80", "sm_90", "sm_100"] or len(m["graphs"]) != 32:
    sys.exit("FAIL: manifest " + json.dumps(m))
PY

# a tiny --pch-only run
mkdir "$tmp/kernels"
cp "$kernels/rmsnorm_bf16.json" "$kernels/rmsnorm_bf16.cu" "$tmp/kernels/"
TMPDIR=$tmp "$bench" --pch-only --pch-runs 1 --pch-graphs 2 --pch-single 1 --pch-targets sm_90 --arch sm_90 \
  --kernels "$tmp/kernels" --kcache "$kcache" --json "$tmp/pch.json" > "$tmp/out.txt" 2>&1 \
  || { cat "$tmp/out.txt"; fail "kcache-bench --pch-only exited $?"; }
python3 - "$tmp/pch.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["pch"]
def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what + ": " + json.dumps(p, indent=1)[:4000])
check(p["runs"] == 1 and len(p["workloads"]) == 3, "one pair, three workloads")
for w, graphs in zip(p["workloads"], (1, 2, 1)):
    name = w["label"]
    check(w["have"] and w["graphs"] == graphs and w["variants"] == graphs and w["targets"] == "sm_90", name + ": measured")
    check(w["pch_off"]["n"] == 1 and w["pch_on"]["n"] == 1, name + ": one run each")
    check(w["runs_failed"] == [0, 0] and w["runs_not_all_compiles"] == [0, 0], name + ": every run all compiles")
    check(w["off_over_on"] is not None and w["off_over_on"] > 0, name + ": a ratio")
    check(w["pairs_compared"] == 1 and w["entry_files"] >= 2 * graphs and w["images"] >= graphs,
          name + ": the caches compared")
    check(w["differ"] == 0 and w["unmatched"] == 0 and w["entry_files"] == w["byte_identical"]
          + w["identical_but_time_stamps"] + w["identical_but_image_ids"], name + ": the same entries")
    check(w["images_differ"] == 0 and w["images"] == w["images_byte_identical"]
          + w["images_identical_but_nvrtc_internal_names"] + w["images_not_comparable"], name + ": the same images")
    check(w["log_pch_on"] == [False, True] and w["log_pch_created"][0] == 0 and w["log_pch_used"][0] == 0,
          name + ": KCACHE_PCH reached the library (its log), and off made and used no PCH")
    check(w["tmpdir_left_after_exit"] == [0, 0] and w["nvrtc_auto_pch_dirs"] == [0, 0], name + ": TMPDIR left clean")
print("test_pch: 32 generated graphs, 32 keys, one include prefix; --pch-only: %s"
      % ", ".join("%s: %d entries, %d images the same" % (w["label"], w["entry_files"], w["images"])
                  for w in p["workloads"]))
PY
