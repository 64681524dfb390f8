#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_image_cache.sh — a cache shipped in a container image: prewarmed by root at build time,
# `chmod -R a+rX,go-w`, then read by the service's own user (here nobody, through setpriv).  The
# reader's lookups hit, with KCACHE_READONLY=1 and without it (the directory refuses it writes), and
# nothing in the directory changes; the same cache made writable by group or others (the directory,
# v1/ or a shard, or a parent) or reached through a symbolic link is refused, saying which rule and
# what to do.  Another ordinary user's cache is read only when asked (KCACHE_READONLY=1), and never
# under a folder others can write; an entry file others can write is a miss.  A writer keeps the
# rule that the directory is its own.
# Needs root (to own the cache and to become another user): skipped (exit 77) otherwise.
#   test_image_cache.sh PATH/TO/kcache PATH/TO/kc_fill
set -u
KC=$1
FILL=$2
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: not root: this test prepares a cache as root and reads it as another user (run it as root)"
  exit 77
fi
if ! command -v setpriv >/dev/null; then echo "SKIP: no setpriv (util-linux) to run the reader as another user"; exit 77; fi
AS=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent)
# Not under /tmp: a reader refuses another user's cache under a folder others can write, sticky or not.
T=$(mktemp -d /kctest-img-XXXXXX 2>/dev/null || mktemp -d "$PWD/kctest-img-XXXXXX")
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
fails=0; checks=0
ok()   { checks=$((checks+1)); }
bad()  { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
expect_rc() { # expect_rc WANT CMD...
  local want=$1; shift
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "exit $rc (want $want): $* ; stderr: $(head -c 400 "$T/err")"; fi
}
json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
expect_json() { if json "$T/out" "$1"; then ok; else bad "json check failed: $1 ; got: $(head -c 400 "$T/out")"; fi; }
expect_err() { grep -q -- "$1" "$T/err" && ok || bad "stderr lacks '$1': $(head -c 400 "$T/err")"; }
snap() { find "$1" -printf '%P %y %s %m %U %T@\n' 2>/dev/null | LC_ALL=C sort; }

S=$T/spec; mkdir -p "$S"
printf 'extern "C" __global__ void ka(float *x, int n) { if ((int)threadIdx.x < n) x[threadIdx.x] += 1.f; }\n' >"$S/a.cu"
cat >"$S/one.json" <<'EOF2'
{"name": "one", "kernels": [{"id": "a", "file": "a.cu", "entry": "ka"}],
 "inputs": [{"dtype": "f32", "sizes": [64]}], "outputs": [{"dtype": "f32", "sizes": [64]}],
 "forward": [{"kernel": "a", "grid": [1, 1, 1], "block": [64, 1, 1], "args": ["output:0", "i32:64"]}]}
EOF2
chmod -R a+rX "$S"

# The image's build, as root: prewarm, then no one but root may write (and everyone may read).
IMG=$T/opt/kcache
mkdir -p "$T/opt" && chmod 755 "$T/opt"
expect_rc 0 "$KC" --cache-dir "$IMG" get "$S/one.json" --arch sm_90 --json
expect_json 'j["source"] == "compiled"'
"$FILL" "$IMG" 5 300 >/dev/null || bad "kc_fill"
chmod -R a+rX,go-w "$IMG"
touch -d '2020-01-01' $(find "$IMG" -name '*.kce')   # a hit by a writer would refresh these
before=$(snap "$IMG")

# The service, as nobody: with KCACHE_READONLY=1, and without it (the directory refuses nobody writes).
for ro in 1 ""; do
  expect_rc 0 "${AS[@]}" KCACHE_READONLY=$ro "$KC" --cache-dir "$IMG" get "$S/one.json" --arch sm_90 --json
  expect_json 'j["source"] == "disk"'
  expect_rc 0 "${AS[@]}" KCACHE_READONLY=$ro "$KC" --cache-dir "$IMG" explain "$S/one.json" --arch sm_90 --json
  expect_json 'j["hit"] == True'
  expect_rc 0 "${AS[@]}" KCACHE_READONLY=$ro "$KC" --cache-dir "$IMG" stats --json
  expect_json 'j["entries"] >= 6'
  [ "$before" = "$(snap "$IMG")" ] && ok || bad "the reader (KCACHE_READONLY='$ro') changed the cache: $(diff <(echo "$before") <(snap "$IMG") | head -5)"
done

# A graph the image lacks, compiled by the reader: not stored (the directory refuses nobody's writes),
# said on stderr and in the JSON; with KCACHE_READONLY=1 (asked for) only in the JSON.
sed 's/64/128/g' "$S/one.json" >"$S/two.json" && chmod a+r "$S/two.json"
expect_rc 0 "${AS[@]}" "$KC" --cache-dir "$IMG" get "$S/two.json" --arch sm_90 --json
expect_json 'j["store_status"] == "KC_EREADONLY"'
expect_err "kcache get: one: compiled, but not stored:"
expect_rc 0 "${AS[@]}" KCACHE_READONLY=1 "$KC" --cache-dir "$IMG" get "$S/two.json" --arch sm_90 --json
expect_json 'j["store_status"] == "KC_EREADONLY"'
grep -q "not stored" "$T/err" && bad "KCACHE_READONLY=1 said: $(head -c 300 "$T/err")" || ok
[ "$before" = "$(snap "$IMG")" ] && ok || bad "the reader's compile changed the cache"

# Writable by others, anywhere on the chain the reader trusts: refused, naming the rule and the fix.
refused() { # refused WHAT-TO-GREP: a reader, with and without KCACHE_READONLY, is refused
  for ro in 1 ""; do
    expect_rc 1 "${AS[@]}" KCACHE_READONLY=$ro "$KC" --cache-dir "$IMG" get "$S/one.json" --arch sm_90 --json
    expect_err "$1"
    expect_err "go-w"
  done
}
chmod g+w "$IMG";                 refused "is writable by group or others"; chmod g-w "$IMG"
chmod o+w "$IMG/v1";              refused "v1' in the cache is writable by group or others"; chmod o-w "$IMG/v1"
SH=$(ls -d "$IMG"/v1/?? | head -1)
chmod g+w "$SH";                  refused "in the cache is writable by group or others"; chmod g-w "$SH"
chmod 777 "$T/opt"
for ro in 1 ""; do
  expect_rc 1 "${AS[@]}" KCACHE_READONLY=$ro "$KC" --cache-dir "$IMG" stats
  expect_err "parent directory '$T/opt' of the cache is writable by group or others"
done
chmod 755 "$T/opt"
# Another owner inside (a folder nobody but root and the cache's owner may own).
chown 12345 "$SH"
expect_rc 1 "${AS[@]}" KCACHE_READONLY=1 "$KC" --cache-dir "$IMG" stats
expect_err "is owned by uid 12345, neither the cache's owner"
chown 0 "$SH"
# Prewarmed without letting others read (kcache makes its folders 0700): the reader is told the fix.
chmod 700 "$IMG/v1"
expect_rc 1 "${AS[@]}" KCACHE_READONLY=1 "$KC" --cache-dir "$IMG" stats
expect_err "a+rX"
chmod 755 "$IMG/v1"
# A symbolic link to the cache is refused as before.
ln -s "$IMG" "$T/link"
expect_rc 1 "${AS[@]}" KCACHE_READONLY=1 "$KC" --cache-dir "$T/link" stats
expect_err "is a symbolic link"
# Sound again: read again.
expect_rc 0 "${AS[@]}" KCACHE_READONLY=1 "$KC" --cache-dir "$IMG" get "$S/one.json" --arch sm_90 --json
expect_json 'j["source"] == "disk"'

# An entry file others could have written is not used by a reader of another's cache: a miss (the
# source is compiled in the reader's process), nothing written, the store log says why.
chmod 666 $(find "$IMG" -name '*.kce')
before=$(snap "$IMG")
expect_rc 0 "${AS[@]}" KCACHE_READONLY=1 KCACHE_LOG=store "$KC" --cache-dir "$IMG" get "$S/one.json" --arch sm_90 --json
expect_json 'j["source"] != "disk"'
expect_err "is writable by group or others"
[ "$before" = "$(snap "$IMG")" ] && ok || bad "the reader changed the cache: $(diff <(echo "$before") <(snap "$IMG") | head -5)"
chmod 644 $(find "$IMG" -name '*.kce')

# Another ordinary user's cache (uid 1001), in root's 0755 folder: a reader only because the directory
# refuses it writes is refused, told how to read it deliberately; KCACHE_READONLY=1 reads it.
mkdir -p "$T/srv" && chmod 755 "$T/srv"
U=$T/srv/kc
cp -a "$IMG" "$U" && chown -R 1001:1001 "$U"
expect_rc 1 "${AS[@]}" "$KC" --cache-dir "$U" get "$S/one.json" --arch sm_90 --json
expect_err "owned by uid 1001, neither us"
expect_err "KCACHE_READONLY=1"
expect_rc 0 "${AS[@]}" KCACHE_READONLY=1 "$KC" --cache-dir "$U" get "$S/one.json" --arch sm_90 --json
expect_json 'j["source"] == "disk"'
# The same under a sticky, world-writable folder (anyone could have made the name): refused to every reader.
STK=$(mktemp -d "$T/sticky-XXXXXX") && chmod 1777 "$STK"
cp -a "$U" "$STK/kc"
expect_rc 1 "${AS[@]}" KCACHE_READONLY=1 "$KC" --cache-dir "$STK/kc" get "$S/one.json" --arch sm_90 --json
expect_err "sticky or not"
expect_rc 1 "${AS[@]}" "$KC" --cache-dir "$STK/kc" get "$S/one.json" --arch sm_90 --json

# A writer keeps today's rule: root opening nobody's cache to write is refused, and told how to read it.
W=$T/theirs
cp -a "$IMG" "$W" && chown -R 65534:65534 "$W"
expect_rc 1 "$KC" --cache-dir "$W" get "$S/one.json" --arch sm_90 --json
expect_err "owned by uid 65534, not by us"
expect_err "KCACHE_READONLY=1"
expect_rc 0 env KCACHE_READONLY=1 "$KC" --cache-dir "$W" get "$S/one.json" --arch sm_90 --json
expect_json 'j["source"] == "disk"'
expect_rc 0 "$KC" --cache-dir "$W" stats --json   # an inspection is a reader too
expect_json 'j["entries"] >= 6'

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
