#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spdx.sh — every tracked source file names its license, Apache-2.0 (LICENSE), in an
# SPDX-License-Identifier line near its top, in the file's own comment syntax; --fix adds the line
# where it is missing.  Called by CI through ctest (test_spdx) and by a developer before a commit.
# What it must not do: touch a file it was not asked to fix, or any file that is not source.
#
#   bash tools/spdx.sh          # check: one line per file without the identifier, exit 1 if any
#   bash tools/spdx.sh --fix    # add the identifier to those files, then check again
#
# Which files, and where the line goes:
#   *.c *.h *.cpp *.cu *.cuh    /* SPDX-License-Identifier: Apache-2.0 */ as line 1
#   *.sh *.py *.cmake *.cmake.in CMakeLists.txt .ci/run tools/tsan.supp
#                               # SPDX-License-Identifier: Apache-2.0 as line 1, or line 2 after a
#                               #! line (a Python coding line stays first too)
#   cmake/*.pc.in               # SPDX-License-Identifier: Apache-2.0 as line 1 (pkg-config comment)
# Skipped, as they are no source or cannot hold a comment: documentation (*.md, docs/man/*), data
# and fixtures (*.json kernels' graph specs, tests/golden/, tests/compat/fixture/, the fuzz corpora
# under tests/fuzz/corpus/, tools/bench/results/, tools/mutants.txt, *.txt that are not
# CMakeLists.txt), binary files and tool settings (.clang-format*, .gitignore); and the bundled
# graphs' kernel sources, kernels/*.cu and *.cuh: their bytes are part of every bundled graph's key,
# so a line added there would change those keys (a miss for every existing cache, the pinned key of
# test_graph_key_golden and the old caches of test_old_cache); LICENSE covers them.  The identifier
# counts when it is in the first 5 lines.
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
case "${1:-}" in
  --fix) fix=1 ;;
  "") ;;
  *) echo "usage: tools/spdx.sh [--fix]" >&2; exit 2 ;;
esac
id="SPDX-License-Identifier: Apache-2.0"

# The files to check, one a line: tracked ones (git), or every file when there is no git (a tarball).
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files
  else
    find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||'
  fi
}

# The comment style of a file, in $style: c, hash, or "" (skipped).  In this shell: no fork a file.
style_of() {
  style=""
  case "$1" in
    tests/fuzz/corpus/* | tests/compat/fixture/* | tests/golden/* | tools/bench/results/* | docs/*) ;;
    kernels/*) ;; # hashed into the bundled graphs' keys
    *.c | *.h | *.cpp | *.cu | *.cuh) style="c" ;;
    *.sh | *.py | *.cmake | *.cmake.in | */CMakeLists.txt | CMakeLists.txt | .ci/run | tools/tsan.supp) style="hash" ;;
    cmake/*.pc.in) style="hash" ;;
  esac
}

# The files of the arguments without the identifier in their first 5 lines, one a line (one awk).
without_id() {
  [ $# -gt 0 ] || return 0
  awk -v id="$id" 'FNR == 1 { if (f != "" && !ok) print f; f = FILENAME; ok = 0 }
                   FNR <= 5 && index($0, id) { ok = 1 }
                   END { if (f != "" && !ok) print f }' "$@"
}

# Add the line: C at line 1; hash after a #! line and a Python coding line.
add_id() {
  local f=$1 style=$2 tmp after=0
  tmp=$(mktemp)
  if [ "$style" = c ]; then
    { echo "/* $id */"; cat "$f"; } >"$tmp"
  else
    head -n 1 "$f" | grep -q '^#!' && after=1
    [ "$after" = 1 ] && sed -n 2p "$f" | grep -qE '^#.*coding[:=]' && after=2
    { head -n "$after" "$f"; echo "# $id"; tail -n +"$((after + 1))" "$f"; } >"$tmp"
  fi
  cat "$tmp" >"$f" # keeps the file's mode (an executable stays one)
  rm -f "$tmp"
}

main() {
  local files=() f fixed=0 missing
  declare -A styles
  while IFS= read -r f; do
    [ -f "$f" ] && [ -s "$f" ] || continue # an empty file holds nothing to license
    style_of "$f"
    [ -n "$style" ] || continue
    files+=("$f")
    styles[$f]=$style
  done < <(list_files)
  if [ "$fix" = 1 ]; then
    while IFS= read -r f; do
      add_id "$f" "${styles[$f]}"
      fixed=$((fixed + 1))
    done < <(without_id "${files[@]}")
    echo "spdx: added the identifier to $fixed files"
  fi
  missing=$(without_id "${files[@]}")
  [ -z "$missing" ] || sed "s|\$|:1: no '$id' in its first 5 lines (add it: bash tools/spdx.sh --fix)|" <<<"$missing"
  echo "spdx: ${#files[@]} source files, $(grep -c . <<<"$missing") without '$id'"
  [ -z "$missing" ]
}
main; exit $? # one line: --fix may edit this very file, which bash reads as it goes
