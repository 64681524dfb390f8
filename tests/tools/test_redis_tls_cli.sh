#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_redis_tls_cli.sh — Redis over TLS from the command line, against real TLS servers
# (tests/servers/redis_tls.sh): host A publishes through rediss:// with the ACL user's password in
# the URL, host B gets a remote hit through rediss:// with a password file; a wrong CA, an expired
# and a wrong-host certificate, plaintext to the TLS port and a wrong password each leave the
# lookup a miss (the kernel compiled here, nothing failed) with the reason in the log; the password
# appears in no output: `kcache config`, `stats --json`, `prewarm --json`, KCACHE_LOG=all, errors.
#   test_redis_tls_cli.sh PATH/TO/kcache PATH/TO/kernels
set -u
KC=$1
KDIR=$(cd "$2" && pwd)
SERVERS=$(cd "$(dirname "$0")/../servers" && pwd)
T=$(mktemp -d /tmp/kctest-tlscli-XXXXXX)
trap 'bash "$SERVERS/redis_tls.sh" stop "$T/srv" >/dev/null 2>&1; rm -rf "$T"' EXIT
bash "$SERVERS/redis_tls.sh" start "$T/srv" >/dev/null
rc=$?
[ $rc -eq 77 ] && { echo "no redis-server, redis-cli or openssl: skipped"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: redis_tls.sh start"; exit 1; }
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
unset KCACHE_SIGNING_KEY_FILE KCACHE_KEYRING KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_REMOTE KCACHE_REMOTE_READONLY \
    SSL_CERT_FILE SSL_CERT_DIR
S=$T/srv
export KCACHE_REMOTE_CONNECT_MS=1000 KCACHE_REMOTE_DEADLINE_MS=2000 # a loaded machine: no timeout on the good paths
PW=$(cat "$S/password")
PORT=$(cat "$S/port")
URL_FILE=$(cat "$S/url")                                          # the ACL user, its password in a file
URL_PW="rediss://kc:$PW@localhost:$PORT/0?ca_file=$S/ca.pem"      # the password in the URL
printf '{"graphs": ["%s/softmax.json"], "archs": ["sm_90"]}\n' "$KDIR" >"$T/m.json"
json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
no_password() { # FILE...: the password in none of them
    for f in "$@"; do grep -qF -- "$PW" "$f" && bad "the password is in $(basename "$f"): $(grep -F -- "$PW" "$f" | head -2)"; done
}

# Host A publishes over TLS (password in the URL); host B gets a remote hit (password file).
if ! KCACHE_LOG=all "$KC" --cache-dir "$T/a" prewarm "$T/m.json" --remote "$URL_PW" --json >"$T/a.json" 2>"$T/a.err"; then
    if grep -qi "nvrtc" "$T/a.err"; then echo "no NVRTC here: skipped"; exit 77; fi
    bad "A prewarm: $(cat "$T/a.err")"
fi
json "$T/a.json" 'j["published"] >= 1 and j["publish_failed"] == 0 and j["remote"].startswith("rediss://kc:***@localhost:")' ||
    bad "A did not publish over TLS: $(cat "$T/a.json") $(cat "$T/a.err")"
KCACHE_LOG=all KCACHE_REMOTE="$URL_FILE" "$KC" --cache-dir "$T/b" prewarm "$T/m.json" --json >"$T/b.json" 2>"$T/b.err" ||
    bad "B prewarm: $(cat "$T/b.err")"
json "$T/b.json" 'j["results"][0]["result"] == "remote_hit" and "password_file=" in j["remote"]' ||
    bad "B had no remote hit over TLS: $(cat "$T/b.json") $(cat "$T/b.err")"
KCACHE_REMOTE="$URL_PW" "$KC" --cache-dir "$T/b" config >"$T/config.txt" 2>&1 || bad "config: $(cat "$T/config.txt")"
grep -q 'rediss://kc:\*\*\*@localhost' "$T/config.txt" || bad "config does not show the remote redacted: $(grep remote "$T/config.txt")"
KCACHE_LOG=all KCACHE_REMOTE="$URL_PW" "$KC" --cache-dir "$T/b" stats --json >"$T/stats.json" 2>"$T/stats.err" ||
    bad "stats: $(cat "$T/stats.err")"
json "$T/stats.json" 'j["remote"]["url"].startswith("rediss://kc:***@")' || bad "stats url: $(cat "$T/stats.json")"

# Each refusal: a miss (compiled here, nothing failed), the reason logged, never a hang.
refused() { # NAME URL WANT
    local name=$1 url=$2 want=$3 t0 t1
    t0=$(date +%s)
    KCACHE_LOG=all KCACHE_REMOTE_DEADLINE_MS=1000 KCACHE_REMOTE="$url" "$KC" --cache-dir "$T/$name" prewarm "$T/m.json" \
        --json >"$T/$name.json" 2>"$T/$name.err" || bad "$name: prewarm failed: $(cat "$T/$name.err")"
    t1=$(date +%s)
    json "$T/$name.json" 'j["failed"] == 0 and j["results"][0]["result"] == "compiled"' ||
        bad "$name: not a miss: $(cat "$T/$name.json")"
    grep -qF -- "$want" "$T/$name.err" || bad "$name: no '$want' in the log: $(grep remote "$T/$name.err")"
    [ $((t1 - t0)) -lt 60 ] || bad "$name: took $((t1 - t0)) s"
}
refused wrong_ca "${URL_FILE%%\?*}?ca_file=$S/other-ca.pem&password_file=$S/password" "TLS: certificate verify failed"
refused expired "$(cat "$S/url_expired")" "certificate verify failed: certificate has expired"
refused wronghost "$(cat "$S/url_wronghost")" "TLS: host name mismatch"
refused plaintext "redis://kc@127.0.0.1:$PORT/0?password_file=$S/password" "(a TLS port? use rediss://)"
refused wrongpw "rediss://kc:x$PW@127.0.0.1:$PORT/0?ca_file=$S/ca.pem" "AUTH: WRONGPASS"
# A password file others may read: refused, saying why.
KCACHE_REMOTE="${URL_FILE%%\?*}?ca_file=$S/ca.pem&password_file=$S/password_open" "$KC" --cache-dir "$T/open" stats \
    >"$T/open.out" 2>"$T/open.err" && bad "a password file others may read was accepted"
grep -q "can be read or written by others" "$T/open.err" || bad "password_open: $(cat "$T/open.err")"

no_password "$T"/*.json "$T"/*.err "$T/config.txt" "$T/open.out"
[ $fails -eq 0 ] || exit 1
echo "test_redis_tls_cli: ok"
