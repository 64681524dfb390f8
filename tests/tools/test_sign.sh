#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_sign.sh — `kcache sign` (issue 20, item 5): a build host signs what it ships with its private key.
#  - sign BUNDLE: a real prewarmed bundle (graph entry, image, unit record, with a coverage record
#    and a site profile) signed in place; importing it with KCACHE_KEYRING = the key's public key
#    succeeds (every object written, the coverage and profile still there); with another key's
#    keyring, refused whole, nothing written; the unsigned bundle is refused by the same keyring;
#  - sign --local: only this cache's own compiles (mode 0600) are re-written signed and stay 0600;
#    objects imported from a bundle (0400) are skipped, counted, named in --json and left as they were;
#    a cache that holds only its own compiles, signed with --local, exports a bundle the keyring takes;
#  - a private key others can read (0644) is refused with the library's reason; nothing is changed;
#  - usage: neither or both of BUNDLE and --local, no --key.
#   test_sign.sh KCACHE KC_FILL KERNELS_DIR
set -u
KC=$1; FILL=$2; KDIR=$3
# Whatever trust the caller's environment sets is not this test's (an empty KCACHE_HMAC_KEY_FILE is an error).
unset KCACHE_KEYRING KCACHE_SIGNING_KEY_FILE KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_REMOTE KCACHE_REQUIRE_HIT KCACHE_STRICT
T=$(mktemp -d /tmp/kctest-sign-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
jq_() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
check_json() { if jq_ "$1" "$2"; then ok; else bad "$2 ; got: $(head -c 900 "$1")"; fi; }
# expect_rc RC CMD...: run with stdout to $T/out, stderr to $T/err
expect_rc() { local want=$1; shift; "$@" >"$T/out" 2>"$T/err"; local rc=$?; [ $rc = "$want" ] && ok || bad "exit $rc (want $want): $*: $(head -c 600 "$T/err") $(head -c 300 "$T/out")"; }
# signer FILE: the key id of an entry file's signature trailer ("" when it is not signed: flag bit 1).
signer() { python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
fl = int.from_bytes(b[12:16], "little")
print(b[-72:-64].hex() if fl & 2 else "")' "$1"; }
mode_of() { stat -c %a "$1"; }
entry_files() { find "$1/v1" -name '*.kce' | sort; }

"$KC" keygen "$T/a" >"$T/out" 2>&1 && ok || bad "keygen a: $(cat "$T/out")"
"$KC" keygen "$T/b" >/dev/null 2>&1 && ok || bad "keygen b"
AID=$(awk '{print $3}' "$T/a.pub")

# ---- a bundle ----
K=$T/k; mkdir -p "$K"
cp "$KDIR"/*.cu "$KDIR"/*.cuh "$KDIR/softmax.json" "$K/"
echo '{"graphs": ["softmax.json"], "archs": ["sm_90"]}' >"$K/m.json"
B=$T/build
"$KC" --cache-dir "$B" prewarm "$K/m.json" >/dev/null 2>"$T/p.err" && ok || bad "prewarm: $(tail -3 "$T/p.err")"
# A site profile in the build cache (the one written form; filed under the XXH3-64 of its name), so the bundle is v4 (sealed).
mkdir -p "$B/v1/profiles"
PNAME=$(python3 -c '
import ctypes, ctypes.util
f = ctypes.CDLL(ctypes.util.find_library("xxhash")).XXH3_64bits
f.restype = ctypes.c_uint64; f.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
print("%016x.profile" % f(b"signsite", 8))')
printf 'kcache-profile 1\nsite signsite\ninput 0 1\n' >"$B/v1/profiles/$PNAME"
expect_rc 0 "$KC" --cache-dir "$B" export "$T/ship.kcb" --manifest "$K/m.json"
cp "$T/ship.kcb" "$T/unsigned.kcb"

expect_rc 0 "$KC" sign --key "$T/a.key" "$T/ship.kcb" --json
cp "$T/out" "$T/s.json"
check_json "$T/s.json" "j['signed'] == 3 and j['skipped'] == 0 and j['graphs'] == 1 and j['images'] == 1 and j['units'] == 1 and j['profiles'] == 1 and j['coverage'] is True and j['key_id'] == '$AID'"
[ -z "$(ls -A "$T" | grep kcache-sign)" ] && ok || bad "scratch folder left: $(ls -A "$T")"
cmp -s "$T/ship.kcb" "$T/unsigned.kcb" && bad "the bundle was not rewritten" || ok

# The public key's keyring takes it: every object, its coverage record and its profile.
expect_rc 0 env KCACHE_KEYRING="$T/a.pub" "$KC" --cache-dir "$T/gpu1" import "$T/ship.kcb" --json
check_json "$T/out" "j['written'] == 3 and j['graphs_written'] == 1 and j['images_written'] == 1 and j['units_written'] == 1 and j['profiles'] == 1 and j['profiles_written'] == 1 and j['coverage'] is not None and j['coverage']['complete'] is True and j['coverage']['targets'] == ['sm_90']"
n=0; for f in $(entry_files "$T/gpu1"); do [ "$(signer "$f")" = "$AID" ] || n=$((n+1)); done
[ $n = 0 ] && ok || bad "$n imported objects not signed by $AID"
# The imported graph is a hit on a keyring host that must not compile (its image and unit came with it).
expect_rc 0 env KCACHE_KEYRING="$T/a.pub" "$KC" --cache-dir "$T/gpu1" coverage "$K/m.json"
# Another key's keyring refuses it whole; so does the first keyring refuse the unsigned bundle.
expect_rc 1 env KCACHE_KEYRING="$T/b.pub" "$KC" --cache-dir "$T/gpu2" import "$T/ship.kcb"
grep -q "signed by key $AID, which the keyring does not trust" "$T/err" && ok || bad "other keyring: $(cat "$T/err")"
[ -z "$(find "$T/gpu2" -name '*.kce' 2>/dev/null)" ] && ok || bad "a refused import wrote entries"
expect_rc 1 env KCACHE_KEYRING="$T/a.pub" "$KC" --cache-dir "$T/gpu3" import "$T/unsigned.kcb"
grep -q "carries no signature" "$T/err" && ok || bad "unsigned bundle: $(cat "$T/err")"
# Signing again (another key) replaces the signature: a bundle has one signer per entry.
expect_rc 0 "$KC" sign --key "$T/b.key" "$T/ship.kcb"
grep -q "3 entries signed (1 graph entries, 1 images, 1 unit records), 0 skipped" "$T/out" && grep -q "coverage record kept" "$T/out" \
  && grep -q "1 site profile kept" "$T/out" && ok || bad "sign text: $(cat "$T/out")"
expect_rc 0 env KCACHE_KEYRING="$T/b.pub" "$KC" --cache-dir "$T/gpu4" import "$T/ship.kcb"
expect_rc 1 env KCACHE_KEYRING="$T/a.pub" "$KC" --cache-dir "$T/gpu5" import "$T/ship.kcb"

# ---- --local ----
L=$T/local
"$FILL" "$L" 2 >/dev/null && ok || bad "fill"                     # own compiles: 0600
"$KC" --cache-dir "$L" import "$T/unsigned.kcb" >/dev/null 2>&1 && ok || bad "import into local"  # 3 objects: 0400
declare -A before
for f in $(entry_files "$L"); do before[$f]=$(mode_of "$f"); done
[ ${#before[@]} = 5 ] && ok || bad "local holds ${#before[@]} objects, not 5"
expect_rc 0 "$KC" --cache-dir "$L" sign --key "$T/a.key" --local --json
cp "$T/out" "$T/l.json"
check_json "$T/l.json" "j['signed'] == 2 and j['skipped'] == 3 and j['failed'] == 0 and len(j['skipped_entries']) == 3 and all(n.endswith(('.img', '.unit', '.sm_90')) for n in j['skipped_entries'])"
own=0; foreign=0
for f in $(entry_files "$L"); do
  m=$(mode_of "$f"); s=$(signer "$f")
  [ "$m" = "${before[$f]:-none}" ] || bad "$f: mode ${before[$f]:-none} became $m"
  if [ "$m" = 600 ]; then [ "$s" = "$AID" ] && own=$((own+1)) || bad "own $f not signed ($s)"
  else [ -z "$s" ] && foreign=$((foreign+1)) || bad "imported $f was signed"; fi
done
[ $own = 2 ] && [ $foreign = 3 ] && ok || bad "own signed $own (want 2), imported left $foreign (want 3)"
grep -qx "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["skipped_entries"][0])' "$T/l.json")" \
  <(for f in $(entry_files "$L"); do [ "$(mode_of "$f")" = 400 ] && basename "$f" .kce; done) && ok || bad "skipped_entries names no imported object"
# Text output: the counts.
expect_rc 0 "$KC" --cache-dir "$L" sign --key "$T/a.key" --local
grep -q "^signed 2 entries of .* with key $AID; skipped 3 (fetched or imported, not compiled here)$" "$T/out" && ok || bad "local text: $(cat "$T/out")"
# A cache of own compiles only, signed with --local: its bundle is taken by the keyring.
L2=$T/local2
"$FILL" "$L2" 3 >/dev/null && ok || bad "fill 2"
expect_rc 0 "$KC" --cache-dir "$L2" export "$T/l2.kcb"
expect_rc 1 env KCACHE_KEYRING="$T/a.pub" "$KC" --cache-dir "$T/gpu6" import "$T/l2.kcb"
expect_rc 0 "$KC" --cache-dir "$L2" sign --key "$T/a.key" --local
expect_rc 0 "$KC" --cache-dir "$L2" export "$T/l2.kcb"
expect_rc 0 env KCACHE_KEYRING="$T/a.pub" "$KC" --cache-dir "$T/gpu6" import "$T/l2.kcb"
grep -q "wrote 3 " "$T/out" && ok || bad "signed local export: $(cat "$T/out")"

# ---- a private key others can read: refused with the reason, nothing changed ----
cp "$T/a.key" "$T/open.key"; chmod 644 "$T/open.key"
cp "$T/unsigned.kcb" "$T/u2.kcb"
expect_rc 1 "$KC" sign --key "$T/open.key" "$T/u2.kcb"
grep -q "private key '$T/open.key' can be read or written by others (mode 644): chmod 600 it" "$T/err" && ok || bad "0644 key: $(cat "$T/err")"
cmp -s "$T/u2.kcb" "$T/unsigned.kcb" && ok || bad "a refused key changed the bundle"
L3=$T/local3; "$FILL" "$L3" 1 >/dev/null
f3=$(entry_files "$L3"); sum3=$(md5sum <"$f3")
expect_rc 1 "$KC" --cache-dir "$L3" sign --key "$T/open.key" --local
grep -q "can be read or written by others (mode 644)" "$T/err" && [ "$(md5sum <"$f3")" = "$sum3" ] && ok || bad "0644 key, --local: $(cat "$T/err")"

# ---- usage ----
expect_rc 2 "$KC" sign --key "$T/a.key"
expect_rc 2 "$KC" sign --key "$T/a.key" --local "$T/u2.kcb"
expect_rc 2 "$KC" sign "$T/u2.kcb"
expect_rc 1 "$KC" sign --key "$T/a.key" "$T/nonexistent.kcb"
ln -s "$T/u2.kcb" "$T/link.kcb"
expect_rc 2 "$KC" sign --key "$T/a.key" "$T/link.kcb"
[ -L "$T/link.kcb" ] && ok || bad "a symbolic link was replaced"

echo "test_sign.sh: $checks checks, $fails failed"
[ $fails = 0 ]
