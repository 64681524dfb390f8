#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_prewarm.sh — `kcache prewarm` and single-flight, end to end:
#  - prewarm twice: the second run compiles nothing; the demo leaves the cache's entries alone;
#  - compile units (issue 18): a cold prewarm compiles each distinct unit once (units_compiled ==
#    the unit records stored; elementwise.cu may be once more per target, see UNITS_OK), a second
#    compiles none; a second static shape of mlp_block (sizes
#    512/2048, a copy of the spec made with sed) prewarmed after the manifest compiles no unit and
#    takes no compile time (its line says "built from N stored units"); both shapes prewarmed at once on an empty cache compile each unit once;
#  - four prewarms at once on an empty cache: each variant compiled exactly once in total, each unit
#    once (UNITS_OK), the runs' counts summing to the cache's;
#  - a process holding a compile lock is SIGKILLed: a waiting process takes over and finishes;
#  - a failing graph does not stop the others (exit 1), its unit no unit hit; a bad manifest is exit 2 with the place;
#  - a launch that does not fit its kernel is a compile error naming the step, nothing stored;
#    `kcache show` prints each kernel's parameter table.
#   test_prewarm.sh KCACHE KC_HOLD_LOCK KERNELS_DIR
set -u
KC=$1; HOLD=$2; KDIR=$3
T=$(mktemp -d /tmp/kctest-prewarm-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
jq_() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
check_json() { if jq_ "$1" "$2"; then ok; else bad "$2 ; got: $(head -c 600 "$1")"; fi; }
ARCHS=sm_80,compute_80
NVAR=$(( $(python3 -c "import json; print(len(json.load(open('$KDIR/manifest.json'))['graphs']))") * 2 ))

# Twice: the second run is pure lookups.
D=$T/twice
"$KC" --cache-dir "$D" prewarm "$KDIR/manifest.json" --arch $ARCHS --json >"$T/a.json" 2>"$T/a.err" && ok || bad "first prewarm failed: $(tail -5 "$T/a.err")"
check_json "$T/a.json" "j['variants'] == $NVAR and j['compiled'] == $NVAR and j['failed'] == 0 and j['graphs'] == $NVAR // 2"
# Compile units: each distinct one compiled once (one unit record each), every result's count summed —
# but elementwise.cu may be compiled once more per target ([Note: recorded names]): mlp_block's compile
# records two of its names, add_mul_gelu asks six (the other order compiles it once), then one record
# holds all six.  UNITS_OK says a count of unit compiles is one of those.
NUNITS=$(find "$D" -name '*.unit.kce' | wc -l)
NARCH=$(echo $ARCHS | tr ',' '\n' | wc -l)
UNITS_OK="$NUNITS <= %s <= $NUNITS + $NARCH"
check_json "$T/a.json" "$(printf "$UNITS_OK" "j['units_compiled']") and $NUNITS > 0 and j['units'] == j['units_compiled'] + j['unit_hits'] and j['units_compiled'] == sum(r['units_compiled'] for r in j['results']) and all(r['units'] >= 1 for r in j['results'])"
"$KC" --cache-dir "$D" stats --json >"$T/as.json"
check_json "$T/as.json" "j['unit_compiles'] == $(python3 -c "import json; print(json.load(open('$T/a.json'))['units_compiled'])") and j['graphs'] == $NVAR and j['units'] == $NUNITS and j['entries'] == j['graphs'] + j['images'] + j['units']"
"$KC" --cache-dir "$D" prewarm "$KDIR/manifest.json" --arch $ARCHS --json >"$T/b.json" 2>/dev/null && ok || bad "second prewarm failed"
check_json "$T/b.json" "j['compiled'] == 0 and j['hits'] == $NVAR and j['units'] == 0 and j['units_compiled'] == 0"
"$KC" --cache-dir "$D" prewarm "$KDIR/manifest.json" --arch $ARCHS >"$T/plain.txt" 2>&1 && ok || bad "plain prewarm failed"
grep -q "^mlp_block .*sm_80 hit" "$T/plain.txt" && grep -q "0 compiled, $NVAR hits, 0 failed" "$T/plain.txt" && ok || bad "plain output: $(cat "$T/plain.txt")"

# A second static shape of mlp_block, written as a user would (a copy of the spec, sizes 512/2048),
# prewarmed after the manifest (in a copy of its cache): two variants compiled, no unit compiled,
# no compile time — only its graph entries are written.
S2=$T/shape; mkdir -p "$S2"
cp "$KDIR"/*.cu "$KDIR"/*.cuh "$KDIR/mlp_block.json" "$S2/"
sed 's/256/512/g; s/1024/2048/g; s/"name": "mlp_block"/"name": "mlp_block_512"/' "$KDIR/mlp_block.json" >"$S2/mlp_block_512.json"
echo '{"graphs": ["mlp_block_512.json"]}' >"$S2/m512.json"
cp -a "$D" "$T/twice512"
"$KC" --cache-dir "$T/twice512" prewarm "$S2/m512.json" --arch $ARCHS --json >"$T/s2.json" 2>"$T/s2.err" && ok || bad "second shape: $(tail -3 "$T/s2.err")"
check_json "$T/s2.json" "j['compiled'] == 2 and j['units'] >= 4 and j['units_compiled'] == 0 and j['unit_hits'] == j['units'] and j['compile_ms'] < 1.0 and all(r['result'] == 'compiled' and r['units_compiled'] == 0 for r in j['results'])"
[ "$(find "$T/twice512" -name '*.unit.kce' | wc -l)" = "$NUNITS" ] && ok || bad "the second shape stored unit records"
# Its progress lines (stderr under --json) say it compiled nothing, not "compiled 0 ms (0 of N units)".
grep -q "^mlp_block_512 .*sm_80 built from [0-9]* stored units\? (nothing compiled)" "$T/s2.err" && ! grep -q "compiled 0 ms" "$T/s2.err" && ok || bad "second shape's line: $(cat "$T/s2.err")"
"$KC" --cache-dir "$T/twice512" prewarm "$S2/m512.json" --arch $ARCHS >"$T/s2.txt" 2>&1
grep -q "^mlp_block_512 .*sm_80 hit" "$T/s2.txt" && ok || bad "second shape, second time: $(cat "$T/s2.txt")"
# Both shapes at once on an empty cache (-j 4: the four variants start together): each unit of
# each target is compiled by one of them; the other waits on the unit's lock, then finds it stored.
echo '{"graphs": ["mlp_block.json", "mlp_block_512.json"]}' >"$S2/both.json"
"$KC" --cache-dir "$T/both" prewarm "$S2/both.json" --arch $ARCHS -j 4 --json >"$T/both.json" 2>"$T/both.err" && ok || bad "both shapes: $(tail -3 "$T/both.err")"
check_json "$T/both.json" "j['compiled'] == 4 and j['units_compiled'] * 2 == j['units'] and j['unit_hits'] == j['units_compiled']"
"$KC" --cache-dir "$T/both" stats --json >"$T/boths.json"
check_json "$T/boths.json" "j['graphs'] == 4 and j['unit_compiles'] == j['units'] and j['unit_hits'] == j['units'] and j['units'] == $(python3 -c "import json; print(json.load(open('$T/both.json'))['units_compiled'])")"

# The demo runs in a scratch cache of its own: the user's entries stay, and the scratch folder goes.
mkdir -p "$T/tmpd"
TMPDIR=$T/tmpd "$KC" --cache-dir "$D" demo --manifest "$KDIR/manifest.json" >"$T/demo.txt" 2>&1 && ok || bad "demo failed: $(tail -5 "$T/demo.txt")"
grep -q "^cold pass" "$T/demo.txt" && grep -q "^warm pass" "$T/demo.txt" && ok || bad "demo output: $(head -c 600 "$T/demo.txt")"
"$KC" --cache-dir "$D" stats --json >"$T/ds.json"
check_json "$T/ds.json" "j['graphs'] == $NVAR and j['units'] == $NUNITS"
[ -z "$(ls -A "$T/tmpd")" ] && ok || bad "the demo left $(ls "$T/tmpd") behind"

# Ship it: export -> clear -> import -> every lookup hits, with identical bytes.
(cd "$D/v1" && find . -name '*.kce' -exec sha256sum {} + | sort) >"$T/before.sums"
"$KC" --cache-dir "$D" export "$T/warm.kcb" --manifest "$KDIR/manifest.json" --arch $ARCHS --json >"$T/e.json" && ok || bad "export failed"
check_json "$T/e.json" "j['graphs'] == $NVAR"
"$KC" --cache-dir "$D" clear >/dev/null
"$KC" --cache-dir "$D" import "$T/warm.kcb" --json >"$T/i.json" && ok || bad "import failed"
check_json "$T/i.json" "j['graphs_written'] == $NVAR and j['written'] == j['entries']"
(cd "$D/v1" && find . -name '*.kce' -exec sha256sum {} + | sort) >"$T/after.sums"
cmp -s "$T/before.sums" "$T/after.sums" && ok || bad "imported entries differ from the exported ones"
"$KC" --cache-dir "$D" prewarm "$KDIR/manifest.json" --arch $ARCHS --json >"$T/c.json" 2>/dev/null
check_json "$T/c.json" "j['compiled'] == 0 and j['hits'] == $NVAR"
"$KC" --cache-dir "$D" import "$T/warm.kcb" --json >"$T/i2.json" && ok || bad "second import failed"
check_json "$T/i2.json" "j['written'] == 0 and j['unchanged'] == j['entries']"
head -c 5000 "$T/warm.kcb" >"$T/trunc.kcb"
"$KC" --cache-dir "$D" import "$T/trunc.kcb" >/dev/null 2>"$T/t.err"; rc=$?
[ $rc = 1 ] && grep -q "truncated" "$T/t.err" && ok || bad "a truncated bundle: exit $rc, $(cat "$T/t.err")"

# Four at once on an empty cache: every variant, and every compile unit, compiled once in total.
D=$T/four
for i in 1 2 3 4; do
  "$KC" --cache-dir "$D" prewarm "$KDIR/manifest.json" --arch $ARCHS -j 2 --json >"$T/p$i.json" 2>"$T/p$i.err" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || bad "a concurrent prewarm failed"; done
pids=()
"$KC" --cache-dir "$D" stats --json >"$T/s.json"
check_json "$T/s.json" "j['compiles'] == $NVAR and j['graphs'] == $NVAR and j['units'] == $NUNITS and $(printf "$UNITS_OK" "j['unit_compiles']")"
total=$(python3 -c "import json; print(sum(json.load(open('$T/p%d.json' % i))['compiled'] for i in (1,2,3,4)))")
[ "$total" = "$NVAR" ] && ok || bad "the four runs compiled $total variants in all, want $NVAR"
total=$(python3 -c "import json; print(sum(json.load(open('$T/p%d.json' % i))['units_compiled'] for i in (1,2,3,4)))")
want=$(python3 -c "import json; print(json.load(open('$T/s.json'))['unit_compiles'])")
[ "$total" = "$want" ] && ok || bad "the four runs compiled $total units in all, the cache counted $want"
"$KC" --cache-dir "$D" verify --json >"$T/v.json" && ok || bad "verify after concurrent prewarm"
NOBJ=$(python3 -c "import json; print(json.load(open('$T/s.json'))['entries'])")
check_json "$T/v.json" "j['corrupt'] == 0 and j['checked'] == $NOBJ"

# A lock holder killed mid-compile: the waiter takes over.
D=$T/kill
"$KC" --cache-dir "$T/keyonly" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/k.json" 2>/dev/null
KEY=$(python3 -c "import json; print(json.load(open('$T/k.json'))['key'])")
mkdir -p "$D" && chmod 700 "$D"
"$HOLD" "$D" "$KEY" sm_80 >"$T/hold.out" 2>&1 &
holder=$!; pids+=($holder)
for _ in $(seq 50); do grep -q locked "$T/hold.out" 2>/dev/null && break; sleep 0.1; done
grep -q locked "$T/hold.out" && ok || bad "the holder did not take the lock: $(cat "$T/hold.out")"
KCACHE_LOCK_WAIT=60 "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/w.json" 2>"$T/w.err" &
waiter=$!; pids+=($waiter)
sleep 1.5
kill -0 $waiter 2>/dev/null && ok || bad "the waiter did not wait for the lock holder"
kill -9 $holder
wait $waiter && ok || bad "the waiter failed after the holder died: $(cat "$T/w.err")"
check_json "$T/w.json" "j['source'] == 'compiled' and j['key'] == '$KEY'"
"$KC" --cache-dir "$D" stats --json >"$T/ks.json"
check_json "$T/ks.json" "j['compiles'] == 1 and j['graphs'] == 1"
pids=()

# A failing graph: reported, the others still compiled, exit 1.  Bad manifests: exit 2.
mkdir -p "$T/m"
cp "$KDIR"/*.cu "$KDIR"/*.cuh "$KDIR"/softmax.json "$T/m/"
sed 's/"entry": "softmax_fwd"/"entry": "no_such_kernel"/' "$KDIR/softmax.json" | sed 's/"name": "softmax"/"name": "broken"/' >"$T/m/broken.json"
echo '{"graphs": ["softmax.json", "broken.json"], "archs": ["sm_80"]}' >"$T/m/manifest.json"
"$KC" --cache-dir "$T/fail" prewarm "$T/m/manifest.json" --json >"$T/f.json" 2>"$T/f.err"; rc=$?
[ $rc = 1 ] && ok || bad "a failing graph gave exit $rc, want 1"
check_json "$T/f.json" "j['compiled'] == 1 and j['failed'] == 1 and j['unit_hits'] == 0 and j['units'] == j['units_compiled']"
grep -q "no_such_kernel" "$T/f.err" && ok || bad "no NVRTC log for the failing graph: $(head -c 400 "$T/f.err")"
# A launch that does not fit its kernel (softmax_fwd takes an int; an e64 passes 8 bytes): a compile
# error naming graph, step, argument and sizes, on a CPU-only host, and nothing stored for it.
sed 's/"args": \["input:0", "output:0", "e32:C"\]/"args": ["input:0", "output:0", "e64:C"]/' "$KDIR/softmax.json" | sed 's/"name": "softmax"/"name": "misfit"/' >"$T/m/misfit.json"
echo '{"graphs": ["misfit.json"], "archs": ["sm_90", "compute_80"]}' >"$T/m/misfit.manifest"
"$KC" --cache-dir "$T/abi" prewarm "$T/m/misfit.manifest" --json >"$T/abi.json" 2>"$T/abi.err"; rc=$?
[ $rc = 1 ] && ok || bad "a misfit launch gave exit $rc, want 1"
check_json "$T/abi.json" "j['compiled'] == 0 and j['failed'] == 2"
grep -q "graph 'misfit': forward step 0 (kernel 'softmax_fwd'): argument 2 ('e64:C') passes 8 bytes, the kernel's parameter 2 takes 4" "$T/abi.err" && ok || bad "the ABI error does not say where: $(head -c 600 "$T/abi.err")"
# (its compile unit compiled soundly and may be stored: the misfit is the graph's launch, not the unit)
[ -z "$(find "$T/abi" -name '*.kce' -not -name '*.img.kce' -not -name '*.unit.kce' 2>/dev/null)" ] && ok || bad "a misfit graph was stored"
# The parameter tables are shown: every kernel of a prewarmed entry, sizes at offsets.
K=$("$KC" --cache-dir "$T/fail" ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["key"])')
"$KC" --cache-dir "$T/fail" show "$K" >"$T/show.txt" 2>&1 && ok || bad "show failed"
grep -q "softmax_fwd *(8@0 8@8 4@16)  3 parameters, 20 bytes" "$T/show.txt" && ok || bad "show lacks the parameter table: $(cat "$T/show.txt")"
"$KC" --cache-dir "$T/fail" show "$K" --json >"$T/show.json" 2>&1 && ok || bad "show --json failed"
check_json "$T/show.json" "[p['size'] for p in j[0]['parameters'][0]['params']] == [8, 8, 4]"

printf '{"graphs": [\n  "softmax.json",\n  oops ]}' >"$T/m/bad.json"
"$KC" --cache-dir "$T/fail" prewarm "$T/m/bad.json" >/dev/null 2>"$T/bad.err"; rc=$?
[ $rc = 2 ] && grep -q "bad.json:3:" "$T/bad.err" && ok || bad "bad JSON: exit $rc, $(cat "$T/bad.err")"
echo '{"graphs": ["missing.json"], "archs": ["sm_80"]}' >"$T/m/missing.json.manifest"
"$KC" --cache-dir "$T/fail" prewarm "$T/m/missing.json.manifest" >/dev/null 2>"$T/miss.err"; rc=$?
[ $rc = 2 ] && grep -q "graphs\[0\]" "$T/miss.err" && ok || bad "missing spec: exit $rc, $(cat "$T/miss.err")"
"$KC" --cache-dir "$T/fail" prewarm "$T/m/manifest.json" --arch sm_80,gfx90a >/dev/null 2>&1; rc=$?
[ $rc = 2 ] && ok || bad "bad --arch gave exit $rc"
"$KC" --cache-dir "$T/fail" prewarm >/dev/null 2>&1; rc=$?
[ $rc = 2 ] && ok || bad "no manifest gave exit $rc"

echo "test_prewarm: $((checks-fails)) passed, $fails failed"
[ "$fails" = 0 ]
