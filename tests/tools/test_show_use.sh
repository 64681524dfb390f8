#!/usr/bin/env bash
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

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed" >&2; exit 1; fi
echo "show left mtime $M0 and hits/misses '$S0' unchanged"
