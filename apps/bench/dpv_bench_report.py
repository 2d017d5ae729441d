#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpv_bench_report.py: the report of a dpv_bench.sh run.

usage: dpv_bench_report.py --dir DIR [--build BUILD] [--progress MODE]
                           [--quick] [--no-plots] [--ports-only]

Reads DIR/raw (baseline.json from dpv_baseline, loop_*.json and
memif_*.json from dpv_perf --json, pt_*.txt: perftest's result lines;
with dpv_bench.sh --shared also sh_*.json, pt_sh_*.txt and cacheline_*.json;
with the section "ports" DIR/raw/ports: runs.tsv, perftest's result lines,
udp_pingpong's JSON, the cache line, meta.json; --ports-only: that section
ran alone) and writes into DIR:
  results.json   meta (machine, build, commit, mode), the baseline, every
                 run as its tool wrote it, the summary and the size sweep;
                 with --shared runs, shared_vs_embedded[]; with the section
                 "ports", ports{} (rows, targets, every run, failures)
  results.csv    the summary: section, metric, dpverbs, unit, baseline,
                 baseline_value, ratio (dpverbs / baseline), better; with
                 --shared runs also the section "shared mode vs embedded
                 mode" (dpverbs = the shared figure, baseline = its embedded
                 counterpart) and the columns buffer, cacheline_embedded_ns,
                 cacheline_shared_ns; with the section "ports" its rows and
                 targets and the columns transport, min, max, runs,
                 ratio_min, ratio_max, cacheline_ns, met
  summary.txt    the table printed on stdout
  latency_cdf.png, sweep.png   gnuplot plots (their .dat and .gp files too)
Exit status 1 if a run is missing or did not pass its checks.
"""
import argparse
import csv
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

GBIT = 1e9


def load(path):
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def row0(run):
    """the first row of a dpv_perf run, or {}"""
    if not run or not run.get('rows'):
        return {}
    return run['rows'][0]


def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def memcpy_gbit(base, size):
    for r in get(base, 'memcpy', 'rows') or []:
        if r.get('size') == size:
            return r.get('gbit_per_s')
    return None


def perftest(raw, name):
    """perftest's result line: the numbers, or None"""
    try:
        with open(os.path.join(raw, 'pt_%s.txt' % name), encoding='utf-8') as f:
            line = f.read().split()
        return [float(x) for x in line] if line else None
    except (OSError, ValueError):
        return None


class Summary:
    def __init__(self):
        self.rows = []

    def add(self, section, metric, value, unit, base_name, base, better):
        ratio = None
        if value is not None and base:
            ratio = value / base
        self.rows.append({'section': section, 'metric': metric, 'dpverbs': value, 'unit': unit,
                          'baseline': base_name, 'baseline_value': base, 'ratio': ratio,
                          'better': better})


def add_perf_rows(s, runs, base, prefix, section, cl_near=None):
    """the dpv_perf figures of one mode (loop_ or memif_) next to their baselines;
    cl_near: the cache-line figures measured just before this part, if any"""
    def r(name):
        return row0(runs.get(prefix + name))
    udp_rate = get(base, 'udp_bw', 'msg_per_s')
    udp_p50 = get(base, 'udp_lat', 'one_way_us', 'p50')
    udp_p99 = get(base, 'udp_lat', 'one_way_us', 'p99')
    tcp = get(base, 'tcp_bw', 'gbit_per_s')
    cl = get(cl_near or base, 'cacheline', 'one_way_ns_p50')
    s.add(section, 'UD SEND 64 B rate (post list 16, 1 in 16 signalled)', r('ud_send_bw_64').get('msg_per_s'),
          'msg/s', 'kernel UDP stream 64 B', udp_rate, 'higher')
    s.add(section, 'UD SEND 64 B rate, thread domain (post list 16, 1 in 16 signalled)',
          r('ud_send_bw_64_td').get('msg_per_s'), 'msg/s', 'kernel UDP stream 64 B', udp_rate, 'higher')
    s.add(section, 'RC WRITE 64 B rate (post list 16)', r('rc_write_bw_64').get('msg_per_s'), 'msg/s',
          'kernel UDP stream 64 B', udp_rate, 'higher')
    big = r('rc_write_bw_64k').get('gbit_per_s')
    s.add(section, 'RC WRITE 64 KiB bandwidth', big, 'Gb/s', 'memcpy 64 KiB, one core',
          memcpy_gbit(base, 65536), 'higher')
    s.add(section, 'RC WRITE 64 KiB bandwidth', big, 'Gb/s', 'memcpy 64 MiB (from DRAM), one core',
          memcpy_gbit(base, 64 << 20), 'higher')
    s.add(section, 'RC WRITE 64 KiB bandwidth', big, 'Gb/s', 'kernel TCP stream', tcp, 'higher')
    lat = r('rc_send_lat_64').get('one_way_us') or {}
    s.add(section, 'RC SEND 64 B latency p50 (one-way)', lat.get('p50'), 'us',
          'kernel UDP ping-pong p50 (one-way)', udp_p50, 'lower')
    s.add(section, 'RC SEND 64 B latency p99 (one-way)', lat.get('p99'), 'us',
          'kernel UDP ping-pong p99 (one-way)', udp_p99, 'lower')
    s.add(section, 'RC SEND 64 B latency p50 (one-way)', lat.get('p50'), 'us',
          'cache line between 2 CPUs, one way p50', cl / 1000 if cl else None, 'lower')
    ud = r('ud_send_lat_64').get('one_way_us') or {}
    s.add(section, 'UD SEND 64 B latency p50 (one-way)', ud.get('p50'), 'us',
          'kernel UDP ping-pong p50 (one-way)', udp_p50, 'lower')
    s.add(section, 'UD SEND 64 B latency p50 (one-way)', ud.get('p50'), 'us',
          'cache line between 2 CPUs, one way p50', cl / 1000 if cl else None, 'lower')
    q1, q1024 = runs.get(prefix + 'rc_write_bw_64_q1'), runs.get(prefix + 'rc_write_bw_64_q1024')
    s.add(section, 'RC WRITE 64 B rate, 1024 QPs', row0(q1024).get('msg_per_s'), 'msg/s',
          'the same over 1 QP', row0(q1).get('msg_per_s'), 'higher')
    s.add(section, 'QP creation, 1024 QPs per side (ibv_create_qp + INIT)', get(q1024, 'setup', 'qp_create_per_s'),
          'QP/s', '-', None, 'higher')
    per_qp = get(q1024, 'setup', 'bytes_per_qp')
    s.add(section, 'memory per QP (RSS + hugepages), 1024 QPs per side', per_qp / 1024 if per_qp else None,
          'KiB', '-', None, 'lower')


def add_perftest_rows(s, raw, base, cl_near=None):
    sec = 'perftest on the drop-in, memif, 2 processes'
    lat = perftest(raw, 'ib_send_lat')   # bytes iters min max typical avg stdev p99 p99.9
    bw = perftest(raw, 'ib_send_bw')     # bytes iters peak[MB/s] avg[MB/s] rate[Mpps]
    wr = perftest(raw, 'ib_write_bw')
    if lat:
        s.add(sec, 'ib_send_lat 64 B typical (one-way)', lat[4], 'us', 'kernel UDP ping-pong p50 (one-way)',
              get(base, 'udp_lat', 'one_way_us', 'p50'), 'lower')
        if len(lat) > 7:
            s.add(sec, 'ib_send_lat 64 B p99 (one-way)', lat[7], 'us', 'kernel UDP ping-pong p99 (one-way)',
                  get(base, 'udp_lat', 'one_way_us', 'p99'), 'lower')
    if bw and len(bw) > 4:
        s.add(sec, 'ib_send_bw -s 64 message rate', bw[4] * 1e6, 'msg/s', 'kernel UDP stream 64 B',
              get(base, 'udp_bw', 'msg_per_s'), 'higher')
    if wr and len(wr) > 3:
        s.add(sec, 'ib_write_bw -s 65536 bandwidth', wr[3] * 1e6 * 8 / GBIT, 'Gb/s', 'memcpy 64 KiB, one core',
              memcpy_gbit(base, 65536), 'higher')
        s.add(sec, 'ib_write_bw -s 65536 bandwidth', wr[3] * 1e6 * 8 / GBIT, 'Gb/s', 'kernel TCP stream',
              get(base, 'tcp_bw', 'gbit_per_s'), 'higher')
    if lat:
        cl = get(cl_near or base, 'cacheline', 'one_way_ns_p50')
        s.add(sec, 'ib_send_lat 64 B typical (one-way)', lat[4], 'us', 'cache line between 2 CPUs, one way p50',
              cl / 1000 if cl else None, 'lower')


SHARED_SECTION = 'shared mode vs embedded mode'
# where each setup of the --shared part runs (dpv_bench.sh run_shared)
SHARED_SETUPS = {
    'emb_inline': ('inline, 1 core', 'embedded, inline progress: application and engine on CPU 0 (one core)'),
    'emb_lcore': ('lcore, 2 cores', 'embedded, lcore progress (config/loopback-lcore.json): application on '
                  'CPU 0, engine on CPU 1'),
    'shared': ('dpverbsd', 'shared mode, one application process on CPU 0, dpverbsd\'s engine on an lcore on CPU 1'),
    'memif': ('memif, 2 procs', 'embedded, two processes over net_memif, inline progress, server on CPU 0, '
              'client on CPU 1 (two spinning threads, each on its own CPU)'),
    'shared2': ('dpverbsd, 2 procs', 'shared mode, two application processes both on CPU 0, dpverbsd\'s engine '
                'on an lcore on CPU 1 (three spinning threads on two CPUs)'),
}


def cl_ns(raw, part):
    return get(load(os.path.join(raw, 'cacheline_%s.json' % part)), 'cacheline', 'one_way_ns_p50')


def shared_rows(raw, runs):
    """the --shared part: every shared figure next to its embedded counterpart
    (ratio = shared / embedded), with the buffer kind and the cache-line one-way
    p50 measured just before each side; [] when the part did not run"""
    if not any(k.startswith('sh_') for k in runs):
        return []
    cl = {'emb': cl_ns(raw, 'sh_embedded'), 'memif': cl_ns(raw, 'sh_memif'), 'shared': cl_ns(raw, 'shared')}
    out = []

    def add(metric, buf, emb_setup, emb, sh_setup, sh, unit, better, cl_emb):
        ratio = sh / emb if sh is not None and emb else None
        out.append({'section': SHARED_SECTION, 'metric': metric, 'buffer': buf,
                    'embedded_setup': SHARED_SETUPS[emb_setup][1], 'embedded_short': SHARED_SETUPS[emb_setup][0],
                    'embedded': emb, 'shared_setup': SHARED_SETUPS[sh_setup][1],
                    'shared_short': SHARED_SETUPS[sh_setup][0], 'shared': sh, 'unit': unit, 'ratio': ratio,
                    'better': better, 'cacheline_embedded_ns': cl_emb, 'cacheline_shared_ns': cl['shared']})

    def lat(name, q):
        return (row0(runs.get(name)).get('one_way_us') or {}).get(q)

    one = (('RC SEND 64 B latency p50 (one-way)', 'rc_send_lat_64', lambda n: lat(n, 'p50'), 'us', 'lower'),
           ('RC SEND 64 B latency p99 (one-way)', 'rc_send_lat_64', lambda n: lat(n, 'p99'), 'us', 'lower'),
           ('RC SEND 64 B rate (post list 16)', 'rc_send_bw_64', lambda n: row0(runs.get(n)).get('msg_per_s'),
            'msg/s', 'higher'),
           ('RC WRITE 64 KiB bandwidth', 'rc_write_bw_64k', lambda n: row0(runs.get(n)).get('gbit_per_s'),
            'Gb/s', 'higher'))
    for metric, test, val, unit, better in one:
        for buf in ('heap', 'hugepage'):
            sh = val('sh_shared_%s_%s' % (test, buf))
            for setup in ('emb_inline', 'emb_lcore'):
                add(metric + ', one process', buf, setup, val('sh_%s_%s_%s' % (setup, test, buf)), 'shared', sh,
                    unit, better, cl['emb'])
    two = (('RC SEND 64 B latency p50 (one-way)', 'rc_send_lat_64', lambda n: lat(n, 'p50'), 'us', 'lower'),
           ('RC SEND 64 B latency p99 (one-way)', 'rc_send_lat_64', lambda n: lat(n, 'p99'), 'us', 'lower'),
           ('RC SEND 64 B rate (post list 16)', 'rc_send_bw_64', lambda n: row0(runs.get(n)).get('msg_per_s'),
            'msg/s', 'higher'))
    for metric, test, val, unit, better in two:
        add('dpv_perf ' + metric + ', 2 processes', 'heap', 'memif', val('sh_memif_' + test), 'shared2',
            val('sh_shared2_' + test), unit, better, cl['memif'])
    pts = {k: (perftest(raw, 'sh_memif_' + k), perftest(raw, 'sh_shared_' + k))
           for k in ('ib_send_lat', 'ib_send_bw', 'ib_write_bw')}

    def pt(name, idx, scale=1.0):
        return tuple(v[idx] * scale if v and len(v) > idx else None for v in pts[name])

    for metric, name, idx, scale, unit, better in (
            ('perftest ib_send_lat 64 B typical (one-way)', 'ib_send_lat', 4, 1.0, 'us', 'lower'),
            ('perftest ib_send_lat 64 B p99 (one-way)', 'ib_send_lat', 7, 1.0, 'us', 'lower'),
            ('perftest ib_send_bw -s 64 message rate', 'ib_send_bw', 4, 1e6, 'msg/s', 'higher'),
            ('perftest ib_write_bw -s 65536 bandwidth', 'ib_write_bw', 3, 1e6 * 8 / GBIT, 'Gb/s', 'higher')):
        if any(os.path.exists(os.path.join(raw, 'pt_sh_%s_%s.txt' % (m, name))) for m in ('memif', 'shared')):
            e, sh = pt(name, idx, scale)
            add(metric + ', 2 processes', 'heap', 'memif', e, 'shared2', sh, unit, better, cl['memif'])
    return out


def shared_failed(raw):
    """perftest runs of the --shared part that ran (their file exists) but left no result line"""
    return [f[:-4] for f in sorted(os.listdir(raw))
            if f.startswith('pt_sh_') and f.endswith('.txt') and perftest(raw, f[3:-4]) is None]


def shared_loadavg(raw):
    """the 1-minute load average at the start and at the end of the --shared part"""
    out = {}
    for k in ('start', 'end'):
        try:
            with open(os.path.join(raw, 'sh_loadavg_%s.txt' % k), encoding='utf-8') as f:
                out[k] = float(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            out[k] = None
    return out


def cacheline_moved(rows):
    """(lowest, highest) cache-line one-way p50 of the part when they differ by more than 2x, else None"""
    v = [x for r in rows for x in (r['cacheline_embedded_ns'], r['cacheline_shared_ns']) if x]
    if v and max(v) > 2 * min(v):
        return min(v), max(v)
    return None


def shared_table(rows, load):
    lines = ['', '== ' + SHARED_SECTION,
             'ratio = shared / embedded ("better": which way is better); cl ns: the cache line between CPU 0 and',
             'CPU 1, one way p50, measured just before the embedded runs / before the daemon started; load average',
             '(1 min) %s at the start of the part, %s at its end. Setups:' % (
                 fmt(load.get('start')), fmt(load.get('end')))]
    seen = []
    for r in rows:
        for k in ('embedded', 'shared'):
            if (r[k + '_short'], r[k + '_setup']) not in seen:
                seen.append((r[k + '_short'], r[k + '_setup']))
    lines += ['  %-18s %s' % kv for kv in seen]
    moved = cacheline_moved(rows)
    if moved:
        lines += ['note: the cache line between CPU 0 and CPU 1 took %.0f ns one way in one measurement of this part'
                  % moved[0], 'and %.0f ns in another (the vCPUs were placed differently): figures that cross the two '
                  'CPUs' % moved[1], '(lcore, memif, dpverbsd) are not comparable across that move; run again.']
    w = [max(len(r['metric']) for r in rows), 8, 18, 11, 11, 6, 7]
    head = ('metric', 'buffer', 'embedded', 'value', 'shared', 'unit', 'ratio')
    lines.append('  '.join(h.ljust(w[i]) if i in (0, 1, 2, 5) else h.rjust(w[i]) for i, h in enumerate(head))
                 + '  cl ns (emb/shared)')
    for r in rows:
        cells = (r['metric'], r['buffer'], r['embedded_short'], fmt(r['embedded']), fmt(r['shared']), r['unit'],
                 '-' if r['ratio'] is None else '%.3f' % r['ratio'])
        cln = '%s/%s' % tuple('-' if v is None else '%.0f' % v for v in (r['cacheline_embedded_ns'],
                                                                        r['cacheline_shared_ns']))
        lines.append('  '.join(c.ljust(w[i]) if i in (0, 1, 2, 5) else c.rjust(w[i]) for i, c in enumerate(cells))
                     + '  %-9s' % cln + ('  (%s is better)' % r['better'] if r['ratio'] is not None else ''))
    return '\n'.join(lines) + '\n'


# ---- the section "ports" (dpv_bench.sh run_ports): memif vs AF_XDP vs af_packet ----

PORTS_SECTION = 'ports: memif vs AF_XDP vs af_packet over one veth'
PT_TRANSPORTS = ('memif', 'af_xdp', 'af_packet')
PT_LABEL = {'memif': 'memif', 'af_xdp': 'AF_XDP', 'af_packet': 'af_packet', 'kernel': 'kernel'}
MIB = float(1 << 20)
CL_NEAR_NS = 100   # a cache line one way below this: the two vCPUs are near (same core complex)


def cl_verdict(values):
    """'near', 'far' or 'moved' for cache-line one-way figures (None ignored)"""
    far = [x for x in values if x and x >= CL_NEAR_NS]
    near = [x for x in values if x and x < CL_NEAR_NS]
    return 'moved' if far and near else 'far' if far else 'near'


# the dpverbs figures: key, label, unit, better, cache-line group (measured before that group)
PT_FIGURES = (
    ('lat_p50', 'ib_send_lat 64 B p50 (typical), one-way', 'us', 'lower', 'lat'),
    ('lat_p99', 'ib_send_lat 64 B p99, one-way', 'us', 'lower', 'lat'),
    ('msg_rate', 'ib_send_bw -s 64 message rate', 'Mmsg/s', 'higher', 'bw'),
    ('write_bw', 'ib_write_bw -s 65536 BW average', 'MiB/s', 'higher', 'big'),
)
# the kernel's over the same veth (udp_pingpong)
PT_KERNEL = (
    ('udp_lat_blocking_p50', 'UDP ping-pong 64 B one-way p50, blocking', 'us', 'lower', 'lat'),
    ('udp_lat_blocking_p99', 'UDP ping-pong 64 B one-way p99, blocking', 'us', 'lower', 'lat'),
    ('udp_lat_busy_p50', 'UDP ping-pong 64 B one-way p50, busy poll', 'us', 'lower', 'lat'),
    ('udp_lat_busy_p99', 'UDP ping-pong 64 B one-way p99, busy poll', 'us', 'lower', 'lat'),
    ('udp_bw', 'UDP stream 64 B message rate', 'Mmsg/s', 'higher', 'bw'),
    ('tcp_bw', 'TCP stream, 64 KiB writes', 'MiB/s', 'higher', 'big'),
)
# each dpverbs figure -> its kernel baselines
PT_BASE = {'lat_p50': ('udp_lat_blocking_p50', 'udp_lat_busy_p50'),
           'lat_p99': ('udp_lat_blocking_p99', 'udp_lat_busy_p99'),
           'msg_rate': ('udp_bw',), 'write_bw': ('tcp_bw',)}
PT_PAIRS = (('af_xdp', 'memif'), ('af_xdp', 'af_packet'), ('memif', 'af_packet'))
# the project's targets: text, numerator, denominator, relation, bound
PT_TARGETS = (
    ('AF_XDP ib_send_lat p50 / kernel UDP ping-pong p50, blocking', ('af_xdp', 'lat_p50'),
     ('kernel', 'udp_lat_blocking_p50'), '<=', 1.0),
    ('AF_XDP ib_send_lat p50 / kernel UDP ping-pong p50, busy poll', ('af_xdp', 'lat_p50'),
     ('kernel', 'udp_lat_busy_p50'), '<=', 1.0),
    ('AF_XDP ib_send_bw msg rate / af_packet msg rate', ('af_xdp', 'msg_rate'), ('af_packet', 'msg_rate'),
     '>=', 3.0),
)


def median(v):
    v = sorted(v)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def read_text(path):
    try:
        with open(path, encoding='utf-8') as f:
            return f.read().strip()
    except OSError:
        return None


def pt_line(d, name):
    """perftest's result line of run NAME: the numbers, or None"""
    try:
        return [float(x) for x in (read_text(os.path.join(d, name + '.txt')) or '').split()] or None
    except ValueError:
        return None


def pt_steal(d):
    """CPU steal time over the section, percent of all CPU time (None if unknown)"""
    try:
        a, b = ([int(x) for x in read_text(os.path.join(d, 'stat_%s.txt' % k)).split()[1:]] for k in ('start', 'end'))
    except (AttributeError, ValueError):
        return None
    total = sum(b) - sum(a)
    return 100.0 * (b[7] - a[7]) / total if total > 0 and len(a) > 7 else None


def pt_values(d, runs):
    """{(transport, key): {round: value}} from the runs that passed, and the
    names of runs that passed without a figure"""
    vals, missing = {}, []

    def put(tr, key, r, v):
        if v is not None:
            vals.setdefault((tr, key), {})[r] = v

    def count():
        return sum(len(x) for x in vals.values())

    for run in runs:
        if run['status'] != 'ok':
            continue
        r, tr, test, name = run['round'], run['transport'], run['test'], run['name']
        before = count()
        if tr in PT_TRANSPORTS:
            line = pt_line(d, name) or []
            if test == 'ib_send_lat' and len(line) > 7:
                put(tr, 'lat_p50', r, line[4])
                put(tr, 'lat_p99', r, line[7])
            elif test == 'ib_send_bw' and len(line) > 4:
                put(tr, 'msg_rate', r, line[4])
            elif test == 'ib_write_bw' and len(line) > 3:
                put(tr, 'write_bw', r, line[3])
        elif tr == 'kernel':
            j = load(os.path.join(d, name + '.json'))
            res = get(j, 'results') if get(j, 'status') == 'pass' else None
            if res and test.startswith('udp_lat_'):
                put('kernel', test + '_p50', r, get(res, 'one_way_us', 'p50'))
                put('kernel', test + '_p99', r, get(res, 'one_way_us', 'p99'))
            elif res and test == 'udp_bw' and res.get('msg_per_s'):
                put('kernel', 'udp_bw', r, res['msg_per_s'] / 1e6)
            elif res and test == 'tcp_bw' and res.get('gbit_per_s'):
                put('kernel', 'tcp_bw', r, res['gbit_per_s'] * 1e9 / 8 / MIB)
        if count() == before:
            missing.append(name)
    return vals, missing


def pt_stat(by_round, rounds):
    v = list(by_round.values()) if by_round else []
    return {'median': median(v), 'min': min(v) if v else None, 'max': max(v) if v else None, 'n': len(v),
            'rounds': rounds, 'by_round': {str(k): x for k, x in sorted((by_round or {}).items())}}


def pt_ratio(vals, a, b):
    """ratio of the medians a / b, and the ratios within each round where both passed"""
    va, vb = vals.get(a) or {}, vals.get(b) or {}
    ma, mb = median(list(va.values())), median(list(vb.values()))
    per = [va[r] / vb[r] for r in sorted(va) if r in vb and vb[r]]
    return (ma / mb if ma is not None and mb else None), per


def ports_report(raw):
    """the section "ports": None when it did not run; else a dict with rows
    (for results.csv/json), targets, runs, cache-line figures, failures"""
    d = os.path.join(raw, 'ports')
    if not os.path.isdir(d):
        return None
    skipped = read_text(os.path.join(d, 'skipped.txt'))
    if skipped:
        return {'skipped': skipped, 'rows': [], 'failed': [], 'targets': []}
    meta = load(os.path.join(d, 'meta.json')) or {}
    runs = []
    for line in (read_text(os.path.join(d, 'runs.tsv')) or '').splitlines():
        f = line.split('\t')
        if len(f) >= 8:
            runs.append({'round': int(f[0]), 'transport': f[1], 'test': f[2], 'name': f[3], 'status': f[4],
                         'client_exit': f[5], 'server_exit': f[6], 'seconds': float(f[7] or 0),
                         'reason': f[8] if len(f) > 8 else ''})
    rounds = meta.get('rounds') or max([r['round'] for r in runs] or [0])
    vals, missing = pt_values(d, runs)
    cl = {}
    for r in range(1, rounds + 1):
        for g in ('lat', 'bw', 'big'):
            v = get(load(os.path.join(d, 'r%d_cacheline_%s.json' % (r, g))), 'cacheline', 'one_way_ns_p50')
            if v:
                cl.setdefault(g, {})[r] = v
    rows = []

    def cl_range(group):
        v = list((cl.get(group) or {}).values())
        return (min(v), max(v)) if v else (None, None)

    def add(kind, metric, tr, key, unit, better, group, base=None, base_key=None, base_name='-'):
        st = pt_stat(vals.get(key), rounds)
        row = {'section': PORTS_SECTION, 'kind': kind, 'metric': metric, 'transport': PT_LABEL[tr],
               'dpverbs': st['median'], 'unit': unit, 'min': st['min'], 'max': st['max'],
               'runs': '%d/%d' % (st['n'], rounds), 'baseline': base_name, 'baseline_value': None, 'ratio': None,
               'ratio_min': None, 'ratio_max': None, 'better': better, 'by_round': st['by_round']}
        lo, hi = cl_range(group)
        row['cacheline_ns'] = None if lo is None else ('%.0f' % lo if hi - lo < 1 else '%.0f-%.0f' % (lo, hi))
        if base_key:
            row['baseline_value'] = median(list((vals.get(base_key) or {}).values()))
            row['ratio'], per = pt_ratio(vals, key, base_key)
            if per:
                row['ratio_min'], row['ratio_max'] = min(per), max(per)
        rows.append(row)

    for key, label, unit, better, group in PT_FIGURES:
        for tr in PT_TRANSPORTS:
            add('figure', label, tr, (tr, key), unit, better, group)
    kernel_label = {k: (label, unit, better, group) for k, label, unit, better, group in PT_KERNEL}
    for key, label, unit, better, group in PT_KERNEL:
        add('figure', label, 'kernel', ('kernel', key), unit, better, group)
    for key, label, unit, better, group in PT_FIGURES:
        for tr in PT_TRANSPORTS:
            for bk in PT_BASE[key]:
                add('vs kernel', label, tr, (tr, key), unit, better, group, base_key=('kernel', bk),
                    base_name='kernel ' + kernel_label[bk][0])
    for key, label, unit, better, group in PT_FIGURES:
        for a, b in PT_PAIRS:
            add('vs transport', label, a, (a, key), unit, better, group, base_key=(b, key),
                base_name=PT_LABEL[b] + ', the same figure')
    targets = []
    for text, num, den, rel, bound in PT_TARGETS:
        ratio, per = pt_ratio(vals, num, den)
        ok = (lambda x: x <= bound) if rel == '<=' else (lambda x: x >= bound)
        targets.append({'target': text, 'relation': rel, 'bound': bound,
                        'numerator': median(list((vals.get(num) or {}).values())),
                        'denominator': median(list((vals.get(den) or {}).values())),
                        'unit': dict((k, u) for k, _, u, _, _ in PT_FIGURES + PT_KERNEL)[num[1]],
                        'ratio': ratio, 'met': None if ratio is None else ok(ratio),
                        'rounds_met': sum(1 for x in per if ok(x)), 'rounds_compared': len(per),
                        'ratio_min': min(per) if per else None, 'ratio_max': max(per) if per else None})
    failed = ['ports %s (%s)' % (r['name'], r['status']) for r in runs if r['status'] != 'ok']
    failed += ['ports %s (no result)' % n for n in missing]
    setup = read_text(os.path.join(d, 'setup_failed.txt'))
    if setup:
        failed.append('ports ' + setup)
    left = [x for x in (read_text(os.path.join(d, 'leftovers.txt')) or '').splitlines() if x]
    if left:
        failed.append('ports: left behind: ' + '; '.join(left))
    loads = {}
    for k in ('start', 'end'):
        try:
            loads[k] = float(read_text(os.path.join(d, 'loadavg_%s.txt' % k)).split()[0])
        except (AttributeError, ValueError, IndexError):
            loads[k] = None
    return {'meta': meta, 'rounds': rounds, 'rows': rows, 'targets': targets, 'runs': runs,
            'cacheline_one_way_ns': {g: {str(r): v for r, v in sorted(x.items())} for g, x in cl.items()},
            'loadavg_1min': loads, 'steal_percent': pt_steal(d), 'failed': failed, 'setup_failed': setup,
            'left_behind': left}


def fmt_range(v, lo, hi):
    if v is None:
        return '-'
    if lo is None or hi is None or fmt(lo) == fmt(hi):
        return fmt(v)
    return '%s [%s-%s]' % (fmt(v), fmt(lo), fmt(hi))


def ports_table(p):
    lines = ['', '== ' + PORTS_SECTION]
    if p.get('skipped'):
        return '\n'.join(lines + ['skipped: ' + p['skipped']]) + '\n'
    m = p['meta']
    ns, veth = m.get('namespaces') or ['?', '?'], m.get('veth') or ['?', '?']
    ka, pa = m.get('kernel_addresses') or ['?', '?'], m.get('af_packet_addresses') or ['?', '?']
    lines += ['two network namespaces %s / %s joined by one veth pair %s (%s) <-> %s (%s), one queue each way;'
              % (ns[0], ns[1], veth[0], ka[0], veth[1], ka[1]),
              'servers in the first%s, clients in the second%s; perftest on the drop-in libibverbs.so.1 (-x 1).'
              % ((' on CPU %s' % m['server_cpu'], ' on CPU %s' % m['client_cpu']) if m.get('pinned')
                 else ('', ' (not pinned)')),
              'AF_XDP: the veth ends with the kernel\'s addresses (the TCP exchange goes there too); af_packet: the',
              'same veth ends, dpverbs\' own %s and %s; memif: a socket file, the TCP exchange over the veth.'
              % (pa[0], pa[1]),
              '%d round(s), each: ib_send_lat over memif, AF_XDP, af_packet, kernel UDP ping-pong (blocking, busy);'
              % p['rounds'],
              'ib_send_bw over the three, kernel UDP stream; ib_write_bw over the three, kernel TCP stream.',
              'value: median [min-max] over the runs that passed (n/rounds); MiB/s as perftest\'s "MB/sec" (2^20 B/s).']
    cls = p['cacheline_one_way_ns']
    if cls:
        per = []
        for r in range(1, p['rounds'] + 1):
            v = [cls.get(g, {}).get(str(r)) for g in ('lat', 'bw', 'big')]
            if any(v):
                per.append('round %d %s ns (%s)' % (r, '/'.join('-' if x is None else '%.0f' % x for x in v),
                                                    cl_verdict(v)))
        allv = [x for g in cls.values() for x in g.values()]
        lines.append('cache line CPU 0 <-> CPU 1, one way p50, before the latency/rate/bandwidth runs: '
                     + '; '.join(per))
        verdict = ('near (all below %d ns)' % CL_NEAR_NS if max(allv) < CL_NEAR_NS else
                   'far (all %d ns or more)' % CL_NEAR_NS if min(allv) >= CL_NEAR_NS else
                   'MOVED between near and far during the section: figures of different rounds are not comparable')
        lines.append('  the two vCPUs were ' + verdict)
    la = p['loadavg_1min']
    lines.append('load average (1 min) %s at the start, %s at the end (the section\'s own two busy-polling '
                 'processes count for up to 2); CPU steal %s; the section took %s s' % (
        fmt(la.get('start')), fmt(la.get('end')),
        '-' if p['steal_percent'] is None else '%.1f %%' % p['steal_percent'], m.get('seconds', '-')))
    rows = p['rows']
    w = 44
    lines += ['', '%-*s %-7s %-24s %-24s %-24s %s' % (w, 'figure (n: runs that passed)', 'unit', 'memif', 'AF_XDP',
                                                       'af_packet', 'cl ns')]
    for key, label, unit, _, _ in PT_FIGURES:
        cells = []
        cln = '-'
        for tr in PT_TRANSPORTS:
            r = next(x for x in rows if x['kind'] == 'figure' and x['metric'] == label and
                     x['transport'] == PT_LABEL[tr])
            cells.append('%s %s' % (fmt_range(r['dpverbs'], r['min'], r['max']), r['runs']))
            cln = r['cacheline_ns'] or '-'
        lines.append('%-*s %-7s %-24s %-24s %-24s %s' % (w, label, unit, cells[0], cells[1], cells[2], cln))
    lines += ['', '%-*s %-7s %s' % (w, 'kernel over the same veth (udp_pingpong)', 'unit', 'value')]
    for r in (x for x in rows if x['kind'] == 'figure' and x['transport'] == 'kernel'):
        lines.append('%-*s %-7s %s %s' % (w, r['metric'], r['unit'], fmt_range(r['dpverbs'], r['min'], r['max']),
                                          r['runs']))
    for kind, title in (('vs kernel', 'each dpverbs figure beside its kernel baseline over the same veth'),
                        ('vs transport', 'the transports against each other')):
        lines += ['', title + ': ratio of the medians [range of the ratios within one round]']
        lines.append('%-40s %-9s %9s  %-46s %9s %8s  %s' % ('figure', 'transport', 'value', 'baseline', 'value',
                                                            'ratio', '[per round]'))
        for r in (x for x in rows if x['kind'] == kind):
            per = ('' if r['ratio_min'] is None or p['rounds'] < 2 else
                   '[%.3f-%.3f]' % (r['ratio_min'], r['ratio_max']))
            lines.append(('%-40s %-9s %9s  %-46s %9s %8s  %-15s %s' % (
                r['metric'], r['transport'], fmt(r['dpverbs']), r['baseline'], fmt(r['baseline_value']),
                '-' if r['ratio'] is None else '%.3f' % r['ratio'], per,
                '(%s is better)' % r['better'] if r['ratio'] is not None else '')).rstrip())
    lines += ['', 'targets of the project\'s issue (ratio of the medians; rounds: the ratio within each round):']
    for t in p['targets']:
        if t['ratio'] is None:
            lines.append('  %s: not measured (a run failed): target %s %g: UNKNOWN' % (
                t['target'], t['relation'], t['bound']))
            continue
        lines.append('  %s: %s / %s %s = %.3f%s  target %s %g: %s (%d of %d rounds)' % (
            t['target'], fmt(t['numerator']), fmt(t['denominator']), t['unit'], t['ratio'],
            '' if t['ratio_min'] is None or p['rounds'] < 2 else ' [%.3f-%.3f]' % (t['ratio_min'], t['ratio_max']),
            t['relation'], t['bound'], 'MET' if t['met'] else 'NOT MET', t['rounds_met'], t['rounds_compared']))
    bad = [r for r in p['runs'] if r['status'] != 'ok']
    lines.append('')
    if bad or p['setup_failed']:
        lines.append('failed runs of the section (logs/ports/):')
        if p['setup_failed']:
            lines.append('  ' + p['setup_failed'])
        for r in bad:
            lines.append('  %s: %s (%.0f s): %s' % (r['name'], r['status'], r['seconds'], r['reason']))
    else:
        lines.append('failed runs of the section: none (%d runs)' % len(p['runs']))
    lines.append('left behind: ' + ('; '.join(p['left_behind']) if p['left_behind'] else
                                    'nothing (namespaces, veth, memif socket, EAL runtime directories, hugepage '
                                    'files, processes)'))
    return '\n'.join(lines) + '\n'


def sweep_rows(runs, base, name):
    out = []
    for r in (runs.get(name) or {}).get('rows', []):
        m = memcpy_gbit(base, r['size'])
        g = r.get('gbit_per_s')
        out.append({'size': r['size'], 'gbit_per_s': g, 'msg_per_s': r.get('msg_per_s'),
                    'memcpy_gbit_per_s': m, 'ratio_to_memcpy': g / m if g is not None and m else None,
                    'status': r.get('status')})
    return out


def fmt(v):
    if v is None:
        return '-'
    if abs(v) >= 1000:
        return '%.0f' % v
    if abs(v) >= 10:
        return '%.1f' % v
    return '%.3f' % v


def table(summary, sweep, meta):
    lines = ['dpv_bench %s (%s, progress %s) on %s, %s CPUs, %s' % (
        meta['date'], 'quick' if meta['quick'] else 'full', meta['progress'], meta['host'], meta['cpus'],
        meta['cpu_model'])]
    lines.append('ratio = dpverbs / baseline ("better": which way is better); one machine, one sitting')
    w = [56, 11, 6, 42, 11, 8]
    head = ('metric', 'dpverbs', 'unit', 'baseline', 'value', 'ratio')
    section = None
    for r in summary:
        if r['section'] != section:
            section = r['section']
            lines.append('')
            lines.append('== ' + section)
            lines.append('  '.join(h.ljust(w[i]) if i in (0, 2, 3) else h.rjust(w[i]) for i, h in enumerate(head)))
        ratio = '-' if r['ratio'] is None else '%.3f' % r['ratio']
        cells = (r['metric'], fmt(r['dpverbs']), r['unit'], r['baseline'], fmt(r['baseline_value']), ratio)
        lines.append('  '.join(c.ljust(w[i]) if i in (0, 2, 3) else c.rjust(w[i]) for i, c in enumerate(cells))
                     + ('  (%s is better)' % r['better'] if r['ratio'] is not None else ''))
    for title, rows in sweep.items():
        if not rows:
            continue
        lines.append('')
        lines.append('== size sweep: %s (bandwidth vs memcpy of the same size, one core)' % title)
        lines.append('%10s %12s %12s %12s %8s' % ('size', 'msg/s', 'Gb/s', 'memcpy Gb/s', 'ratio'))
        for r in rows:
            lines.append('%10d %12s %12s %12s %8s' % (r['size'], fmt(r['msg_per_s']), fmt(r['gbit_per_s']),
                                                       fmt(r['memcpy_gbit_per_s']),
                                                       '-' if r['ratio_to_memcpy'] is None
                                                       else '%.3f' % r['ratio_to_memcpy']))
    return '\n'.join(lines) + '\n'


def write_dat(path, points):
    with open(path, 'w', encoding='utf-8') as f:
        for p in points:
            f.write(' '.join('nan' if v is None else repr(v) for v in p) + '\n')


def plots(d, runs, base, sweep):
    """latency_cdf.png and sweep.png with gnuplot; returns the files made"""
    gp = shutil.which('gnuplot')
    if not gp:
        print('dpv_bench_report: gnuplot not found (apt-get install gnuplot-nox): no plots', file=sys.stderr)
        return []
    curves = []
    for name, title in (('loop_rc_send_lat_64', 'dpverbs RC SEND 64 B, loopback'),
                        ('loop_ud_send_lat_64', 'dpverbs UD SEND 64 B, loopback'),
                        ('memif_rc_send_lat_64', 'dpverbs RC SEND 64 B, memif 2 processes')):
        cdf = row0(runs.get(name)).get('cdf_us')
        if cdf:
            write_dat(os.path.join(d, name + '.cdf.dat'), [(v, p) for p, v in cdf])
            curves.append((name + '.cdf.dat', title))
    if get(base, 'udp_lat', 'cdf_us'):
        write_dat(os.path.join(d, 'udp_lat.cdf.dat'), [(v, p) for p, v in base['udp_lat']['cdf_us']])
        curves.append(('udp_lat.cdf.dat', 'kernel UDP ping-pong 64 B, 127.0.0.1'))
    made = []
    if curves:
        script = ['set terminal pngcairo size 1000,600 noenhanced', "set output 'latency_cdf.png'",
                  "set title 'one-way latency (RTT/2), CDF'", 'set logscale x',
                  "set xlabel 'microseconds'", "set ylabel 'percentile'", 'set key bottom right', 'set grid',
                  'set yrange [0:100]',
                  'plot ' + ', '.join("'%s' using 1:2 with lines lw 2 title '%s'" % c for c in curves)]
        made += run_gp(gp, d, 'latency_cdf', script)
    made += sweep_plot(gp, d, base, sweep)
    return made


def sweep_plot(gp, d, base, sweep):
    series = []
    for title, rows in sweep.items():
        if rows:
            fn = 'sweep_%s.dat' % re.sub(r'[^A-Za-z0-9]+', '_', title).strip('_')
            write_dat(os.path.join(d, fn), [(r['size'], r['gbit_per_s'], r['msg_per_s']) for r in rows])
            series.append((fn, 'dpverbs ' + title))
    mem = [(r['size'], r['gbit_per_s'], r['copies_per_s']) for r in get(base, 'memcpy', 'rows') or []]
    if not series:
        return []
    sizes = [r['size'] for rows in sweep.values() for r in rows]
    write_dat(os.path.join(d, 'memcpy.dat'), mem)
    plot_bw = ', '.join("'%s' using 1:2 with linespoints lw 2 title '%s'" % s for s in series)
    plot_rate = ', '.join("'%s' using 1:3 with linespoints lw 2 title '%s'" % s for s in series)
    if mem:
        plot_bw += ", 'memcpy.dat' using 1:2 with linespoints dt 2 title 'memcpy, one core'"
    script = ['set terminal pngcairo size 1000,900 noenhanced', "set output 'sweep.png'",
              'set multiplot layout 2,1', 'set logscale x 2', 'set logscale y', 'set grid',
              'set xrange [%d:%d]' % (min(sizes), max(sizes)), "set format x '%.0b%BB'",
              "set xlabel 'message size'", 'set key below',
              "set title 'bandwidth vs size'", "set ylabel 'Gb/s'", 'plot ' + plot_bw,
              "set title 'message rate vs size'", "set ylabel 'messages/s'", 'plot ' + plot_rate,
              'unset multiplot']
    return run_gp(gp, d, 'sweep', script)


def run_gp(gp, d, name, script):
    path = os.path.join(d, name + '.gp')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(script) + '\n')
    r = subprocess.run([gp, name + '.gp'], cwd=d, capture_output=True, text=True, check=False)
    if r.returncode:
        print('dpv_bench_report: gnuplot %s failed: %s' % (name, r.stderr.strip()), file=sys.stderr)
        return []
    return [name + '.png']


def meta_of(args):
    model = '?'
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            for line in f:
                if line.startswith('model name'):
                    model = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        commit = subprocess.run(['git', '-C', src, 'rev-parse', '--short', 'HEAD'], capture_output=True,
                                text=True, check=False).stdout.strip()
    except OSError:
        commit = ''
    return {'date': time.strftime('%Y-%m-%d %H:%M:%S'), 'host': platform.node(), 'kernel': platform.release(),
            'cpus': os.cpu_count(), 'cpu_model': model, 'loadavg': os.getloadavg()[0],
            'build': args.build, 'commit': commit or None, 'quick': args.quick, 'progress': args.progress,
            'note': 'one machine, one sitting; other load on the machine shows in every figure'}


def main():
    ap = argparse.ArgumentParser(description='report of a dpv_bench.sh run')
    ap.add_argument('--dir', required=True)
    ap.add_argument('--build', default='')
    ap.add_argument('--progress', default='inline')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--no-plots', action='store_true')
    ap.add_argument('--ports-only', action='store_true')
    args = ap.parse_args()
    d = os.path.abspath(args.dir)
    raw = os.path.join(d, 'raw')
    base = load(os.path.join(raw, 'baseline.json'))
    runs = {}
    for f in sorted(os.listdir(raw)):
        if f.endswith('.json') and (f.startswith('loop_') or f.startswith('memif_') or f.startswith('sh_')):
            runs[f[:-5]] = load(os.path.join(raw, f))
    meta = meta_of(args)
    s = Summary()
    if not args.ports_only:
        add_perf_rows(s, runs, base, 'loop_', 'dpverbs, one process (loopback dpv0 -> dpv1)')
    if any(k.startswith('memif_') for k in runs):
        add_perf_rows(s, runs, base, 'memif_', 'dpverbs, two processes over net_memif',
                      load(os.path.join(raw, 'cacheline_memif.json')))
        add_perftest_rows(s, raw, base, load(os.path.join(raw, 'cacheline_perftest.json')))
    sweep = {'RC WRITE, loopback': sweep_rows(runs, base, 'loop_rc_write_sweep'),
             'RC WRITE, memif': sweep_rows(runs, base, 'memif_rc_write_sweep')}
    shared = shared_rows(raw, runs)
    failed = [k for k, v in runs.items() if not v or v.get('status') != 'pass']
    if not args.ports_only and (not base or base.get('status') != 'pass'):
        failed.append('baseline')
    failed += shared_failed(raw)
    ports = ports_report(raw)
    if ports:
        failed += ports['failed']
    text = table(s.rows, sweep, meta)
    if shared:
        meta['shared'] = {'config': load(os.path.join(raw, 'shared-config.json')),
                          'setups': {v[0]: v[1] for v in SHARED_SETUPS.values()},
                          'loadavg_1min': shared_loadavg(raw),
                          'cacheline_moved_ns': cacheline_moved(shared)}
        text += shared_table(shared, meta['shared']['loadavg_1min'])
    if ports:
        text += ports_table(ports)
    if failed:
        text += '\nruns that failed or are missing: %s (see logs/)\n' % ', '.join(failed)
    made = [] if args.no_plots else plots(d, runs, base, sweep)
    result = {'meta': meta, 'summary': s.rows, 'sweep': sweep, 'baseline': base, 'runs': runs,
              'failed': failed, 'plots': made}
    if shared:
        result['shared_vs_embedded'] = shared
    if ports:
        result['ports'] = ports
    with open(os.path.join(d, 'results.json'), 'w', encoding='utf-8') as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(d, 'results.csv'), 'w', newline='', encoding='utf-8') as f:
        fields = ['section', 'metric', 'dpverbs', 'unit', 'baseline', 'baseline_value', 'ratio', 'better']
        if shared:
            fields += ['buffer', 'cacheline_embedded_ns', 'cacheline_shared_ns']
        if ports and ports['rows']:
            fields += ['transport', 'min', 'max', 'runs', 'ratio_min', 'ratio_max', 'cacheline_ns', 'met']
        w = csv.DictWriter(f, fieldnames=fields, extrasaction='ignore')
        w.writeheader()
        w.writerows(s.rows)
        # the shared figure in the dpverbs column, its embedded counterpart as the baseline
        w.writerows({'section': r['section'], 'metric': r['metric'], 'dpverbs': r['shared'], 'unit': r['unit'],
                     'baseline': r['embedded_setup'], 'baseline_value': r['embedded'], 'ratio': r['ratio'],
                     'better': r['better'], 'buffer': r['buffer'], 'cacheline_embedded_ns': r['cacheline_embedded_ns'],
                     'cacheline_shared_ns': r['cacheline_shared_ns']} for r in shared)
        if ports and ports['rows']:
            # the figures (baseline "-"), each beside a kernel baseline or another
            # transport, then the targets (dpverbs: the numerator, baseline: the
            # denominator, better: the target)
            w.writerows(ports['rows'])
            w.writerows({'section': PORTS_SECTION + ': targets', 'metric': t['target'], 'dpverbs': t['numerator'],
                         'unit': t['unit'], 'baseline': t['target'].split(' / ', 1)[-1],
                         'baseline_value': t['denominator'], 'ratio': t['ratio'],
                         'better': '%s %g' % (t['relation'], t['bound']), 'ratio_min': t['ratio_min'],
                         'ratio_max': t['ratio_max'],
                         'met': '' if t['met'] is None else ('yes' if t['met'] else 'no')} for t in ports['targets'])
    with open(os.path.join(d, 'summary.txt'), 'w', encoding='utf-8') as f:
        f.write(text)
    sys.stdout.write(text)
    print('\nresults: %s (results.json, results.csv, summary.txt%s)' % (d, ''.join(', ' + p for p in made)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
