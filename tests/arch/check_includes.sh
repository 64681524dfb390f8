#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_includes.sh — the include-direction test (CTest: test_arch, label unit).
#
# What it is for: the arrows between the parts of kcache point one way.  The parts are listed
# in ARCHITECTURE.md's parts table, lowest first; a file under src/<part>/ may include the
# headers of its own part and of the parts listed before it, never of a part listed after it.
# The one idea: the table is the only place the parts are written down.  This script parses it
# (part | folder | public headers | job) and checks the tree against it, so the document and
# the tree cannot drift apart: a src/ folder missing from the table, a table folder or header
# that does not exist, or a public header that no part owns, all fail the test.
#
# It also checks the public headers: a caller header (include/kcache/*.h) never includes an
# extender header (include/kcache/sys/*), nor a header of a part above its own; the umbrella
# include/kcache.h includes every caller header; and no file under src/ includes the umbrella.
#
# How an include is attributed: <kcache/x.h> or "kcache/x.h" is a public header, owned by the
# part whose row lists it; "../<part>/x.h" or "<part>/x.h" is that part's private header;
# "x.h" is a header beside the file (its own part).  Other <...> includes (libc, zstd, CUDA)
# are not ours and are skipped.
# What it must not do: compile anything, or know the parts by any other means than the table.
#
#   bash tests/arch/check_includes.sh [ROOT]     # ROOT: the repository (default: this file's ../..)
# Exit status: 0 when every rule holds, 1 with one line per violation otherwise.
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/../.." && pwd)"}
cd "$root"
table_doc=ARCHITECTURE.md
fails=0
fail() { echo "check_includes: $*"; fails=$((fails + 1)); }

# ---- the parts table: | part | folder | public headers | job | ----
declare -a parts=()           # in table order, lowest first
declare -A rank=()            # part -> its row (0 = lowest)
declare -A folder_part=()     # src/<dir>/ -> part
declare -A header_part=()     # kcache/x.h, kcache/sys/x.h -> part
rows=$(awk '
  /^\| *part *\| *folder *\| *public headers *\| *job *\|/ { intable = 1; next }
  intable && /^\|[ -]*\|/ && !/[a-z]/ { next }        # the |---|---| line
  intable && /^\|/ { print; next }
  intable { exit }' "$table_doc")
[ -n "$rows" ] || { echo "check_includes: $table_doc has no table with columns part | folder | public headers | job"; exit 1; }
while IFS= read -r row; do
  IFS='|' read -r _ c_part c_folder c_headers _ <<<"$row"
  part=$(echo "$c_part" | tr -d ' `')
  dir=$(echo "$c_folder" | tr -d ' `')
  [ -n "$part" ] || { fail "$table_doc: a row of the parts table has no part name: $row"; continue; }
  [ -z "${rank[$part]+x}" ] || { fail "$table_doc: part $part is listed twice"; continue; }
  rank[$part]=${#parts[@]}
  parts+=("$part")
  dir=${dir%/}/
  [[ $dir == src/*/ && $dir != src/*/*/ ]] || fail "$table_doc: part $part: folder '$dir' is not src/<folder>/"
  [ -d "$dir" ] || fail "$table_doc: part $part: folder $dir does not exist"
  folder_part[$dir]=$part
  for h in $(echo "$c_headers" | grep -o '`[^`]*`' | tr -d '`'); do
    [ -n "${header_part[$h]+x}" ] && fail "$table_doc: $h is listed by parts ${header_part[$h]} and $part"
    header_part[$h]=$part
    [ -f "include/$h" ] || fail "$table_doc: part $part lists include/$h, which does not exist"
  done
done <<<"$rows"

# Every src/ folder is a part; every public header has an owner.
for d in src/*/; do
  [ -n "${folder_part[$d]+x}" ] || fail "$d is not in $table_doc's parts table"
done
for f in src/*; do
  case "$f" in *.c|*.h) fail "$f is directly under src/, in no part's folder" ;; esac
done
for f in include/kcache/*.h include/kcache/sys/*.h; do
  [ -e "$f" ] || continue
  h=${f#include/}
  [ -n "${header_part[$h]+x}" ] || fail "$f is owned by no part in $table_doc's parts table"
done

# The quoted and angled includes of a file, one "name" per line.
includes_of() {
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\(["<][^">]*[">]\).*/\1/p' "$1"
}

# ---- src/: a file of part P includes only headers of P and of the parts before it ----
while IFS= read -r f; do
  dir=$(echo "$f" | cut -d/ -f1-2)/
  self=${folder_part[$dir]:-}
  [ -n "$self" ] || continue          # already reported: folder not in the table
  while IFS= read -r inc; do
    name=${inc:1:${#inc}-2}
    owner=""
    what=$name
    if [ "$name" = kcache.h ]; then
      fail "$f includes kcache.h (the umbrella is for callers; src/ includes the part headers it needs)"
      continue
    elif [[ $name == kcache/* ]]; then
      owner=${header_part[$name]:-}
      [ -n "$owner" ] || { fail "$f includes $name, a public header no part owns"; continue; }
    elif [ "${inc:0:1}" = '"' ]; then
      # A private header: beside the file, else relative to src/ (the library's include folder).
      if [ -f "$(dirname "$f")/$name" ]; then
        path=$(realpath -m --relative-to=. "$(dirname "$f")/$name")
      elif [ -f "src/$name" ]; then
        path=src/$name
      else
        fail "$f includes \"$name\", which is neither beside it nor under src/"
        continue
      fi
      pdir=$(echo "$path" | cut -d/ -f1-2)/
      owner=${folder_part[$pdir]:-}
      [ -n "$owner" ] || { fail "$f includes $path, in no part's folder"; continue; }
      what=$path
    else
      continue                          # <stdio.h>, <zstd.h>, <cuda.h>: not ours
    fi
    if [ "${rank[$owner]}" -gt "${rank[$self]}" ]; then
      fail "$f includes $what (part $owner, above $self)"
    fi
  done < <(includes_of "$f")
done < <(find src -mindepth 2 -type f \( -name '*.c' -o -name '*.h' \) | sort)

# ---- include/: caller headers never reach extender headers nor parts above their own ----
for f in include/kcache/*.h include/kcache/sys/*.h; do
  [ -e "$f" ] || continue
  h=${f#include/}
  self=${header_part[$h]:-}
  [ -n "$self" ] || continue            # already reported: owned by no part
  while IFS= read -r inc; do
    name=${inc:1:${#inc}-2}
    # Public headers include each other by a path relative to themselves ("key.h", "../common.h")
    # or from include/ (<kcache/key.h>).
    if [ -f "$(dirname "$f")/$name" ]; then
      target=$(realpath -m --relative-to=include "$(dirname "$f")/$name")
    elif [ -f "include/$name" ]; then
      target=$name
    else
      continue                          # <stdint.h> and the like
    fi
    if [ "$target" = kcache.h ]; then
      fail "$f includes the umbrella kcache.h"
      continue
    fi
    if [[ $h != kcache/sys/* && $target == kcache/sys/* ]]; then
      fail "$f includes $target (a caller header includes an extender header under include/kcache/sys/)"
    fi
    owner=${header_part[$target]:-}
    if [ -n "$owner" ] && [ "${rank[$owner]}" -gt "${rank[$self]}" ]; then
      fail "$f includes $target (part $owner, above $self)"
    fi
  done < <(includes_of "$f")
done

# ---- the umbrella includes every caller header ----
umbrella=$(includes_of include/kcache.h | sed 's/^["<]//; s/[">]$//')
for f in include/kcache/*.h; do
  [ -e "$f" ] || continue
  h=${f#include/}
  grep -qxF "$h" <<<"$umbrella" || fail "include/kcache.h does not include $h"
done
while IFS= read -r h; do
  [[ $h == kcache/sys/* ]] && fail "include/kcache.h includes $h (the umbrella is for callers; extenders include sys/ headers themselves)"
done <<<"$umbrella"

if [ "$fails" -gt 0 ]; then
  echo "check_includes: $fails violation(s); the parts and their order are in $table_doc"
  exit 1
fi
echo "check_includes: ${#parts[@]} parts (${parts[*]}), every include points down"
