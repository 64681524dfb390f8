#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_compile_cli.sh — `kcache compile` (kc_cache_compile from the command line), with the real NVRTC:
#  - a miss, then a disk hit in a new process with the same key and the same image (-o), one unit record;
#  - repeated --name/--option in order, --header NAME=FILE read and keyed (another header text, another key);
#  - PTX for compute_XY with parameter classes; --json's fields;
#  - a __TIME__ source is a bypass and stores nothing; must-hit refuses what is not stored (exit 1,
#    KC_ENOTCACHED, the --json failure object); an NVRTC error keeps its log; bad usage exits 2;
#  - a FIFO (never waited on), a folder or a file over 64 MiB as source or header: refused, named.
#   test_compile_cli.sh KCACHE   (exit 77 without NVRTC)
set -u
KC=$1
T=$(mktemp -d /tmp/kctest-compile-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
cd "$T" || exit 1
printf '#include "scale.h"\nextern "C" __global__ void k(float *p, int n, double d) { if (n) p[0] = (float)d * SCALE; }\ntemplate <typename T> __global__ void t(T *p) { p[0] = T(N); }\n' >k.cu
printf '#define SCALE 2.0f\n' >scale.h
printf '#define SCALE 3.0f\n' >scale3.h
K() { KCACHE_REQUIRE_HIT= "$KC" --cache-dir "$T/c" compile "$@"; }
out=$(K k.cu --name k --name 't<float>' --option -DN=4 --header scale.h=scale.h --target sm_80 -o a.cubin --json 2>err.txt)
rc=$?
if [ $rc -ne 0 ] && grep -q "KC_ENONVRTC" err.txt; then echo "SKIP: no NVRTC"; exit 77; fi
[ $rc -eq 0 ] || bad "the first compile failed: $(cat err.txt)"
echo "$out" >first.json
K k.cu --name k --name 't<float>' --option -DN=4 --header scale.h=scale.h --target sm_80 -o b.cubin --json >second.json ||
    bad "the second compile failed"
K k.cu --name k --name 't<float>' --option -DN=4 --header scale.h=scale3.h --target sm_80 --json >other.json ||
    bad "the compile with another header failed"
cmp -s a.cubin b.cubin || bad "a hit wrote another image"
[ "$(find c -name '*.unit.kce' | wc -l)" -eq 2 ] || bad "not one unit record per header text: $(find c -name '*.unit.kce')"
python3 - first.json second.json other.json <<'PY' || bad "the --json objects are not as expected"
import json, sys
a, b, o = (json.load(open(p)) for p in sys.argv[1:])
assert a["result"] == "ok" and a["outcome"] == "compile" and b["outcome"] == "disk", (a, b)
assert a["key"] == b["key"] and len(a["key"]) == 32 and o["key"] != a["key"], (a["key"], b["key"], o["key"])
assert a["format"] == "cubin" and a["target"] == "sm_80" and a["image_bytes"] > 0 and a["output"] == "a.cubin"
assert [n["name"] for n in a["names"]] == ["k", "t<float>"], a["names"]
assert a["names"][0]["lowered"] == "k" and a["names"][1]["lowered"].startswith("_Z1tIfE"), a["names"]
assert [(p["offset"], p["size"]) for p in a["names"][0]["params"]] == [(0, 8), (8, 4), (16, 8)], a["names"][0]
assert b["compile_seconds"] == 0 and a["compile_seconds"] > 0
PY
# A host without NVRTC is served what is stored (the recorded toolchain keys it), also with that toolchain pinned.
ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["local"]["id"])' <("$KC" --cache-dir "$T/c" toolchain --json) 2>/dev/null)
for pin in "" "$ID"; do
    KCACHE_NVRTC=/nonexistent KCACHE_TOOLCHAIN=$pin K k.cu --name k --name 't<float>' --option -DN=4 \
        --header scale.h=scale.h --target sm_80 >nonvrtc.txt 2>err.txt
    grep -q '^outcome   disk' nonvrtc.txt || bad "no NVRTC (pin '$pin'): not a disk hit: $(cat nonvrtc.txt err.txt)"
done
KCACHE_NVRTC=/nonexistent K k.cu --name k --option -DN=77 --target sm_80 2>err.txt
[ $? -eq 1 ] && grep -q KC_ENONVRTC err.txt || bad "no NVRTC and not stored: not KC_ENONVRTC: $(cat err.txt)"
KCACHE_NVRTC=/nonexistent "$KC" --cache-dir "$T/c" toolchain --json | grep -q "\"$ID\"" || bad "the stored toolchain is not recorded"
K k.cu --name k --option -DN=4 --header scale.h=scale.h --target compute_80 --json >ptx.json || bad "PTX failed"
python3 -c 'import json,sys; a=json.load(open("ptx.json")); assert a["format"]=="ptx" and [p["class"] for p in a["names"][0]["params"]]==["int","int","float"], a' ||
    bad "PTX's parameter classes"
K k.cu --name k --option -DN=4 --header scale.h=scale.h --target sm_80 | grep -q '^outcome   compile' ||
    bad "another name set than stored was not compiled" # a new key: names k alone
printf 'extern "C" __global__ void k(int *p) { p[0] = __TIME__[0]; }\n' >time.cu
n0=$(find c -name '*.kce' | wc -l)
for i in 1 2; do K time.cu --name k --target sm_80 | grep -q '^outcome   bypass' || bad "a __TIME__ source is not a bypass"; done
[ "$(find c -name '*.kce' | wc -l)" -eq "$n0" ] || bad "a bypass stored something"
out=$(KCACHE_REQUIRE_HIT=1 "$KC" --cache-dir "$T/c" compile k.cu --name k --option -DN=5 --header scale.h=scale.h \
    --target sm_80 --json 2>err.txt)
[ $? -eq 1 ] || bad "must-hit did not refuse"
grep -q KC_ENOTCACHED err.txt || bad "must-hit's refusal: $(cat err.txt)"
echo "$out" | python3 -c 'import json,sys; a=json.load(sys.stdin); assert a["result"]=="failed" and a["status"]=="KC_ENOTCACHED" and "must-hit" in a["error"], a' ||
    bad "must-hit's --json failure object: $out"
KCACHE_REQUIRE_HIT=1 "$KC" --cache-dir "$T/c" compile k.cu --name k --name 't<float>' --option -DN=4 \
    --header scale.h=scale.h --target sm_80 | grep -q '^outcome   disk' || bad "must-hit did not serve what is stored"
printf 'extern "C" __global__ void k(int *p) { p[0] = undeclared_x; }\n' >bad.cu
K bad.cu --name k --target sm_80 2>err.txt
[ $? -eq 1 ] && grep -q undeclared_x err.txt && grep -q KC_ECOMPILE err.txt || bad "an NVRTC error lost its log"
grep -q "'kernel.cu' above is bad.cu (the key holds no file name; --file-name NAME" err.txt || bad "NVRTC's kernel.cu not named: $(tail -2 err.txt)"
K bad.cu --name k --target sm_80 --file-name bad.cu 2>err.txt
[ $? -eq 1 ] && grep -q 'bad.cu(1): error' err.txt && ! grep -q "above is" err.txt || bad "--file-name: $(tail -3 err.txt)"
K k.cu --target sm_80 2>/dev/null; [ $? -eq 2 ] || bad "no --name is not a usage error"
K k.cu --name k 2>/dev/null; [ $? -eq 2 ] || bad "no --target is not a usage error"
K k.cu --name k --header nofile --target sm_80 2>/dev/null; [ $? -eq 2 ] || bad "--header without = is not a usage error"
K k.cu --name k --name k --target sm_80 2>err.txt; [ $? -eq 1 ] && grep -q "given twice" err.txt || bad "a name twice"
K missing.cu --name k --target sm_80 2>/dev/null; [ $? -eq 1 ] || bad "a missing file"
# Every failure after parsing prints --json's object, and says its status on stderr.
printf 'a\0b' >nul.cu
for args in "missing.cu --name k" "nul.cu --name k" "k.cu --name k -o /nonexistent/dir/x" \
    "k.cu --name k --header scale.h=nofile.h"; do
    out=$(K $args --target sm_80 --json 2>err.txt)
    [ $? -eq 1 ] || bad "$args: not exit 1"
    grep -q '(KC_E[A-Z]*)$' err.txt || bad "$args: stderr without the status: $(cat err.txt)"
    echo "$out" | python3 -c 'import json,sys; a=json.load(sys.stdin); assert a["result"]=="failed" and a["status"].startswith("KC_E") and a["error"], a' ||
        bad "$args: no --json failure object: '$out'"
done
# A source or header that is no regular file (a FIFO: never waited on; a folder) or over 64 MiB is refused
# before any read, with the file named (the library's discipline for the files a user names).
mkfifo fifo.cu && mkdir dir.cu && truncate -s 65M big.cu || bad "cannot make the hostile files"
for args in "fifo.cu --name k" "k.cu --name k --header scale.h=fifo.cu" "dir.cu --name k" "big.cu --name k"; do
    timeout 30 env KCACHE_REQUIRE_HIT= "$KC" --cache-dir "$T/c" compile $args --target sm_80 --json >out.json 2>err.txt
    rc=$?
    [ $rc -eq 1 ] || bad "$args: exit $rc, not 1 (124: it waited)"
    case $args in
    big*) want="source 'big.cu' is 68157440 bytes, over the cap of 64 MiB (KC_EINVAL)" ;;
    *header*) want="header 'fifo.cu' is not a regular file (KC_EINVAL)" ;;
    *) want="source '${args%% *}' is not a regular file (KC_EINVAL)" ;;
    esac
    grep -qF "$want" err.txt || bad "$args: not '$want': $(cat err.txt)"
    grep -q '"status": "KC_EINVAL"' out.json || bad "$args: no --json failure object: $(cat out.json)"
done
# A file that says 0 bytes but has more (/proc, some FUSE) is read to its end: its text reaches NVRTC.
if [ -r /proc/self/status ]; then
    KCACHE_REQUIRE_HIT= "$KC" --cache-dir "$T/c" compile /proc/self/status --name k --target sm_80 >/dev/null 2>err.txt
    grep -q "Name:" err.txt || bad "/proc/self/status read as empty: $(cat err.txt)"
fi
out=$(KCACHE_REQUIRE_HIT= "$KC" --cache-dir /proc/no/such compile k.cu --name k --target sm_80 --json 2>/dev/null)
echo "$out" | grep -q '"result": "failed"' || bad "a cache that cannot be opened: no --json failure object: '$out'"
# The key does not hold how the path is spelled; --file-name names the file (another key).
k1=$(K k.cu --name k --option -DN=4 --header scale.h=scale.h --target sm_80 | sed -n 's/^key *//p')
k2=$(K "$T/k.cu" --name k --option -DN=4 --header scale.h=scale.h --target sm_80 | sed -n 's/^key *//p')
k3=$(K ./k.cu --file-name k.cu --name k --option -DN=4 --header scale.h=scale.h --target sm_80 | sed -n 's/^key *//p')
[ -n "$k1" ] && [ "$k1" = "$k2" ] && [ "$k3" != "$k1" ] && [ -n "$k3" ] || bad "keys by path spelling: '$k1' '$k2' '$k3'"
K k.cu --name k --target sm_8x 2>err.txt; [ $? -eq 1 ] && grep -q KC_EARCH err.txt || bad "a bad target"
[ "$fails" = 0 ] && echo "test_compile_cli: passed"
[ "$fails" = 0 ]
