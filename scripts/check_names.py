#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_names.py: every global symbol of the project's libraries carries
the prefix of the folder that defines it (doc/architecture.md, "Names").

usage: check_names.py SRCDIR BUILDDIR

Reads the defined global symbols of each static library in BUILDDIR (nm)
and checks them against RULES: a library's own names start with one of its
prefixes; the public names of rdma-core's API (every name the version
scripts compat/libibverbs.map and compat/rdmacm/librdmacm.map list) may be
defined only where that API is implemented. Prints each name that breaks
the rule with its library; exit 1 if any, 2 if a library is missing.
"""
import os
import re
import subprocess
import sys

# static library (relative to BUILDDIR) -> (prefixes, may define public API)
RULES = {
    'lib/wire/libdpv_wire.a': (('dpv_',), False),
    'lib/cm/libdpv_cm.a': (('dpv_', 'cm_'), False),
    'lib/cmrt/libdpv_cmrt.a': (('dpv_',), False),
    'lib/cmrt/libdpv_cmrt_core.a': (('dpv_',), False),
    'lib/conf/libdpv_conf.a': (('dpv_', 'conf_'), False),
    'lib/nl/libdpv_nl.a': (('dpv_', 'dnl_'), False),
    'lib/port/libdpv_port.a': (('dpv_',), False),
    'lib/shm/libdpv_shm.a': (('dpv_',), False),
    'lib/verbs/libdpv_verbs.a': (('dpv_',), True),
    'apps/dpverbsd/libdpv_daemon.a': (('dpvd_',), False),
    'drivers/sw/libdpv_sw.a': (('sw_',), False),
    'drivers/null/libdpv_null.a': (('null_',), False),
    'drivers/remote/libdpv_remote.a': (('rm_',), False),
    'compat/libdpv_compat.a': (('dpv_',), True),
    'compat/rdmacm/libdpv_rdmacm.a': (('dpv_rdmacm_', 'dpv_'), True),
}
MAPS = ('compat/libibverbs.map', 'compat/rdmacm/librdmacm.map')


def public_names(src):
    names = set()
    for m in MAPS:
        with open(os.path.join(src, m), encoding='utf-8') as f:
            text = re.sub(r'/\*.*?\*/', '', f.read(), flags=re.S)
        for tok in re.findall(r'^\s*([A-Za-z_][A-Za-z0-9_]*)\s*;', text, flags=re.M):
            names.add(tok)
    return names


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    src, build = sys.argv[1], sys.argv[2]
    public = public_names(src)
    bad, checked = [], 0
    for lib, (prefixes, api) in sorted(RULES.items()):
        path = os.path.join(build, lib)
        if not os.path.exists(path):
            print(f'{lib}: not built')
            return 2
        out = subprocess.run(['nm', '-g', '--defined-only', path], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) != 3:
                continue
            name = parts[2]
            checked += 1
            if name.startswith(prefixes) or (api and name in public):
                continue
            why = 'a public name of the API outside its implementation' if name in public else \
                f'not {"/".join(p + "*" for p in prefixes)}'
            bad.append(f'{lib}: {name}: {why}')
    for b in bad:
        print(b)
    print(f'{len(RULES)} libraries, {checked} global names checked, {len(bad)} wrong')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
