#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_style.sh — tools/style.sh itself, on a small tree of known-good and known-bad files (--root):
#  - good files and files exactly at each limit (600 lines, a 100-line function, a complexity of 30,
#    8 parameters) pass, exit 0;
#  - one over each limit (601 lines of C and of Python, 101 lines, a complexity of 31, 9 parameters)
#    and a file clang-format would change each give one line naming FILE:LINE, exit 1; a
#    misformatted file under a .clang-format-ignore folder is left out; a header of include/ is
#    formatted but not sized;
#  - --columns adds a line over 120 columns; --fix formats (and leaves the ignored file alone).
# Offline: skipped (77) when clang-format 14 or lizard is missing (CI installs them).
#   test_style.sh SOURCE_DIR
set -u
SRC=$1
STYLE=$SRC/tools/style.sh
cf=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
if [ -z "$cf" ] || ! "$cf" --version | grep -q 'version 14\.'; then echo "skipped: no clang-format 14"; exit 77; fi
python3 -c 'import lizard' 2>/dev/null || { echo "skipped: no lizard (pip install lizard)"; exit 77; }
export CLANG_FORMAT=$cf
T=$(mktemp -d /tmp/kctest-style-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0; checks=0
ok()  { checks=$((checks+1)); }
bad() { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }

R=$T/tree; mkdir -p "$R/src" "$R/tools" "$R/include" "$R/tests/data"
cp "$SRC/.clang-format" "$R/"
printf '# test data\ntests/data/\n' >"$R/.clang-format-ignore"
python3 - "$R" <<'PY'
import sys
R = sys.argv[1]
def w(path, lines): open(R + "/" + path, "w").write("\n".join(lines) + "\n")
def fn(name, nargs, ifs, adds):
    # a function of 1 + 1 + ifs + adds + 1 + 1 lines, complexity 1 + ifs, nargs parameters
    params = ", ".join("int a%d" % i for i in range(nargs))
    return (["int %s(%s) {" % (name, params), "    int r = 0;"] + ["    if (a0 == %d) r += %d;" % (k, k) for k in range(ifs)]
            + ["    r += %d;" % k for k in range(adds)] + ["    return r;", "}", ""])
w("src/good.c", ["/* good.c */", "#include <stdio.h>", "", "static int add(int a, int b) { return a + b; }", "",
                 "int main(void) {", "    int s = 0;", "    for (int i = 0; i < 3; i++) s = add(s, i);",
                 "    if (s > 2) printf(\"%d\\n\", s);", "    return 0;", "}"])
edge = ["/* edge.c: every limit reached, none passed */", ""] + fn("eight", 8, 0, 0) + fn("thirty", 1, 29, 0) + fn("hundred", 1, 0, 96)
edge += ["/* pad */"] * (600 - len(edge) - 1) + ["int last(void) { return 0; }"]
w("src/edge.c", edge)
badf = ["/* bad.c */", ""] + fn("nine", 9, 0, 0) + fn("branchy", 1, 30, 0) + fn("longf", 1, 0, 97)
badf += ["int   misformatted( int x ){return x;}", 'static const char *s = "' + "x" * 130 + '";']
badf += ["/* pad */"] * (601 - len(badf) - 1) + ["int last(void) { return 0; }"]
w("tools/bad.c", badf)
w("tools/big.py", ["x = %d" % i for i in range(601)])
w("tools/fine.sh", ["echo %d" % i for i in range(600)])
w("include/x.h", ["int   f( int x );"])
w("tests/data/ugly.c", ["int   ugly( int x ){return x;}"])
PY
[ "$(wc -l <"$R/src/edge.c")" = 600 ] && ok || bad "edge.c has $(wc -l <"$R/src/edge.c") lines, not 600"

# Good and at-the-limit files pass.
bash "$STYLE" --root "$R" --columns src/good.c src/edge.c >"$T/out" 2>&1 && ok || bad "good files: $(cat "$T/out")"
grep -q "^style: OK" "$T/out" && ok || bad "no OK summary: $(cat "$T/out")"

# The whole tree: one line per violation, exit 1.
bash "$STYLE" --root "$R" >"$T/out" 2>&1; rc=$?
[ $rc = 1 ] && ok || bad "exit $rc (want 1): $(cat "$T/out")"
for want in "tools/bad.c:1: 601 lines, over 600" "tools/big.py:1: 601 lines, over 600" \
            "tools/bad.c:3: nine takes 9 parameters, over 8: pass a struct" \
            "tools/bad.c:8: branchy has a cyclomatic complexity of 31, over 30" \
            "tools/bad.c:43: longf is 101 lines, over 100" \
            "tools/bad.c:145: not as clang-format writes it" "include/x.h:1: not as clang-format writes it" \
            "style: FAILED, 7 violations (size 2, funcs 3, format 2;"; do
    grep -qF "$want" "$T/out" && ok || bad "no '$want' in: $(cat "$T/out")"
done
[ "$(grep -c ': ' "$T/out")" = 8 ] && ok || bad "other lines than the 7 violations and the summary: $(cat "$T/out")"
! grep -qE "edge.c|good.c|ugly.c|fine.sh|x.h:1: .*lines" "$T/out" && ok || bad "a good, ignored or unsized file reported: $(cat "$T/out")"
# --columns: the long line too.
bash "$STYLE" --root "$R" --columns --only columns >"$T/out" 2>&1
grep -qF "tools/bad.c:146: 156 columns, over 120" "$T/out" && [ "$(grep -c 'columns, over' "$T/out")" = 1 ] && ok \
    || bad "--columns: $(cat "$T/out")"
# --fix formats what is not ignored; then the format check passes.
cp "$R/tests/data/ugly.c" "$T/ugly.before"
bash "$STYLE" --root "$R" --fix --only format >"$T/out" 2>&1 && ok || bad "--fix: $(cat "$T/out")"
grep -qx "int f(int x);" "$R/include/x.h" && cmp -s "$R/tests/data/ugly.c" "$T/ugly.before" && ok \
    || bad "--fix: x.h '$(cat "$R/include/x.h")', ugly.c changed: $(diff "$T/ugly.before" "$R/tests/data/ugly.c")"

echo "test_style: $checks checks, $fails failed"
[ $fails = 0 ]
