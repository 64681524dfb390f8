#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_coverage.sh — coverage a fleet can check, and export refusing a partial bundle (issue 20, item 1):
#  - `kcache coverage` on a cache prewarmed for sm_90 of a manifest asking sm_80,sm_90: the exact
#    missing list (every graph for sm_80), each with explain's reason, exit 1; after prewarming
#    sm_80 too, exit 0; an image removed from the cache makes its graph `missing`, naming the image;
#  - --device N: what a lookup on that GPU accepts (the CUDA driver double: an 8.6 device is
#    covered by sm_80 cubins, a 7.5 one is not); without a GPU, an error that says to use --arch;
#  - `export --manifest` of the partial cache is refused (exit 1, nothing written, every missing
#    graph x target listed); so is the empty bundle of a manifest whose specs changed; with
#    --allow-partial both are written and the missing ones still listed;
#  - `import` prints the coverage a bundle brings (complete, or partial with what is missing), in
#    text and --json; a bundle exported without a manifest (format v1, as every older bundle)
#    still imports, its coverage "not recorded".
#   test_coverage.sh KCACHE KERNELS_DIR CUDA_DOUBLE_LIB
set -u
KC=$1; KDIR=$2; DOUBLE=$3
T=$(mktemp -d /tmp/kctest-coverage-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
jq_() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
check_json() { if jq_ "$1" "$2"; then ok; else bad "$2 ; got: $(head -c 900 "$1")"; fi; }
# expect_rc RC CMD...: run with stdout to $T/out, stderr to $T/err
expect_rc() { local want=$1; shift; "$@" >"$T/out" 2>"$T/err"; local rc=$?; [ $rc = "$want" ] && ok || bad "exit $rc (want $want): $*: $(head -c 600 "$T/err")"; }

# A small manifest of two graphs for two targets, in a folder of its own.
K=$T/k; mkdir -p "$K"
cp "$KDIR"/*.cu "$KDIR"/*.cuh "$KDIR/softmax.json" "$KDIR/layer_norm.json" "$K/"
echo '{"graphs": ["softmax.json", "layer_norm.json"], "archs": ["sm_80", "sm_90"]}' >"$K/m.json"
D=$T/cache
"$KC" --cache-dir "$D" prewarm "$K/m.json" --arch sm_90 >/dev/null 2>"$T/p.err" && ok || bad "prewarm sm_90: $(tail -3 "$T/p.err")"

# Partly prewarmed: exactly the sm_80 variants are missing, each with explain's reason; exit 1.
expect_rc 1 "$KC" --cache-dir "$D" coverage "$K/m.json" --json
cp "$T/out" "$T/c1.json"
check_json "$T/c1.json" "j['covered'] is False and j['targets'] == ['sm_80', 'sm_90'] and j['graphs'] == 2 and j['variants'] == 4 and j['hits'] == 2"
check_json "$T/c1.json" "sorted((m['graph'], m['target']) for m in j['missing']) == [('layer_norm', 'sm_80'), ('softmax', 'sm_80')]"
check_json "$T/c1.json" "all('nearest' in m['reason'] and 'arch' in m['reason'] for m in j['missing'])"
check_json "$T/c1.json" "[(r['graph'], r['target'], r['result']) for r in j['results']] == [('softmax', 'sm_80', 'missing'), ('softmax', 'sm_90', 'hit'), ('layer_norm', 'sm_80', 'missing'), ('layer_norm', 'sm_90', 'hit')] and all(len(r['key']) == 32 for r in j['results'])"
expect_rc 1 "$KC" --cache-dir "$D" coverage "$K/m.json"
grep -q "^softmax  *sm_80  *missing  *not stored; nearest" "$T/out" && grep -q "^layer_norm  *sm_90  *hit" "$T/out" \
  && grep -q "incomplete: 2 of 4 variants covered, 2 missing" "$T/out" && ok || bad "coverage text: $(cat "$T/out")"
# --arch chooses the targets: sm_90 alone is covered.
expect_rc 0 "$KC" --cache-dir "$D" coverage "$K/m.json" --arch sm_90
grep -q "complete: 2 of 2 variants covered" "$T/out" && ok || bad "coverage --arch sm_90: $(cat "$T/out")"

# export --manifest of that cache: refused, nothing written, every missing graph x target listed.
expect_rc 1 "$KC" --cache-dir "$D" export "$T/partial.kcb" --manifest "$K/m.json"
[ ! -e "$T/partial.kcb" ] && ok || bad "a refused export wrote $T/partial.kcb"
grep -q "missing softmax sm_80: not stored" "$T/err" && grep -q "missing layer_norm sm_80: not stored" "$T/err" \
  && grep -q "refused: 2 of 4 variants" "$T/err" && ! grep -q "sm_90:" "$T/err" && ok || bad "refusal: $(cat "$T/err")"
# --allow-partial writes what there is and still lists what is missing.
expect_rc 0 "$KC" --cache-dir "$D" export "$T/partial.kcb" --manifest "$K/m.json" --allow-partial --json
cp "$T/out" "$T/ep.json"
grep -q "missing softmax sm_80" "$T/err" && grep -q "missing layer_norm sm_80" "$T/err" && ok || bad "--allow-partial listed nothing: $(cat "$T/err")"
check_json "$T/ep.json" "j['graphs'] == 2 and j['coverage']['covered'] is False and len(j['coverage']['missing']) == 2"
# Its import says what it brings and what it lacks.
expect_rc 0 "$KC" --cache-dir "$T/gpu1" import "$T/partial.kcb"
grep -q "^coverage: .*m.json: 2 graphs x 2 targets (sm_80, sm_90): partial, 2 of 4 missing: softmax sm_80, layer_norm sm_80$" "$T/out" \
  && ok || bad "import of a partial bundle: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$T/gpu1b" import "$T/partial.kcb" --json
check_json "$T/out" "j['graphs_written'] == 2 and j['coverage']['complete'] is False and j['coverage']['targets'] == ['sm_80', 'sm_90'] and sorted((m['graph'], m['target']) for m in j['coverage']['missing']) == [('layer_norm', 'sm_80'), ('softmax', 'sm_80')]"

# The specs changed (another input dtype): no key matches, so the bundle would be empty: refused the same way.
sed '/"inputs"/s/"f32"/"f16"/' "$KDIR/softmax.json" >"$K/softmax2.json"
echo '{"graphs": ["softmax2.json"], "archs": ["sm_90"]}' >"$K/changed.json"
expect_rc 1 "$KC" --cache-dir "$D" export "$T/empty.kcb" --manifest "$K/changed.json"
[ ! -e "$T/empty.kcb" ] && grep -q "missing softmax sm_90: not stored; nearest .* differs in: .*inputs\[0\].dtype" "$T/err" \
  && grep -q "refused: 1 of 1 variants" "$T/err" && ok || bad "empty export: $(ls "$T"), $(cat "$T/err")"
expect_rc 0 "$KC" --cache-dir "$D" export "$T/empty.kcb" --manifest "$K/changed.json" --allow-partial --json
check_json "$T/out" "j['graphs'] == 0 and j['coverage']['hits'] == 0"

# After prewarming the rest: covered, exit 0; the export is whole and its import says so.
"$KC" --cache-dir "$D" prewarm "$K/m.json" >/dev/null 2>&1 && ok || bad "prewarm of the rest"
expect_rc 0 "$KC" --cache-dir "$D" coverage "$K/m.json" --json
check_json "$T/out" "j['covered'] is True and j['missing'] == [] and j['hits'] == 4 and all(r['variant'] == r['target'] for r in j['results'])"
expect_rc 0 "$KC" --cache-dir "$D" export "$T/whole.kcb" --manifest "$K/m.json"
grep -q "covers .*m.json: 2 graphs x 2 targets: complete" "$T/out" && ok || bad "whole export: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$T/gpu2" import "$T/whole.kcb"
grep -q "^coverage: .*m.json: 2 graphs x 2 targets (sm_80, sm_90): complete$" "$T/out" && ok || bad "import of a whole bundle: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$T/gpu2" coverage "$K/m.json"

# A removed image makes its graph missing, naming the image (the graph entry is still there).
cp -a "$D" "$T/noimg"
"$KC" --cache-dir "$T/noimg" explain "$K/softmax.json" --arch sm_80 --json >"$T/x.json" 2>/dev/null
KEY=$(python3 -c "import json; print(json.load(open('$T/x.json'))['key'])")
"$KC" --cache-dir "$T/noimg" show "$KEY" --json >"$T/show.json" 2>/dev/null
IMG=$(python3 -c "import json; print([v for v in json.load(open('$T/show.json')) if v['variant'] == 'sm_80'][0]['images'][0]['id'])")
rm -f "$T/noimg"/v1/*/"$IMG".img.kce
[ -n "$IMG" ] && ok || bad "no image id from show: $(head -c 600 "$T/show.json")"
expect_rc 1 "$KC" --cache-dir "$T/noimg" coverage "$K/m.json" --json
check_json "$T/out" "[(m['graph'], m['target']) for m in j['missing']] == [('softmax', 'sm_80')] and 'is stored, but image $IMG' in j['missing'][0]['reason'] and 'missing' in j['missing'][0]['reason']"

# --device: what a lookup on that GPU accepts (the driver double stands in for the GPU).
KCACHE_CUDA_DRIVER=$DOUBLE KCD_DEVICES=8.6 expect_rc 0 "$KC" --cache-dir "$D" coverage "$K/m.json" --device 0 --json
check_json "$T/out" "j['device'] == 0 and j['targets'] == ['sm_86'] and j['covered'] is True and all(r['variant'] == 'sm_80' for r in j['results'])"
KCACHE_CUDA_DRIVER=$DOUBLE KCD_DEVICES=7.5 expect_rc 1 "$KC" --cache-dir "$D" coverage "$K/m.json" --device 0 --json
check_json "$T/out" "j['targets'] == ['sm_75'] and j['hits'] == 0 and all('no variant a 7.5 device loads is stored' in m['reason'] for m in j['missing'])"
KCACHE_CUDA_DRIVER=$DOUBLE KCD_DEVICES= expect_rc 1 "$KC" --cache-dir "$D" coverage "$K/m.json" --device 0
grep -q -- "--device 0: no such GPU here .*--arch" "$T/err" && ok || bad "--device without a GPU: $(cat "$T/err")"
expect_rc 2 "$KC" --cache-dir "$D" coverage "$K/m.json" --device 0 --arch sm_80
expect_rc 2 "$KC" --cache-dir "$D" coverage
echo '{"graphs": ["softmax.json"]}' >"$K/noarch.json"
expect_rc 2 "$KC" --cache-dir "$D" coverage "$K/noarch.json"

# A bundle without a coverage record (no --manifest: format v1, as every bundle before) still
# imports; its coverage is "not recorded".
expect_rc 0 "$KC" --cache-dir "$D" export "$T/v1.kcb" --arch sm_80
python3 -c "import sys; b=open('$T/v1.kcb','rb').read(); sys.exit(0 if b[8:10] == bytes([1, 0]) else 1)" && ok || bad "an export without a manifest is not v1"
python3 -c "import sys; b=open('$T/whole.kcb','rb').read(); sys.exit(0 if b[8:10] == bytes([4, 0]) else 1)" && ok || bad "a manifest export is not v4 (sealed records)"
expect_rc 0 "$KC" --cache-dir "$T/gpu3" import "$T/v1.kcb"
grep -q "^coverage: not recorded" "$T/out" && ok || bad "import of a v1 bundle: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$T/gpu3b" import "$T/v1.kcb" --json
check_json "$T/out" "j['coverage'] is None and j['graphs_written'] == 2"

echo "test_coverage: $checks checks, $fails failed"
[ $fails = 0 ]
