#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_golden.sh — `kcache --help` and every `kcache help COMMAND` against the files in
# tests/golden/cli/ (kcache--help.txt, help-COMMAND.txt): a change to the command line's text — a
# command, an option row, a help line, a setting of the table in the environment section — shows
# up in review as a change of these files, never by accident.
#   test_cli_golden.sh PATH/TO/kcache GOLDEN_DIR            compare (CTest: test_cli_golden)
#   test_cli_golden.sh PATH/TO/kcache GOLDEN_DIR --update   rewrite the files after a change on purpose:
#     bash tests/tools/test_cli_golden.sh build/tools/kcache/kcache tests/golden/cli --update
set -u
KC=$1
G=$2
update=${3:-}
T=$(mktemp -d /tmp/kctest-golden-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
"$KC" --help >"$T/kcache--help.txt" || { echo "FAIL: kcache --help exits $?" >&2; exit 1; }
for c in $(sed -n '/^commands:/,/^$/p' "$T/kcache--help.txt" | awk 'NF>1 {print $1}'); do
  "$KC" help "$c" >"$T/help-$c.txt" || { echo "FAIL: kcache help $c exits $?" >&2; fails=$((fails+1)); }
done
if [ "$update" = --update ]; then
  mkdir -p "$G" && rm -f "$G"/*.txt && cp "$T"/*.txt "$G"/
  echo "updated $(ls "$G" | wc -l) files in $G"
  exit 0
fi
for f in "$T"/*.txt; do
  n=$(basename "$f")
  if [ ! -f "$G/$n" ]; then echo "FAIL: no golden $G/$n (a new command? run with --update)" >&2; fails=$((fails+1))
  elif ! diff -u "$G/$n" "$f" >&2; then echo "FAIL: $n differs from $G/$n (on purpose? run with --update)" >&2; fails=$((fails+1)); fi
done
for f in "$G"/*.txt; do
  [ -f "$T/$(basename "$f")" ] || { echo "FAIL: $f has no command any more (run with --update)" >&2; fails=$((fails+1)); }
done
echo "$(ls "$T"/*.txt | wc -l) help texts, $fails failed"
[ "$fails" = 0 ]
