#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_http_nginx.sh — the HTTP content store against a real nginx with WebDAV (tests/servers/nginx_dav.sh):
# host A's `kcache prewarm --remote http://…` compiles and publishes (graph entries under /ac/, images
# under /cas/ on the server's disk), host B (its own cache directory) gets a remote hit for every graph
# and compiles nothing; nginx restarted keeps serving; a 404 (the store emptied) is a miss, and B compiles.
#   test_http_nginx.sh PATH/TO/kcache PATH/TO/kernels PATH/TO/tests/servers
set -u
KC=$1
KDIR=$(cd "$2" && pwd)
SRV=$3
T=$(mktemp -d /tmp/kctest-httpnginx-XXXXXX)
trap 'bash "$SRV/nginx_dav.sh" stop "$T/ngx" >/dev/null 2>&1; rm -rf "$T"' EXIT
unset KCACHE_SIGNING_KEY_FILE KCACHE_KEYRING KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_REMOTE KCACHE_REMOTE_READONLY
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
check_json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }

bash "$SRV/nginx_dav.sh" start "$T/ngx" >/dev/null
rc=$?
[ $rc = 77 ] && { echo "no nginx: skipped"; exit 77; }
[ $rc = 0 ] || { echo "FAIL: nginx did not start"; exit 1; }
URL=$(cat "$T/ngx/url")
printf '{"graphs": ["%s/softmax.json", "%s/global_norm.json"], "archs": ["sm_90"]}\n' "$KDIR" "$KDIR" >"$T/m.json"

if ! "$KC" --cache-dir "$T/a" prewarm "$T/m.json" --remote "$URL" --json >"$T/a.json" 2>"$T/err"; then
    if grep -qi "nvrtc" "$T/err"; then echo "no NVRTC here: skipped"; exit 77; fi
    bad "A prewarm: $(cat "$T/err")"
fi
check_json "$T/a.json" "[x['result'] for x in j['results']] == ['compiled', 'compiled']" || bad "A: $(head -c 800 "$T/a.json")"
nac=$(find "$T/ngx/data/kcache/ac" -type f 2>/dev/null | wc -l)
ncas=$(find "$T/ngx/data/kcache/cas" -type f -name '*.img' 2>/dev/null | wc -l)
[ "$nac" -ge 2 ] && [ "$ncas" -ge 2 ] || bad "nginx holds $nac objects under ac/ and $ncas images under cas/ (want 2 and 2 at least)"

bash "$SRV/nginx_dav.sh" restart "$T/ngx" >/dev/null || bad "nginx restart"
"$KC" --cache-dir "$T/b" prewarm "$T/m.json" --remote "$URL" --json >"$T/b.json" 2>"$T/err" || bad "B prewarm: $(cat "$T/err")"
check_json "$T/b.json" "[x['result'] for x in j['results']] == ['remote_hit', 'remote_hit']" || bad "B: $(head -c 800 "$T/b.json")"
"$KC" --cache-dir "$T/b" stats --json >"$T/bs.json" 2>&1
check_json "$T/bs.json" "j.get('compiles', j.get('nvrtc_compiles', 0)) == 0" || echo "note: B's stats: $(head -c 300 "$T/bs.json")"

# The store emptied: every GET is a 404, a miss; C compiles and nothing fails.
rm -rf "$T/ngx/data/kcache/ac" "$T/ngx/data/kcache/cas"
"$KC" --cache-dir "$T/c" prewarm "$T/m.json" --remote "$URL" --json >"$T/c.json" 2>"$T/err" || bad "C prewarm: $(cat "$T/err")"
check_json "$T/c.json" "[x['result'] for x in j['results']] == ['compiled', 'compiled']" || bad "C: $(head -c 800 "$T/c.json")"

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed" >&2; exit 1; fi
echo "nginx WebDAV: A published $nac action-cache objects and $ncas images; B hit both graphs after a restart; 404s were misses"
