#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_old_cache.sh — caches written by an older build hit with this one (keys, entry and bundle
# formats, the cache directory's layout and record must not change without a new version).
# The fixture (tests/compat/fixture/, written once by make_fixture.sh with the build named in its
# GENERATED file) holds a cache directory and a bundle of two bundled graphs for sm_80.  Every
# lookup here runs in must-hit mode (KCACHE_REQUIRE_HIT=1) with no NVRTC (KCACHE_NVRTC names
# nothing), so a miss fails and nothing is ever compiled; the toolchain and toolkit-headers
# identities are pinned to the fixture's, so the keys do not depend on this host's NVRTC.
#  - coverage, get (each graph; its key is the one the old build computed), prewarm and verify of
#    the old cache directory: every graph hits, nothing is corrupt;
#  - unpinned, the toolchain and headers the old directory's record names are used, and hit;
#  - the old bundle imports into an empty directory, and its graphs hit there;
#  - with the CUDA driver double as an 8.0 GPU, get loads each graph from the old cache;
#  - the test can fail: one flipped byte in an old graph entry, or another toolchain identity
#    (one key component), is a refused lookup (exit 1), not a hit.
#   test_old_cache.sh KCACHE KERNELS_DIR FIXTURE_DIR [CUDA_DOUBLE_LIB]
set -u
KC=$1; KDIR=$2; FIX=$3; DOUBLE=${4:-}
T=$(mktemp -d /tmp/kctest-oldcache-XXXXXX)
trap 'rm -rf "$T"' EXIT
unset KCACHE_DIR KCACHE_REMOTE KCACHE_READONLY KCACHE_DISABLE KCACHE_STRICT KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE \
      KCACHE_KEYRING KCACHE_SIGNING_KEY_FILE KCACHE_CUDA_DRIVER KCACHE_TOOLCHAIN KCACHE_TOOLKIT_HEADERS
export KCACHE_REQUIRE_HIT=1 KCACHE_NVRTC=$T/nowhere/libnvrtc.so.13
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
jq_() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
check_json() { if jq_ "$1" "$2"; then ok; else bad "$2 ; got: $(head -c 900 "$1")"; fi; }
# expect_rc RC CMD...: run with stdout to $T/out, stderr to $T/err
expect_rc() { local want=$1; shift; "$@" >"$T/out" 2>"$T/err"; local rc=$?; [ $rc = "$want" ] && ok || bad "exit $rc (want $want): $*: $(head -c 900 "$T/err")"; }
field() { sed -n "s/^$1=//p" "$FIX/GENERATED"; }

TARGET=$(field target); TOOLCHAIN=$(field toolchain); HEADERS=$(field toolkit_headers)
[ -n "$TARGET" ] && [ -n "$TOOLCHAIN" ] && [ -n "$HEADERS" ] || { echo "FAIL: $FIX/GENERATED lacks target/toolchain/toolkit_headers" >&2; exit 1; }
GRAPHS=$(sed -n 's/^key\.\([a-z_0-9]*\)=.*/\1/p' "$FIX/GENERATED")
PIN=(env KCACHE_TOOLCHAIN="$TOOLCHAIN" KCACHE_TOOLKIT_HEADERS="$HEADERS")

# The specs are this tree's bundled ones (kernels/): the same specs must still give the old keys.
K=$T/k; mkdir -p "$K"
cp "$KDIR"/*.cu "$KDIR"/*.cuh "$K/"
for g in $GRAPHS; do cp "$KDIR/$g.json" "$K/"; done
cp "$FIX/manifest.json" "$K/m.json"
fresh() { rm -rf "$1"; mkdir -p "$1"; tar -C "$1" -xzf "$FIX/cache.tar.gz"; }
D=$T/cache; fresh "$D"

# coverage: every graph of the old cache hits, under the key the old build computed.
expect_rc 0 "${PIN[@]}" "$KC" --cache-dir "$D" coverage "$K/m.json" --arch "$TARGET" --json
cp "$T/out" "$T/cov.json"
check_json "$T/cov.json" "j['covered'] is True and j['hits'] == $(echo $GRAPHS | wc -w) and j['missing'] == []"
for g in $GRAPHS; do
    check_json "$T/cov.json" "[r['key'] for r in j['results'] if r['graph'] == '$g'] == ['$(field "key.$g")']"
done

# get: a disk hit per graph, its key the old one, nothing compiled.
for g in $GRAPHS; do
    expect_rc 0 "${PIN[@]}" "$KC" --cache-dir "$D" get "$K/$g.json" --arch "$TARGET" --json
    check_json "$T/out" "j['graph'] == '$g' and j['key'] == '$(field "key.$g")' and j['source'] == 'disk' and j['units_compiled'] == 0 and j['compile_ms'] == 0"
done

# prewarm of the manifest: all hits, nothing compiled; verify: nothing corrupt.
expect_rc 0 "${PIN[@]}" "$KC" --cache-dir "$D" prewarm "$K/m.json" --arch "$TARGET" --json
check_json "$T/out" "j['compiled'] == 0 and j['failed'] == 0 and j['hits'] == j['variants'] == $(echo $GRAPHS | wc -w) and j['units_compiled'] == 0"
expect_rc 0 "$KC" --cache-dir "$D" verify --json
check_json "$T/out" "j['corrupt'] == 0 and j['ok'] == j['checked'] and j['dangling'] == 0"

# Unpinned: the old directory's record names the toolchain and headers that stored its entries.
for g in $GRAPHS; do
    expect_rc 0 "$KC" --cache-dir "$D" get "$K/$g.json" --arch "$TARGET" --json
    check_json "$T/out" "j['key'] == '$(field "key.$g")' and j['source'] == 'disk'"
done

# The old bundle: imported into an empty directory, its graphs hit there.
I=$T/imported
expect_rc 0 "$KC" --cache-dir "$I" import "$FIX/old.kcb" --json
expect_rc 0 "${PIN[@]}" "$KC" --cache-dir "$I" coverage "$K/m.json" --arch "$TARGET" --json
check_json "$T/out" "j['covered'] is True and j['missing'] == []"

# On a GPU (the driver double as an 8.0 device): get loads each graph from the old cache.
if [ -n "$DOUBLE" ]; then
    for g in $GRAPHS; do
        KCACHE_CUDA_DRIVER=$DOUBLE KCD_DEVICES=8.0 expect_rc 0 "${PIN[@]}" "$KC" --cache-dir "$D" get "$K/$g.json" --json
        check_json "$T/out" "j['key'] == '$(field "key.$g")' and j['source'] == 'disk' and j['variant'] == '$TARGET' and j['load_us'] > 0"
    done
fi

# It can fail.  One flipped byte in the first graph entry: that lookup is refused (exit 1).
C=$T/corrupt; fresh "$C"
g1=$(echo $GRAPHS | cut -d' ' -f1); k1=$(field "key.$g1")
e=$(ls "$C"/v1/*/"$k1.$TARGET.kce")
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2] ^= 0x40; open(p,"wb").write(b)' "$e"
expect_rc 1 "${PIN[@]}" "$KC" --cache-dir "$C" get "$K/$g1.json" --arch "$TARGET" --json
expect_rc 1 "${PIN[@]}" "$KC" --cache-dir "$C" coverage "$K/m.json" --arch "$TARGET" --json
check_json "$T/out" "j['covered'] is False and [m['graph'] for m in j['missing']] == ['$g1']"
# Another toolchain identity (one key component changed): every graph is another key, refused.
expect_rc 1 env KCACHE_TOOLCHAIN="build-id:00000000000000000000000000000000000000aa" KCACHE_TOOLKIT_HEADERS="$HEADERS" \
    "$KC" --cache-dir "$D" coverage "$K/m.json" --arch "$TARGET" --json
check_json "$T/out" "j['covered'] is False and j['hits'] == 0"

echo "test_old_cache: $checks checks, $fails failed (fixture: $(field commit))"
[ $fails = 0 ]
