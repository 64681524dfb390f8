#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_docs_lint.py — README.md is a front door and the user docs speak to users (python3 only, no pip).

README.md and docs/*.md are read by people who use kcache, not by those who wrote it, so none of them
may carry what belongs to the project's own history:
  - issue numbers ("issue 15", "issues 16-17") and "#123" references;
  - internal run labels ("run F", "runs A and B");
  - commit hashes: a word of 7 to 40 lowercase hex digits with at least one digit and one letter, outside code
    blocks and inline code (a build-id in a command's printed output is not a commit);
  - "[Note: ...]" pointers to comments in the code (they belong in the code).
And README.md stays short (at most MAX_README_LINES lines), and every relative link in README.md and
docs/*.md names a file that exists, and a "#anchor" in a link to a Markdown file names one of its
headings (as GitHub makes anchors of them).

Benchmark history, with its hashes and run labels, lives in tools/bench/results/ and is not checked.

Usage: test_docs_lint.py --source DIR
"""
import argparse
import glob
import os
import re
import sys

MAX_README_LINES = 260

# Written from the configuration table by the configuration part, not by hand; a link to it is checked
# once it exists.  Remove a name from this set when the file is in the tree.
PENDING = set()  # pages linked before they exist (none now)

RULES = [
    ('an issue number', re.compile(r'\bissues?\s+\d+', re.I)),
    ('an issue reference', re.compile(r'(?<![\w&/])#\d+\b')),
    ('a run label', re.compile(r'(?<![\w-])[Rr]uns?\s+[A-Z]\b(?![\w-])')),
    ('a [Note: ...] pointer', re.compile(r'\[Note:')),
]
HEX = re.compile(r'(?<![\w:/-])([0-9a-f]{7,40})(?![\w-])')
LINK = re.compile(r'\]\(([^)\s]+)\)')


def anchors(path):
    """The anchors GitHub makes of a Markdown file's headings (outside code blocks)."""
    out, fenced = set(), False
    for line in open(path, encoding='utf-8').read().split('\n'):
        if line.strip().startswith('```'):
            fenced = not fenced
        elif not fenced and re.match(r'#{1,6} ', line):
            title = line.lstrip('#').strip().lower()
            out.add(re.sub(r'[^\w\- ]', '', title).replace(' ', '-'))
    return out


def without_code(line):
    """The line with its inline code spans blanked (their text is not prose)."""
    return re.sub(r'`[^`]*`', lambda m: ' ' * len(m.group(0)), line)


def check(path, rel, source):
    problems = []
    text = open(path, encoding='utf-8').read()
    fenced = False
    for n, line in enumerate(text.split('\n'), 1):
        where = '%s:%d' % (rel, n)
        if line.strip().startswith('```'):
            fenced = not fenced
        for what, rx in RULES:  # everywhere, code blocks included
            m = rx.search(line)
            if m:
                problems.append('%s: %s: %r' % (where, what, m.group(0)))
        if not fenced:
            for m in HEX.finditer(without_code(line)):
                word = m.group(1)
                if re.search(r'[0-9]', word) and re.search(r'[a-fA-F]', word):
                    problems.append('%s: a commit-like hex word: %r' % (where, word))
        for m in LINK.finditer(line):
            target, _, anchor = m.group(1).partition('#')
            if re.match(r'^[a-z]+:', target):
                continue  # a URL
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            name = os.path.relpath(resolved, source)
            if not os.path.exists(resolved):
                if name not in PENDING:
                    problems.append('%s: a link to %s, which does not exist' % (where, name))
            elif anchor and resolved.endswith('.md') and anchor not in anchors(resolved):
                problems.append('%s: a link to %s#%s: no such heading there' % (where, name, anchor))
    return problems, text.count('\n') + (0 if text.endswith('\n') else 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    a = ap.parse_args()
    source = os.path.abspath(a.source)
    docs = [os.path.join(source, 'README.md')] + sorted(glob.glob(os.path.join(source, 'docs', '*.md')))
    problems = []
    for path in docs:
        rel = os.path.relpath(path, source)
        found, lines = check(path, rel, source)
        problems += found
        if rel == 'README.md' and lines > MAX_README_LINES:
            problems.append('README.md: %d lines, more than %d: move detail to docs/' % (lines, MAX_README_LINES))
    readme = open(os.path.join(source, 'README.md'), encoding='utf-8').read()
    if not re.search(r'\]\(docs/README\.md\)', readme):
        problems.append('README.md: no link to docs/README.md, the index of the documentation')
    for p in problems:
        print('FAIL ' + p)
    print('%d files checked, %d problems' % (len(docs), len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
