#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_conventions.sh — the kcache command line by the conventions ccache's and git's users
# expect: --opt=value and --opt value, attached short values (-j2), "--" ending options, -V and
# --version, `kcache help [COMMAND]`, ccache's -s/-z/-C/-M/-d, `gc --older-than DURATION`, one
# form and one exit code for every usage error, and the manual page and the completion scripts the
# tool writes from its tables (groff without a warning; bash -n, zsh -n; the bash function driven
# through COMP_WORDS as bash does).
#   test_cli_conventions.sh PATH/TO/kcache PATH/TO/kc_fill
set -u
KC=$1
FILL=$2
T=$(mktemp -d /tmp/kctest-conv-XXXXXX)
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
# jhas EXPR: a Python expression over the JSON in $T/out as `j`.
jhas() { if python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/out" "$1"; then ok
         else bad "${2:-json check failed: $1}: $(head -c 300 "$T/out")"; fi; }
has() { if grep -q -- "$1" "$2"; then ok; else bad "${3:-$2 lacks '$1'}: $(head -c 300 "$2")"; fi; }

# -V and --version, in the usage too.
expect_rc 0 "$KC" -V; has "^kcache [0-9]" "$T/out"
expect_rc 0 "$KC" --version; has "^kcache [0-9]" "$T/out"
expect_rc 0 "$KC" --help; has "-V, --version" "$T/out" "--help does not show -V"

# kcache help [COMMAND]; an unknown one is a usage error that lists the commands.
expect_rc 0 "$KC" help; has "commands:" "$T/out"
cmds=$(sed -n '/^commands:/,/^$/p' "$T/out" | awk 'NF>1 {print $1}')
[ "$(echo "$cmds" | wc -w)" -ge 18 ] && ok || bad "help lists too few commands: $cmds"
for c in $cmds; do
  expect_rc 0 "$KC" help "$c"; has "^usage: kcache $c" "$T/out"
  "$KC" "$c" --help >"$T/out2" 2>&1
  cmp -s "$T/out" "$T/out2" && ok || bad "kcache help $c differs from kcache $c --help"
  # Every command: an unknown option is exit 2, said in the one form.
  expect_rc 2 "$KC" "$c" --no-such-option
  has "^kcache $c: .*; try 'kcache help $c'" "$T/err"
done
expect_rc 2 "$KC" help no-such-command
has "unknown command 'no-such-command'" "$T/err"; has "prewarm" "$T/err" "help's error lists no commands"
expect_rc 2 "$KC" no-such-command; has "try 'kcache help'" "$T/err"
expect_rc 2 "$KC" --no-such-global; has "^kcache: unknown .*'--no-such-global'; try 'kcache help'" "$T/err"

# --opt=value and --opt value; -xVALUE and -x VALUE; "--" ends the options.
printf '{"graphs": [], "archs": ["sm_90"]}' >"$T/m.json"
expect_rc 2 "$KC" --cache-dir="$D" get --arch=sm_90                 # value taken, SPEC missing
has "a SPEC file is required" "$T/err" "get --arch=sm_90 is not understood"
expect_rc 2 "$KC" --cache-dir "$D" get --arch; has "option '--arch' needs a value (TARGET)" "$T/err"
expect_rc 2 "$KC" -d "$D" prewarm -j0 "$T/m.json"; has "-j needs a number from 1 to 1024: 0" "$T/err" "-j0 not read as -j 0"
expect_rc 2 "$KC" -d "$D" prewarm -j; has "option '-j' needs a value (N)" "$T/err"
expect_rc 2 "$KC" -d "$D" prewarm --jobs=x "$T/m.json"; has "needs a number" "$T/err"
expect_rc 2 "$KC" -d"$D" toolchain --pin=nonsense                    # --pin=ID reaches the check
expect_rc 2 "$KC" -d "$D" stats --json=yes; has "option '--json' takes no value" "$T/err"
expect_rc 2 "$KC" -d "$D" limit -- --json                            # after --: an operand (a bad SIZE)
expect_rc 0 "$KC" -d "$D" limit --json -- 1G; jhas 'j["max_size"] == 1 << 30' "limit --json -- 1G"
expect_rc 0 "$KC" -d "$D" limit 1G --json; jhas 'j["max_size"] == 1 << 30' "options after the operand"

# ccache's short forms: -s stats, -z zero, -C clear, -M SIZE limit, -d DIR.
"$FILL" "$D" 4 >"$T/keys" || bad "kc_fill"
expect_rc 0 "$KC" -d "$D" -s; has "4 entries" "$T/out" "-s is not the statistics"
expect_rc 0 "$KC" -d "$D" --show-stats; has "4 entries" "$T/out"
expect_rc 0 "$KC" -d "$D" -M 3G; has "3.0 GiB (the directory's recorded limit)" "$T/out"
expect_rc 0 "$KC" -d "$D" -M3G
expect_rc 0 "$KC" -d "$D" --max-size=2G; has "2.0 GiB" "$T/out"
expect_rc 2 "$KC" -d "$D" -M nonsense
expect_rc 0 "$KC" -d "$D" -z; has "statistics zeroed" "$T/out"
expect_rc 0 "$KC" -d "$D" -z -s; has "statistics zeroed" "$T/out"; has "4 entries" "$T/out" "-z -s runs both, in order"
expect_rc 2 "$KC" -d "$D" -s stats; has "commands of their own" "$T/err"

# gc --older-than DURATION: what was not used for longer goes, the rest stays.
old1=$(sed -n 1p "$T/keys"); old2=$(sed -n 2p "$T/keys")
touch -d '10 days ago' "$D"/v1/*/"$old1".* "$D"/v1/*/"$old2".*
for bad_age in 7 7x 0d -1d 1.5d "7 d" 99999999w ""; do
  expect_rc 2 "$KC" -d "$D" gc --older-than "$bad_age"
  has "^kcache gc: --older-than needs a DURATION" "$T/err"
done
expect_rc 0 "$KC" -d "$D" gc --older-than 2w --json; jhas 'j["evicted"] == 0' "gc --older-than 2w evicted entries 10 days old"
expect_rc 0 "$KC" -d "$D" gc --older-than=7d --json; jhas 'j["evicted"] == 2 and j["entries_after"] == 2' "gc --older-than 7d"
ls "$D"/v1/*/"$old1".* >/dev/null 2>&1 && bad "an entry 10 days old survived --older-than 7d" || ok
[ "$(ls "$D"/v1/*/*.kce | wc -l)" = 2 ] && ok || bad "gc --older-than took fresh entries too"
expect_rc 0 "$KC" -d "$D" gc --older-than 12h --json; jhas 'j["evicted"] == 0' "gc --older-than 12h took fresh entries"

# -C clears.
expect_rc 0 "$KC" -d "$D" -C; has "cleared" "$T/out"
expect_rc 0 "$KC" -d "$D" stats --json; jhas 'j["entries"] == 0' "-C left entries"

# The manual page: every command a section, every setting, the exit status; troff without a warning.
expect_rc 0 "$KC" help --man; cp "$T/out" "$T/kcache.1"
if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$T/kcache.1" 2>"$T/groff"; [ ! -s "$T/groff" ] && ok || bad "groff warns: $(head -5 "$T/groff")"
else echo "note: no groff (tools/deps.sh installs groff-base): the page's troff is not checked"; fi
for c in $cmds; do has "^\.SS $c\$" "$T/kcache.1" "the man page has no section for $c"; done
for s in NAME SYNOPSIS DESCRIPTION "GLOBAL OPTIONS" CONFIGURATION "EXIT STATUS" FILES "SEE ALSO"; do
  has "^\.SH $s" "$T/kcache.1"
done
"$KC" -d "$D" config --json >"$T/cfg" || bad "config --json"
for e in $(python3 -c 'import json,sys; print(" ".join(s["env"] for s in json.load(open(sys.argv[1]))["settings"]))' "$T/cfg"); do
  grep -q "$e" "$T/kcache.1" && ok || bad "the man page lacks $e"
done
has "libkcache (3)" "$T/kcache.1"

# The completions: valid scripts, and the bash function offers what the tables hold.
expect_rc 0 "$KC" completion bash; cp "$T/out" "$T/kcache.bash"
bash -n "$T/kcache.bash" && ok || bad "the bash completion does not parse"
expect_rc 0 "$KC" completion zsh; cp "$T/out" "$T/_kcache"
if command -v zsh >/dev/null; then zsh -n "$T/_kcache" && ok || bad "the zsh completion does not parse"
else echo "note: no zsh (tools/deps.sh installs it): the zsh completion is not parsed"; fi
expect_rc 2 "$KC" completion fish
complete_words() { # complete_words WORD...: COMPREPLY for the last word, as bash asks
  COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
  _kcache 2>/dev/null; printf '%s\n' "${COMPREPLY[@]}"
}
# shellcheck disable=SC1090
source "$T/kcache.bash"
complete_words kcache gc -- >"$T/c1"; has "^--older-than$" "$T/c1" "gc's options are not completed"; has "^--max-size$" "$T/c1"
complete_words kcache pre >"$T/c2"; has "^prewarm$" "$T/c2" "commands are not completed"
complete_words kcache - >"$T/c3"; has "^--cache-dir$" "$T/c3"; has "^-s$" "$T/c3"
complete_words kcache -d "$D" prewarm -j2 --a >"$T/c4"; has "^--arch$" "$T/c4" "the command after -d DIR is not found"
complete_words kcache --cache-dir = "$D" gc --o >"$T/c9"; has "^--older-than$" "$T/c9" "--cache-dir=DIR (split at = as bash does) hides the command"
touch "$T/spec-one.json"
complete_words kcache get "$T/spec-" >"$T/c5"; has "spec-one.json" "$T/c5" "get's SPEC is not completed as a file"
complete_words kcache export --manifest "$T/spec-" >"$T/c6"; has "spec-one.json" "$T/c6" "--manifest is not completed as a file"
complete_words kcache help ex >"$T/c7"; has "^explain$" "$T/c7"; has "^export$" "$T/c7"
complete_words kcache completion "" >"$T/c8"; has "^zsh$" "$T/c8"

# -M's SIZE is a value even when it looks like an option (ccache -M takes the next word).
expect_rc 2 "$KC" --cache-dir "$T/msize" -M --json

# A manifest naming a spec that is not there is bad input for every command that reads manifests: exit 2.
printf '{"graphs": ["nope.json"], "archs": ["sm_90"]}' >"$T/nope-m.json"
expect_rc 2 "$KC" --cache-dir "$T/nope" prewarm "$T/nope-m.json"
expect_rc 2 "$KC" --cache-dir "$T/nope" coverage "$T/nope-m.json"
expect_rc 2 "$KC" --cache-dir "$T/nope" export "$T/nope.kcb" --manifest "$T/nope-m.json"

# --json prints one JSON value on stdout, also when the command fails before its own: the status and
# the error, as the same command says on stderr.
expect_rc 2 "$KC" --cache-dir "$T/j" get "$T/nope.json" --arch sm_90 --json
jhas 'j["result"] == "failed" and j["status"] == "KC_EINVAL" and "no such file" in j["error"]' "get --json, no spec"
printf '{"name": "x", "kernels": []}' >"$T/x.json"
expect_rc 2 "$KC" --cache-dir "$T/j" explain "$T/nope.json" --json
jhas 'j["result"] == "failed" and "no such file" in j["error"]' "explain --json, no spec"
expect_rc 2 "$KC" --cache-dir "$T/j" prewarm "$T/nope-m.json" --json
jhas 'j["result"] == "failed" and "nope.json" in j["error"]' "prewarm --json, a bad manifest"
KCACHE_MAX_SIZE=lots expect_rc 1 "$KC" --cache-dir "$T/j" stats --json
jhas 'j["result"] == "failed" and "KCACHE_MAX_SIZE" in j["error"]' "stats --json, a bad setting"
KCACHE_MAX_SIZE=lots expect_rc 1 "$KC" --cache-dir "$T/j" get "$T/x.json" --arch sm_90 --json
jhas 'j["result"] == "failed" and "not a size" in j["error"]' "get --json, a bad setting"

# A value from the command line is shown escaped in a usage error: no escape sequence reaches the terminal.
esc=$(printf '\033[2J')
for args in "gc --older-than ${esc}X" "stats --format ${esc}" "-M ${esc}" "${esc}x" "ls --${esc}"; do
  # shellcheck disable=SC2086
  expect_rc 2 "$KC" --cache-dir "$T/esc" $args
  if grep -q "$(printf '\033')" "$T/err"; then bad "raw ESC in: kcache $args: $(cat -v "$T/err")"; else ok; fi
done

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
