#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare_warm.sh — a warm hit of this working tree against another commit's, alternated on one
# machine in one session: the direct check of issue 18's "a warm hit stays within 1.2x of today's"
# (kcache-bench can only estimate it: this build no longer writes the one-file format).
#
#   tools/bench/compare_warm.sh COMMIT [ROUNDS [ITERS [TARGET]]]     (defaults: 3 2000 sm_90)
#
# Builds COMMIT (git archive into a scratch folder, Release) and this tree (build-warm-compare/,
# Release), each with tools/bench/warm_compare.c, then runs the two in the order old new new old,
# ROUNDS times, over every graph of kernels/ (each build its own cache folder: their formats
# differ), and prints per graph the median over runs of each build's median hit, the least of
# them (the run least disturbed by the machine), and the ratios new / old.  Must not: touch the
# caller's cache or working tree (it writes build-warm-compare/, git-ignored, and $TMPDIR only).
# KCACHE_OLD_SRC=DIR: COMMIT's sources extracted there already (`git archive COMMIT | tar -x -C DIR`),
# for a machine that has the working tree but not the history (the GPU machine).
set -euo pipefail
commit=${1:?usage: tools/bench/compare_warm.sh COMMIT [ROUNDS [ITERS [TARGET]]]}
rounds=${2:-3} iters=${3:-2000} target=${4:-sm_90}
root=$(git rev-parse --show-toplevel 2>/dev/null || (cd "$(dirname "$0")/../.." && pwd))
work=$(mktemp -d "${TMPDIR:-/tmp}/kcache-warm-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PATH="$PATH:/usr/local/cuda/bin"

build() { # build SOURCE_DIR BUILD_DIR
    if ! grep -q warm_compare "$1/tools/bench/CMakeLists.txt"; then
        cp "$root/tools/bench/warm_compare.c" "$1/tools/bench/"
        printf 'add_executable(kcache_warm_compare warm_compare.c)\nset_target_properties(kcache_warm_compare PROPERTIES OUTPUT_NAME kcache-warm-compare)\ntarget_link_libraries(kcache_warm_compare PRIVATE kcache_static)\n' \
            >>"$1/tools/bench/CMakeLists.txt"
    fi
    cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKCACHE_BUILD_TESTS=OFF >/dev/null
    cmake --build "$2" --target kcache_warm_compare >/dev/null
}
mkdir -p "$work/old"
if [ -n "${KCACHE_OLD_SRC:-}" ]; then # COMMIT's sources already extracted (a machine without the history)
    cp -r "$KCACHE_OLD_SRC"/. "$work/old"
else
    git -C "$root" archive "$commit" | tar -x -C "$work/old"
fi
echo "building $commit and this tree ..." >&2
build "$work/old" "$work/old/build"
build "$root" "$root/build-warm-compare"
old="$work/old/build/tools/bench/kcache-warm-compare" new="$root/build-warm-compare/tools/bench/kcache-warm-compare"
specs=()
for s in "$root"/kernels/*.json; do [[ $s == */manifest.json ]] || specs+=("$s"); done
mkdir -p "$work/c-old" "$work/c-new"
"$old" "$work/c-old" "$target" 1 "${specs[@]}" >/dev/null # the first pass compiles
"$new" "$work/c-new" "$target" 1 "${specs[@]}" >/dev/null
run() { # run old|new: one pass over every graph, its lines tagged
    local bin=$old
    [[ $1 == new ]] && bin=$new
    "$bin" "$work/c-$1" "$target" "$iters" "${specs[@]}" | sed "s/^/$1 /"
}
for ((r = 0; r < rounds; r++)); do
    run old
    run new
    run new
    run old
done >"$work/runs"
echo "warm disk hit of $commit (old) against this tree (new), $target, $((2 * rounds)) runs of $iters hits each, alternated:"
printf '%-14s %10s %10s %8s   %10s %10s %8s   %s\n' graph "old med" "new med" "new/old" "old least" "new least" "new/old" "key us old/new, lookup us old/new"
sort -k2,2 -k1,1 "$work/runs" | awk '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                     return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function flush(   mo, mn, lo, ln, i) {
        if (g == "") return
        mo = med(o, no); mn = med(w, nw); lo = o[1]; ln = w[1]
        printf "%-14s %7.1f us %7.1f us %7.2fx   %7.1f us %7.1f us %7.2fx   %.1f/%.1f, %.1f/%.1f\n", g, mo, mn, mn / mo, lo, ln, ln / lo, med(ko, no), med(kw, nw), med(lo_, no), med(lw, nw)
        r[++nr] = mn / mo; rl[nr] = ln / lo
    }
    $2 != g { flush(); g = $2; no = nw = 0 }
    $1 == "old" { o[++no] = $3; ko[no] = $4; lo_[no] = $5 }
    $1 == "new" { w[++nw] = $3; kw[nw] = $4; lw[nw] = $5 }
    END { flush(); printf "median over graphs: new/old %.2fx (medians), %.2fx (least)\n", med(r, nr), med(rl, nr) }'
