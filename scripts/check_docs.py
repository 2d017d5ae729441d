#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_docs.py: the documents name only files and identifiers that exist,
and doc/architecture.md names every source file.

usage: check_docs.py TOPDIR [DOC.md...]

For each document (default: doc/*.md, doc/man/*.md, config/README.md,
README.md, test/data/wire/README.md) every `code span` is looked at:
  * a path (it contains "/" or ends in a source, script or data suffix) must
    name a file or folder of the tree: relative to TOPDIR, or, for a bare
    file name, anywhere in it; "NAME.[ch]" stands for both files, and paths
    under system prefixes (/usr, /dev, /proc, /sys, /var, /tmp, /etc, /run)
    or with placeholders (<...>, *, {...}, NAME.x), build outputs (build/...),
    install paths and the few files of other projects in EXTERNAL are not
    checked; "apps/dpv_perf/dpv_perf" may name apps/dpv_perf/dpv_perf.c;
  * a C identifier of the project (dpv_*, sw_*, DPV_*, SW_*, DPVERBS_*,
    conf_*, null_*) must occur in the sources (lib, drivers, compat, config,
    apps, test, scripts, meson.build files).
Then every source file of lib/, drivers/, compat/ (*.c, *.h) and apps/ (also
*.sh, *.py, *.in) must be named by a `code span` of doc/architecture.md: its
path, its bare name (only if no other such file has that name), a path
ending in it ("bpf/dpv_xdp.bpf.c"), or "NAME.[ch]".
Prints each missing name with its document and line, and each source file
architecture.md does not name; exit 1 if any.
"""
import os
import re
import sys

SUFFIXES = ('.c', '.h', '.md', '.py', '.sh', '.json', '.build', '.map', '.txt', '.pcap', '.in')
SYSTEM = ('/usr', '/dev', '/proc', '/sys', '/var', '/tmp', '/etc', '/run', '/lib', '/home',
          '/mnt', '/opt', '/srv', '~')
IDENT = re.compile(r'\b((?:dpv|sw|conf|null|DPV|SW|DPVERBS)_[A-Za-z0-9_]*[A-Za-z0-9])\b')
SRC_DIRS = ('lib', 'drivers', 'compat', 'config', 'apps', 'test', 'scripts', 'doc/meson.build',
            'dpv.sh')
SKIP_DIRS = {'.git', 'build', 'build-asan', 'data'}


def tree(top):
    files, names, dirs = set(), set(), set()
    for root, ds, fs in os.walk(top):
        ds[:] = [d for d in ds if d not in SKIP_DIRS and not d.startswith('build')]
        rel = os.path.relpath(root, top)
        for d in ds:
            dirs.add(os.path.normpath(os.path.join(rel, d)))
        for f in fs:
            files.add(os.path.normpath(os.path.join(rel, f)))
            names.add(f)
    # the capture folder is data, but its files may be named
    for f in os.listdir(os.path.join(top, 'test', 'data', 'wire')):
        files.add(os.path.join('test', 'data', 'wire', f))
        names.add(f)
    dirs.add(os.path.join('test', 'data', 'wire'))
    dirs.add(os.path.join('test', 'data'))
    return files, names, dirs


def source_text(top):
    chunks = []
    for d in SRC_DIRS + ('meson.build',):
        p = os.path.join(top, d)
        if os.path.isfile(p):
            chunks.append(open(p, encoding='utf-8', errors='replace').read())
            continue
        for root, ds, fs in os.walk(p):
            ds[:] = [x for x in ds if x not in SKIP_DIRS]
            for f in fs:
                if f.endswith(('.c', '.h', '.py', '.sh', '.build', '.map', '.in', '.json')):
                    chunks.append(open(os.path.join(root, f), encoding='utf-8',
                                       errors='replace').read())
    return '\n'.join(chunks)


# Files of other projects (rdma-core, Linux rxe, DPDK) that documents cite.
EXTERNAL = {'rxe_recv.c', 'rxe_param.h', 'rxe.h', 'providers/rxe/rxe.h', 'dummy_ops.c',
            'dpdk-telemetry.py', 'dpdk-dumpcap'}
TOP_DIRS = ('lib', 'drivers', 'compat', 'config', 'apps', 'test', 'doc', 'scripts', 'man',
            '.ci')


def path_like(tok):
    if ' ' in tok or tok.startswith(('-', 'http')) or '=' in tok or '"' in tok:
        return False
    return '/' in tok or tok.endswith(SUFFIXES)


def path_ok(tok, doc_dir, files, names, dirs):
    """True if tok names something in the tree, or is not a tree path at all."""
    if tok.startswith(SYSTEM) or tok.startswith('/') or re.search(r'[<>*{}$]|\.\.\.', tok) \
            or '(' in tok or 'linux-gnu' in tok or tok in EXTERNAL:
        return True
    if re.fullmatch(r'[0-9A-Fa-f:.]+/[0-9]+', tok):
        return True                             # an address prefix
    if '/' in tok and tok.split('/')[0] not in TOP_DIRS:
        return True                             # "rx_pkts/bytes", "build/...", "share/..."
    t = tok.rstrip('/').split(':')[0]
    stem = os.path.basename(t).split('.')[0]
    if not stem or stem.isupper():              # ".c", "NAME.pcap": placeholders
        return True
    m = re.fullmatch(r'(.*)\.\[([a-z]+)\]', t)
    cands = [m.group(1) + '.' + c for c in m.group(2)] if m else [t]
    for c in cands:
        c = c[2:] if c.startswith('./') else c
        forms = [c] if c.endswith(SUFFIXES) else [c, c + '.c', c + '.sh', c + '.py']
        if any(exists(f, doc_dir, files, names, dirs) for f in forms):
            continue
        return False
    return True


def exists(c, doc_dir, files, names, dirs):
    n = os.path.normpath(c)
    rel_doc = os.path.normpath(os.path.join(doc_dir, c))
    if n in files or n in dirs or rel_doc in files or rel_doc in dirs:
        return True
    if '/' not in c:
        return c in names
    return any(f.endswith('/' + n) for f in files) or any(d.endswith('/' + n) for d in dirs)


def code_spans(text):
    """(line number, code span) of a Markdown text, fenced blocks left out."""
    in_fence = False
    for ln, line in enumerate(text.split('\n'), 1):
        if line.strip().startswith('```'):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for tok in re.findall(r'`([^`]+)`', line):
            yield ln, tok.strip()


# The source files doc/architecture.md must name: folder, suffixes.
LISTED = (('lib', ('.c', '.h')), ('drivers', ('.c', '.h')), ('compat', ('.c', '.h')),
          ('apps', ('.c', '.h', '.sh', '.py', '.in')))
ARCH_DOC = os.path.join('doc', 'architecture.md')


def unlisted(top, files):
    """The source files (LISTED) that ARCH_DOC does not name."""
    srcs = sorted(f for d, sfx in LISTED for f in files
                  if f.startswith(d + '/') and f.endswith(sfx) and '__pycache__' not in f)
    named = set()
    for _, tok in code_spans(open(os.path.join(top, ARCH_DOC), encoding='utf-8').read()):
        m = re.fullmatch(r'(.*)\.\[([a-z]+)\]', tok)
        for c in [m.group(1) + '.' + x for x in m.group(2)] if m else [tok]:
            named.add(c[2:] if c.startswith('./') else c)
    base_count = {}
    for f in srcs:
        base_count[os.path.basename(f)] = base_count.get(os.path.basename(f), 0) + 1
    out = []
    for f in srcs:
        base = os.path.basename(f)
        if f in named or any('/' in n and f.endswith('/' + n) for n in named):
            continue
        if base in named and base_count[base] == 1:
            continue
        out.append((f, base in named))
    return len(srcs), out


def main(argv):
    if not argv:
        print(__doc__.strip())
        return 2
    top = argv[0]
    docs = argv[1:] or sorted(
        [os.path.join('doc', f) for f in os.listdir(os.path.join(top, 'doc')) if f.endswith('.md')] +
        [os.path.join('doc', 'man', f) for f in os.listdir(os.path.join(top, 'doc', 'man'))
         if f.endswith('.md')] +
        ['config/README.md', 'README.md', 'test/data/wire/README.md'])
    files, names, dirs = tree(top)
    src = source_text(top)
    idents = set(IDENT.findall(src))
    missing = 0
    checked = 0
    for doc in docs:
        text = open(os.path.join(top, doc), encoding='utf-8').read()
        for ln, tok in code_spans(text):
            if path_like(tok):
                checked += 1
                if not path_ok(tok, os.path.dirname(doc), files, names, dirs):
                    print(f'{doc}:{ln}: no such file: {tok}')
                    missing += 1
                continue
            for ident in IDENT.findall(tok):
                checked += 1
                if ident not in idents and not any(i.startswith(ident) for i in idents
                                                   if ident.endswith('_')):
                    print(f'{doc}:{ln}: no such identifier: {ident}')
                    missing += 1
    n_src, unnamed = unlisted(top, files)
    for f, ambiguous in unnamed:
        why = ' (another source file has its name: give the path)' if ambiguous else ''
        print(f'{ARCH_DOC}: source file not named: {f}{why}')
    print(f'{len(docs)} documents, {checked} names checked, {missing} missing; '
          f'{n_src} source files, {len(unnamed)} not named in {ARCH_DOC}')
    return 1 if missing or unnamed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
