#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_signatures_cli.sh — signatures from the command line (issue 20): a build host's prewarm
# with KCACHE_SIGNING_KEY_FILE writes signed objects whose provenance `show` prints (the host, the
# signing key, the manifest); `verify --signatures` against a keyring of that key passes (exit 0),
# and fails (exit 1) on a cache of unsigned objects and with a keyring of another key.
#   test_signatures_cli.sh PATH/TO/kcache
set -u
KC=$1
T=$(mktemp -d /tmp/kctest-sigcli-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
KDIR=$(cd "$(dirname "$0")/../../kernels" && pwd)
unset KCACHE_SIGNING_KEY_FILE KCACHE_KEYRING KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_REMOTE
printf '{"graphs": ["%s/softmax.json"], "archs": ["sm_90"]}\n' "$KDIR" >"$T/m.json"
"$KC" keygen "$T/build" >"$T/out" || bad "keygen"
"$KC" keygen "$T/other" >/dev/null || bad "keygen other"
ID=$(sed -n 's/^key \([0-9a-f]*\):.*/\1/p' "$T/out")
if ! KCACHE_SIGNING_KEY_FILE=$T/build.key "$KC" --cache-dir "$T/signed" prewarm "$T/m.json" >"$T/out" 2>"$T/err"; then
    if grep -qi "nvrtc" "$T/err"; then echo "no NVRTC here: skipped"; exit 77; fi
    bad "signed prewarm: $(cat "$T/err")"
fi
KCACHE_KEYRING=$T/build.pub "$KC" --cache-dir "$T/signed" verify --signatures >"$T/out" 2>"$T/err" || bad "verify --signatures of signed objects: $(cat "$T/out" "$T/err")"
grep -q "0 unsigned, 0 refused" "$T/out" || bad "verify --signatures counts: $(cat "$T/out")"
"$KC" --cache-dir "$T/signed" show "$KDIR/softmax.json" --arch sm_90 >"$T/out" 2>&1 || bad "show"
grep -q "origin .*compiled on .*signed by key $ID.*for $T/m.json" "$T/out" || bad "show lacks the provenance: $(grep origin "$T/out")"
KCACHE_KEYRING=$T/other.pub "$KC" --cache-dir "$T/signed" verify --signatures >"$T/out" 2>&1 && bad "verify --signatures passed with another key's keyring"
grep -q "refused" "$T/out" || bad "no refusal counted: $(cat "$T/out")"
"$KC" --cache-dir "$T/plain" prewarm "$T/m.json" >/dev/null 2>&1 || bad "plain prewarm"
KCACHE_KEYRING=$T/build.pub "$KC" --cache-dir "$T/plain" verify --signatures >"$T/out" 2>&1 && bad "verify --signatures passed on unsigned objects"
"$KC" --cache-dir "$T/plain" verify --signatures >"$T/out" 2>&1 && bad "verify --signatures passed without a keyring"
if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed" >&2; exit 1; fi
echo "signed prewarm, provenance shown, verify --signatures: pass, and fail on unsigned and on another key"
