#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_targets_cli.sh — [Note: target check] as a user meets it: every target named on the
# command line or in a manifest is checked before any work, and an unknown one (sm_999; sm_37,
# which kcache's table knows but CUDA 12 and 13 do not compile) fails with exit 2 and one line
# naming the target, where it came from (--arch, manifest FILE, archs[i]) and the supported
# targets — nothing compiled, nothing stored, no bundle written.  `kcache toolchain --targets`
# and --json list what this host's NVRTC reports (compared with NVRTC's own answer through
# ctypes), or kcache's table with KCACHE_NVRTC naming nothing.
#   test_targets_cli.sh KCACHE KERNELS_DIR
set -u
KC=$1; KDIR=$2
T=$(mktemp -d /tmp/kctest-targets-XXXXXX)
trap 'rm -rf "$T"' EXIT
unset KCACHE_NVRTC KCACHE_TOOLCHAIN KCACHE_DIR KCACHE_READONLY KCACHE_DISABLE KCACHE_REMOTE
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
jget() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
D=$T/cache
"$KC" --cache-dir "$D" stats --zero >/dev/null 2>&1 # an empty cache: a read of a missing one adds a note on stderr
SPEC=$KDIR/softmax.json

# run WANT_RC NAME WHERE CMD...: the exit code, one line on stderr naming NAME and WHERE and the list.
run() {
  local want=$1 name=$2 where=$3; shift 3
  "$KC" --cache-dir "$D" "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ "$rc" != "$want" ]; then bad "$* -> exit $rc, want $want: $(cat "$T/err")"; return; fi
  if ! grep -qF "unknown target '$name' ($where" "$T/err" || ! grep -qF "see 'kcache toolchain --targets'" "$T/err" \
     || ! grep -q " sm_90 " "$T/err" || grep -q "(KC_" "$T/err" || [ "$(wc -l <"$T/err")" != 1 ]; then
    bad "$*: message: $(cat "$T/err")"
  else ok; fi
}

# nothing_done: no compile counted, nothing stored.
nothing_done() {
  "$KC" --cache-dir "$D" stats --json >"$T/s.json" 2>/dev/null || { bad "stats failed"; return; }
  [ "$(jget "$T/s.json" 'j["compiles"] + j["puts"] + j["entries"]')" = 0 ] && ok || bad "$1: work done: $(cat "$T/s.json")"
}

manifest() { printf '{"graphs": ["%s"], "archs": ["sm_90", "%s"]}\n' "$SPEC" "$1" >"$T/m-$1.json"; }

"$KC" --cache-dir "$D" toolchain --json >"$T/tc.json" || bad "toolchain --json failed"
if [ "$(jget "$T/tc.json" 'j["local"] is None')" = True ]; then
  echo "no NVRTC on this host: skipped"; exit 77
fi
LIB=$(jget "$T/tc.json" 'j["local"]["path"]')

# The list is NVRTC's own.
python3 - "$LIB" >"$T/nvrtc.txt" <<'PY' || bad "NVRTC could not be asked through ctypes"
import ctypes, sys
l = ctypes.CDLL(sys.argv[1]); n = ctypes.c_int()
assert l.nvrtcGetNumSupportedArchs(ctypes.byref(n)) == 0
a = (ctypes.c_int * n.value)(); assert l.nvrtcGetSupportedArchs(a) == 0
print(" ".join(str(x) for x in a))
PY
NV=$(cat "$T/nvrtc.txt")
[ "$(jget "$T/tc.json" '" ".join(str(x) for x in j["targets"]["archs"])')" = "$NV" ] \
  && [ "$(jget "$T/tc.json" 'j["targets"]["from"]')" = nvrtc ] && ok || bad "--json targets: $(jget "$T/tc.json" 'j["targets"]') vs NVRTC $NV"
"$KC" --cache-dir "$D" toolchain --targets >"$T/targets.txt" || bad "toolchain --targets failed"
head -n1 "$T/targets.txt" | grep -q '^# NVRTC ' && ok || bad "--targets header: $(head -n1 "$T/targets.txt")"
[ "$(grep -E '^sm_[0-9]+$' "$T/targets.txt" | sed 's/sm_//' | tr '\n' ' ' | sed 's/ $//')" = "$NV" ] && ok \
  || bad "--targets sm_XY lines differ from NVRTC's $NV: $(tr '\n' ' ' <"$T/targets.txt")"
grep -qx 'sm_90a' "$T/targets.txt" && grep -qx 'compute_90' "$T/targets.txt" && ! grep -qx 'sm_89a' "$T/targets.txt" \
  && ok || bad "--targets forms: $(tr '\n' ' ' <"$T/targets.txt")"
case " $NV " in *" 37 "*) echo "this NVRTC compiles sm_37: the too-old case is skipped"; OLD="";; *) OLD=sm_37;; esac

for X in sm_999 $OLD; do
  run 2 "$X" "--arch" explain "$SPEC" --arch "$X"
  run 2 "$X" "--arch" prewarm "$KDIR/manifest.json" --arch "$X"
  run 2 "$X" "--arch" coverage "$KDIR/manifest.json" --arch "sm_90,$X"
  run 2 "$X" "--arch" export "$T/b-$X.kcb" --manifest "$KDIR/manifest.json" --arch "$X"
  [ ! -e "$T/b-$X.kcb" ] && ok || bad "export --manifest --arch $X wrote a bundle"
  manifest "$X"
  run 2 "$X" "manifest " prewarm "$T/m-$X.json"
  run 2 "$X" "manifest " coverage "$T/m-$X.json"
  run 2 "$X" "manifest " export "$T/m-$X.kcb" --manifest "$T/m-$X.json"
  grep -qF "archs[1])" "$T/err" && ok || bad "manifest place: $(cat "$T/err")"
  nothing_done "$X"
done
run 2 sm_999 "--arch" get "$SPEC" --arch sm_999
run 2 sm_999 "--arch" export "$T/all.kcb" --arch sm_999
run 2 sm_999 "--arch" show "$SPEC" --arch sm_999   # a stored variant: checked against kcache's table
run 2 sm_999 "--arch" demo --manifest "$KDIR/manifest.json" --arch sm_999           # before its scratch cache compiles anything
# sm_37 is a target kcache knows (a reader may load what an older toolchain stored): get looks it
# up, and refuses it before a compile.
[ -n "$OLD" ] && run 2 "$OLD" "to compile" get "$SPEC" --arch "$OLD"
nothing_done "get"
# A bad name is an error too, with the grammar's reason.
run 2 sm_9x "--arch" get "$SPEC" --arch sm_9x

# Without NVRTC: kcache's table.
NONE=$T/nowhere/libnvrtc.so.13
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$T/c2" toolchain --targets >"$T/t2.txt" || bad "toolchain --targets without NVRTC"
head -n1 "$T/t2.txt" | grep -q "^# kcache's own table" && grep -qx sm_37 "$T/t2.txt" && grep -qx sm_120 "$T/t2.txt" \
  && ok || bad "--targets without NVRTC: $(tr '\n' ' ' <"$T/t2.txt")"
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$T/c2" toolchain --json >"$T/t2.json" || bad "toolchain --json without NVRTC"
[ "$(jget "$T/t2.json" 'j["targets"]["from"]')" = table ] && ok || bad "--json without NVRTC: $(cat "$T/t2.json")"
export KCACHE_NVRTC=$NONE
for X in sm_999 sm_20; do
  run 2 "$X" "--arch" get "$SPEC" --arch "$X"
  grep -qF "kcache's table" "$T/err" && ok || bad "no NVRTC: the table is not the list: $(cat "$T/err")"
  run 2 "$X" "--arch" prewarm "$KDIR/manifest.json" --arch "$X"
done
unset KCACHE_NVRTC

echo "test_targets_cli.sh: $checks checks, $fails failed"
[ "$fails" = 0 ]
