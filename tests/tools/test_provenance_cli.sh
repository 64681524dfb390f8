#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_provenance_cli.sh — provenance decides what may be sealed, from the command line (issue 20
# item 4), against a real redis-server: an entry planted in Redis without a MAC is fetched by host
# A (no key yet); `show` prints where each local file came from (fetched <url> verified=none;
# compiled here for A's own compile); the fleet rolls a MAC key out and flushes Redis; A's
# `prewarm --remote --json` publishes its own compile and refuses the fetched entry's image (counted
# publish_refused) and so holds its graph entry back — both named with their reasons in "skipped" —, so Redis gets nothing of
# the planted entry, even after its record was rewritten to "compiled"; `sign --local --json`
# gives each skipped entry's reason (where it came from).
#   test_provenance_cli.sh PATH/TO/kcache PATH/TO/kernels
set -u
KC=$1
KDIR=$(cd "$2" && pwd)
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || { echo "no redis-server: skipped"; exit 77; }
T=$(mktemp -d /tmp/kctest-provcli-XXXXXX)
RPID=
trap '[ -n "$RPID" ] && kill "$RPID" 2>/dev/null; rm -rf "$T"' EXIT
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
ok() { :; }
unset KCACHE_SIGNING_KEY_FILE KCACHE_KEYRING KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_REMOTE KCACHE_REMOTE_READONLY
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no >"$T/redis.log" 2>&1 &
RPID=$!
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
URL=redis://127.0.0.1:$PORT
SHOWN=$URL/0 # as the remote's state shows it
printf '{"graphs": ["%s/softmax.json"], "archs": ["sm_90"]}\n' "$KDIR" >"$T/planted.json"
printf '{"graphs": ["%s/softmax.json", "%s/global_norm.json"], "archs": ["sm_90"]}\n' "$KDIR" "$KDIR" >"$T/both.json"
printf 'a fleet secret of 32 bytes......' >"$T/mac"
chmod 600 "$T/mac"
check_json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }

# 1. Planted without a MAC; 2. host A fetches it and compiles global_norm itself.
if ! "$KC" --cache-dir "$T/planter" prewarm "$T/planted.json" --remote "$URL" >"$T/out" 2>"$T/err"; then
    if grep -qi "nvrtc" "$T/err"; then echo "no NVRTC here: skipped"; exit 77; fi
    bad "planter prewarm: $(cat "$T/err")"
fi
"$KC" --cache-dir "$T/a" prewarm "$T/both.json" --remote "$URL" --json >"$T/a.json" 2>"$T/err" || bad "A prewarm: $(cat "$T/err")"
check_json "$T/a.json" "[x['result'] for x in j['results']] == ['remote_hit', 'compiled']" || bad "A: $(cat "$T/a.json")"
SKEY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["key"])' "$T/a.json")
GKEY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][1]["key"])' "$T/a.json")

# show: where each local file came from.
"$KC" --cache-dir "$T/a" show "$KDIR/softmax.json" --arch sm_90 >"$T/out" 2>&1 || bad "show softmax"
grep -q "^  provenance fetched $SHOWN verified=none, " "$T/out" && ok || bad "show of a fetched entry: $(grep -i provenance "$T/out")"
"$KC" --cache-dir "$T/a" show "$KDIR/global_norm.json" --arch sm_90 >"$T/out" 2>&1 || bad "show global_norm"
grep -q "^  provenance compiled here, " "$T/out" && ok || bad "show of an own compile: $(grep -i provenance "$T/out")"
"$KC" --cache-dir "$T/a" show "$KDIR/softmax.json" --arch sm_90 --json >"$T/show.json" 2>&1 || bad "show --json"
check_json "$T/show.json" "(j[0] if isinstance(j, list) else j)['provenance'] == {'kind': 'fetched', 'recorded': True, 'unavailable': False, 'source': '$SHOWN', 'verifier': 'none', 'recorded_at': (j[0] if isinstance(j, list) else j)['provenance']['recorded_at']}" \
  || bad "show --json provenance: $(cat "$T/show.json" | head -c 600)"

# 3. The fleet rolls its key out and flushes Redis; the fetched entry's record is rewritten to "compiled".
redis-cli -p "$PORT" flushall >/dev/null
F=$T/a/v1/${SKEY:0:2}/$SKEY.sm_90.kce
chmod 600 "$F" && python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.kcache.origin", b"compiled t=1")' "$F" && chmod 400 "$F" || bad "rewriting the record"
# 4. A, keyed, publishes: its own compile goes, the fetched entry and its image are refused (the image counted; the graph entry held back), both named.
KCACHE_HMAC_KEY_FILE=$T/mac "$KC" --cache-dir "$T/a" prewarm "$T/both.json" --remote "$URL" --json >"$T/p.json" 2>"$T/err" || bad "A keyed prewarm: $(cat "$T/err")"
check_json "$T/p.json" "j['hits'] == 2 and j['publish_refused'] == 1 and len(j['skipped']) == 2" || bad "publish counts: $(cat "$T/p.json")"
check_json "$T/p.json" "[s['name'].rsplit('.', 1)[1] for s in j['skipped']] == ['img', 'sm_90'] and j['skipped'][0]['reason'].startswith('not published: it was fetched or imported') and j['skipped'][1] == {'name': '$SKEY.sm_90', 'reason': 'not published: its image ' + j['skipped'][0]['name'] + ' was refused'}" \
  || bad "skipped names: $(cat "$T/p.json")"
check_json "$T/p.json" "not any(s['name'].startswith('$GKEY') for s in j['skipped'])" || bad "A's own compile skipped: $(cat "$T/p.json")"
grep -q "$SKEY.sm_90" "$T/err" && ok || bad "the refusal is not on stderr: $(cat "$T/err")"
[ "$(redis-cli -p "$PORT" exists "kcache:v1:$SKEY.sm_90")" = 0 ] || bad "the planted entry was laundered into Redis"
[ "$(redis-cli -p "$PORT" exists "kcache:v1:$GKEY.sm_90")" = 1 ] || bad "A's own compile was not published"
KCACHE_HMAC_KEY_FILE=$T/mac "$KC" --cache-dir "$T/a" prewarm "$T/both.json" --remote "$URL" >"$T/out" 2>&1 || bad "text prewarm"
grep -q "remote $SHOWN: .* published, .* refused (neither compiled here nor verified under a trusted key)" "$T/out" || bad "text: $(cat "$T/out")"

# sign --local: each skipped entry with where it came from.
"$KC" keygen "$T/build" >/dev/null || bad "keygen"
"$KC" --cache-dir "$T/a" sign --key "$T/build.key" --local --json >"$T/s.json" 2>"$T/err" || bad "sign --local: $(cat "$T/err")"
check_json "$T/s.json" "len(j['skipped_reasons']) == j['skipped'] >= 2 and [s['name'] for s in j['skipped_reasons']] == j['skipped_entries'] and all(s['reason'].startswith('fetched $SHOWN verified=none') for s in j['skipped_reasons'] if not s['name'].startswith('$SKEY'))" \
  || bad "sign --local reasons: $(cat "$T/s.json")"
check_json "$T/s.json" "[s['reason'] for s in j['skipped_reasons'] if s['name'] == '$SKEY.sm_90'][0].startswith('fetched or imported (mode 0400), no record')" \
  || bad "a rewritten record is not shown as one: $(cat "$T/s.json")"

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed" >&2; exit 1; fi
echo "fetched and compiled provenance shown; the planted entry refused, counted and named; sign --local says where from"
