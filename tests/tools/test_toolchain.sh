#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_toolchain.sh — the toolchain's identity end to end, as a user meets it:
#  - `kcache toolchain` prints the build-id binutils' readelf reads from this host's libnvrtc;
#  - a warm `kcache get` opens no file named libnvrtc* (strace; the same check sees the cold
#    get's load, so it can fail);
#  - a byte-identical copy under another name and folder (KCACHE_NVRTC) has the same key;
#  - KCACHE_NVRTC naming nothing: stored graphs are disk hits, a new one fails naming KCACHE_NVRTC;
#  - a bundle imported on such a host hits (import records the toolchain);
#  - another build of the same version (another build-id) is another key; with two recorded
#    and no NVRTC kcache refuses to guess, and a pin (KCACHE_TOOLCHAIN or --pin) decides;
#  - a pin that is not the local NVRTC never compiles;
#  - a host without the toolkit's headers keys toolkit graphs by the digest the cache recorded
#    (or KCACHE_TOOLKIT_HEADERS), and a miss there says what is missing.
#   test_toolchain.sh KCACHE KERNELS_DIR
set -u
KC=$1; KDIR=$2
T=$(mktemp -d /tmp/kctest-toolchain-XXXXXX)
trap 'rm -rf "$T"' EXIT
unset KCACHE_NVRTC KCACHE_TOOLCHAIN KCACHE_DIR KCACHE_READONLY KCACHE_DISABLE KCACHE_REMOTE
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
jq_() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
jget() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
check_json() { if jq_ "$1" "$2"; then ok; else bad "$2 ; got: $(head -c 600 "$1")"; fi; }
NONE=$T/nowhere/libnvrtc.so.13
D=$T/cache

# This host's identity, as binutils reads it.
"$KC" --cache-dir "$D" toolchain --json >"$T/tc.json" && ok || bad "kcache toolchain failed"
if jq_ "$T/tc.json" 'j["local"] is None'; then
  echo "no NVRTC on this host ($(jget "$T/tc.json" 'j["local_error"]')): skipped"; exit 77
fi
LIB=$(jget "$T/tc.json" 'j["local"]["path"]')
ID=$(jget "$T/tc.json" 'j["local"]["id"]')
check_json "$T/tc.json" 'j["local"]["id"].startswith("build-id:") and j["keys_use"]["from"] == "local" and j["recorded"] == []'
if command -v readelf >/dev/null; then
  BID=$(readelf -n "$LIB" | sed -n 's/^ *Build ID: *//p' | head -n1)
  [ -n "$BID" ] && [ "build-id:$BID" = "$ID" ] && ok || bad "readelf says '$BID', kcache '$ID'"
else
  echo "note: readelf (binutils) missing: the build-id is not cross-checked here (tools/deps.sh installs it)"
fi
"$KC" --cache-dir "$D" toolchain >"$T/tc.txt" && grep -q "^local *$ID  nvrtc" "$T/tc.txt" && grep -q "$LIB" "$T/tc.txt" \
  && ok || bad "plain toolchain output: $(cat "$T/tc.txt")"

# Compile and store, then a warm get.
"$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/a.json" 2>"$T/a.err" || bad "first get: $(cat "$T/a.err")"
check_json "$T/a.json" 'j["source"] == "compiled"'
KEY=$(jget "$T/a.json" 'j["key"]')
"$KC" --cache-dir "$D" toolchain --json >"$T/tc2.json"
check_json "$T/tc2.json" "[r['id'] for r in j['recorded']] == ['$ID']"

# A warm get opens no libnvrtc* file; the same check sees a cold get load it.
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
  # LeakSanitizer cannot run under ptrace (the sanitizer build would abort): off for these two runs only.
  NOLSAN="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  ASAN_OPTIONS=$NOLSAN strace -f -e trace=open,openat,openat2 -o "$T/warm.trace" "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/w.json" 2>/dev/null
  check_json "$T/w.json" 'j["source"] == "disk"'
  if grep -q 'libnvrtc' "$T/warm.trace"; then bad "a warm get opened: $(grep libnvrtc "$T/warm.trace" | head -3)"; else ok; fi
  grep -q 'openat' "$T/warm.trace" && ok || bad "strace saw no openat at all: the check proves nothing"
  ASAN_OPTIONS=$NOLSAN strace -f -e trace=open,openat,openat2 -o "$T/cold.trace" "$KC" --cache-dir "$T/cold" get "$KDIR/softmax.json" --arch sm_80 >/dev/null 2>&1
  grep -q 'libnvrtc.*= [0-9]' "$T/cold.trace" && ok || bad "the check did not see a cold get (a compile) open libnvrtc"
else
  echo "note: strace missing or not permitted: the no-open check is skipped (tools/deps.sh installs strace)"
fi

# A byte-identical copy under another name and folder: the same key, a disk hit.
mkdir -p "$T/x" && cp "$LIB" "$T/x/libfoo.so"
KCACHE_NVRTC=$T/x/libfoo.so "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/c.json" 2>"$T/c.err" \
  || bad "get with the copy: $(cat "$T/c.err")"
check_json "$T/c.json" "j['key'] == '$KEY' and j['source'] == 'disk'"
KCACHE_NVRTC=$T/x/libfoo.so "$KC" --cache-dir "$D" toolchain --json >"$T/tcc.json"
check_json "$T/tcc.json" "j['local']['id'] == '$ID' and j['local']['path'].endswith('/x/libfoo.so') and j['local']['version'] == ''"

# No NVRTC at all: stored graphs hit, a new one fails naming KCACHE_NVRTC.
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/n.json" 2>"$T/n.err" \
  || bad "no NVRTC: a stored graph did not hit: $(cat "$T/n.err")"
check_json "$T/n.json" "j['key'] == '$KEY' and j['source'] == 'disk'"
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$D" get "$KDIR/dropout.json" --arch sm_80 >/dev/null 2>"$T/n2.err"; rc=$?
[ $rc = 1 ] && grep -q "KCACHE_NVRTC" "$T/n2.err" && grep -q "KC_ENONVRTC" "$T/n2.err" && ok \
  || bad "no NVRTC, a new graph: exit $rc, $(cat "$T/n2.err")"
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$D" toolchain --json >"$T/tcn.json"
check_json "$T/tcn.json" "j['local'] is None and 'KCACHE_NVRTC' in j['local_error'] and j['keys_use'] == {'id': '$ID', 'from': 'recorded'}"

# A bundle made here, imported on a host without NVRTC: every graph hits.
"$KC" --cache-dir "$D" export "$T/b.kcb" --json >/dev/null 2>"$T/e.err" && ok || bad "export: $(cat "$T/e.err")"
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$T/fresh" get "$KDIR/softmax.json" --arch sm_80 >/dev/null 2>"$T/f.err"; rc=$?
[ $rc = 1 ] && grep -q "records no toolchain" "$T/f.err" && ok || bad "an empty cache without NVRTC: exit $rc, $(cat "$T/f.err")"
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$T/fresh" import "$T/b.kcb" >/dev/null 2>"$T/i.err" && ok || bad "import: $(cat "$T/i.err")"
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$T/fresh" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/f.json" 2>"$T/f.err" \
  || bad "imported, no NVRTC: $(cat "$T/f.err")"
check_json "$T/f.json" "j['key'] == '$KEY' and j['source'] == 'disk'"

# Another build of the same version (the same bytes, another build-id): another key.
mkdir -p "$T/y"
python3 - "$LIB" "$T/y/libnvrtc.so.13" "${ID#build-id:}" <<'EOF'
import sys
src, dst, bid = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
b = bytearray(open(src, 'rb').read())
at = b.find(bid, 0, 65536)
assert at > 0, "build-id not found in the first 64 KiB"
b[at + len(bid) - 1] ^= 0xff
open(dst, 'wb').write(b)
EOF
KCACHE_NVRTC=$T/y/libnvrtc.so.13 "$KC" --cache-dir "$D" toolchain --json >"$T/tcy.json"
ID2=$(jget "$T/tcy.json" 'j["local"]["id"]')
[ -n "$ID2" ] && [ "$ID2" != "$ID" ] && ok || bad "the other build's identity: '$ID2'"
KCACHE_NVRTC=$T/y/libnvrtc.so.13 "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/y.json" 2>"$T/y.err" \
  || bad "get with the other build: $(cat "$T/y.err")"
check_json "$T/y.json" "j['key'] != '$KEY' and j['source'] == 'compiled'"
KEY2=$(jget "$T/y.json" 'j["key"]')
# Two recorded, none local: no guess; a pin decides.
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 >/dev/null 2>"$T/two.err"; rc=$?
[ $rc = 1 ] && grep -q "records 2 toolchains" "$T/two.err" && grep -q "$ID" "$T/two.err" && grep -q "$ID2" "$T/two.err" \
  && grep -q "KCACHE_TOOLCHAIN" "$T/two.err" && ok || bad "two recorded, no NVRTC: exit $rc, $(cat "$T/two.err")"
KCACHE_NVRTC=$NONE KCACHE_TOOLCHAIN=$ID "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/p.json" 2>"$T/p.err" \
  || bad "pinned by KCACHE_TOOLCHAIN: $(cat "$T/p.err")"
check_json "$T/p.json" "j['key'] == '$KEY' and j['source'] == 'disk'"
"$KC" --cache-dir "$D" toolchain --pin "$ID2" >/dev/null && ok || bad "toolchain --pin"
KCACHE_NVRTC=$NONE "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/p2.json" 2>"$T/p2.err" \
  || bad "pinned in the record: $(cat "$T/p2.err")"
check_json "$T/p2.json" "j['key'] == '$KEY2' and j['source'] == 'disk'"
# A pin that is not the local NVRTC: hits, but a miss never compiles with the wrong compiler.
"$KC" --cache-dir "$D" stats --json >"$T/s1.json"
"$KC" --cache-dir "$D" get "$KDIR/dropout.json" --arch sm_80 >/dev/null 2>"$T/pm.err"; rc=$?
[ $rc = 1 ] && grep -q "cannot compile" "$T/pm.err" && grep -q -- "--unpin" "$T/pm.err" && ok || bad "pinned elsewhere, a miss: exit $rc, $(cat "$T/pm.err")"
"$KC" --cache-dir "$D" stats --json >"$T/s2.json"
[ "$(jget "$T/s1.json" 'j["entries"]')" = "$(jget "$T/s2.json" 'j["entries"]')" ] && ok || bad "a refused compile stored something"
"$KC" --cache-dir "$D" toolchain --unpin >/dev/null && ok || bad "toolchain --unpin"
"$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 --json >"$T/u.json" 2>/dev/null
check_json "$T/u.json" "j['key'] == '$KEY' and j['source'] == 'disk'"
# Usage errors.
"$KC" --cache-dir "$D" toolchain --pin nonsense >/dev/null 2>&1; [ $? = 2 ] && ok || bad "--pin nonsense is not a usage error"
"$KC" --cache-dir "$D" toolchain --bogus >/dev/null 2>&1; [ $? = 2 ] && ok || bad "--bogus is not a usage error"
KCACHE_TOOLCHAIN=bogus "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_80 >/dev/null 2>"$T/b.err"; rc=$?
[ $rc = 1 ] && grep -q "KCACHE_TOOLCHAIN" "$T/b.err" && ok || bad "KCACHE_TOOLCHAIN=bogus: exit $rc, $(cat "$T/b.err")"

# The toolkit's headers on a host without them: the digest the cache recorded when it stored
# such entries keys them (a hit), a miss says what is missing, and KCACHE_TOOLKIT_HEADERS pins.
H=$T/tk
"$KC" --cache-dir "$H" get "$KDIR/rmsnorm_bf16.json" --arch sm_80 --json >"$T/tk1.json" 2>"$T/tk1.err" \
  || bad "toolkit graph: $(cat "$T/tk1.err")"
check_json "$T/tk1.json" "j['source'] == 'compiled'"
TKKEY=$(jget "$T/tk1.json" 'j["key"]')
"$KC" --cache-dir "$H" toolchain --json >"$T/tk.json"
check_json "$T/tk.json" "len(j['toolkit_headers']) == 32 and j['toolkit_headers_recorded'] == [j['toolkit_headers']]"
HID=$(jget "$T/tk.json" 'j["toolkit_headers"]')
KCACHE_CUDA_INCLUDE=$T/nowhere KCACHE_NVRTC=$NONE "$KC" --cache-dir "$H" get "$KDIR/rmsnorm_bf16.json" --arch sm_80 --json \
  >"$T/tk2.json" 2>"$T/tk2.err" || bad "no toolkit, no NVRTC, stored graph: $(cat "$T/tk2.err")"
check_json "$T/tk2.json" "j['key'] == '$TKKEY' and j['source'] == 'disk'"
KCACHE_CUDA_INCLUDE=$T/nowhere "$KC" --cache-dir "$H" get "$KDIR/rmsnorm_bf16.json" --arch sm_90 >/dev/null 2>"$T/tk3.err"; rc=$?
[ $rc = 1 ] && grep -q "KCACHE_CUDA_INCLUDE" "$T/tk3.err" && ok || bad "no toolkit, a miss: exit $rc, $(cat "$T/tk3.err")"
KCACHE_CUDA_INCLUDE=$T/nowhere "$KC" --cache-dir "$T/empty" get "$KDIR/rmsnorm_bf16.json" --arch sm_80 >/dev/null 2>"$T/tk4.err"; rc=$?
[ $rc = 1 ] && grep -q "KCACHE_TOOLKIT_HEADERS" "$T/tk4.err" && ok || bad "no toolkit, nothing recorded: exit $rc, $(cat "$T/tk4.err")"
KCACHE_CUDA_INCLUDE=$T/nowhere KCACHE_TOOLKIT_HEADERS=$HID "$KC" --cache-dir "$T/empty" explain "$KDIR/rmsnorm_bf16.json" \
  --arch sm_80 --json >"$T/tk5.json" 2>"$T/tk5.err" || bad "pinned headers: $(cat "$T/tk5.err")"
check_json "$T/tk5.json" "j['key'] == '$TKKEY'"   # pinned: the same key as where the headers are
echo "test_toolchain.sh: $checks checks, $fails failed"
[ $fails = 0 ]
