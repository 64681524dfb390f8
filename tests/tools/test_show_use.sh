#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_show_use.sh — `kcache show` is not a use (issue 19): showing an entry counts no hit and
# leaves its LRU time (the entry file's mtime, which gc orders by) as it was.  The file is made
# ten days old first, so that a lookup's refresh (any mtime older than a few seconds) would show.
#   test_show_use.sh PATH/TO/kcache PATH/TO/kc_fill
set -u
KC=$1
FILL=$2
T=$(mktemp -d /tmp/kctest-showuse-XXXXXX)
trap 'rm -rf "$T"' EXIT
D=$T/cache
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
stat_of() { "$KC" --cache-dir "$D" stats --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["hits"], j["misses"])'; }

"$FILL" "$D" 3 500 >"$T/keys" || { echo "FAIL: fill" >&2; exit 1; }
K1=$(head -n1 "$T/keys")
F=$(find "$D/v1" -name "$K1*.kce" | head -n1)
[ -n "$F" ] || { echo "FAIL: no entry file for $K1" >&2; exit 1; }
touch -m -d '10 days ago' "$F"
M0=$(stat -c %Y "$F")
S0=$(stat_of)

"$KC" --cache-dir "$D" show "$K1" >"$T/out" 2>"$T/err" || bad "show failed: $(cat "$T/err")"
grep -q "$K1" "$T/out" || bad "show printed no entry: $(head -c 300 "$T/out")"
"$KC" --cache-dir "$D" show "${K1:0:8}" --json >"$T/out" 2>"$T/err" || bad "show --json failed: $(cat "$T/err")"

M1=$(stat -c %Y "$F")
S1=$(stat_of)
[ "$M1" = "$M0" ] || bad "show refreshed the LRU time: mtime $M0 -> $M1"
[ "$S1" = "$S0" ] || bad "show counted a lookup: hits misses $S0 -> $S1"

# A graph entry's images: show fetches and checks them (kc_entry_resolve), which is not a use either.
KDIR=$(cd "$(dirname "$0")/../../kernels" && pwd)
if "$KC" --cache-dir "$D" get "$KDIR/softmax.json" --arch sm_90 >"$T/out" 2>"$T/err"; then
    IMG=$(find "$D/v1" -name "*.img.kce" | head -n1)
    [ -n "$IMG" ] || bad "no image file after get"
    touch -m -d '10 days ago' "$IMG"
    MI0=$(stat -c %Y "$IMG")
    "$KC" --cache-dir "$D" show "$KDIR/softmax.json" --arch sm_90 >"$T/out" 2>"$T/err" || bad "show of a graph failed: $(cat "$T/err")"
    grep -q "all present" "$T/out" || bad "show did not find the graph's images: $(head -c 400 "$T/out")"
    MI1=$(stat -c %Y "$IMG")
    [ "$MI1" = "$MI0" ] || bad "show refreshed an image's LRU time: mtime $MI0 -> $MI1"
else
    echo "no NVRTC here ($(head -c 200 "$T/err")): the image part skipped"
fi

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed" >&2; exit 1; fi
echo "show left mtime $M0 and hits/misses '$S0' unchanged"
