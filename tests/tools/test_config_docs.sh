#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_config_docs.sh — the settings table, `kcache --help` and docs/configuration.md agree: the
# reference is exactly `kcache config --reference` (generated from the table: regenerate it with
#   build/tools/kcache/kcache config --reference > docs/configuration.md
# ), every row's variable is in --help's environment section, and every row is in the reference.
#   test_config_docs.sh KCACHE DOCS_MD
set -u
KC=$1
DOC=$2
fails=0
bad() { fails=$((fails+1)); echo "FAIL: $*" >&2; }
ref=$("$KC" config --reference) || bad "config --reference failed"
diff <(printf '%s\n' "$ref") "$DOC" >/dev/null || bad "$DOC is not the table's reference: regenerate it (kcache config --reference)"
help=$("$KC" --help)
rows=$(printf '%s\n' "$ref" | grep -E '^\| `[a-z_]+` \| `[A-Z_]+` \|')
[ "$(printf '%s\n' "$rows" | wc -l)" -ge 35 ] || bad "the reference has too few rows"
while IFS= read -r r; do
  key=$(echo "$r" | cut -d'`' -f2); env=$(echo "$r" | cut -d'`' -f4)
  printf '%s\n' "$help" | grep -qw -- "$env" || bad "--help lacks $env"
  grep -q "^| \`$key\` | \`$env\` |" "$DOC" || bad "$DOC lacks $key"
done <<<"$rows"
[ $fails = 0 ] && echo "test_config_docs: all passed"
exit $fails
