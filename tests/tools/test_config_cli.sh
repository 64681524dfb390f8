#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_config_cli.sh — `kcache config`: every setting with its value and origin, a value from each
# origin (default, system file, cache directory file, environment, options — the command line's
# --cache-dir), --json, one KEY, KEY VALUE written to the cache directory's kcache.conf (a bad value
# or an unknown key writes nothing), `kcache limit` writing there, an older directory's v1/record
# limit still read, and a bad line named with its FILE:LINE.
#   test_config_cli.sh KCACHE
set -u
KC=$1
T=$(mktemp -d /tmp/kctest-config-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
for v in $(env | grep -o '^KCACHE_[A-Z_]*'); do unset "$v"; done
printf '# system\nlock_wait = 9\nremote_ttl = 4\n' >"$T/system.conf"
mkdir -p "$T/c"
printf 'strict = on\nremote_ttl = 5\n' >"$T/c/kcache.conf"
export KCACHE_CONFIG_SYSTEM="$T/system.conf"
KCACHE_REMOTE_QUEUE=17 "$KC" --cache-dir "$T/c" config >"$T/all.txt" 2>"$T/all.err" || bad "config: $(cat "$T/all.err")"
line() { grep -E "^$1 +=" "$T/all.txt"; }
line loaded_graphs | grep -q "= 512 .*(default)" || bad "default: $(line loaded_graphs)"
line lock_wait | grep -q "= 9 .*(system file $T/system.conf:2)" || bad "system file: $(line lock_wait)"
line strict | grep -q "= true .*(cache directory file $T/c/kcache.conf:1)" || bad "cache directory file: $(line strict)"
line remote_ttl | grep -q "= 5 .*(cache directory file" || bad "the directory's file over the system's: $(line remote_ttl)"
line remote_queue | grep -q "= 17 .*(environment KCACHE_REMOTE_QUEUE)" || bad "environment: $(line remote_queue)"
line dir | grep -q "= $T/c .*(options)" || bad "options: $(line dir)"
[ "$(grep -c ' = ' "$T/all.txt")" -ge 35 ] || bad "not every setting printed"
"$KC" --cache-dir "$T/c" config --json >"$T/all.json" || bad "config --json"
python3 - "$T/all.json" <<'PY' || bad "config --json: $(head -c 300 "$T/all.json")"
import json, sys
s = {r["key"]: r for r in json.load(open(sys.argv[1]))["settings"]}
assert s["strict"]["origin"] == "cache directory file" and s["strict"]["value"] == "true", s["strict"]
assert s["lock_wait"]["origin"] == "system file" and s["lock_wait"]["where"].endswith("system.conf:2"), s["lock_wait"]
assert s["max_size"]["origin"] == "default" and s["max_size"]["type"] == "size", s["max_size"]
PY
[ "$("$KC" --cache-dir "$T/c" config lock_wait)" = 9 ] || bad "config KEY"
[ "$(KCACHE_LOCK_WAIT=3 "$KC" --cache-dir "$T/c" config KCACHE_LOCK_WAIT)" = 3 ] || bad "config by its variable"
# KEY VALUE: checked, then written atomically; a bad one writes nothing.
cp "$T/c/kcache.conf" "$T/before"
"$KC" --cache-dir "$T/c" config lock_wait soon 2>"$T/e1"; [ $? = 2 ] && grep -q "lock_wait='soon'" "$T/e1" || bad "a bad value (a usage error): $(cat "$T/e1")"
"$KC" --cache-dir "$T/c" config no_such_key 1 2>"$T/e2"; [ $? = 2 ] || bad "an unknown key is not a usage error"
cmp -s "$T/before" "$T/c/kcache.conf" || bad "a refused value changed the file"
mkdir -p "$T/dirfile/kcache.conf"   # a good value the file cannot take: no usage error
"$KC" --cache-dir "$T/dirfile" config lock_wait 30 2>"$T/e6"; [ $? = 1 ] || bad "a file that cannot be written is not exit 1: $(cat "$T/e6")"
"$KC" --cache-dir "$T/c" config lock_wait 30 || bad "config KEY VALUE"
grep -qx "lock_wait = 30" "$T/c/kcache.conf" && grep -qx "strict = on" "$T/c/kcache.conf" || bad "written: $(cat "$T/c/kcache.conf")"
"$KC" --cache-dir "$T/c" config lock_wait | grep -qx 30 || bad "read back"
"$KC" --cache-dir "$T/c" config --unset strict && ! grep -q strict "$T/c/kcache.conf" || bad "--unset"
# kcache limit writes max_size to kcache.conf; an older directory's record is still read.
"$KC" --cache-dir "$T/c" limit 3M >/dev/null && grep -qx "max_size = 3145728" "$T/c/kcache.conf" || bad "limit: $(cat "$T/c/kcache.conf")"
mkdir -p "$T/old/v1" && printf 'max_size=65536\n' >"$T/old/v1/record"
"$KC" --cache-dir "$T/old" limit | grep -q "64.0 KiB (the directory's recorded limit)" || bad "the old record's limit: $("$KC" --cache-dir "$T/old" limit)"
"$KC" --cache-dir "$T/old" config max_size | grep -qx 65536 || bad "config shows the old record's limit"
KCACHE_MAX_SIZE=1G "$KC" --cache-dir "$T/old" config | grep -E "^max_size" | grep -q "v1/record" || bad "the directory's limit wins"
# A bad line: its file and line, and what to do.
printf 'remote_ttl = 5\nstrict = perhaps\n' >"$T/c/kcache.conf"
"$KC" --cache-dir "$T/c" config >/dev/null 2>"$T/e3"; [ $? = 1 ] && grep -q "kcache.conf:2: strict='perhaps' is not a boolean: use" "$T/e3" || bad "bad line: $(cat "$T/e3")"
# A key this build does not know: where, and where the keys are listed (a command that needs no cache).
printf 'max_sise = 1G\n' >"$T/c/kcache.conf"
"$KC" --cache-dir "$T/c" config >/dev/null 2>"$T/e5"; [ $? = 1 ] && grep -q "kcache.conf:1: unknown key 'max_sise' (\`kcache config --reference\` lists" "$T/e5" || bad "unknown key: $(cat "$T/e5")"
"$KC" --cache-dir "$T/c" config --reference | grep -q '`max_size`' || bad "config --reference in a broken directory"
[ $fails = 0 ] && echo "test_config_cli: all passed"
exit $fails
