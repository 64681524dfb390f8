#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_getenv.sh — no environment read outside the configuration part (CTest: test_getenv, label unit).
#
# What it is for: every setting is a row of one table (include/kcache/config.h), read in one place,
# src/config/; a getenv anywhere else is a setting that `kcache config` cannot show, the
# configuration file cannot set and KC_OPEN_NO_ENV cannot turn off.  This script fails on any read
# of the environment — getenv, secure_getenv, environ — in the C files of src/ and tools/
# outside src/config/, comments left out.
# The exemptions are listed here, each with its reason; add one only with a reason:
#   tools/bench/   the benchmark: a measuring harness that sets up and reads its own children's
#                  environment, not part of the library or the kcache tool.
#
#   bash tests/arch/check_getenv.sh [ROOT]     # ROOT: the repository (default: this file's ../..)
# Exit status: 0 when no file reads the environment outside src/config/, 1 with one line per read.
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/../.." && pwd)"}
cd "$root"
exempt=(src/config/ tools/bench/)
fails=0
while IFS= read -r f; do
  skip=0
  for e in "${exempt[@]}"; do [[ $f == "$e"* ]] && skip=1; done
  [ $skip = 1 ] && continue
  # Comments out (block and line), then the calls that read the environment.
  hits=$(perl -0777 -pe 's{/\*.*?\*/}{ my $s = $&; $s =~ s/[^\n]//g; $s }gse; s{//[^\n]*}{}g' "$f" |
         grep -nE '\b(secure_getenv|getenv|__environ|environ)\b' || true)
  if [ -n "$hits" ]; then
    while IFS= read -r h; do
      echo "check_getenv: $f:${h%%:*}: reads the environment outside src/config/ (add a row to KC_CONFIG_TABLE instead): ${h#*:}"
      fails=$((fails + 1))
    done <<<"$hits"
  fi
done < <(find src tools -name '*.c' -o -name '*.h' | sort)
[ $fails = 0 ] && echo "check_getenv: no environment read outside src/config/" && exit 0
exit 1
