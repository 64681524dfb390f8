#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare_hits.sh — the in-process hits over their floors of two kcache-bench builds, alternated on one
# machine in one session: each ratio of one build set beside the other's, like with like.
#
#   tools/bench/compare_hits.sh OLD_KCACHE_BENCH NEW_KCACHE_BENCH [ROUNDS]     (default 2)
#
# The one idea: `kcache-bench --quick --hits-only` times each in-process hit beside its own floor in
# the same rounds (levels.c); running the two builds in the order old new new old, ROUNDS times, lets
# drift hit both alike.  Prints per graph and build the median over runs of each figure (µs) and of
# each ratio, then the medians over graphs.  Both builds must have --hits-only (kcache-bench from
# the commit that added it on); build the old one from its commit with -DCMAKE_BUILD_TYPE=Release.
# Must not: write anything but its scratch file under $TMPDIR (removed at exit).
set -euo pipefail
old=${1:?usage: tools/bench/compare_hits.sh OLD_KCACHE_BENCH NEW_KCACHE_BENCH [ROUNDS]}
new=${2:?usage: tools/bench/compare_hits.sh OLD_KCACHE_BENCH NEW_KCACHE_BENCH [ROUNDS]}
rounds=${3:-2}
out=$(mktemp "${TMPDIR:-/tmp}/kcache-compare-hits.XXXXXX")
trap 'rm -f "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
    for w in old new new old; do
        b=$old
        [[ $w == new ]] && b=$new
        # a graph's row: name, hit [p10 .. p90], check [..], ratio x, fetch [..], limit [..], ratio x
        "$b" --quick --hits-only | awk -v w="$w" '/^[a-z_0-9]+ +[0-9]/ {
            gsub(/[\[\]]/, " "); sub(/x$/, "", $10); sub(/x$/, "", $19)
            print w, $1, $2, $6, $10, $11, $15, $19 }' >>"$out"
    done
done
python3 - "$out" <<'PY'
import statistics as st
import sys

rows = {}
for line in open(sys.argv[1]):
    w, g, *v = line.split()
    rows.setdefault((g, w), []).append([float(x) for x in v])
graphs = sorted({g for g, _ in rows})
head = "hit  check  ratio  fetch  limit  ratio"
print(f"{'graph':14} | old: {head} | new: {head}")
ratios = {"old": ([], []), "new": ([], [])}
for g in graphs:
    line = f"{g:14} |"
    for w in ("old", "new"):
        m = [st.median(c) for c in zip(*rows[(g, w)])]
        line += f" {m[0]:8.1f} {m[1]:6.1f} {m[2]:5.2f}x {m[3]:6.1f} {m[4]:6.1f} {m[5]:5.2f}x |"
        ratios[w][0].append(m[2])
        ratios[w][1].append(m[5])
    print(line)
for w in ("old", "new"):
    print(f"{w}: medians over graphs: compile-path hit / read+check {st.median(ratios[w][0]):.2f}x, "
          f"lookup with bytes / read+check+inflate {st.median(ratios[w][1]):.2f}x "
          f"({len(rows[(graphs[0], w)])} runs each)")
PY
