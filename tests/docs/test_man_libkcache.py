#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_man_libkcache.py — docs/man/libkcache.3 is clean troff and names every public function.

  - `groff -man -Tutf8 -ww -z` reads it without a warning (skipped, exit SKIP, where groff is not
    installed: tools/deps.sh installs it with the test packages);
  - its .TH names this release (include/kcache/version.h) and FILES the soname;
  - it has the sections a library's page has (NAME, SYNOPSIS, DESCRIPTION, RETURN VALUE,
    ENVIRONMENT, FILES, SEE ALSO);
  - every function declared KC_API in include/kcache/*.h (the caller's API; kcache/sys/, for back-end
    authors, is documented in its header) is named in the page: a new public function fails
    here until the page says where it belongs.

Usage: test_man_libkcache.py --source DIR [--skip-code N]
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys


def public_functions(src):
    """Every KC_API function's name in include/kcache/*.h, by header."""
    out = {}
    for path in sorted(glob.glob(os.path.join(src, 'include', 'kcache', '*.h'))):
        text = open(path, encoding='utf-8').read()
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)  # comments name functions too
        for m in re.finditer(r'\bKC_API\b([^;{]*?)\(', text):
            name = re.findall(r'\b(kc_\w+)\s*$', m.group(1))
            if name:
                out.setdefault(name[0], os.path.relpath(path, src))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--skip-code', type=int, default=77)
    a = ap.parse_args()
    page = os.path.join(a.source, 'docs', 'man', 'libkcache.3')
    text = open(page, encoding='utf-8').read()
    fails = []
    for sec in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'RETURN VALUE', 'ENVIRONMENT', 'FILES', 'SEE ALSO'):
        if not re.search(r'^\.SH "?%s"?\s*$' % sec, text, re.M):
            fails.append('no .SH %s section' % sec)
    v = [re.search(r'^#define KC_VERSION_%s (\d+)$' % k,
                   open(os.path.join(a.source, 'include/kcache/version.h')).read(), re.M).group(1)
         for k in ('MAJOR', 'MINOR', 'PATCH')]
    if '"kcache %s"' % '.'.join(v) not in text.split('\n.TH ', 1)[-1].split('\n', 1)[0]:
        fails.append('its .TH line does not name this release, kcache %s' % '.'.join(v))
    if 'libkcache.so.%s' % v[0] not in text:
        fails.append('FILES does not name the soname libkcache.so.%s' % v[0])
    plain = re.sub(r'\\f[BIRP]|\\f\(..|\\&|\\%', '', text).replace('\\-', '-').replace('\\_', '_')
    named = set(re.findall(r'\bkc_\w+', plain))
    funcs = public_functions(a.source)
    if len(funcs) < 100:
        fails.append('only %d public functions found: the test no longer reads the headers' % len(funcs))
    for name, header in sorted(funcs.items(), key=lambda kv: (kv[1], kv[0])):
        if name not in named:
            fails.append('%s (%s) is not named in docs/man/libkcache.3: add it to its group' % (name, header))
    for f in fails:
        print('FAIL: ' + f, file=sys.stderr)
    if not shutil.which('groff'):
        print('skip: groff is not installed (tools/deps.sh installs groff-base); the names were checked')
        return 1 if fails else a.skip_code
    r = subprocess.run(['groff', '-man', '-Tutf8', '-ww', '-z', page], capture_output=True, text=True)
    if r.returncode != 0 or r.stderr.strip():
        print('FAIL: groff -man -ww: exit %d\n%s' % (r.returncode, r.stderr), file=sys.stderr)
        fails.append('groff')
    if fails:
        return 1
    print('test_man_libkcache: all passed (%d public functions named, groff clean)' % len(funcs))
    return 0


if __name__ == '__main__':
    sys.exit(main())
