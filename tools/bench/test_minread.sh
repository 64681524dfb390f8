#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_minread.sh KCACHE MINREAD KERNELS — kcache-minread (the warm start's reference reader) reads and
# checks the entry files a warm `kcache get` wrote, and refuses each kind of damaged one: a byte
# flipped in a section's bytes, in the header (its key), a file cut short, a file that is missing.
set -euo pipefail
kcache=$1 minread=$2 kernels=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kc-minread-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$kcache" --cache-dir "$tmp/c" get "$kernels/softmax.json" --arch sm_90 >/dev/null
find "$tmp/c" -name '*.kce' ! -name '*.unit.kce' | sort > "$tmp/list"
n=$(wc -l < "$tmp/list")
[ "$n" -ge 2 ] || fail "expected a graph entry and an image, found $n files"
out=$("$minread" "$tmp/list") || fail "minread refused a good cache: $out"
[ "$out" = "$n entry files read and checked" ] || fail "unexpected output: $out"
flip() { # flip one byte at offset $2 of a copy of $1; prints the copy's path
  local dst="$tmp/flip-$2-$(basename "$1")"
  cp "$1" "$dst"
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$dst" | tr -d ' ')
  printf "$(printf '\\%03o' $(( (b ^ 1) & 255 )))" | dd of="$dst" bs=1 seek="$2" conv=notrunc status=none
  echo "$dst"
}
while read -r f; do
  size=$(stat -c %s "$f")
  for off in $((size - 1)) 20 $((size / 2 + 48)); do
    [ "$off" -lt "$size" ] || continue
    bad=$(flip "$f" "$off")
    echo "$bad" > "$tmp/one"
    if "$minread" "$tmp/one" 2>/dev/null; then fail "minread accepted $f with byte $off flipped"; fi
  done
  head -c $((size - 3)) "$f" > "$tmp/short"
  echo "$tmp/short" > "$tmp/one"
  if "$minread" "$tmp/one" 2>/dev/null; then fail "minread accepted $f cut short"; fi
done < "$tmp/list"
echo "$tmp/c/none.kce" > "$tmp/one"
if "$minread" "$tmp/one" 2>/dev/null; then fail "minread accepted a missing file"; fi
echo "test_minread: $n good files read, every damaged copy refused"
