#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_log_json.py — KCACHE_LOG_FORMAT=json read by a parser that is not kcache's: every line of
stderr, decoded as strict UTF-8, is one object for Python's json.loads, with ts (ISO-8601 UTC with
milliseconds), level, pid, tid, part and msg.  Two sources: the hostile messages of
test_log_json --emit (quotes, a newline, ESC, bytes >= 0x80 valid and not), and the kcache tool's
own log lines (a gc and a stats of a new cache directory, every category).

Usage: test_log_json.py TEST_LOG_JSON KCACHE
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

HOSTILE = 'say "hi"\n\x1b[31mred\x1b[0m tab\t back\\ \u00e9 \ufffd \ufffd ok \ufffd\ufffd\ufffd \U0001F600 del\x7f'


def lines_of(cmd, env):
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0 or cmd[-1] == 'verify', 'exit %d: %s' % (r.returncode, cmd)
    text = r.stderr.decode('utf-8')  # strict: an invalid byte fails the test here
    assert text.endswith('\n') or not text, 'the last record does not end its line'
    out = []
    for line in text.split('\n')[:-1]:
        rec = json.loads(line)
        assert set(rec) == {'ts', 'level', 'pid', 'tid', 'part', 'msg'}, rec
        ts = datetime.datetime.strptime(rec['ts'], '%Y-%m-%dT%H:%M:%S.%fZ')
        assert len(rec['ts']) == 24 and ts.year >= 2024, rec['ts']
        assert rec['level'] == 'debug' and isinstance(rec['pid'], int) and isinstance(rec['tid'], int), rec
        out.append(rec)
    return out


def main():
    emitter, kcache = sys.argv[1], sys.argv[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith('KCACHE_')}
    env.update(KCACHE_LOG='all', KCACHE_LOG_FORMAT='json')
    recs = lines_of([emitter, '--emit'], env)
    assert [r['part'] for r in recs] == ['store', 'compile', 'key'], recs
    assert recs[0]['msg'] == HOSTILE, ascii(recs[0]['msg'])
    assert recs[1]['msg'] == 'plain line' and recs[2]['msg'] == ''
    with tempfile.TemporaryDirectory(prefix='kctest-logjson-') as t:
        env['KCACHE_DIR'] = os.path.join(t, 'cache')
        n = 0
        for args in (['gc'], ['stats'], ['verify']):
            n += len(lines_of([kcache] + args, env))
        assert n > 0, 'the tool logged nothing under KCACHE_LOG=all'
    print('test_log_json.py: all passed (%d tool lines)' % n)


if __name__ == '__main__':
    main()
