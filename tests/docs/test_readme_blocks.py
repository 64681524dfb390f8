#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_readme_blocks.py — every C block of README.md and docs/*.md builds (python3 only, no pip).

Each ```c block is one of:
  - a complete program (it defines `main`): compiled as written, linked against libkcache and the
    driver double, and run against the double (KCACHE_CUDA_DRIVER, a temporary KCACHE_DIR, no other
    KCACHE_ variable) from the repository's root, as a reader runs it (so `kernels/…` paths work), unless the line before its fence says <!-- build-only --> (it would need a GPU,
    a network, …); exit 77 says it needs what the host lacks (NVRTC): reported, not failed;
  - a fragment: the line before its fence names its harness, <!-- harness: NAME -->, and
    tests/docs/harness/NAME.c declares what the text around the block says the caller has, with
    @BLOCK@ where the block goes (its #include lines are moved to the top of the file).
A block that is neither fails the test: none is skipped silently.  Every block is compiled as C11
with -pedantic -Wall -Wextra -Werror against the headers in include/, and linked.

Usage: test_readme_blocks.py --source DIR --lib LIBKCACHE.so --double LIBDOUBLE.so [--cc CC] [--list]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

MARK = re.compile(r'<!--\s*(harness:\s*([A-Za-z0-9_]+)|build-only)\s*-->')


def blocks(path):
    """(line of the fence, the marker line before it or '', the block's text) of each ```c block."""
    lines = open(path, encoding='utf-8').read().split('\n')
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == '```c':
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            marker = lines[j].strip() if j >= 0 else ''
            k = i + 1
            while k < len(lines) and lines[k].strip() != '```':
                k += 1
            if k == len(lines):
                raise SystemExit('%s:%d: a ```c block is never closed' % (path, i + 1))
            out.append((i + 1, marker, '\n'.join(lines[i + 1:k]) + '\n'))
            i = k
        i += 1
    return out


def program_of(where, marker, text, harness_dir):
    """The C file to build for a block, and whether to run it; raises ValueError when it has no way."""
    if re.search(r'\bint\s+main\s*\(', text):
        return text, 'build-only' not in marker
    m = MARK.search(marker)
    if not m or not m.group(2):
        raise ValueError('%s: a fragment (no main) without a <!-- harness: NAME --> line before it' % where)
    hpath = os.path.join(harness_dir, m.group(2) + '.c')
    if not os.path.exists(hpath):
        raise ValueError('%s: no harness %s' % (where, hpath))
    harness = open(hpath, encoding='utf-8').read()
    if harness.count('@BLOCK@') != 1:
        raise ValueError('%s: harness %s must hold @BLOCK@ once' % (where, hpath))
    includes = [l for l in text.split('\n') if l.startswith('#include')]
    body = '\n'.join(l for l in text.split('\n') if not l.startswith('#include'))
    return '\n'.join(includes) + '\n' + harness.replace('@BLOCK@', '#line 1 "%s"\n%s' % (where, body)), False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--lib', required=True, help='libkcache.so to link')
    ap.add_argument('--double', required=True, help='the driver double, for programs that run')
    ap.add_argument('--cc', default='cc')
    ap.add_argument('--list', action='store_true', help='only list the blocks and what each is')
    a = ap.parse_args()
    docs = [os.path.join(a.source, 'README.md')] + sorted(glob.glob(os.path.join(a.source, 'docs', '*.md')))
    harness_dir = os.path.join(a.source, 'tests', 'docs', 'harness')
    failures, n = [], 0
    with tempfile.TemporaryDirectory(prefix='kcache-blocks.') as tmp:
        for doc in docs:
            rel = os.path.relpath(doc, a.source)
            for line, marker, text in blocks(doc):
                n += 1
                where = '%s:%d' % (rel, line)
                try:
                    prog, run = program_of(where, marker, text, harness_dir)
                except ValueError as e:
                    failures.append(str(e))
                    continue
                if a.list:
                    print('%s: %s' % (where, 'program, run' if run else 'program' if 'main' in text else marker))
                    continue
                src, exe = os.path.join(tmp, 'b%d.c' % n), os.path.join(tmp, 'b%d' % n)
                open(src, 'w', encoding='utf-8').write(prog)
                libdir = os.path.dirname(os.path.abspath(a.lib))
                dbl = os.path.abspath(a.double)
                cmd = [a.cc, '-std=c11', '-pedantic', '-Wall', '-Wextra', '-Werror', '-D_POSIX_C_SOURCE=200809L',
                       '-I' + os.path.join(a.source, 'include'),
                       '-I' + os.path.join(a.source, 'tests', 'double', 'include'), src, '-o', exe, os.path.abspath(a.lib), dbl,
                       '-Wl,-rpath,' + libdir + ':' + os.path.dirname(dbl)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode:
                    failures.append('%s: does not build:\n%s' % (where, r.stderr.strip()))
                    continue
                if run:
                    env = dict(os.environ, KCACHE_DIR=os.path.join(tmp, 'cache%d' % n),
                               KCACHE_CUDA_DRIVER=os.path.abspath(a.double))
                    for k in list(env):
                        if k.startswith('KCACHE_') and k not in ('KCACHE_DIR', 'KCACHE_CUDA_DRIVER'):
                            del env[k]  # the block sees the defaults its text describes
                    r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=120, cwd=a.source)
                    if r.returncode == 77:  # said so, never silent: it needs what this host lacks (NVRTC)
                        print('SKIP %s: built; not run (exit 77: no NVRTC here)' % where)
                        continue
                    if r.returncode:
                        failures.append('%s: exit %d:\n%s%s' % (where, r.returncode, r.stdout, r.stderr))
                        continue
                print('ok %s%s' % (where, ' (ran)' if run else ''))
    if n == 0:
        failures.append('no ```c block found: the extractor is broken')
    for f in failures:
        print('FAIL ' + f)
    print('%d blocks, %d failed' % (n, len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
