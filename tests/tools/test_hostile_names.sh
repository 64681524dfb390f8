#!/usr/bin/env bash
# test_hostile_names.sh — names from an entry reach neither the terminal nor a path raw (issue
# 15, item 15): `kcache show` and `kcache ls` print no ESC, BEL or C1 byte of an entry's names,
# and `kcache show --extract DIR` writes only inside DIR although the image's target says
# "d/../../x".
#   test_hostile_names.sh KCACHE PLANT
set -u
KC=$1; PLANT=$2
T=$(mktemp -d /tmp/kctest-hostile-XXXXXX)
trap 'rm -rf "$T"' EXIT
unset KCACHE_DIR KCACHE_READONLY KCACHE_DISABLE KCACHE_REMOTE
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
# No ESC (0x1b), BEL (0x07) or C1 CSI (0x9b) byte in a file.
clean() { ! LC_ALL=C grep -q "$(printf '[\033\007\233]')" "$1"; }

D=$T/cache
KEY=$("$PLANT" "$D") && ok || bad "could not plant the entry"
"$KC" --cache-dir "$D" show "$KEY" >"$T/show.txt" 2>&1 && ok || bad "show failed: $(cat "$T/show.txt")"
grep -q "kern" "$T/show.txt" && ok || bad "show does not list the kernel at all"
clean "$T/show.txt" && ok || bad "show printed control bytes: $(od -c "$T/show.txt" | head -5)"
"$KC" --cache-dir "$D" ls >"$T/ls.txt" 2>&1 && ok || bad "ls failed"
clean "$T/ls.txt" && ok || bad "ls printed control bytes"
mkdir -p "$T/a/b/out"
"$KC" --cache-dir "$D" show "$KEY" --extract "$T/a/b/out" >"$T/x.txt" 2>&1 && ok || bad "extract failed: $(cat "$T/x.txt")"
clean "$T/x.txt" && ok || bad "extract printed control bytes"
n_out=$(find "$T/a/b/out" -type f | wc -l)
n_all=$(find "$T/a" -type f | wc -l)
[ "$n_out" -ge 1 ] && [ "$n_all" = "$n_out" ] && ok || bad "extract wrote outside its folder: $(find "$T/a" -type f)"
stray=$(find "$T" -name '*.cubin' -not -path "$T/a/b/out/*")
[ -z "$stray" ] && ok || bad "extract wrote a cubin outside its folder: $stray"

echo "test_hostile_names.sh: $checks checks, $fails failed"
[ $fails = 0 ]
