#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_lost_errors_cli.sh — a failure of the compile path keeps its status and its message in every
# output of the kcache tool ([Note: cleanup keeps the error] in src/common/internal.h):
#  - a compile error in a kernel with toolkit headers (the bundled adamw with one undefined name):
#    `get` prints NVRTC's log line and KC_ECOMPILE (never "failed (KC_OK)"); `get --json` writes an
#    object with "status" and "error"; `prewarm --json` a result with both;
#  - must-hit (KCACHE_REQUIRE_HIT=1): the refusal says which unit is not stored, not only its status;
#  - no NVRTC (KCACHE_NVRTC naming no file): KC_ENONVRTC, in the text and in --json.
#   test_lost_errors_cli.sh KCACHE KERNELS_DIR
set -u
KC=$1; KDIR=$2
T=$(mktemp -d /tmp/kctest-lost-errors-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
jq_() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
check_json() { if jq_ "$1" "$2"; then ok; else bad "$2 ; got: $(head -c 800 "$1")"; fi; }
has() { if grep -qF -- "$2" "$1"; then ok; else bad "'$2' not in $1: $(head -c 800 "$1")"; fi; }
hasnt() { if grep -qF -- "$2" "$1"; then bad "'$2' in $1: $(head -c 800 "$1")"; else ok; fi; }

cp "$KDIR/adamw.json" "$T/"
sed 's/const float g = (float)grads\[i\];/const float g = (float)grads[i] + undefined_thing_42;/' "$KDIR/adamw.cu" >"$T/adamw.cu"
grep -q undefined_thing_42 "$T/adamw.cu" || { echo "the kernel's line moved: fix the test" >&2; exit 1; }
echo '{"graphs": ["adamw.json"]}' >"$T/m.json"

# get: text, then --json (the object on stdout, the text on stderr).
"$KC" --cache-dir "$T/c" get "$T/adamw.json" --arch sm_90 >"$T/get.out" 2>"$T/get.err" && bad "get succeeded" || ok
has "$T/get.err" "undefined_thing_42"
has "$T/get.err" "(KC_ECOMPILE)"
hasnt "$T/get.err" "KC_OK"
"$KC" --cache-dir "$T/c" get "$T/adamw.json" --arch sm_90 --json >"$T/get.json" 2>/dev/null && bad "get --json succeeded" || ok
check_json "$T/get.json" "j['result'] == 'failed' and j['status'] == 'KC_ECOMPILE' and 'undefined_thing_42' in j['error'] and j['graph'] == 'adamw'"

# prewarm --json: the failed variant's status and error.
"$KC" --cache-dir "$T/c" prewarm "$T/m.json" --arch sm_90 --json >"$T/pw.json" 2>"$T/pw.err" && bad "prewarm succeeded" || ok
check_json "$T/pw.json" "j['failed'] == 1 and j['results'][0]['status'] == 'KC_ECOMPILE' and 'undefined_thing_42' in j['results'][0]['error']"
has "$T/pw.err" "undefined_thing_42"

# must-hit: the refusal's reason, not "KC_ENOTCACHED (KC_ENOTCACHED)".
KCACHE_REQUIRE_HIT=1 "$KC" --cache-dir "$T/c" get "$T/adamw.json" --arch sm_90 --json >"$T/mh.json" 2>"$T/mh.err" && bad "must-hit get succeeded" || ok
has "$T/mh.err" "is not stored"
has "$T/mh.err" "(KC_ENOTCACHED)"
check_json "$T/mh.json" "j['status'] == 'KC_ENOTCACHED' and 'must-hit' in j['error'] and 'is not stored' in j['error']"

# No NVRTC: said with its own status.
KCACHE_NVRTC=/nonexistent/libnvrtc.so "$KC" --cache-dir "$T/n" get "$T/adamw.json" --arch sm_90 --json >"$T/nv.json" 2>"$T/nv.err" && bad "get without NVRTC succeeded" || ok
has "$T/nv.err" "(KC_ENONVRTC)"
check_json "$T/nv.json" "j['status'] == 'KC_ENONVRTC' and 'NVRTC' in j['error']"

echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ]
