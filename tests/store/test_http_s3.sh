#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_http_s3.sh — the s3:// back end against an S3-compatible server (moto's, tests/servers/s3.sh, standing in
# for Amazon S3, with its signature checking on): host A's `kcache prewarm --remote s3://…` compiles and
# publishes, host B (its own cache directory) gets a remote hit for every graph; with a wrong secret every
# request is refused (a clear error, then misses: B' compiles) and the secret is in no output; credentials
# from a credentials file work as from the environment.
#   test_http_s3.sh PATH/TO/kcache PATH/TO/kernels PATH/TO/tests/servers
set -u
KC=$1
KDIR=$(cd "$2" && pwd)
SRV=$3
T=$(mktemp -d /tmp/kctest-https3-XXXXXX)
trap 'bash "$SRV/s3.sh" stop "$T/s3" >/dev/null 2>&1; rm -rf "$T"' EXIT
unset KCACHE_SIGNING_KEY_FILE KCACHE_KEYRING KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_REMOTE KCACHE_REMOTE_READONLY
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_SHARED_CREDENTIALS_FILE
export HOME=$T/home
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
check_json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }

bash "$SRV/s3.sh" start "$T/s3" >/dev/null
rc=$?
[ $rc = 77 ] && { echo "no moto server: skipped"; exit 77; }
[ $rc = 0 ] || { echo "FAIL: the S3 server did not start"; exit 1; }
URL=$(cat "$T/s3/url")
. "$T/s3/env"
printf '{"graphs": ["%s/softmax.json", "%s/global_norm.json"], "archs": ["sm_90"]}\n' "$KDIR" "$KDIR" >"$T/m.json"

if ! "$KC" --cache-dir "$T/a" prewarm "$T/m.json" --remote "$URL" --json >"$T/a.json" 2>"$T/err"; then
    if grep -qi "nvrtc" "$T/err"; then echo "no NVRTC here: skipped"; exit 77; fi
    bad "A prewarm: $(cat "$T/err")"
fi
check_json "$T/a.json" "[x['result'] for x in j['results']] == ['compiled', 'compiled'] and j['published'] > 0 and j['publish_failed'] == 0" || bad "A: $(head -c 800 "$T/a.json")"
"$KC" --cache-dir "$T/b" prewarm "$T/m.json" --remote "$URL" --json >"$T/b.json" 2>"$T/err" || bad "B prewarm: $(cat "$T/err")"
check_json "$T/b.json" "[x['result'] for x in j['results']] == ['remote_hit', 'remote_hit']" || bad "B: $(head -c 800 "$T/b.json")"

# A wrong secret: refused by the server's signature check, said so, and never shown.
GOOD=$AWS_SECRET_ACCESS_KEY
AWS_SECRET_ACCESS_KEY=wrongsecretwrongsecret KCACHE_LOG=remote "$KC" --cache-dir "$T/w" prewarm "$T/m.json" --remote "$URL" --json \
  >"$T/w.json" 2>"$T/werr" || true
check_json "$T/w.json" "[x['result'] for x in j['results']] == ['compiled', 'compiled']" || bad "wrong secret: $(head -c 800 "$T/w.json")"
check_json "$T/w.json" "j['published'] == 0 and j['publish_failed'] > 0" || bad "wrong secret published: $(head -c 800 "$T/w.json")"
grep -q "HTTP 403, refused (check the credentials" "$T/werr" || bad "the refusal is not said: $(head -c 600 "$T/werr")"
if grep -q -e wrongsecret -e "$GOOD" "$T/w.json" "$T/werr" "$T/a.json" "$T/b.json"; then bad "a secret is in the output"; fi

# Credentials from a file (the environment's unset).
mkdir -p "$T/home/.aws"
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$AWS_ACCESS_KEY_ID" "$GOOD" >"$T/home/.aws/credentials"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
"$KC" --cache-dir "$T/c" prewarm "$T/m.json" --remote "$URL" --json >"$T/c.json" 2>"$T/err" || bad "C prewarm: $(cat "$T/err")"
check_json "$T/c.json" "[x['result'] for x in j['results']] == ['remote_hit', 'remote_hit']" || bad "C (credentials file): $(head -c 800 "$T/c.json")"

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed" >&2; exit 1; fi
echo "S3 (moto, signatures checked): A published, B hit both graphs; a wrong secret refused (403) and never shown; a credentials file works"
