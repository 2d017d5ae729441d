#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The include and call direction between the layers: lib <- drivers.

Includes (source tree):
  * nothing under lib/ or compat/ includes a header that lives in drivers/;
  * compat/rdmacm (the drop-in librdmacm) includes no header of lib/verbs
    (but the public dpverbs.h) or lib/port: it is a client of the public
    verbs API, like an application (lib/cm and lib/cmrt, the CM on the
    public verbs API, it may use);
  * lib/verbs (the façade) includes no header of lib/port (it needs no ports:
    the null driver runs without them);
  * lib/wire, lib/conf and lib/port include no header of lib/verbs;
  * lib/wire includes no other layer's header;
  * lib/nl (the rtnetlink client) includes no other layer's header: libc
    and the kernel's UAPI only, and no other layer's header includes its
    private one;
  * lib/cm (the CM MAD codec) includes no other layer's header, and no
    other lib/ layer includes lib/cm's but lib/cmrt and lib/daemon (in
    shared mode the daemon owns QP 1: it reads the CM MADs it hands out
    and answers those nobody claims, doc/shared-mode.md);
  * lib/cmrt (the CM runtime) includes lib/cm's headers, the public
    dpverbs.h and <infiniband/verbs.h> only: no header of lib/verbs (but
    dpverbs.h), lib/port, lib/conf, lib/wire, lib/shm or lib/daemon;
  * a driver includes no header of another driver.
Calls (built static libraries, with --lib/--drv): no symbol that a lib/
archive leaves undefined is defined by a driver archive (lib reaches a
driver only through its ops table).

usage: check_layers.py TOPDIR [--lib A.a ...] [--drv B.a ...]
Prints one line per violation and "N checks, N violations"; exit 1 on any.
"""
import os
import re
import subprocess
import sys

INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def headers_under(top, sub):
    out = {}
    for root, _, files in os.walk(os.path.join(top, sub)):
        for f in files:
            if f.endswith('.h'):
                out[f] = os.path.relpath(os.path.join(root, f), top)
    return out


def sources_under(top, sub):
    for root, _, files in os.walk(os.path.join(top, sub)):
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                yield os.path.relpath(os.path.join(root, f), top)


def includes(top, rel):
    with open(os.path.join(top, rel), encoding='utf-8') as fh:
        for n, line in enumerate(fh, 1):
            m = INC.match(line)
            if m:
                yield n, os.path.basename(m.group(1))


def check_includes(top):
    drv_hdr = headers_under(top, 'drivers')
    layer_hdr = {d: headers_under(top, 'lib/' + d)
                 for d in ('wire', 'nl', 'conf', 'port', 'verbs', 'cm', 'shm', 'daemon', 'cmrt')}
    not_cm = dict(layer_hdr['verbs'], **layer_hdr['port'], **layer_hdr['conf'], **layer_hdr['wire'])
    rules = [  # (directory, forbidden header set, why)
        ('lib', drv_hdr, 'a driver header'),
        ('compat', drv_hdr, 'a driver header'),
        ('compat/rdmacm', {k: v for k, v in dict(layer_hdr['verbs'], **layer_hdr['port']).items()
                           if k != 'dpverbs.h'},
         'a header of the façade or the port layer (librdmacm uses the public verbs API only)'),
        ('lib/verbs', layer_hdr['port'], 'a port-layer header (the façade needs no ports)'),
        ('lib/port', layer_hdr['verbs'], 'a verbs-façade header'),
        ('lib/conf', dict(layer_hdr['verbs'], **layer_hdr['port']), 'a header of an upper layer'),
        ('lib/wire', dict(layer_hdr['verbs'], **layer_hdr['port'], **layer_hdr['conf'],
                          **layer_hdr['cm'], **layer_hdr['nl']), 'a header of another layer'),
        ('lib/nl', {k: v for d, h in layer_hdr.items() if d != 'nl' for k, v in h.items()},
         'a header of another layer (lib/nl is libc and the kernel\'s UAPI only)'),
        ('lib/cm', dict(not_cm, **layer_hdr['cmrt']), 'a header of another layer (lib/cm is libc only)'),
        ('lib/cmrt', {k: v for k, v in dict(not_cm, **layer_hdr['shm'], **layer_hdr['daemon']).items()
                      if k != 'dpverbs.h'},
         'a header other than lib/cm\'s and the public dpverbs.h (the CM runtime uses the public verbs API)'),
    ]
    for d in ('verbs', 'port', 'conf', 'shm'):
        rules.append(('lib/' + d, dict(layer_hdr['cm'], **layer_hdr['cmrt']), 'a lib/cm or lib/cmrt header'))
    rules.append(('lib/daemon', layer_hdr['cmrt'], 'a lib/cmrt header (the daemon uses lib/cm directly)'))
    nl_priv = {k: v for k, v in layer_hdr['nl'].items() if k != 'dpv_nl.h'}
    for d in [d for d in layer_hdr if d != 'nl'] + ['compat']:
        rules.append((d if d == 'compat' else 'lib/' + d, nl_priv,
                      "lib/nl's private header (use dpv_nl.h)"))
    for d in sorted(os.listdir(os.path.join(top, 'drivers'))):
        if os.path.isdir(os.path.join(top, 'drivers', d)):
            others = {k: v for k, v in drv_hdr.items() if not v.startswith('drivers/%s/' % d)}
            rules.append(('drivers/' + d, others, "another driver's header"))
    checks, bad = 0, []
    for sub, forbidden, why in rules:
        for rel in sources_under(top, sub):
            for n, h in includes(top, rel):
                checks += 1
                if h in forbidden and forbidden[h] != rel:
                    bad.append('%s:%d includes %s: %s' % (rel, n, forbidden[h], why))
    return checks, bad


def nm(path, defined):
    args = ['nm', '--defined-only' if defined else '--undefined-only', '-P', path]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and (not defined or parts[1] in 'TDBRVW'):
            syms.add(parts[0])
    return syms


def check_calls(libs, drvs):
    if not libs or not drvs:
        return 0, []
    drv_def = {}
    for d in drvs:
        for s in nm(d, True):
            drv_def[s] = os.path.basename(d)
    bad = []
    checks = 0
    for lib in libs:
        for s in sorted(nm(lib, False)):
            checks += 1
            if s in drv_def:
                bad.append('%s calls %s of %s: lib may reach a driver only through its ops'
                           % (os.path.basename(lib), s, drv_def[s]))
    return checks, bad


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    top = args.pop(0)
    libs, drvs, cur = [], [], None
    for a in args:
        if a in ('--lib', '--drv'):
            cur = libs if a == '--lib' else drvs
        elif cur is not None:
            cur.append(a)
    c1, b1 = check_includes(top)
    c2, b2 = check_calls(libs, drvs)
    for b in b1 + b2:
        print('FAIL', b)
    print('%d checks, %d violations' % (c1 + c2, len(b1) + len(b2)))
    return 1 if b1 + b2 else 0


if __name__ == '__main__':
    sys.exit(main())
