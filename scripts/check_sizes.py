#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Size limits of the sources of lib/, drivers/, compat/ (the drop-ins)
and apps/ (the programs): no file over MAX_FILE lines, no function over MAX_FUNC lines (a function counts from the line of
its opening brace at column 0 to its closing brace at column 0, both
included, as the kernel's style puts them). With --list prints every file
with its line count and the longest function.

usage: check_sizes.py [--list] TOPDIR
exit status 1 when a limit is exceeded.
"""
import os
import re
import sys

MAX_FILE = 800
MAX_FUNC = 80
DIRS = ('lib', 'drivers', 'compat', 'apps')
NAME = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(')


def functions(lines):
    """(name, first line, length) of each function definition."""
    out = []
    i = 0
    while i < len(lines):
        if lines[i].rstrip('\n') == '{':
            # the signature is on the lines above, back to a line at column 0
            j = i - 1
            while j > 0 and lines[j][:1] in ('\t', ' ') and lines[j].strip():
                j -= 1
            m = NAME.search(lines[j])
            name = m.group(1) if m else '?'
            k = i + 1
            while k < len(lines) and lines[k].rstrip('\n') != '}':
                k += 1
            out.append((name, j + 1, k - i + 1))
            i = k
        i += 1
    return out


def main():
    args = sys.argv[1:]
    listing = '--list' in args
    args = [a for a in args if a != '--list']
    top = args[0] if args else '.'
    bad = []
    rows = []
    for d in DIRS:
        for root, _, files in os.walk(os.path.join(top, d)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, top)
                with open(path, encoding='utf-8') as fh:
                    lines = fh.readlines()
                funcs = functions(lines)
                longest = max(funcs, key=lambda x: x[2]) if funcs else ('-', 0, 0)
                rows.append((rel, len(lines), longest))
                if len(lines) > MAX_FILE:
                    bad.append('%s: %d lines (limit %d)' % (rel, len(lines), MAX_FILE))
                for name, line, n in funcs:
                    if n > MAX_FUNC:
                        bad.append('%s:%d: %s() is %d lines (limit %d)' % (rel, line, name, n, MAX_FUNC))
    if listing:
        for rel, n, (fname, _, flen) in sorted(rows):
            print('%5d  %-40s longest function %s (%d lines)' % (n, rel, fname, flen))
        print('%5d  total (%d files)' % (sum(r[1] for r in rows), len(rows)))
    for b in bad:
        print('FAIL', b)
    print('%d files checked, %d over a limit' % (len(rows), len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
