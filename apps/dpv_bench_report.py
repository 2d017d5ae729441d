#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpv_bench_report.py: the report of a dpv_bench.sh run.

usage: dpv_bench_report.py --dir DIR [--build BUILD] [--progress MODE]
                           [--quick] [--no-plots]

Reads DIR/raw (baseline.json from dpv_baseline, loop_*.json and
memif_*.json from dpv_perf --json, pt_*.txt: perftest's result lines;
with dpv_bench.sh --shared also sh_*.json, pt_sh_*.txt and cacheline_*.json)
and writes into DIR:
  results.json   meta (machine, build, commit, mode), the baseline, every
                 run as its tool wrote it, the summary and the size sweep;
                 with --shared runs, shared_vs_embedded[]
  results.csv    the summary: section, metric, dpverbs, unit, baseline,
                 baseline_value, ratio (dpverbs / baseline), better; with
                 --shared runs also the section "shared mode vs embedded
                 mode" (dpverbs = the shared figure, baseline = its embedded
                 counterpart) and the columns buffer, cacheline_embedded_ns,
                 cacheline_shared_ns
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
    add_perf_rows(s, runs, base, 'loop_', 'dpverbs, one process (loopback dpv0 -> dpv1)')
    if any(k.startswith('memif_') for k in runs):
        add_perf_rows(s, runs, base, 'memif_', 'dpverbs, two processes over net_memif',
                      load(os.path.join(raw, 'cacheline_memif.json')))
        add_perftest_rows(s, raw, base, load(os.path.join(raw, 'cacheline_perftest.json')))
    sweep = {'RC WRITE, loopback': sweep_rows(runs, base, 'loop_rc_write_sweep'),
             'RC WRITE, memif': sweep_rows(runs, base, 'memif_rc_write_sweep')}
    shared = shared_rows(raw, runs)
    failed = [k for k, v in runs.items() if not v or v.get('status') != 'pass']
    if not base or base.get('status') != 'pass':
        failed.append('baseline')
    failed += shared_failed(raw)
    text = table(s.rows, sweep, meta)
    if shared:
        meta['shared'] = {'config': load(os.path.join(raw, 'shared-config.json')),
                          'setups': {v[0]: v[1] for v in SHARED_SETUPS.values()},
                          'loadavg_1min': shared_loadavg(raw),
                          'cacheline_moved_ns': cacheline_moved(shared)}
        text += shared_table(shared, meta['shared']['loadavg_1min'])
    if failed:
        text += '\nruns that failed or are missing: %s (see logs/)\n' % ', '.join(failed)
    made = [] if args.no_plots else plots(d, runs, base, sweep)
    result = {'meta': meta, 'summary': s.rows, 'sweep': sweep, 'baseline': base, 'runs': runs,
              'failed': failed, 'plots': made}
    if shared:
        result['shared_vs_embedded'] = shared
    with open(os.path.join(d, 'results.json'), 'w', encoding='utf-8') as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(d, 'results.csv'), 'w', newline='', encoding='utf-8') as f:
        fields = ['section', 'metric', 'dpverbs', 'unit', 'baseline', 'baseline_value', 'ratio', 'better']
        if shared:
            fields += ['buffer', 'cacheline_embedded_ns', 'cacheline_shared_ns']
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(s.rows)
        # the shared figure in the dpverbs column, its embedded counterpart as the baseline
        w.writerows({'section': r['section'], 'metric': r['metric'], 'dpverbs': r['shared'], 'unit': r['unit'],
                     'baseline': r['embedded_setup'], 'baseline_value': r['embedded'], 'ratio': r['ratio'],
                     'better': r['better'], 'buffer': r['buffer'], 'cacheline_embedded_ns': r['cacheline_embedded_ns'],
                     'cacheline_shared_ns': r['cacheline_shared_ns']} for r in shared)
    with open(os.path.join(d, 'summary.txt'), 'w', encoding='utf-8') as f:
        f.write(text)
    sys.stdout.write(text)
    print('\nresults: %s (results.json, results.csv, summary.txt%s)' % (d, ''.join(', ' + p for p in made)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
