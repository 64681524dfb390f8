#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every private function that crosses parts is listed in its part's internal header.

The house rule (ARCHITECTURE.md, "Private functions between parts"): a function declared in a
header under src/P/ (never a public one under include/) and called from a file of another part Q
is listed in src/P/internal.h's index, on one line naming its header and, after "Callers:", every
part that calls it -- SQLite's "only pcache.c calls this", kept true by this check.  `common` is
everyone's and has no index.  The index is exact: a caller missing, a part listed that no longer
calls, or a listed function that no longer crosses parts is a failure.

    tests/arch/check_internal.py [ROOT]           check (CTest test_internal)
    tests/arch/check_internal.py --write [ROOT]   rewrite each index from the code

The index sits between the lines BEGIN and END below in each src/P/internal.h; --write adds it
(creating the header when the part has none) and replaces it.
"""
import os
import re
import sys

BEGIN = "/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----"
END = " * ---- end of the index ---- */"
DECL = re.compile(r'^[A-Za-z_][\w \*]*?\b(kc_\w+)\s*\(', re.M)


def strip_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', ' ', text, flags=re.S)


def scan(root):
    src = os.path.join(root, 'src')
    parts = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    files = {p: sorted(os.path.join(src, p, f) for f in os.listdir(os.path.join(src, p))
                       if f.endswith(('.c', '.h'))) for p in parts}
    code = {}
    for p in parts:
        for f in files[p]:
            with open(f, encoding='utf-8', errors='replace') as fh:
                code[f] = strip_comments(fh.read())
    index = {}
    for p in parts:
        if p == 'common':
            continue
        rows = {}
        for f in files[p]:
            if not f.endswith('.h'):
                continue
            for fn in DECL.findall(code[f]):
                users = sorted({q for q in parts if q != p
                                for g in files[q] if re.search(r'\b%s\b' % fn, code[g])})
                if users and fn not in rows:
                    rows[fn] = (os.path.basename(f), users)
        index[p] = rows
    return src, index


def render(rows):
    width = max([len(fn) for fn in rows] + [10])
    hw = max([len(h) for h, _ in rows.values()] + [8])
    lines = [BEGIN]
    for fn in sorted(rows):
        header, users = rows[fn]
        lines.append(" *   %-*s  %-*s  Callers: %s" % (width, fn, hw, header, ", ".join(users)))
    lines.append(END)
    return "\n".join(lines) + "\n"


def write(src, index):
    for p, rows in index.items():
        path = os.path.join(src, p, 'internal.h')
        block = render(rows) if rows else ''
        if os.path.exists(path):
            with open(path, encoding='utf-8') as fh:
                text = fh.read()
            if BEGIN in text:
                a = text.index(BEGIN)
                b = text.index(END, a) + len(END) + 1
                text = text[:a] + block + text[b:]
            elif block:
                guard = text.rfind('#endif')
                text = text[:guard] + block + '\n' + text[guard:]
        elif block:
            g = 'KC_%s_INTERNAL_H' % p.upper()
            text = ("/*\n * %s/internal.h — the %s part's index of its private functions that other parts call, with\n"
                    " * the parts that call each (their declarations stay in the headers named).  Generated and\n"
                    " * checked by tests/arch/check_internal.py; a new caller across parts is added here.\n */\n"
                    "#ifndef %s\n#define %s\n\n%s\n#endif\n") % (p, p, g, g, block)
        else:
            continue
        with open(path, 'w', encoding='utf-8') as fh:
            fh.write(text)


def check(src, index):
    bad = 0
    for p, rows in index.items():
        path = os.path.join(src, p, 'internal.h')
        text = open(path, encoding='utf-8').read() if os.path.exists(path) else ''
        if not rows:
            continue
        if BEGIN not in text:
            print("src/%s/internal.h: no index of the functions other parts call: run %s --write"
                  % (p, sys.argv[0]))
            bad += 1
            continue
        listed = text[text.index(BEGIN):text.index(END)]
        have = {}
        for line in listed.splitlines()[1:]:
            m = re.match(r'\s*\*\s+(kc_\w+)\s+\S+\s+Callers:\s*(.*)$', line)
            if m:
                have[m.group(1)] = sorted(x.strip() for x in m.group(2).split(',') if x.strip())
        for fn, (header, users) in sorted(rows.items()):
            if fn not in have:
                print("src/%s/internal.h: %s (%s) is called by %s but not in the index" % (p, fn, header, ", ".join(users)))
                bad += 1
            elif have[fn] != users:
                print("src/%s/internal.h: %s: the index says Callers: %s; the code: %s"
                      % (p, fn, ", ".join(have[fn]), ", ".join(users)))
                bad += 1
        for fn in sorted(set(have) - set(rows)):
            print("src/%s/internal.h: %s is in the index but no other part calls it" % (p, fn))
            bad += 1
    if bad:
        print("check_internal: %d problem(s); after a deliberate change run: %s --write" % (bad, sys.argv[0]))
    else:
        print("check_internal: every private function called across parts is in its part's index")
    return 1 if bad else 0


def main(argv):
    args = [a for a in argv[1:] if a != '--write']
    src, index = scan(args[0] if args else '.')
    if '--write' in argv:
        write(src, index)
        return 0
    return check(src, index)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
