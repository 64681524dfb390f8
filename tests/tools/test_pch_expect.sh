#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_pch_expect.sh — a prewarm makes a precompiled header only for a header set it expects to
# compile three times or more ([Note: precompiled headers] in src/compile/pch.c; the count is
# src/graph/expect.c's, announced at the prewarm's first compile).  Cold prewarms of copies of
# the bundled global_norm graph (cuda_bf16.h), each into an empty cache, the library's log read:
#   a, b, d for sm_90  three units, one header set: the PCH made at the first compile, used by the others;
#   a, b for sm_90     two units, one header set: no PCH (the second, beside the first, would wait for it);
#   a, c for sm_90     c's unit is a's (same file, source, entry): compiled once, so counted once —
#                      no PCH (counting per graph would make one that nothing uses);
#   a for sm_80,sm_90  one compile per target, a header set each: no PCH.
# Without the count (every first compile of a prewarm making its PCH) the last three make 1, 1 and 2.
#   test_pch_expect.sh KCACHE KERNELS_DIR
set -u
KC=$1; KDIR=$2
T=$(mktemp -d /tmp/kctest-pchexpect-XXXXXX)
trap 'rm -rf "$T"' EXIT
unset KCACHE_DIR KCACHE_READONLY KCACHE_DISABLE KCACHE_REMOTE KCACHE_PCH_DIR KCACHE_PCH_MAX_SIZE
export TMPDIR=$T
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
if ! "$KC" toolchain >/dev/null 2>&1; then echo "no NVRTC: skipped"; exit 77; fi
for g in a b d; do
  sed "s/global_norm_squared/norm_$g/g" "$KDIR/global_norm.cu" > "$T/$g.cu"
  sed -e "s/\"global_norm\"/\"norm_$g\"/" -e "s/global_norm.cu/$g.cu/" -e "s/global_norm_squared/norm_$g/" \
    "$KDIR/global_norm.json" > "$T/$g.json"
done
sed -e 's/"norm_a"/"norm_c"/' "$T/a.json" > "$T/c.json" # another graph, a's compile unit

# prewarm NAME GRAPHS ARCHS: cold, into an empty cache; sets CREATED, USED, COMPILED
prewarm() {
  printf '{"graphs": [%s], "archs": [%s]}\n' "$2" "$3" > "$T/$1.json"
  rm -rf "$T/c"
  KCACHE_PCH=1 KCACHE_LOG=compile "$KC" --cache-dir "$T/c" prewarm -j 2 "$T/$1.json" > "$T/$1.out" 2> "$T/$1.log"
  local rc=$?
  [ "$rc" = 0 ] || bad "prewarm $1 exit $rc: $(tail -3 "$T/$1.log")"
  CREATED=$(grep -c "pch: created" "$T/$1.log")
  USED=$(grep -c "pch: used" "$T/$1.log")
  COMPILED=$(grep -c "compiled .* entries) for sm_" "$T/$1.log")
}
prewarm abd '"a.json", "b.json", "d.json"' '"sm_90"'
if ! grep -q "pch: on" "$T/abd.log"; then echo "NVRTC without precompiled headers: skipped"; exit 77; fi
[ "$CREATED" = 1 ] && [ "$USED" = 2 ] || bad "a, b, d: $CREATED created, $USED used (want 1, 2)"
prewarm ab '"a.json", "b.json"' '"sm_90"'
[ "$COMPILED" = 2 ] && [ "$CREATED" = 0 ] || bad "a, b: $COMPILED compiles, $CREATED PCH created (want 2, 0)"
prewarm ac '"a.json", "c.json"' '"sm_90"'
[ "$COMPILED" = 1 ] || bad "a, c: $COMPILED compiles (want 1: one unit)"
[ "$CREATED" = 0 ] || bad "a, c: $CREATED PCH created for one compile (want 0)"
prewarm a2 '"a.json"' '"sm_80", "sm_90"'
[ "$COMPILED" = 2 ] || bad "a for two targets: $COMPILED compiles (want 2)"
[ "$CREATED" = 0 ] || bad "a for two targets: $CREATED PCH created (want 0: each set compiled once)"
leftover=$(find "$T" -maxdepth 1 -name 'kcache-pch-*' | wc -l)
[ "$leftover" = 0 ] || bad "$leftover PCH folders left after the prewarms exited"
[ "$fails" = 0 ] && echo "test_pch_expect: OK" || exit 1
