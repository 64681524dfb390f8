#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_hostile_names.sh — names from a stored object reach neither the terminal nor a path raw
# (issue 15, item 15), for each kind of object (issue 18: graph entries, images, unit records):
# `kcache show` (of each), `ls`, `ls --images` and `stats` print no ESC, BEL or C1 byte of an
# object's names, messages included; `kcache show --extract DIR` writes only inside DIR although
# the kernel's symbol says "../../"; and a graph entry whose image reference names the target
# "d/../../x<ESC>[2J" is refused as unreadable, printed clean, and extracts nothing.
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
json_ok() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1"; }

D=$T/cache
"$PLANT" "$D" >"$T/keys" && ok || bad "could not plant the objects"
{ read -r KEY; read -r IMG; read -r UNIT; read -r BADKEY; } <"$T/keys"

# The graph entry: its kernel, its image and the image's users, all shown, nothing raw.
"$KC" --cache-dir "$D" show "$KEY" >"$T/show.txt" 2>&1 && ok || bad "show failed: $(cat "$T/show.txt")"
grep -q "kern" "$T/show.txt" && ok || bad "show does not list the kernel at all"
grep -q "$IMG  sm_80 .*present" "$T/show.txt" && ok || bad "show does not list the graph's image as present: $(cat "$T/show.txt")"
clean "$T/show.txt" && ok || bad "show printed control bytes: $(od -c "$T/show.txt" | head -5)"
"$KC" --cache-dir "$D" show "$KEY" --json >"$T/show.json" 2>&1 && ok || bad "show --json failed"
clean "$T/show.json" && json_ok "$T/show.json" && ok || bad "show --json printed control bytes or bad JSON: $(head -c 300 "$T/show.json")"
# The image: sound, used by the graph (with its hostile kernel name escaped) and the unit record.
"$KC" --cache-dir "$D" show "$IMG" >"$T/img.txt" 2>&1 && ok || bad "show of the image failed: $(cat "$T/img.txt")"
grep -q "graph $KEY.sm_80  kernels .*kern" "$T/img.txt" && grep -q "unit record $UNIT.unit" "$T/img.txt" && ok ||
  bad "show of the image does not name its users: $(cat "$T/img.txt")"
clean "$T/img.txt" && ok || bad "show of the image printed control bytes"
"$KC" --cache-dir "$D" show "$IMG" --json >"$T/img.json" 2>&1 && clean "$T/img.json" && json_ok "$T/img.json" && ok ||
  bad "show --json of the image: $(head -c 300 "$T/img.json")"
# The unit record: its image and its names, escaped.
"$KC" --cache-dir "$D" show "$UNIT" >"$T/unit.txt" 2>&1 && ok || bad "show of the unit record failed: $(cat "$T/unit.txt")"
grep -q 'kern -> \\x1b\[31m\.\./\.\./lowered' "$T/unit.txt" && ok || bad "show of the unit record lacks its names: $(cat "$T/unit.txt")"
clean "$T/unit.txt" && ok || bad "show of the unit record printed control bytes"
"$KC" --cache-dir "$D" show "$UNIT" --json >"$T/unit.json" 2>&1 && clean "$T/unit.json" && json_ok "$T/unit.json" && ok ||
  bad "show --json of the unit record: $(head -c 300 "$T/unit.json")"
# The graph entry whose reference names a hostile target: unreadable images, printed clean.
"$KC" --cache-dir "$D" show "$BADKEY" >"$T/bad.txt" 2>&1
grep -q "images *(none: .*malformed" "$T/bad.txt" && ok || bad "show of a malformed reference: $(cat "$T/bad.txt")"
clean "$T/bad.txt" && ok || bad "show of a malformed reference printed control bytes"
! grep -q '\.\./\.\./x' "$T/bad.txt" && ok || bad "show printed the hostile target"

# Listings.
for args in "ls" "ls --json" "ls --images" "ls --images --json" "stats" "stats --json"; do
  "$KC" --cache-dir "$D" $args >"$T/l.txt" 2>&1 && ok || bad "$args failed: $(cat "$T/l.txt")"
  clean "$T/l.txt" && ok || bad "$args printed control bytes"
done
"$KC" --cache-dir "$D" ls --images --json >"$T/li.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=[x for x in j if x["id"]==sys.argv[2]]; sys.exit(0 if len(r)==1 and r[0]["graphs"]==1 and r[0]["units"]==1 and r[0]["present"] else 1)' "$T/li.json" "$IMG" && ok ||
  bad "ls --images does not count the image's users: $(cat "$T/li.json")"
# A file whose name carries an escape sequence is never listed raw.
cp "$(ls "$D"/v1/ab/"$KEY".sm_80.kce)" "$D/v1/ab/$KEY.$(printf 'x\033[2J').kce"
"$KC" --cache-dir "$D" ls >"$T/l2.txt" 2>&1; clean "$T/l2.txt" && ok || bad "ls printed a file name's control bytes"

# Extract: only inside the folder given, whatever the symbol says; the malformed entry extracts nothing.
mkdir -p "$T/a/b/out"
"$KC" --cache-dir "$D" show "$KEY" --extract "$T/a/b/out" >"$T/x.txt" 2>&1 && ok || bad "extract failed: $(cat "$T/x.txt")"
clean "$T/x.txt" && ok || bad "extract printed control bytes"
n_out=$(find "$T/a/b/out" -type f | wc -l)
n_all=$(find "$T/a" -type f | wc -l)
[ "$n_out" -ge 1 ] && [ "$n_all" = "$n_out" ] && ok || bad "extract wrote outside its folder: $(find "$T/a" -type f)"
mkdir -p "$T/c/d/out"
"$KC" --cache-dir "$D" show "$BADKEY" --extract "$T/c/d/out" >"$T/x2.txt" 2>&1; rc=$?
[ $rc = 1 ] && ok || bad "extract of a malformed reference gave exit $rc, want 1"
clean "$T/x2.txt" && ok || bad "extract of a malformed reference printed control bytes"
[ -z "$(find "$T/c" -type f)" ] && ok || bad "extract of a malformed reference wrote $(find "$T/c" -type f)"
stray=$(find "$T" -name '*.cubin' -not -path "$T/a/b/out/*")
[ -z "$stray" ] && ok || bad "extract wrote a cubin outside its folder: $stray"

echo "test_hostile_names.sh: $checks checks, $fails failed"
[ $fails = 0 ]
