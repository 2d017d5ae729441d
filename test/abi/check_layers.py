#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The include and call direction between the layers: lib <- drivers, and
lib <- the daemon (an application of the library).

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
  * lib/cm (the CM MAD codec and state machine) includes no other layer's
    header;
  * one CM runtime: lib/cmrt is the only host of lib/cm's agent, so among
    lib/, drivers/ and apps/ only lib/cmrt includes lib/cm's headers, with
    one exception: dpverbsd's QP 1 demultiplexer (a file named
    dpvd_gsi.c) may include the MAD codec dpv_cm_mad.h, and nothing else of
    lib/cm, to read the headers of the MADs it routes (doc/shared-mode.md);
  * a driver includes no lib/cm header (driver -> lib/cm is forbidden) and
    of lib/cmrt only dpv_cmrt_answer.h (the stateless answerer a driver
    uses on QP 1 when no GSI QP exists);
  * dpverbsd (apps/dpverbsd; and the rest of apps/) includes of lib/cmrt only
    dpv_cmrt_xport.h (the runtime on its own transport) and
    dpv_cmrt_answer.h, not dpv_cmrt.h (the GSI-QP runtime, which exposes
    lib/cm's types);
  * dpv_cmrt_xport.h and dpv_cmrt_answer.h include no lib/cm header: they
    expose no lib/cm type to those users;
  * lib/cmrt (the CM runtime) includes lib/cm's headers, the public
    dpverbs.h and <infiniband/verbs.h> only: no header of lib/verbs (but
    dpverbs.h), lib/port, lib/conf, lib/wire, lib/shm or apps/dpverbsd;
  * apps/dpverbsd (the daemon of shared mode) is an application of the
    library: of lib/verbs it includes the engine host's API dpv_host.h and
    the public dpverbs.h only (not the façade's internals dpv_verbs.h, nor
    dpv_driver.h, dpv_obj.h, ...), and no header of lib/port;
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
    if os.path.isfile(os.path.join(top, sub)):
        yield sub
        return
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
                 for d in ('wire', 'nl', 'conf', 'port', 'verbs', 'cm', 'shm', 'cmrt')}
    daemon_hdr = headers_under(top, 'apps/dpverbsd')
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
        ('lib/cmrt', {k: v for k, v in dict(not_cm, **layer_hdr['shm'], **daemon_hdr).items()
                      if k != 'dpverbs.h'},
         'a header other than lib/cm\'s and the public dpverbs.h (the CM runtime uses the public verbs API)'),
    ]
    for d in ('verbs', 'port', 'conf', 'shm'):
        rules.append(('lib/' + d, dict(layer_hdr['cm'], **layer_hdr['cmrt']), 'a lib/cm or lib/cmrt header'))
    # one CM runtime: lib/cm's headers only in lib/cm and lib/cmrt (and the
    # demultiplexer's MAD codec exception)
    cm_users = ('lib/cm/', 'lib/cmrt/')
    for sub in ('lib', 'apps'):
        rules.append((sub, layer_hdr['cm'],
                      'a lib/cm header outside lib/cmrt (lib/cmrt is the only host of the CM agent)',
                      cm_users, {('dpvd_gsi.c', 'dpv_cm_mad.h')}))
    rules.append(('drivers', layer_hdr['cm'], 'a lib/cm header: driver -> lib/cm is forbidden'))
    rules.append(('drivers', {k: v for k, v in layer_hdr['cmrt'].items() if k != 'dpv_cmrt_answer.h'},
                  'a lib/cmrt header other than dpv_cmrt_answer.h (a driver uses the stateless answerer only)'))
    rules.append(('apps', {k: v for k, v in layer_hdr['cmrt'].items()
                           if k not in ('dpv_cmrt_xport.h', 'dpv_cmrt_answer.h')},
                  'a lib/cmrt header other than dpv_cmrt_xport.h and dpv_cmrt_answer.h '
                  '(dpverbsd runs the runtime on its own transport)'))
    # the daemon only through the library's API: the engine host's header
    # and the public one (the façade's checks it needs are declared there)
    rules.append(('apps/dpverbsd', {k: v for k, v in dict(layer_hdr['verbs'], **layer_hdr['port']).items()
                                    if k not in ('dpv_host.h', 'dpverbs.h')},
                  'a header of the façade or the port layer (the daemon uses the library through '
                  'dpv_host.h and dpverbs.h)'))
    for h in ('dpv_cmrt_xport.h', 'dpv_cmrt_answer.h'):
        if h in layer_hdr['cmrt']:
            rules.append((layer_hdr['cmrt'][h], layer_hdr['cm'],
                          'a lib/cm header (this header exposes no lib/cm type)'))
    nl_priv = {k: v for k, v in layer_hdr['nl'].items() if k != 'dpv_nl.h'}
    for d in [d for d in layer_hdr if d != 'nl'] + ['compat', 'apps/dpverbsd']:
        rules.append((d if '/' in d or d == 'compat' else 'lib/' + d, nl_priv,
                      "lib/nl's private header (use dpv_nl.h)"))
    for d in sorted(os.listdir(os.path.join(top, 'drivers'))):
        if os.path.isdir(os.path.join(top, 'drivers', d)):
            others = {k: v for k, v in drv_hdr.items() if not v.startswith('drivers/%s/' % d)}
            rules.append(('drivers/' + d, others, "another driver's header"))
    checks, bad = 0, []
    for rule in rules:  # (where, forbidden, why[, exempt folders[, allowed (file, header)]])
        sub, forbidden, why = rule[:3]
        exempt = rule[3] if len(rule) > 3 else ()
        allowed = rule[4] if len(rule) > 4 else set()
        for rel in sources_under(top, sub):
            if exempt and rel.startswith(exempt):
                continue
            for n, h in includes(top, rel):
                checks += 1
                if (h in forbidden and forbidden[h] != rel and
                        (os.path.basename(rel), h) not in allowed):
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
