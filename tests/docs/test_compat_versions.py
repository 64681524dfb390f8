#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_compat_versions.py — docs/compatibility.md's table of formats agrees with the code.

Each row of the table "Formats: what each release reads and writes" states what this release
writes and reads; here every such number is read from the code's own constant and the row must
say the same, so a format version bumped in the code without the page (or the reverse) fails:
  - the release (include/kcache/version.h) and the soname (src/CMakeLists.txt: SOVERSION is MAJOR);
  - entries (KC_ENTRY_FORMAT_VERSION), bundles (KC_BUNDLE_VERSION_MAX and bundle.h's grammar), the
    directory layout ("%s/v1"), the stats file (STATS_MAGIC), site profiles, key files, toolkit
    memos, the key rules (KEY_SCHEME_VERSION, KC_UNIT_RECORD_VERSION, KC_GRAPH_BINDING_VERSION),
    kc_options (KC_OPTIONS_VERSION);
  - every "#define ..VERSION.." under src/ (the private format and rule versions) is named on the
    page, so a new one cannot be added without a row.

Usage: test_compat_versions.py --source DIR
"""
import argparse
import glob
import os
import re
import sys

fails = []


def bad(msg):
    fails.append(msg)
    print('FAIL: ' + msg, file=sys.stderr)


def grab(src, rel, pattern):
    """The first group of pattern in file rel, or a failure."""
    text = open(os.path.join(src, rel), encoding='utf-8').read()
    m = re.search(pattern, text, re.M)
    if not m:
        bad('%s: no match for %s (the test needs updating with the code)' % (rel, pattern))
        return None
    return m.group(1)


def table(doc):
    """The rows of the formats table: {first cell: [cells]}."""
    part = doc.split('## Formats: what each release reads and writes', 1)
    if len(part) < 2:
        bad('docs/compatibility.md has no "Formats: what each release reads and writes" section')
        return {}
    rows = {}
    for line in part[1].split('\n'):
        if line.startswith('| ') and not line.startswith('|---'):
            cells = [c.strip() for c in line.strip('|').split(' | ')]
            rows[cells[0]] = cells
    return rows


def expect(rows, name, col, want):
    """Row `name`'s cell `col` (1 where, 2 writes, 3 reads, 4 in the code) holds `want`."""
    if name not in rows:
        return bad('the formats table has no row "%s"' % name)
    if want is not None and want not in rows[name][col]:
        bad('row "%s": column %d is "%s", the code says "%s"' % (name, col, rows[name][col], want))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    src = ap.parse_args().source
    doc = open(os.path.join(src, 'docs/compatibility.md'), encoding='utf-8').read()
    rows = table(doc)

    major, minor, patch = (grab(src, 'include/kcache/version.h', r'^#define KC_VERSION_%s (\d+)$' % p)
                           for p in ('MAJOR', 'MINOR', 'PATCH'))
    release = '%s.%s.%s' % (major, minor, patch)
    if 'This release is **%s**' % release not in doc or 'kcache %s:' % release not in doc:
        bad('the page does not name this release, %s' % release)
    if grab(src, 'src/CMakeLists.txt', r'SOVERSION \$\{(PROJECT_VERSION_MAJOR)\}') is not None:
        for s in ('`libkcache.so.%s`' % major, '`libkcache.so.%s`' % release):
            if s not in doc:
                bad('the page does not name the soname/file %s' % s)

    entry = grab(src, 'include/kcache/entry.h', r'^#define KC_ENTRY_FORMAT_VERSION (\d+)$')
    expect(rows, 'entry: graph entry, image, unit record', 2, 'v%s' % entry)
    expect(rows, 'entry: graph entry, image, unit record', 3, 'v%s' % entry)
    bmax = grab(src, 'src/bundle/internal.h', r'^#define KC_BUNDLE_VERSION_MAX (\d+)$')
    bgram = grab(src, 'include/kcache/bundle.h', r'version:u16 \(1\.\.(\d+)\)')
    if bmax != bgram:
        bad('KC_BUNDLE_VERSION_MAX %s and bundle.h\'s grammar (1..%s) disagree' % (bmax, bgram))
    expect(rows, 'bundle', 2, 'v%s' % bmax)
    expect(rows, 'bundle', 3, 'v1–v%s' % bmax)
    layout = grab(src, 'src/store/local.c', r'"%s/v(\d+)"')
    expect(rows, 'cache directory layout', 1, '<dir>/v%s/' % layout)
    expect(rows, 'cache directory layout', 2, 'v%s' % layout)
    expect(rows, 'cache directory layout', 3, 'v%s' % layout)
    magic = grab(src, 'src/store/local_stats.c', r'^#define STATS_MAGIC "(KCSTATS\d+)"$')
    expect(rows, 'shard statistics', 2, magic)
    expect(rows, 'shard statistics', 3, magic)
    prof = grab(src, 'src/guard/profile_format.c', r'"(kcache-profile \d+)\\n')
    expect(rows, 'site profile', 2, prof)
    expect(rows, 'site profile', 3, prof)
    for kind in ('private', 'public'):
        k = grab(src, 'src/entry/sign.c', r'"(kcache-ed25519-%s \d+) ' % kind)
        expect(rows, 'Ed25519 key files', 2, k)
    memo = grab(src, 'src/compile/toolkit_impl.h', r'#define KC_TK_MEMO_VERSION "(kcache-toolkit \d+)"')
    direct = grab(src, 'src/compile/toolkit_direct.c', r'"(kcache-toolkit-direct \d+) ')
    expect(rows, 'toolkit memos', 2, memo)
    expect(rows, 'toolkit memos', 2, direct)
    rules = [('scheme', 'src/key/key.c', 'KEY_SCHEME_VERSION'),
             ('unit record', 'src/graph/unitstore.c', 'KC_UNIT_RECORD_VERSION'),
             ('kernel binding', 'src/graph/graph_internal.h', 'KC_GRAPH_BINDING_VERSION')]
    for label, rel, name in rules:
        v = grab(src, rel, r'^#define %s (\d+)$' % name)
        expect(rows, 'key rules', 2, '%s %s' % (label, v))
        expect(rows, 'key rules', 4, name)
    opts = grab(src, 'include/kcache/cache.h', r'^#define KC_OPTIONS_VERSION (\d+)$')
    if '`KC_OPTIONS_VERSION` is %s' % opts not in doc:
        bad('the page does not say KC_OPTIONS_VERSION is %s' % opts)

    # Every private version constant has its row (by name).
    for path in sorted(glob.glob(os.path.join(src, 'src', '**', '*.[ch]'), recursive=True)):
        for name in re.findall(r'^#define (\w*VERSION\w*)\b', open(path, encoding='utf-8').read(), re.M):
            if '`%s`' % name not in doc:
                bad('%s defines %s, which docs/compatibility.md does not name: add its row'
                    % (os.path.relpath(path, src), name))
    if fails:
        return 1
    print('test_compat_versions: all passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
