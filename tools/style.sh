#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# style.sh — the house checks on size, complexity and format (issue: rooms and functions), one script
# for CI (`.ci/run style`) and for a developer before a commit.  Each violation is one line,
# FILE:LINE: what is wrong and what to do; a summary ends the output; exit 1 on any violation.
#   size     no file in src/, tools/ or python/ (*.c *.h *.py *.sh) over 600 lines
#   funcs    no C function in src/, tools/ or python/ over 100 lines, over a cyclomatic complexity of 30,
#            or over 8 parameters (lizard, installed with pip into a venv under the build folder
#            when python3 cannot import it: that needs PyPI once)
#   format   every tracked *.c and *.h file is as clang-format 14 writes it with the root
#            .clang-format, except the paths listed in .clang-format-ignore
#   columns  (only with --columns) no line of those C files over 120 columns
# What it must not do: change a file, except with --fix (clang-format -i over the same files).
#   tools/style.sh [--fix] [--columns] [--only size,funcs,format,columns] [--root DIR] [FILE...]
# --root DIR: check the tree at DIR (its .clang-format) instead of this one (tests/style/ does).
# FILE...: check only these files (each check keeps its own folders and kinds; no file: every
# tracked one).  Environment: CLANG_FORMAT (the binary; default clang-format-14, else clang-format,
# which must be version 14: another version formats otherwise), KCACHE_STYLE_VENV (default
# build/style-venv), STYLE_MAX_LINES=600, STYLE_MAX_LENGTH=100, STYLE_MAX_CCN=30, STYLE_MAX_ARGS=8,
# STYLE_MAX_COLUMNS=120.
set -uo pipefail
cd "$(dirname "$0")/.."
MAX_LINES=${STYLE_MAX_LINES:-600} MAX_LENGTH=${STYLE_MAX_LENGTH:-100} MAX_CCN=${STYLE_MAX_CCN:-30}
MAX_ARGS=${STYLE_MAX_ARGS:-8} MAX_COLUMNS=${STYLE_MAX_COLUMNS:-120}
fix=0; checks="size,funcs,format"; only=; files=(); root=
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --fix) fix=1 ;;
        --columns) checks="$checks,columns" ;;
        --only) [ $# -gt 1 ] || usage; only=$2; shift ;;
        --root) [ $# -gt 1 ] || usage; root=$2; shift ;;
        -h|--help) usage ;;
        -*) echo "style: unknown option $1" >&2; usage ;;
        *) files+=("$1") ;;
    esac
    shift
done
[ -n "$only" ] && checks=$only
[ -z "$root" ] || cd "$root" || exit 2
for c in ${checks//,/ }; do
    case "$c" in size|funcs|format|columns) ;; *) echo "style: no check named '$c' (size, funcs, format, columns)" >&2; exit 2 ;; esac
done
want() { case ",$checks," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

# The files: the tracked ones (or those named), by kind and folder.
if [ ${#files[@]} -eq 0 ]; then
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        mapfile -t files < <(git ls-files)
    else
        mapfile -t files < <(find src tools include tests -type f 2>/dev/null | sort)
    fi
fi
in_src_tools() { case "$1" in src/*|tools/*|python/*) return 0 ;; *) return 1 ;; esac; }
# .clang-format-ignore: one shell pattern per line (a folder ends in /), # comments.  clang-format 14
# has no such file; this script honours it, and each listed folder also carries a .clang-format
# with DisableFormat, so that clang-format run by hand leaves it alone too.
ignored() {
    local f=$1 p
    [ -f .clang-format-ignore ] || return 1
    while IFS= read -r p || [ -n "$p" ]; do
        p=${p%%#*}; p=${p%"${p##*[![:space:]]}"}
        [ -n "$p" ] || continue
        case "$p" in */) case "$f" in "$p"*) return 0 ;; esac ;; *) case "$f" in $p) return 0 ;; esac ;; esac
    done <.clang-format-ignore
    return 1
}
sized=(); cfiles=(); funcfiles=()
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    case "$f" in
        *.c|*.h) ignored "$f" || cfiles+=("$f"); in_src_tools "$f" && { sized+=("$f"); funcfiles+=("$f"); } ;;
        *.py|*.sh) in_src_tools "$f" && sized+=("$f") ;;
    esac
done

declare -A count=()
fail() { count[$1]=$((${count[$1]:-0} + 1)); echo "$2"; }

clang_format() {
    local cf=${CLANG_FORMAT:-}
    if [ -z "$cf" ]; then command -v clang-format-14 >/dev/null && cf=clang-format-14 || cf=clang-format; fi
    command -v "$cf" >/dev/null || { echo "style: $cf not found: install clang-format 14 (apt-get install clang-format-14) or set CLANG_FORMAT" >&2; return 1; }
    local v; v=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
    [ "$v" = 14 ] || { echo "style: $cf is version ${v:-unknown}; the tree is formatted with clang-format 14 (another version writes some lines otherwise): install clang-format-14 or set CLANG_FORMAT" >&2; return 1; }
    echo "$cf"
}

if [ $fix = 1 ]; then
    cf=$(clang_format) || exit 2
    [ ${#cfiles[@]} -eq 0 ] || "$cf" -i --style=file "${cfiles[@]}" || exit 2
    echo "style --fix: clang-format -i on ${#cfiles[@]} files"
fi

# size: the line count of each file of src/ and tools/.
if want size; then
    for f in "${sized[@]}"; do
        n=$(wc -l <"$f")
        [ "$n" -le "$MAX_LINES" ] || fail size "$f:1: $n lines, over $MAX_LINES: split it along its jobs (one idea per file, named in its header), never mechanically"
    done
fi

# funcs: lizard's length, cyclomatic complexity and parameter count of each C function.
lizard_cmd() {
    if python3 -c 'import lizard' 2>/dev/null; then echo python3; return 0; fi
    local venv=${KCACHE_STYLE_VENV:-build/style-venv}
    if [ ! -x "$venv/bin/python3" ] || ! "$venv/bin/python3" -c 'import lizard' 2>/dev/null; then
        echo "style: lizard is not installed; installing it into $venv (pip, from PyPI)" >&2
        { python3 -m venv "$venv" && "$venv/bin/python3" -m pip install -q lizard; } >&2 \
            || { echo "style: could not install lizard: run 'pip install --break-system-packages lizard' (or set KCACHE_STYLE_VENV to a venv that has it)" >&2; return 1; }
    fi
    echo "$venv/bin/python3"
}
if want funcs && [ ${#funcfiles[@]} -gt 0 ]; then
    if py=$(lizard_cmd); then
        # lizard's CSV: NLOC, CCN, tokens, parameters, length, location, file, function, long name, start, end.
        out=$("$py" -m lizard --csv "${funcfiles[@]}" 2>"${TMPDIR:-/tmp}/style-lizard.$$.err")
        rc=$?
        if [ $rc -ne 0 ] && [ -z "$out" ]; then
            cat "${TMPDIR:-/tmp}/style-lizard.$$.err" >&2; rm -f "${TMPDIR:-/tmp}/style-lizard.$$.err"
            echo "style: lizard failed" >&2; exit 2
        fi
        rm -f "${TMPDIR:-/tmp}/style-lizard.$$.err"
        while IFS=$'\t' read -r kind msg; do fail "$kind" "$msg"; done < <(printf '%s\n' "$out" | python3 -c '
import csv, sys
length, ccn, args = (int(a) for a in sys.argv[1:4])
# Public calls older than the parameter rule: their signatures are the ABI callers compiled
# against, so they stay, as thin wrappers of a twin that takes one struct (kc_graph_call:
# kc_graph_forward_call, kc_graph_backward_call).  The other limits still apply to them.
frozen = {"kc_graph_forward_args", "kc_graph_forward_rng", "kc_graph_backward_args"}
for r in csv.reader(sys.stdin):
    if len(r) < 11 or not r[0].isdigit(): continue
    c, p, n, f, fn, start = int(r[1]), int(r[3]), int(r[4]), r[6], r[7], r[9]
    if n > length: print("funcs\t%s:%s: %s is %d lines, over %d: move its parts into named helper functions" % (f, start, fn, n, length))
    if c > ccn: print("funcs\t%s:%s: %s has a cyclomatic complexity of %d, over %d: turn a long decision into a table and a loop, or name its steps" % (f, start, fn, c, ccn))
    if p > args and fn not in frozen: print("funcs\t%s:%s: %s takes %d parameters, over %d: pass a struct" % (f, start, fn, p, args))
' "$MAX_LENGTH" "$MAX_CCN" "$MAX_ARGS")
    else
        exit 2
    fi
fi

# format: what clang-format would change, one line per file (its first changed line).
if want format && [ ${#cfiles[@]} -gt 0 ]; then
    cf=$(clang_format) || exit 2
    while IFS= read -r line; do
        fail format "$line: not as clang-format writes it: run tools/style.sh --fix (clang-format -i $(echo "$line" | cut -d: -f1))"
    done < <("$cf" --dry-run --Werror --style=file "${cfiles[@]}" 2>&1 | sed -n 's/^\([^:]*:[0-9]*\):[0-9]*: error: code should be clang-formatted.*/\1/p' | awk -F: '!seen[$1]++')
fi

# columns: lines over MAX_COLUMNS characters (clang-format leaves long strings and comments alone).
if want columns && [ ${#cfiles[@]} -gt 0 ]; then
    while IFS= read -r line; do fail columns "$line"; done < <(python3 -c '
import sys
limit = int(sys.argv[1])
for f in sys.argv[2:]:
    for i, l in enumerate(open(f, encoding="utf-8", errors="replace"), 1):
        n = len(l.rstrip("\n"))
        if n > limit: print("%s:%d: %d columns, over %d: break the line (a long string: adjacent literals)" % (f, i, n, limit))
' "$MAX_COLUMNS" "${cfiles[@]}")
fi

total=0; summary=; scope=
for c in size funcs format columns; do
    want "$c" || continue
    n=${count[$c]:-0}; total=$((total + n)); summary="$summary, $c $n"
done
want size && scope="$scope, ${#sized[@]} files sized"
want funcs && scope="$scope, ${#funcfiles[@]} C files of src/, tools/ and python/ measured"
{ want format || want columns; } && scope="$scope, ${#cfiles[@]} C files formatted"
if [ $total -eq 0 ]; then
    echo "style: OK (${summary#, }; ${scope#, })"
    exit 0
fi
echo "style: FAILED, $total violations (${summary#, }; ${scope#, })"
exit 1
