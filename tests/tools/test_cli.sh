#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_cli.sh — the kcache tool end to end, as a user runs it: every command, its --json
# output (parsed, not grepped), exit codes, and errors on stderr.
#   test_cli.sh PATH/TO/kcache PATH/TO/kc_fill
set -u
KC=$1
FILL=$2
T=$(mktemp -d /tmp/kctest-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
D=$T/cache
fails=0; checks=0
ok()   { checks=$((checks+1)); }
bad()  { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
expect_rc() { # expect_rc WANT CMD...
  local want=$1; shift
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "exit $rc (want $want): $* ; stderr: $(head -c 300 "$T/err")"; fi
}
# json FILE EXPR: evaluate a Python expression over the parsed JSON in FILE as `j`.
json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
expect_json() { if json "$T/out" "$1"; then ok; else bad "json check failed: $1 ; got: $(head -c 400 "$T/out")"; fi; }

# Help and usage.
expect_rc 0 "$KC" --help
grep -q "prewarm\|stats" "$T/out" && ok || bad "--help lists no commands"
for c in stats ls show verify gc clear; do expect_rc 0 "$KC" $c --help; done
expect_rc 2 "$KC" no-such-command
grep -q "unknown command" "$T/err" && ok || bad "no message for an unknown command"
expect_rc 2 "$KC"
expect_rc 2 "$KC" --cache-dir "$D" gc --max-size lots
expect_rc 2 "$KC" --cache-dir "$D" ls --bogus

# An empty cache.
expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json 'all(k in j for k in ["entries","bytes","hits","misses","bypasses","compiles","corrupt","evictions"]) and j["entries"]==0'
expect_json 'all(j[k] == 0 for k in ["graphs","images","units","graph_bytes","image_bytes","unit_bytes","unit_hits","unit_compiles","images_missing"])'
expect_rc 0 "$KC" --cache-dir "$D" ls --json
expect_json 'j == []'
expect_rc 0 "$KC" --cache-dir "$D" verify --json
expect_json 'j == {"checked":0,"ok":0,"corrupt":0,"quarantined":0,"stale":0,"images_checked":0,"refs_checked":0,"missing_refs":0,"bad_refs":0,"dangling":0}'
[ ! -e "$D" ] && ok || bad "stats, ls or verify made the cache directory (they only read)"
expect_rc 0 "$KC" --cache-dir "$D" stats --zero   # a command that writes makes it
[ "$(stat -c %a "$D")" = 700 ] && ok || bad "cache directory mode is $(stat -c %a "$D"), want 700"

# KCACHE_DIR is honoured; --cache-dir beats it.
KCACHE_DIR=$T/envdir expect_rc 0 "$KC" stats --json
expect_json 'j["dir"].endswith("/envdir")'
KCACHE_DIR=$T/envdir expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json 'j["dir"].endswith("/cache")'

# --remote beats KCACHE_REMOTE (here a URL that cannot be opened), and --remote= turns it off.
# Port 1 on the loopback refuses at once: the remote is configured but unreachable.
KCACHE_REMOTE=bogus expect_rc 1 "$KC" --cache-dir "$T/rem" stats --json
if [ "${KC_HAVE_REDIS:-1}" = 1 ]; then # a build without the redis back end (KCACHE_WITH_REDIS) refuses redis://
KCACHE_REMOTE=bogus expect_rc 0 "$KC" --cache-dir "$T/rem" --remote redis://127.0.0.1:1/0 stats --json
expect_json 'j["remote"]["url"] == "redis://127.0.0.1:1/0" and j["remote"]["reachable"] == False'
fi
KCACHE_REMOTE=bogus expect_rc 0 "$KC" --cache-dir "$T/rem" --remote= stats --json
expect_json 'j["remote"] is None'

# Twenty entries of 2000 bytes.
"$FILL" "$D" 20 2000 >"$T/keys" || bad "fill failed"
K1=$(head -n1 "$T/keys")
expect_rc 0 "$KC" --cache-dir "$D" ls --json
expect_json 'len(j) == 20 and all(set(["key","variant","bytes","last_used"]) <= set(e) for e in j) and all(e["variant"]=="sm_90" for e in j)'
expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json 'j["entries"] == 20 and j["puts"] == 20 and j["bytes"] > 20*2000'
expect_rc 0 "$KC" --cache-dir "$D" show "$K1"
grep -q "KERNELS" "$T/out" && grep -q "toolchain  test" "$T/out" && ok || bad "show lacks sections or toolchain"
expect_rc 0 "$KC" --cache-dir "$D" show "${K1:0:8}" --json
expect_json "len(j) == 1 and j[0]['key'] == '$K1' and 'graph' in j[0]['digests'] and j[0]['sections']['KERNELS'] == 2000"
expect_rc 1 "$KC" --cache-dir "$D" show 0000000000000000000000000000dead
expect_rc 2 "$KC" --cache-dir "$D" show ../../etc
expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json 'j["hits"] == 0 and j["misses"] == 0 and j["mode"] == "read-write"'   # show is a maintenance read, not a use (issue 19)
KCACHE_READONLY=1 expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json 'j["mode"] == "read-only"'
KCACHE_READONLY=1 expect_rc 0 "$KC" --cache-dir "$D" stats
grep -q "counts below are those stored before, plus this process" "$T/out" && ok || bad "stats does not say a read-only cache counts per process"

# keygen: a key pair, the private one 0600 and never replaced.
expect_rc 0 "$KC" keygen "$T/signer"
[ "$(stat -c %a "$T/signer.key")" = 600 ] && grep -q "^kcache-ed25519-public 1 " "$T/signer.pub" && ok || bad "keygen files"
expect_rc 1 "$KC" keygen "$T/signer"
grep -q "never replaced" "$T/err" && ok || bad "keygen replaced a key or did not say why"

# Corrupt one entry: verify finds it and exits 1, moving nothing; verify --repair quarantines it;
# the next verify is clean.
F=$(ls "$D"/v1/*/"$K1".sm_90.kce)
printf 'garbage' | dd of="$F" bs=1 seek=200 conv=notrunc 2>/dev/null
expect_rc 1 "$KC" --cache-dir "$D" verify --json
expect_json 'j["checked"] == 20 and j["corrupt"] == 1 and j["quarantined"] == 0 and j["ok"] == 19'
[ -f "$F" ] && ok || bad "verify without --repair moved the corrupt entry"
expect_rc 1 "$KC" --cache-dir "$D" verify --repair --json
expect_json 'j["checked"] == 20 and j["corrupt"] == 1 and j["quarantined"] == 1 and j["ok"] == 19'
[ "$(ls "$D"/v1/quarantine | wc -l)" = 1 ] && ok || bad "nothing in quarantine"
expect_rc 0 "$KC" --cache-dir "$D" verify --json
expect_json 'j["checked"] == 19 and j["corrupt"] == 0'
expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json 'j["corrupt"] == 1 and j["entries"] == 19'

# An older format's entry (version 2 in its header) is stale: verify reports it and exits 0 (not
# corrupt, not quarantined); the next gc removes it.
python3 -c 'import sys; b=bytearray(open(sys.argv[1],"rb").read()); b[8]=2; open(sys.argv[2],"wb").write(b)' \
  "$(ls "$D"/v1/*/*.sm_90.kce | head -1)" "$D/v1/ab/ab00000000000000000000000000feed.sm_90.kce"
expect_rc 0 "$KC" --cache-dir "$D" verify --json
expect_json 'j["checked"] == 20 and j["stale"] == 1 and j["corrupt"] == 0 and j["quarantined"] == 0'
expect_rc 0 "$KC" --cache-dir "$D" verify
grep -q "stale 1" "$T/out" && ok || bad "verify does not report the stale entry: $(cat "$T/out")"

# gc down to 10K, then clear.
expect_rc 0 "$KC" --cache-dir "$D" gc --max-size 10K --json
expect_json 'j["bytes_after"] <= 10240 and j["evicted"] >= 13 and j["stale_removed"] == 1 and j["dangling_removed"] == 0'
expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json 'j["bytes"] <= 10240 and j["evictions"] >= 13'
expect_rc 0 "$KC" --cache-dir "$D" clear
expect_rc 0 "$KC" --cache-dir "$D" ls --json
expect_json 'j == []'

# A cache directory that is unsafe is refused with a clear error.
mkdir -m 777 "$T/open" && chmod 777 "$T/open"
expect_rc 1 "$KC" --cache-dir "$T/open" stats
grep -q "writable by group or others" "$T/err" && ok || bad "no clear error for an unsafe directory"
grep -q "KCACHE_ALLOW_UNSAFE_DIR" "$T/err" && ok || bad "the error does not say how to allow it"
expect_rc 0 "$KC" --cache-dir "$T/open" --allow-unsafe-dir stats   # allowed explicitly
expect_rc 0 env KCACHE_ALLOW_UNSAFE_DIR=1 "$KC" --cache-dir "$T/open" stats
mkdir -p "$T/real/sub" && ln -s "$T/real" "$T/lnk"
expect_rc 1 "$KC" --cache-dir "$T/lnk/sub/cache" stats --zero         # a parent that is a symbolic link
grep -q "symbolic link" "$T/err" && ok || bad "no clear error for a symbolic-link parent: $(cat "$T/err")"

# Issue 14's stale header, from the spec's folder: k.cu includes scale.cuh, which sits beside it.
# Unlisted, NVRTC must not find it there (an error that says how to provide it); listed, an
# edit of it is a miss that compiles, never a hit on the old binary.
S=$T/stale; mkdir -p "$S"
case $KC in /*) ;; *) KC=$PWD/$KC ;; esac   # we run from the spec's folder
spec() { # spec HEADERS_JSON
  printf '{"name": "scale", "kernels": [{"id": "k", "file": "k.cu", "entry": "k", "headers": %s}],\n' "$1" >"$S/k.json"
  printf ' "inputs": [{"dtype": "f32", "sizes": ["N"]}],\n' >>"$S/k.json"
  printf ' "forward": [{"kernel": "k", "grid": [1, 1, 1], "block": [1, 1, 1], "args": ["input:0", "e32:N"]}]}\n' >>"$S/k.json"
}
printf '#include "scale.cuh"\nextern "C" __global__ void k(float *x, int n) { if (n) x[0] *= SCALE; }\n' >"$S/k.cu"
echo '#define SCALE 2.0f' >"$S/scale.cuh"
spec '[]'
cd "$S"
expect_rc 1 "$KC" --cache-dir "$T/stale-cache" get k.json --arch sm_90
grep -q '"scale.cuh"' "$T/err" && grep -q '"headers"' "$T/err" && grep -q 'toolkit_headers' "$T/err" && ok ||
  bad "an unlisted header found beside the spec is not a clear error: $(head -c 400 "$T/err")"
spec '["scale.cuh"]'
expect_rc 0 "$KC" --cache-dir "$T/stale-cache" get k.json --arch sm_90 --json
expect_json 'j["source"] == "compiled"'
K_OLD=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$T/out")
expect_rc 0 "$KC" --cache-dir "$T/stale-cache" get k.json --arch sm_90 --json
expect_json "j['source'] in ('disk', 'memory') and j['key'] == '$K_OLD'"
echo '#define SCALE 3.0f' >"$S/scale.cuh"
expect_rc 0 "$KC" --cache-dir "$T/stale-cache" get k.json --arch sm_90 --json
expect_json "j['source'] == 'compiled' and j['key'] != '$K_OLD'"
# Compiled but not stored in a cache asked to be read-only: in the JSON, and nothing on stderr (what was
# asked for; a directory that refuses writes is said: test_image_cache.sh); a hit says nothing either.
mkdir -p "$T/ro-cache"
KCACHE_READONLY=1 expect_rc 0 "$KC" --cache-dir "$T/ro-cache" get k.json --arch sm_90 --json
expect_json 'j["source"] == "compiled" and j["store_status"] == "KC_EREADONLY" and "read-only" in j["store_error"]'
[ -s "$T/err" ] && bad "KCACHE_READONLY=1's compile said: $(head -c 300 "$T/err")" || ok
expect_rc 0 "$KC" --cache-dir "$T/stale-cache" get k.json --arch sm_90 --json
expect_json '"store_status" not in j'
[ -s "$T/err" ] && bad "a hit said: $(head -c 300 "$T/err")" || ok
# Without --arch a get loads on GPU 0; where there is no driver, the error says how to work without one.
"$KC" --cache-dir "$T/stale-cache" get k.json >"$T/out" 2>"$T/err"
if grep -q KC_ENODRIVER "$T/err"; then
  grep -q -- "--arch TARGET (e.g. sm_90) compiles and stores without a GPU" "$T/err" && ok || bad "no hint of --arch: $(cat "$T/err")"
fi
cd - >/dev/null

# Issue 18: two levels.  A graph of two compile units (a.cu, b.cu) and the same graph at a second
# static shape share both images; ls lists graphs (not images or unit records), ls --images the
# images with who refers to them, show an entry's images and an image's users, stats each kind,
# explain what a compile would cost, and a missing image is named.
L2=$T/levels; C2=$T/levels-cache; mkdir -p "$L2"
printf 'extern "C" __global__ void ka(float *x, int n) { if ((int)threadIdx.x < n) x[threadIdx.x] += 1.f; }\n' >"$L2/a.cu"
printf 'extern "C" __global__ void kb(float *x, int n) { if ((int)threadIdx.x < n) x[threadIdx.x] *= 2.f; }\n' >"$L2/b.cu"
cat >"$L2/two.json" <<'EOF2'
{"name": "two", "kernels": [{"id": "a", "file": "a.cu", "entry": "ka"}, {"id": "b", "file": "b.cu", "entry": "kb"}],
 "inputs": [{"dtype": "f32", "sizes": [64]}], "outputs": [{"dtype": "f32", "sizes": [64]}],
 "forward": [{"kernel": "a", "grid": [1, 1, 1], "block": [64, 1, 1], "args": ["output:0", "i32:64"]},
             {"kernel": "b", "grid": [1, 1, 1], "block": [64, 1, 1], "args": ["output:0", "i32:64"]}]}
EOF2
sed 's/64/128/g' "$L2/two.json" >"$L2/two128.json"   # a second static shape, as a user would write it
sed 's/64/256/g' "$L2/two.json" >"$L2/two256.json"   # a third, never compiled
expect_rc 0 "$KC" --cache-dir "$C2" get "$L2/two.json" --arch sm_90 --json
expect_json 'j["source"] == "compiled" and j["units"] == 2 and j["units_compiled"] == 2'
G1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$T/out")
expect_rc 0 "$KC" --cache-dir "$C2" explain "$L2/two128.json" --arch sm_90 --json
expect_json 'j["hit"] == False and j["units_stored"] == 2 and len(j["units"]) == 2 and j["graph_stored"] == False'
expect_rc 0 "$KC" --cache-dir "$C2" explain "$L2/two128.json" --arch sm_90
grep -q "^units     2 of 2 compile units are stored: a compile would only write the graph entry" "$T/out" && ok ||
  bad "explain does not say the units are stored: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$C2" get "$L2/two128.json" --arch sm_90 --json
expect_json 'j["source"] == "compiled" and j["units"] == 2 and j["units_compiled"] == 0 and j["compile_ms"] == 0'
G2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$T/out")
expect_rc 0 "$KC" --cache-dir "$C2" get "$L2/two.json" --arch compute_80 --json
expect_json 'j["units_compiled"] == 2'
expect_rc 0 "$KC" --cache-dir "$C2" stats --json
expect_json 'j["graphs"] == 3 and j["images"] == 4 and j["units"] == 4 and j["entries"] == 11 and j["unit_compiles"] == 4 and j["unit_hits"] == 2'
expect_json 'j["graph_bytes"] + j["image_bytes"] + j["unit_bytes"] == j["bytes"]'
expect_rc 0 "$KC" --cache-dir "$C2" stats
grep -q "^  graph entries   3 " "$T/out" && grep -q "^  images          4 " "$T/out" && grep -q "^  unit records    4 " "$T/out" && ok ||
  bad "stats does not count each kind: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$C2" ls --json
expect_json "len(j) == 3 and sorted(e['key'] for e in j) == sorted(['$G1', '$G1', '$G2']) and all(len(e['images']) == 2 for e in j)"
expect_json "set(next(e['images'] for e in j if e['key'] == '$G1' and e['variant'] == 'sm_90')) == set(next(e['images'] for e in j if e['key'] == '$G2'))"
expect_rc 0 "$KC" --cache-dir "$C2" ls
[ "$(grep -c " 2 images  *[^ ]*$" "$T/out")" = 3 ] && [ "$(wc -l <"$T/out")" = 3 ] && ok || bad "ls text: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$C2" ls --images --json
expect_json 'len(j) == 4 and all(i["present"] and i["units"] == 1 for i in j)'
expect_json 'sorted((i["target"], i["kind"], i["graphs"]) for i in j) == [("compute_80", "ptx", 1), ("compute_80", "ptx", 1), ("sm_90", "cubin", 2), ("sm_90", "cubin", 2)]'
expect_rc 0 "$KC" --cache-dir "$C2" show "$G1.sm_90" --json
expect_json 'len(j) == 1 and j[0]["object"] == "graph entry" and j[0]["images_present"] and len(j[0]["images"]) == 2'
expect_json 'sorted(k for i in j[0]["images"] for k in i["kernels"]) == ["ka", "kb"] and all(i["present"] and len(i["sha256"]) == 64 and i["kind"] == "cubin" and i["target"] == "sm_90" for i in j[0]["images"])'
IMG_A=$(python3 -c 'import json,sys; print(next(i["id"] for i in json.load(open(sys.argv[1]))[0]["images"] if i["kernels"] == ["ka"]))' "$T/out")
SHA_A=$(python3 -c 'import json,sys; print(next(i["sha256"] for i in json.load(open(sys.argv[1]))[0]["images"] if i["kernels"] == ["ka"]))' "$T/out")
expect_rc 0 "$KC" --cache-dir "$C2" show "$G1.sm_90" --extract "$T/levels-x"
[ "$(sha256sum "$T/levels-x/ka.sm_90.cubin" | cut -c1-64)" = "$SHA_A" ] && ok || bad "the extracted cubin is not the image show names"
expect_rc 0 "$KC" --cache-dir "$C2" show "$L2/two128.json" --arch sm_90 --json
expect_json "len(j) == 1 and j[0]['key'] == '$G2' and '$IMG_A' in [i['id'] for i in j[0]['images']]"
expect_rc 1 "$KC" --cache-dir "$C2" show "$L2/two256.json"
grep -q "graph 'two' (key .*) has no stored entry" "$T/err" && ok || bad "show of an unstored spec: $(cat "$T/err")"
expect_rc 0 "$KC" --cache-dir "$C2" show "${IMG_A:0:12}" --json
expect_json "j[0]['object'] == 'image' and j[0]['sound'] and j[0]['image']['sha256'] == '$SHA_A' and sorted(g['graph'] for g in j[0]['graphs']) == sorted(['$G1.sm_90', '$G2.sm_90']) and all(g['kernels'] == ['ka'] for g in j[0]['graphs']) and len(j[0]['units']) == 1"
UNIT_A=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["units"][0].split(".")[0])' "$T/out")
expect_rc 0 "$KC" --cache-dir "$C2" show "$IMG_A"
grep -q "graph $G1.sm_90  kernels ka" "$T/out" && grep -q "graph $G2.sm_90  kernels ka" "$T/out" && ok || bad "show of an image: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$C2" show "$UNIT_A" --json
expect_json "j[0]['object'] == 'unit record' and j[0]['image']['id'] == '$IMG_A' and j[0]['image']['present'] and j[0]['names'] == [{'expr': 'ka', 'lowered': 'ka'}]"
# An image gone: the graphs that run it are misses that recompile its unit, and every tool says so.
rm "$C2"/v1/*/"$IMG_A".img.kce
expect_rc 0 "$KC" --cache-dir "$C2" explain "$L2/two.json" --arch sm_90
grep -q "^result    miss" "$T/out" && grep -q "^images    the graph entry is stored but image $IMG_A (sm_90 cubin) is missing: the next lookup recompiles unit 0 (ka)" "$T/out" && ok ||
  bad "explain does not name the missing image: $(cat "$T/out")"
grep -q "^units     1 of 2 compile units is stored: a compile would compile only the other 1" "$T/out" && ok || bad "explain's units: $(cat "$T/out")"
expect_rc 0 "$KC" --cache-dir "$C2" explain "$L2/two.json" --arch sm_90 --json
expect_json "j['hit'] == False and j['graph_stored'] and j['differs'] == ['images[0]'] and j['missing_images'][0]['id'] == '$IMG_A' and j['missing_images'][0]['kernels'] == ['ka'] and j['units_stored'] == 1"
expect_rc 0 "$KC" --cache-dir "$C2" show "$G1.sm_90" --json
expect_json "not j[0]['images_present'] and [i['present'] for i in j[0]['images'] if i['id'] == '$IMG_A'] == [False] and '$IMG_A' in j[0]['images_problem']"
expect_rc 0 "$KC" --cache-dir "$C2" ls --images --json
expect_json "[(i['state'], i['graphs']) for i in j if i['id'] == '$IMG_A'] == [('missing', 2)]"
expect_rc 0 "$KC" --cache-dir "$C2" get "$L2/two.json" --arch sm_90 --json
expect_json 'j["source"] == "compiled" and j["units"] == 2 and j["units_compiled"] == 1 and "missing" in j["miss_reason"]'
expect_rc 0 "$KC" --cache-dir "$C2" stats --json
expect_json 'j["images_missing"] == 1 and j["unit_compiles"] == 5'
expect_rc 0 "$KC" --cache-dir "$C2" explain "$L2/two128.json" --arch sm_90 --json
expect_json 'j["hit"] == True and j["differs"] == [] and j["units_stored"] == 2'

# Issue 15, item 5: an empty --cache-dir or KCACHE_DIR is an error, never the default directory
# (`--cache-dir "" clear` emptied ~/.cache/kcache).
H=$T/home; mkdir -p "$H/.cache"
"$FILL" "$H/.cache/kcache" 3 100 >/dev/null || bad "fill of the default directory failed"
expect_rc 2 env HOME="$H" XDG_CACHE_HOME= "$KC" --cache-dir "" clear
grep -q "empty" "$T/err" && ok || bad "no clear error for an empty --cache-dir: $(cat "$T/err")"
expect_rc 2 env HOME="$H" XDG_CACHE_HOME= "$KC" --cache-dir= clear
expect_rc 1 env HOME="$H" XDG_CACHE_HOME= KCACHE_DIR= "$KC" clear
grep -q "KCACHE_DIR" "$T/err" && ok || bad "no clear error for an empty KCACHE_DIR: $(cat "$T/err")"
[ "$(find "$H/.cache/kcache" -name '*.kce' | wc -l)" = 3 ] && ok || bad "an empty cache directory emptied the default one"

# Item 6: export writes regular files only — a FIFO, a symbolic link or a directory at FILE is
# refused and left as it was; "-" (stdout) is refused; a regular file is replaced whole.
X=$T/exp; mkdir -p "$X/dir"; mkfifo "$X/fifo"; echo keep >"$X/target"; ln -s "$X/target" "$X/link"
for f in fifo link dir; do
  expect_rc 2 "$KC" --cache-dir "$H/.cache/kcache" export "$X/$f"
  grep -q "regular files only" "$T/err" && ok || bad "export over $f: no clear error: $(cat "$T/err")"
done
[ -p "$X/fifo" ] && [ -L "$X/link" ] && [ -d "$X/dir" ] && [ "$(cat "$X/target")" = keep ] && ok ||
  bad "export replaced a FIFO, a symbolic link or a directory, or wrote through a link"
expect_rc 2 "$KC" --cache-dir "$H/.cache/kcache" export -
grep -q "stdout" "$T/err" && ok || bad "export -: no clear error: $(cat "$T/err")"
echo old >"$X/reg"
expect_rc 0 "$KC" --cache-dir "$H/.cache/kcache" export "$X/reg" --json
expect_json 'j["entries"] == 3'
[ -f "$X/reg" ] && [ "$(head -c 3 "$X/reg")" != old ] && ok || bad "export did not replace a regular file"

# Item 7: a size limit of 0 means no limit — gc under KCACHE_MAX_SIZE=0, or with --max-size 0,
# evicts nothing.
expect_rc 0 env KCACHE_MAX_SIZE=0 "$KC" --cache-dir "$H/.cache/kcache" gc --json
expect_json 'j["evicted"] == 0 and j["entries_after"] == 3'
expect_rc 0 "$KC" --cache-dir "$H/.cache/kcache" gc --max-size 0 --json
expect_json 'j["evicted"] == 0 and j["entries_after"] == 3'
expect_rc 0 env KCACHE_MAX_SIZE=0 "$KC" --cache-dir "$H/.cache/kcache" stats
grep -q "no limit" "$T/out" && ok || bad "stats does not say a limit of 0 is no limit"

# Item 8: clear removes only stale temporaries: puts of other processes racing clears all succeed.
R=$T/race
"$FILL" "$R" 1 100 >/dev/null || bad "fill failed"
pids=""
for p in 1 2 3 4; do "$FILL" "$R" 150 8000 >/dev/null 2>"$T/fill$p.err" & pids="$pids $!"; done
while kill -0 $pids 2>/dev/null; do "$KC" --cache-dir "$R" clear >/dev/null || bad "clear failed"; done
for p in $pids; do wait "$p" && ok || bad "a put failed while clear ran: $(cat "$T"/fill*.err | head -c 300)"; done

# Item 19: a bad KCACHE_* value is an error naming the variable, never a guess.
for kv in KCACHE_LOCK_WAIT=inf KCACHE_LOCK_WAIT=-5 KCACHE_READONLY=fasle KCACHE_DISABLE=N KCACHE_REMOTE_QUEUE=abc; do
  expect_rc 1 env "$kv" "$KC" --cache-dir "$R" stats
  grep -q "${kv%%=*}" "$T/err" && ok || bad "$kv: the error does not name the variable: $(cat "$T/err")"
done
expect_rc 1 env KCACHE_HMAC_KEY_FILE="$T/no-such-key" "$KC" --cache-dir "$R" stats
grep -q "no-such-key.*does not exist" "$T/err" && ok || bad "a missing KCACHE_HMAC_KEY_FILE is not named: $(cat "$T/err")"

# Item 9: the size limit is the directory's once recorded (kcache limit SIZE); a process's smaller
# KCACHE_MAX_SIZE then evicts nothing.
L=$T/limit
"$FILL" "$L" 20 2000 >/dev/null || bad "fill failed"
expect_rc 0 "$KC" --cache-dir "$L" limit --json
expect_json 'j["recorded"] == False'
expect_rc 0 "$KC" --cache-dir "$L" limit 100M --json
expect_json 'j["recorded"] == True and j["max_size"] == 100 * 1024 * 1024'
expect_rc 0 env KCACHE_MAX_SIZE=1K "$KC" --cache-dir "$L" gc --json
expect_json 'j["evicted"] == 0 and j["entries_after"] == 20'
expect_rc 0 env KCACHE_MAX_SIZE=1K "$KC" --cache-dir "$L" limit
grep -q "recorded limit" "$T/out" && ok || bad "limit does not say the limit is the directory's: $(cat "$T/out")"
expect_rc 2 "$KC" --cache-dir "$L" limit lots
expect_rc 0 "$KC" --cache-dir "$L" limit --help

echo "test_cli: $((checks-fails)) passed, $fails failed"
[ "$fails" = 0 ]
