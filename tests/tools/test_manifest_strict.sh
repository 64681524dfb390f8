#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_manifest_strict.sh — manifests read strictly, through the tool as a user runs it: a field given
# twice (the second "graphs" was dropped in silence: prewarm and coverage saw softmax only), nested or
# at the top, an unknown field and a value of another type are refused with exit 2 and FILE:LINE:COL;
# the same manifest written correctly is read, both of its graphs.
#   test_manifest_strict.sh KCACHE KERNELS_DIR
set -u
KC=$1; KDIR=$2
T=$(mktemp -d /tmp/kctest-manifest-XXXXXX)
trap 'rm -rf "$T"' EXIT
export KCACHE_DIR=$T/cache
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
# refused FILE CONTENT MESSAGE: coverage and prewarm both exit 2 and say MESSAGE on stderr
refused() {
  printf '%s' "$2" >"$T/$1"
  for cmd in coverage prewarm; do
    (cd "$T" && "$KC" "$cmd" "$1" --arch sm_90) >"$T/out" 2>"$T/err"; rc=$?
    if [ $rc = 2 ] && grep -qF -- "$3" "$T/err"; then ok; else bad "$cmd $1: exit $rc, '$(head -c 400 "$T/err")' (want 2, '$3')"; fi
  done
}
cp "$KDIR"/softmax.json "$KDIR"/layer_norm.json "$KDIR"/*.cu "$KDIR"/*.cuh "$T/"
refused twice.json '{"graphs":["softmax.json"],"graphs":["layer_norm.json"], "archs": ["sm_90"]}' \
  'twice.json:1:28: field "graphs" appears twice (first at 1:2; keep one)'
refused nested.json $'{"graphs": ["softmax.json"],\n "archs": [{"t": "sm_90", "t": "sm_80"}]}' \
  'nested.json:2:27: field "t" appears twice (first at 2:13; keep one)'
refused unknown.json $'{"graphs": ["softmax.json"],\n  "arches": ["sm_90"]}' \
  'unknown.json:2:3: unknown field "arches" (known here: graphs, archs)'
refused type.json '{"graphs": "softmax.json"}' \
  'type.json:1:12: "graphs" must be a non-empty array of spec paths, not a string'
# Written correctly, both graphs are read: coverage of an empty cache lists both missing (exit 1).
printf '{"graphs": ["softmax.json", "layer_norm.json"], "archs": ["sm_90"]}' >"$T/good.json"
(cd "$T" && "$KC" coverage good.json --json) >"$T/out" 2>"$T/err"; rc=$?
if [ $rc = 1 ] && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); s=json.dumps(j); sys.exit(0 if "softmax" in s and "layer_norm" in s else 1)' "$T/out"; then ok
else bad "coverage good.json: exit $rc, $(head -c 400 "$T/out") $(head -c 300 "$T/err")"; fi
echo "test_manifest_strict: $((checks - fails))/$checks checks passed"
[ $fails = 0 ]
