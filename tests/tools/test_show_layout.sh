#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_show_layout.sh — what `kcache show` prints of each kind of object keeps its layout: the text's blocks in
# order and the JSON object's fields in order, for a graph entry (by key and by SPEC), its image and its unit
# record, plus the errors' wording and exit codes.  The blocks and fields are those the tool printed when it was
# one file (cmd_show.c, before show_object.c was split out of it); the values (keys, sizes, times) are not
# compared, and neither are the fields that depend on the host (origin, provenance).
#   test_show_layout.sh KCACHE KERNELS_DIR
set -u
KC=$1; KDIR=$2
unset KCACHE_KEYRING KCACHE_SIGNING_KEY_FILE KCACHE_HMAC_KEY KCACHE_HMAC_KEY_FILE KCACHE_REMOTE KCACHE_REQUIRE_HIT KCACHE_STRICT
T=$(mktemp -d /tmp/kctest-showlayout-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
K=$T/k; mkdir -p "$K"
cp "$KDIR/softmax.json" "$KDIR/softmax.cu" "$KDIR/common.cuh" "$K/"
echo '{"graphs": ["softmax.json"], "archs": ["sm_90"]}' >"$K/m.json"
C=$T/c
"$KC" --cache-dir "$C" prewarm "$K/m.json" >/dev/null 2>"$T/p.err" || { echo "FAIL: prewarm: $(tail -3 "$T/p.err")" >&2; exit 1; }
G=$(find "$C/v1" -name '*.sm_90.kce' | sed 's#.*/##; s#\.sm_90\.kce$##')
I=$(find "$C/v1" -name '*.img.kce' | sed 's#.*/##; s#\.img\.kce$##')
U=$(find "$C/v1" -name '*.unit.kce' | sed 's#.*/##; s#\.unit\.kce$##')
[ -n "$G" ] && [ -n "$I" ] && [ -n "$U" ] || { echo "FAIL: want a graph entry, an image and a unit record: $(find "$C/v1")" >&2; exit 1; }

# blocks NAME ARGS...: the first word of each of the object's own lines (two spaces in), in order
blocks() { "$KC" --cache-dir "$C" show "$@" 2>&1 | grep -E '^  [a-z]' | awk '{print $1}' | tr '\n' ' ' | sed 's/ $//'; }
# fields ARGS...: each shown object's JSON fields in order, host-dependent ones left out
fields() { "$KC" --cache-dir "$C" show "$@" --json | python3 -c '
import json, sys
skip = {"host", "producer", "manifest", "compile_us", "compile_wall_us", "provenance"}
print(" | ".join(" ".join(k for k in o if k not in skip) for o in json.load(sys.stdin)))'; }
want() { [ "$2" = "$3" ] || bad "$1: got '$2', want '$3'"; }

GB="graph file created toolchain origin provenance images kernels parameters sections digests"
GF="key variant object bytes path toolchain created_at_ns graph images images_present kernels parameters sections digests"
want "graph text" "$(blocks "$G")" "$GB"
want "graph text (SPEC)" "$(blocks "$K/softmax.json" --arch sm_90)" "$GB"
want "graph json" "$(fields "$G")" "$GF"
want "graph json (SPEC)" "$(fields "$K/softmax.json")" "$GF"
want "image text" "$(blocks "$I")" "file created toolchain provenance image used sections"
want "image json" "$(fields "$I")" "key variant object bytes path toolchain created_at_ns image sound graphs units sections"
want "unit text" "$(blocks "$U.unit")" "file created toolchain origin provenance image names digests"
want "unit json" "$(fields "$U.unit")" "key variant object bytes path toolchain created_at_ns sound image names digests"
# every object of the key at once (a prefix): one JSON array, the graph's variants each an object
want "two objects" "$(fields "${G:0:6}" | tr -cd '|')" ""
"$KC" --cache-dir "$C" show "$I" | grep -q "^    graph $G.sm_90  kernels softmax_fwd, softmax_bwd$" || bad "image: its graph and kernels"
"$KC" --cache-dir "$C" show "$I" | grep -q "^    unit record $U.unit$" || bad "image: its unit record"

# errors: wording and exit codes
err() { local rc=$1; shift; "$KC" --cache-dir "$C" show "$@" >"$T/out" 2>"$T/err"; local got=$?
        [ $got = "$rc" ] || bad "show $*: exit $got, want $rc"; }
err 2 "${G:0:3}"; grep -q "KEY must be 4 to 32 lowercase hex digits (or give a SPEC file)" "$T/err" || bad "short key: $(cat "$T/err")"
err 1 ffff; grep -qx "kcache show: no entry matches 'ffff'" "$T/err" || bad "no match: $(cat "$T/err")"
err 1 "$K/softmax.json" --arch sm_80
grep -qx "kcache show: graph 'softmax' (key [0-9a-f]*) has no stored entry for sm_80" "$T/err" || bad "spec, no entry: $(cat "$T/err")"
err 2; grep -q "a KEY or a SPEC is required" "$T/err" || bad "no argument: $(cat "$T/err")"
err 2 "$G" --extract; grep -q -- "option '--extract' needs a value (DIR)" "$T/err" || bad "--extract: $(cat "$T/err")"
err 1 "$I" --extract "$T/x"; grep -q "is not a graph entry: --extract writes a graph's images" "$T/err" || bad "extract image: $(cat "$T/err")"
err 0 "$G" --extract "$T/y"; grep -qx "  extracted [0-9]* image(s) to $T/y" "$T/out" || bad "extract: $(cat "$T/out")"
[ "$fails" = 0 ] || exit 1
echo "test_show_layout: graph, image and unit record, text and JSON, errors: as before"
