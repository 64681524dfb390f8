#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_spec_names.sh — a graph's name reaches `kcache ls` (recorded in its entry when built, JSON
# too), `ls --all` says what images and unit records are, and a name from a spec that holds
# escape sequences ("\u001b[31m…", a BEL) comes out escaped, the same way, from every command that
# prints it: get (its line and its failure), explain, ls, ls --all, show, prewarm.  JSON keeps the
# name whole (escaped as JSON).  Compile-only (--arch sm_80): NVRTC, no GPU.
#   test_spec_names.sh KCACHE KERNELS_DIR
set -u
KC=$1; KDIR=$2
T=$(mktemp -d /tmp/kctest-specnames-XXXXXX)
trap 'rm -rf "$T"' EXIT
unset KCACHE_DIR KCACHE_READONLY KCACHE_DISABLE KCACHE_REMOTE
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
# No ESC (0x1b), BEL (0x07) or C1 CSI (0x9b) byte in a file.
clean() { ! LC_ALL=C grep -q "$(printf '[\033\007\233]')" "$1"; }
D=$T/c
cp "$KDIR"/dropout.cu "$KDIR"/common.cuh "$T"/
# The plain spec: its name is listed.
cp "$KDIR/dropout.json" "$T/plain.json"
"$KC" --cache-dir "$D" get "$T/plain.json" --arch sm_80 >/dev/null || bad "get plain failed"
"$KC" --cache-dir "$D" ls >"$T/ls.txt" || bad "ls failed"
grep -q " sm_80 .* dropout\$" "$T/ls.txt" || bad "ls does not name the graph: $(cat "$T/ls.txt")"
# The hostile name: same source, its name with ESC sequences and a BEL.
sed 's/"name": "dropout"/"name": "\\u001b[31mevil\\u0007\\u001b[0m"/' "$KDIR/dropout.json" | sed 's/f32:0.5/f32:0.25/g' >"$T/evil.json"
grep -q 'u001b' "$T/evil.json" || bad "the hostile spec was not made"
"$KC" --cache-dir "$D" get "$T/evil.json" --arch sm_80 >"$T/get.txt" 2>&1 || bad "get evil failed: $(cat "$T/get.txt")"
"$KC" --cache-dir "$D" get "$T/evil.json" --arch sm_80 >>"$T/get.txt" 2>&1 || bad "get evil (hit) failed"
"$KC" --cache-dir "$D" explain "$T/evil.json" --arch sm_80 >"$T/explain.txt" 2>&1 || bad "explain failed: $(cat "$T/explain.txt")"
"$KC" --cache-dir "$D" ls >"$T/ls.txt" 2>&1 || bad "ls failed"
"$KC" --cache-dir "$D" ls --all >"$T/lsall.txt" 2>&1 || bad "ls --all failed"
"$KC" --cache-dir "$D" show "$T/evil.json" --arch sm_80 >"$T/show.txt" 2>&1 || bad "show failed: $(cat "$T/show.txt")"
# A failing lookup of it: a kernel source NVRTC refuses.
printf 'extern "C" __global__ void dropout_fwd() { not C++ at all }\n' >"$T/bad.cu"
sed 's/dropout.cu/bad.cu/' "$T/evil.json" >"$T/broken.json"
"$KC" --cache-dir "$D" get "$T/broken.json" --arch sm_80 >"$T/fail.txt" 2>&1 && bad "a spec that does not compile succeeded"
printf '{"graphs": ["evil.json"], "archs": ["sm_80"]}\n' >"$T/m.json"
"$KC" --cache-dir "$D" prewarm "$T/m.json" >"$T/prewarm.txt" 2>&1 || bad "prewarm failed: $(cat "$T/prewarm.txt")"
for f in get explain ls lsall show fail prewarm; do
  clean "$T/$f.txt" || bad "$f printed control bytes: $(od -c "$T/$f.txt" | grep -m3 033)"
done
for f in get explain ls show; do
  grep -qF '\x1b[31mevil\x07\x1b[0m' "$T/$f.txt" || bad "$f does not show the name escaped: $(cat "$T/$f.txt")"
done
grep -qF '\x1b[31mevil' "$T/fail.txt" || bad "get's failure does not show the name escaped: $(cat "$T/fail.txt")"
grep -q " image cubin sm_80" "$T/lsall.txt" || bad "ls --all does not say what the image is: $(cat "$T/lsall.txt")"
grep -q " unit record of image [0-9a-f]\{32\}" "$T/lsall.txt" || bad "ls --all does not say what the unit record is"
grep -q " graph dropout\$" "$T/lsall.txt" || bad "ls --all does not name the graph"
"$KC" --cache-dir "$D" ls --json >"$T/ls.json" || bad "ls --json failed"
"$KC" --cache-dir "$D" ls --all --json >"$T/lsall.json" || bad "ls --all --json failed"
python3 - "$T/ls.json" "$T/lsall.json" <<'PY' || bad "ls --json: names or kinds wrong"
import json, sys
ls = json.load(open(sys.argv[1])); al = json.load(open(sys.argv[2]))
assert sorted(e["name"] for e in ls) == sorted(["dropout", "\x1b[31mevil\x07\x1b[0m"]), ls
kinds = sorted(set(e["kind"] for e in al))
assert kinds == ["graph", "image", "unit"], kinds
assert all(e["target"] == "sm_80" and e["image_kind"] in ("cubin", "ptx") for e in al if e["kind"] == "image"), al
assert all(len(e["image"]) == 32 for e in al if e["kind"] == "unit"), al
PY
[ "$fails" = 0 ] && echo "test_spec_names: passed"
[ "$fails" = 0 ]
