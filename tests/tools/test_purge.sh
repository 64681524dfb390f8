#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_purge.sh — `kcache purge` against a local cache and a real redis-server remote: two graphs
# are compiled (signed by one key) into a local cache and published to Redis; each selector
# (--key, --unit, --toolchain, --producer ed25519:/mac:, --older-than) chooses what it should in
# both tiers; --dry-run removes nothing; --local/--remote restrict; a read-only remote is untouched
# and named; the counts agree with what is left (the files, the Redis keys); a lease key and
# another application's key are never touched; a hostile value under an entry's name is counted
# corrupt and removed only with --corrupt; a malformed selector is a usage error (exit 2).
#   test_purge.sh PATH/TO/kcache PATH/TO/kernels
set -u
KC=$1
KDIR=$(cd "$2" && pwd)
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || { echo "no redis-server: skipped"; exit 77; }
T=$(mktemp -d /tmp/kctest-purge-XXXXXX)
RPID=
trap '[ -n "$RPID" ] && kill "$RPID" 2>/dev/null; rm -rf "$T"' EXIT
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
unset KCACHE_SIGNING_KEY_FILE KCACHE_KEYRING KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_REMOTE KCACHE_REMOTE_READONLY
unset KCACHE_REQUIRE_HIT KCACHE_STRICT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no >"$T/redis.log" 2>&1 &
RPID=$!
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
URL=redis://127.0.0.1:$PORT
R() { redis-cli -p "$PORT" "$@"; }
check_json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }
jget() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
nlocal() { find "$T/a/v1" -name '*.kce' 2>/dev/null | wc -l; }
nremote() { R --scan --pattern 'kcache:v1:*' | grep -cv ':lease:'; }
printf '{"graphs": ["%s/softmax.json", "%s/global_norm.json"], "archs": ["sm_90"]}\n' "$KDIR" "$KDIR" >"$T/m.json"
"$KC" keygen "$T/k" >"$T/out" 2>&1 || bad "keygen: $(cat "$T/out")"
KID=$(awk '{print $2}' "$T/out" | tr -d :)
"$KC" keygen "$T/other" >/dev/null 2>&1 || bad "keygen other"
OTHER=$(awk '{print $3}' "$T/other.pub")

# A fresh fill: local cache a/ and Redis hold the same 6 objects (2 graph entries, 2 images, 2 unit records).
fill() {
    R flushall >/dev/null
    rm -rf "$T/a"
    if ! KCACHE_SIGNING_KEY_FILE=$T/k.key "$KC" --cache-dir "$T/a" prewarm "$T/m.json" --remote "$URL" --json >"$T/fill.json" 2>"$T/err"; then
        if grep -qi "nvrtc" "$T/err"; then echo "no NVRTC here: skipped"; exit 77; fi
        bad "prewarm: $(cat "$T/err")"
    fi
    R set kcache:v1:lease:0123456789abcdef0123456789abcdef.sm_90 holder >/dev/null # a lease (never an entry)
    R set otherapp:3824be955ad5dabccc3f883bce0cfc43 x >/dev/null                   # another application's key
    [ "$(nlocal)" = 6 ] && [ "$(nremote)" = 6 ] || bad "fill: $(nlocal) local, $(nremote) remote objects, not 6 and 6"
}
P() { "$KC" --cache-dir "$T/a" --remote "$URL" purge "$@"; }

fill
SKEY=$(jget "$T/fill.json" "j['results'][0]['key']")
TOOL=$("$KC" --cache-dir "$T/a" toolchain --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["keys_use"]["id"] if "keys_use" in j else j["local"]["id"])' 2>/dev/null)
[ -n "$TOOL" ] || TOOL=$("$KC" --cache-dir "$T/a" toolchain | awk '/^keys use/{print $3}')

# --key, dry run: both tiers listed, nothing removed.
P --key "${SKEY:0:12}" --dry-run --json >"$T/p.json" 2>"$T/err" || bad "key dry run: $(cat "$T/err")"
check_json "$T/p.json" "j['matched'] == 2 and j['removed'] == 0 and j['dry_run'] and {o['name'] for o in j['objects']} == {'$SKEY.sm_90'}" \
    || bad "key dry run: $(cat "$T/p.json")"
[ "$(nlocal)" = 6 ] && [ "$(nremote)" = 6 ] || bad "a dry run removed something: $(nlocal) local, $(nremote) remote"
# --key: the graph entry goes from both tiers; the counts agree with what is left.
P --key "$SKEY" --json >"$T/p.json" 2>"$T/err" || bad "key: $(cat "$T/err")"
check_json "$T/p.json" "j['removed'] == 2 and all(t['examined'] == 6 and t['removed'] == 1 for t in j['tiers'])" || bad "key: $(cat "$T/p.json")"
[ "$(nlocal)" = 5 ] && [ "$(nremote)" = 5 ] || bad "after --key: $(nlocal) local, $(nremote) remote, not 5 and 5"
[ "$(R exists "kcache:v1:$SKEY.sm_90")" = 0 ] || bad "the purged key is still in Redis"
[ "$(R exists kcache:v1:lease:0123456789abcdef0123456789abcdef.sm_90)" = 1 ] && [ "$(R exists otherapp:3824be955ad5dabccc3f883bce0cfc43)" = 1 ] \
    || bad "a lease or another application's key was touched"
# The next purge finds nothing: the fleet is clean of it.
P --key "$SKEY" --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['matched'] == 0" || bad "after the purge: $(cat "$T/p.json")"

# --unit: the unit record, the image it names and the graph entry that uses it.
fill
UNIT=$(find "$T/a/v1" -name '*.unit.kce' | head -1 | xargs basename | cut -c1-32)
P --unit "$UNIT" --json >"$T/p.json" 2>"$T/err" || bad "unit: $(cat "$T/err")"
check_json "$T/p.json" "j['removed'] == 6 and sorted({o['name'].split('.')[1] for o in j['objects']}) == ['img', 'sm_90', 'unit']" \
    || bad "unit: $(cat "$T/p.json")"
[ "$(nlocal)" = 3 ] && [ "$(nremote)" = 3 ] || bad "after --unit: $(nlocal) local, $(nremote) remote, not 3 and 3"

# --toolchain (as `kcache toolchain` names it), AND --key; another toolchain chooses nothing.
fill
P --toolchain "$TOOL" --dry-run --json >"$T/p.json" 2>"$T/err" || bad "toolchain: $(cat "$T/err")"
check_json "$T/p.json" "j['matched'] >= 4" || bad "toolchain $TOOL: $(cat "$T/p.json")"
P --toolchain "$TOOL" --key "$SKEY" --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['matched'] == 2" \
    || bad "toolchain AND key: $(cat "$T/p.json")"
P --toolchain build-id:0000 --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['matched'] == 0" \
    || bad "another toolchain: $(cat "$T/p.json")"
# Only the whole record or its build-id word (or the hex alone): "nvrtc" and the path name every toolchain.
P --toolchain nvrtc --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['matched'] == 0" \
    || bad "--toolchain nvrtc: $(cat "$T/p.json")"
case $TOOL in build-id:*)
    P --toolchain "${TOOL#build-id:}" --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['matched'] >= 4" \
        || bad "the build id's hex: $(cat "$T/p.json")" ;;
*) bad "kcache toolchain printed '$TOOL', not build-id:<hex>" ;;
esac

# --producer: the signing key (with or without "ed25519:"), another key chooses nothing.
P --producer "ed25519:$KID" --dry-run --json >"$T/p.json" 2>"$T/err" || bad "producer: $(cat "$T/err")"
check_json "$T/p.json" "j['matched'] == 12" || bad "producer $KID: $(cat "$T/p.json")"
P --producer "$OTHER" --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['matched'] == 0" || bad "other producer: $(cat "$T/p.json")"

# --older-than: nothing is a week old; everything is older than 1s two seconds later.
P --older-than 1w --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['matched'] == 0" || bad "1w: $(cat "$T/p.json")"
sleep 2
P --older-than 1s --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['matched'] >= 4" || bad "1s: $(cat "$T/p.json")"

# A read-only remote is untouched and named; --local and --remote restrict.
"$KC" --cache-dir "$T/a" --remote "$URL|read-only" purge --key "$SKEY" >"$T/out" 2>&1 || bad "read-only: $(cat "$T/out")"
grep -q "^$URL/0: skipped: read-only" "$T/out" || bad "the read-only remote is not named: $(cat "$T/out")"
[ "$(nlocal)" = 5 ] && [ "$(nremote)" = 6 ] || bad "read-only remote: $(nlocal) local, $(nremote) remote, not 5 and 6"
P --key "$SKEY" --local --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['removed'] == 0 and j['tiers'][1]['skipped']" \
    || bad "--local: $(cat "$T/p.json")"
P --key "$SKEY" --remote --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['removed'] == 1 and j['tiers'][0]['skipped']" \
    || bad "--remote: $(cat "$T/p.json")"
[ "$(nremote)" = 5 ] || bad "--remote left $(nremote) remote objects, not 5"

# A hostile value under an entry's name: counted corrupt, removed only with --corrupt.
R set kcache:v1:00112233445566778899aabbccddeeff.sm_90 "not an entry" >/dev/null
P --toolchain "$TOOL" --remote --dry-run --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['corrupt'] == 1 and '00112233445566778899aabbccddeeff.sm_90' not in [o['name'] for o in j['objects']]" \
    || bad "corrupt counted: $(cat "$T/p.json")"
P --corrupt --remote --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['removed'] == 1 and j['objects'][0]['corrupt']" \
    || bad "--corrupt: $(cat "$T/p.json")"
[ "$(R exists kcache:v1:00112233445566778899aabbccddeeff.sm_90)" = 0 ] || bad "the corrupt value is still there"
# A hash under an entry's name among the string entries: the walk goes on (the hash counted corrupt), the rest is
# chosen and removed, and --corrupt removes the hash.
R hset kcache:v1:00112233445566778899aabbccddeeff.sm_90 f v >/dev/null
P --toolchain "$TOOL" --remote --json >"$T/p.json" 2>"$T/err"
rc=$?
[ $rc = 0 ] && check_json "$T/p.json" "j['failed'] == 0 and j['corrupt'] == 1 and j['removed'] >= 1 and j['removed'] == j['matched'] and j['tiers'][1]['examined'] == 6" \
    || bad "a hash among the entries (exit $rc): $(cat "$T/p.json" "$T/err")"
[ "$(nremote)" = $((6 - $(jget "$T/p.json" "j['removed']"))) ] || bad "a hash among the entries: $(nremote) remote objects left"
P --corrupt --remote --json >"$T/p.json" 2>&1 && check_json "$T/p.json" "j['removed'] == 1 and j['failed'] == 0" \
    || bad "--corrupt on a hash: $(cat "$T/p.json")"
[ "$(R exists kcache:v1:00112233445566778899aabbccddeeff.sm_90)" = 0 ] || bad "the hash is still there"

# --producer mac:ID: only this cache's MAC key; another is a usage error.
printf 'a fleet secret of 32 bytes......' >"$T/mac" && chmod 600 "$T/mac"
KCACHE_HMAC_KEY_FILE=$T/mac P --producer mac:0000000000000000 --dry-run >"$T/out" 2>&1
[ $? = 2 ] && grep -q "not this cache's MAC key (mac:" "$T/out" || bad "another MAC key: $(cat "$T/out")"
# Usage errors: no selector, a short key, a bad duration, both --local and --remote.
for args in "" "--key 1234" "--key zz345678" "--older-than 7" "--key $SKEY --local --remote" "--producer ed25519:12"; do
    # shellcheck disable=SC2086
    P $args >"$T/out" 2>&1
    [ $? = 2 ] || bad "purge $args: not a usage error: $(cat "$T/out")"
done

[ "$fails" = 0 ] && echo "test_purge: all passed" || { echo "test_purge: $fails failed"; exit 1; }
