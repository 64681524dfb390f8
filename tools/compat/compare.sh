#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare.sh — an old build and this tree, side by side, on what a user sees (issue item 6:
# keys, formats and outputs stay identical unless a change is listed).  It builds OLD (a commit;
# its tree is taken with `git archive`, so no worktree is registered) and the current working tree
# (or uses NEW_BUILD=DIR, an existing build of it), then compares, with the same NVRTC:
#   1. the synthetic manifest of the benchmark (kcache_bench --write-synth, tools/bench/synth.c)
#      that each build writes: the files must be byte-identical;
#   2. keys: `coverage --json` of an empty cache, for the bundled manifest (kernels/manifest.json,
#      its targets) and the synthetic one (its target, sm_90): every graph x target's key;
#   3. a cold `prewarm --json` of each manifest by each build into its own cache: what was compiled,
#      hit, and how many compile units, per graph x target (timings left out);
#   4. the old build's cache, read by each build (a copy each): ls, ls --images, show of every
#      entry, stats, verify, toolchain — --json and text — with timings and ages masked;
#   5. the entries each build stored: the same file names in both caches.
# Prints one line per comparison (same / DIFFERENT, with the diff), exit 1 if any differs.
#   tools/compat/compare.sh [OLD_COMMIT [WORK_DIR]]      (default OLD_COMMIT: 33c8ca4)
#   SYNTH_N=24 (graphs in the synthetic manifest), JOBS=2, KEEP=1 (keep WORK_DIR)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OLD=${1:-33c8ca4}
W=${2:-$(mktemp -d /tmp/kc-compare-XXXXXX)}
SYNTH_N=${SYNTH_N:-24}; JOBS=${JOBS:-2}
mkdir -p "$W"
[ "${KEEP:-0}" = 1 ] || [ -n "${2:-}" ] || trap 'rm -rf "$W"' EXIT
unset KCACHE_DIR KCACHE_REMOTE KCACHE_READONLY KCACHE_DISABLE KCACHE_REQUIRE_HIT KCACHE_STRICT KCACHE_TOOLCHAIN \
      KCACHE_TOOLKIT_HEADERS KCACHE_NVRTC KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_KEYRING KCACHE_SIGNING_KEY_FILE \
      KCACHE_MAX_SIZE KCACHE_LOG KCACHE_CUDA_DRIVER
export PATH="$PATH:/usr/local/cuda/bin"

build() { # build SRC DIR: the CLI and the benchmark, Release, no tests
    cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCACHE_BUILD_TESTS=OFF >"$2.log" 2>&1 \
        && cmake --build "$2" -j "$JOBS" --target kcache_cli kcache_bench >>"$2.log" 2>&1 \
        || { tail -30 "$2.log"; echo "compare: building $1 failed ($2.log)" >&2; exit 2; }
}
if [ ! -x "$W/old-build/tools/kcache/kcache" ]; then
    rm -rf "$W/old-src"; mkdir -p "$W/old-src"
    git -C "$ROOT" archive "$OLD" | tar -x -C "$W/old-src" || { echo "compare: no commit $OLD" >&2; exit 2; }
    build "$W/old-src" "$W/old-build"
fi
NB=${NEW_BUILD:-$W/new-build}
[ -n "${NEW_BUILD:-}" ] || build "$ROOT" "$NB"
declare -A KC=([old]=$W/old-build/tools/kcache/kcache [new]=$NB/tools/kcache/kcache)
declare -A BENCH=([old]=$W/old-build/tools/bench/kcache-bench [new]=$NB/tools/bench/kcache-bench)
for b in old new; do [ -x "${KC[$b]}" ] && [ -x "${BENCH[$b]}" ] || { echo "compare: no $b kcache/kcache_bench" >&2; exit 2; }; done

rm -rf "$W/out"; diffs=0
compare() { # compare NAME: $W/out/old/NAME vs $W/out/new/NAME
    if diff -u "$W/out/old/$1" "$W/out/new/$1" >"$W/diff.txt"; then
        echo "same       $1 ($(wc -c <"$W/out/old/$1") bytes)"
    else
        diffs=$((diffs + 1)); echo "DIFFERENT  $1"; head -40 "$W/diff.txt" | sed 's/^/    /'
    fi
}
# Timings, ages and this run's paths vary between two runs of one build: masked.
norm_json() { python3 -c '
import json, re, sys
VOL = re.compile(r"(_us|_ms|seconds|_s|_at|last_used|last_use|age|mtime|time)$")
def walk(v):
    if isinstance(v, dict): return {k: "<t>" if VOL.search(k) and isinstance(x, (int, float)) else walk(x) for k, x in v.items()}
    if isinstance(v, list): return [walk(x) for x in v]
    if isinstance(v, str): return v.replace(sys.argv[1], "<W>")
    return v
txt = sys.stdin.read()
try: print(json.dumps(walk(json.loads(txt)), indent=1, sort_keys=True))
except ValueError: print("not JSON:", txt)' "$1"; }
norm_text() { sed -E -e "s|$1|<W>|g" -e 's/[0-9]+(\.[0-9]+)? ?(us|ms|s|min|h|d)( ago)?\b/<t>/g'; }
# run B NAME CACHE ARGS...: kcache of build B on CACHE, stdout (normalized) to out/B/NAME, exit code appended
run() {
    local b=$1 name=$2 cache=$3; shift 3
    mkdir -p "$W/out/$b"
    "${KC[$b]}" --cache-dir "$cache" "$@" >"$W/raw.out" 2>"$W/raw.err"; local rc=$?
    case " $* " in
        *" --json "*) norm_json "$W/c" <"$W/raw.out" ;;
        *) norm_text "$W/c" <"$W/raw.out" ;;
    esac >"$W/out/$b/$name"
    norm_text "$W/c" <"$W/raw.err" | sort >>"$W/out/$b/$name" # sorted: -j N prints in completion order
    echo "exit $rc" >>"$W/out/$b/$name"
}
# 1. The synthetic manifest each build's benchmark writes.
for b in old new; do
    rm -rf "$W/synth-$b"; mkdir -p "$W/synth-$b"
    "${BENCH[$b]}" --write-synth "$W/synth-$b" --synth "$SYNTH_N" >/dev/null 2>"$W/synth-$b.err" \
        || { cat "$W/synth-$b.err"; echo "compare: kcache_bench --write-synth ($b) failed" >&2; exit 2; }
done
if diff -r "$W/synth-old" "$W/synth-new" >"$W/diff.txt"; then echo "same       synthetic manifest ($(ls "$W/synth-old" | wc -l) files, --synth $SYNTH_N)"
else diffs=$((diffs + 1)); echo "DIFFERENT  synthetic manifest"; head -20 "$W/diff.txt" | sed 's/^/    /'; fi
SYN=$W/synth-old/manifest.json
BUNDLED=$ROOT/kernels/manifest.json

# 2 and 3. Keys of an empty cache, then a cold prewarm of each manifest into each build's cache.
mkdir -p "$W/c"
for b in old new; do
    rm -rf "$W/c/empty-$b" "$W/c/$b"
    run "$b" keys-bundled.json "$W/c/empty-$b" coverage "$BUNDLED" --json
    run "$b" keys-synth.json "$W/c/empty-$b" coverage "$SYN" --json
    run "$b" prewarm-bundled.json "$W/c/$b" prewarm "$BUNDLED" -j "$JOBS" --json
    run "$b" prewarm-synth.json "$W/c/$b" prewarm "$SYN" -j "$JOBS" --json
    (cd "$W/c/$b" && find . -name '*.kce' | sort) >"$W/out/$b/stored-files"
done
for n in keys-bundled.json keys-synth.json prewarm-bundled.json prewarm-synth.json stored-files; do compare "$n"; done
echo "           ($(grep -c '"key"' "$W/out/old/keys-bundled.json") bundled and $(grep -c '"key"' "$W/out/old/keys-synth.json") synthetic graph x target keys)"

# 4. The old build's cache, read by each build (a fresh copy each, at one path: paths are printed).
for b in old new; do
    D=$W/c/read
    rm -rf "$D"; cp -a "$W/c/old" "$D"
    for j in "" --json; do
        run "$b" "ls$j" "$D" ls $j
        run "$b" "ls-images$j" "$D" ls --images $j
        run "$b" "stats$j" "$D" stats $j
        run "$b" "verify$j" "$D" verify $j
        run "$b" "toolchain$j" "$D" toolchain $j
        for e in $(cd "$W/c/old" && find . -name '*.kce' | sed 's|.*/||; s|\.kce$||' | sort); do
            run "$b" "show-$e$j" "$D" show "$e" $j
        done
    done
done
same=0
for f in $(ls "$W/out/old" | grep -E '^(ls|stats|verify|toolchain|show-)'); do
    if cmp -s "$W/out/old/$f" "$W/out/new/$f"; then same=$((same + 1)); else compare "$f"; fi
done
echo "same       $same outputs of ls, ls --images, stats, verify, toolchain and show of each entry (text and --json)"

echo "compare: $OLD vs the working tree: $diffs difference(s) (work dir $W)"
[ $diffs = 0 ]
