#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_pch_direct.sh — a compile that used a precompiled header writes a toolkit direct manifest
# listing the headers the PCH's creation read ([Note: a PCH's reads] in src/compile/toolkit.h):
# NVRTC read them from the PCH file, so the compile's own watch of the toolkit's tree saw none of
# them, and a manifest listing only the folders would vouch for the digest after an edit to one of
# those headers.  Two graphs whose kernels share one header set, prewarmed in one process: the
# first compile makes the PCH, the second uses it; both record a manifest, each listing the
# kernel's header (cuda_bf16.h).  With KCACHE_PCH=0 both record one too.  Also:
# the PCH's walk of the tree (for __BASE_FILE__) is not seen by any watch (a manifest lists the
# files the kernel read, not the whole tree).  Run alone (RUN_SERIAL): a watch sees every
# process's opens in the tree, so another process walking it then would be listed too (a superset: harmless).
#   test_pch_direct.sh KCACHE KERNELS_DIR
set -u
KC=$1; KDIR=$2
T=$(mktemp -d /tmp/kctest-pchdirect-XXXXXX)
trap 'rm -rf "$T"' EXIT
unset KCACHE_DIR KCACHE_READONLY KCACHE_DISABLE KCACHE_REMOTE KCACHE_PCH_DIR KCACHE_PCH_MAX_SIZE
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
for g in a b; do
  sed "s/global_norm_squared/norm_$g/g" "$KDIR/global_norm.cu" > "$T/$g.cu"
  sed -e "s/\"global_norm\"/\"norm_$g\"/" -e "s/global_norm.cu/$g.cu/" -e "s/global_norm_squared/norm_$g/" \
    "$KDIR/global_norm.json" > "$T/$g.json"
done
printf '{"graphs": ["a.json", "b.json"], "archs": ["sm_90"]}\n' > "$T/m.json"
if ! "$KC" toolchain >/dev/null 2>&1; then echo "no NVRTC: skipped"; exit 77; fi

# prewarm PCH: the direct manifests written, and the log
prewarm() {
  rm -rf "$T/c"
  KCACHE_PCH=$1 KCACHE_LOG=compile "$KC" --cache-dir "$T/c" prewarm -j 1 "$T/m.json" > "$T/out" 2> "$T/log"
  local rc=$?
  [ "$rc" = 0 ] || bad "prewarm (KCACHE_PCH=$1) exit $rc: $(tail -3 "$T/log")"
  ls "$T/c/v1/toolkits/" | grep -c '^direct-'
}
n=$(prewarm 1)
if ! grep -q "pch: used" "$T/log"; then
  echo "no PCH used (NVRTC without precompiled headers?): skipped"; exit 77
fi
[ "$n" = 2 ] || bad "with a PCH used, $n direct manifests (want 2: the compile that made it, the one that used it)"
for f in "$T"/c/v1/toolkits/direct-*; do
  files=$(grep -c '^f ' "$f"); total=$(find "$(sed -n 's/^root //p' "$f")" -type f | wc -l)
  [ "$files" -gt 0 ] || bad "$f lists no file read (the PCH's reads were not credited)"
  [ "$files" -lt $((total / 2)) ] || bad "$f lists $files of the tree's $total files (the PCH's walk was seen)"
  # The kernel's own header (what it reads beyond it varies; another process's opens may add more).
  grep -q '^f [0-9a-f]* cuda_bf16.h$' "$f" || bad "$f does not list cuda_bf16.h (the PCH's reads were not credited)"
done
n=$(prewarm 0)
[ "$n" = 2 ] || bad "without PCH, $n direct manifests (want 2)"
[ "$fails" = 0 ] && echo "test_pch_direct: OK" || exit 1
