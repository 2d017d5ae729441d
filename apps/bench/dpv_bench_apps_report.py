#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpv_bench_apps_report.py DIR [--no-plots]: the section "apps" of the
benchmark report, from DIR/raw/apps.tsv (apps/bench/dpv_bench_apps.sh).

Writes DIR/apps.json, DIR/apps.csv and DIR/apps_summary.txt: every figure of
dpverbs (embedded and shared mode) next to the kernel alternative's in the
same sitting, the ratios, and the issue's targets per figure:
  latency, messages up to 4 KiB:  dpverbs <= 0.5 x the kernel's
  bandwidth, 64 KiB and larger:   dpverbs >= 1.5 x the kernel's
  shared mode within 1.5 x of embedded mode (latency: shared/embedded <= 1.5,
  bandwidth: embedded/shared <= 1.5)
and, with gnuplot, apps_mpi_latency.png / apps_mpi_bandwidth.png (MPI
ping-pong against message size, dpverbs embedded, shared and ob1/tcp) and
apps_fio.png. Prints the summary. Exit 0; 1 when the TSV is missing.
"""
import csv
import json
import os
import subprocess
import sys

from dpv_bench_report import cl_verdict

LAT_MAX = 4096
BW_MIN = 65536


def num(s):
    return float(s) if s not in ('', '-', None) else None


def load(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f, delimiter='\t'):
            key = (r['workload'], r['test'], int(r['size']))
            rows.setdefault(key, {})[r['stack']] = (num(r['lat_us']), num(r['bw_MBps']))
    return rows


def verdicts(k, figs):
    """Targets for one (workload, test, size): list of (name, ratio, met)."""
    out = []
    size = k[2]
    kern = figs.get('kernel')
    for mode in ('embedded', 'shared'):
        f = figs.get(mode)
        if not f or not kern:
            continue
        if f[0] is not None and kern[0] and size <= LAT_MAX:
            r = f[0] / kern[0]
            out.append(('%s lat <= 0.5x kernel' % mode, r, r <= 0.5))
        if f[1] is not None and kern[1] and size >= BW_MIN:
            r = f[1] / kern[1]
            out.append(('%s bw >= 1.5x kernel' % mode, r, r >= 1.5))
    e, s = figs.get('embedded'), figs.get('shared')
    if e and s:
        if e[0] and s[0] is not None and size <= LAT_MAX:
            r = s[0] / e[0]
            out.append(('shared lat <= 1.5x embedded', r, r <= 1.5))
        if e[1] and s[1] and size >= BW_MIN:
            r = e[1] / s[1]
            out.append(('shared bw within 1.5x embedded', r, r <= 1.5))
    return out


def fmt(v, bw=False):
    if v is None:
        return '-'
    return ('%.0f' % v) if bw and v >= 100 else ('%.2f' % v if v < 100 else '%.0f' % v)


def size_str(n):
    for u, s in ((1 << 20, 'M'), (1 << 10, 'K')):
        if n >= u and n % u == 0:
            return '%d%s' % (n // u, s)
    return str(n)


def plots(d, rows):
    def series(workload, test, stack, col):
        pts = sorted((k[2], v[stack][col]) for k, v in rows.items()
                     if k[0] == workload and k[1] == test and stack in v and v[stack][col] is not None)
        return pts

    made = []
    for name, col, ylabel in (('latency', 0, 'one-way latency p50 (us)'), ('bandwidth', 1, 'MB/s')):
        data = {s: series('mpi', 'pingpong', s, col) for s in ('embedded', 'shared', 'kernel')}
        if not any(data.values()):
            continue
        files = []
        for s, pts in data.items():
            if not pts:
                continue
            fn = os.path.join(d, 'raw', 'apps_mpi_%s_%s.dat' % (name, s))
            with open(fn, 'w') as f:
                for x, y in pts:
                    f.write('%d %g\n' % (x, y))
            files.append((fn, {'kernel': 'Open MPI ob1/tcp (kernel)'}.get(s, 'Open MPI UCX on dpverbs, %s' % s)))
        png = os.path.join(d, 'apps_mpi_%s.png' % name)
        script = ('set terminal png size 900,560\nset output "%s"\nset logscale x 2\n%s'
                  'set xlabel "message size (bytes)"\nset ylabel "%s"\nset key top left\nset grid\n'
                  'set title "MPI ping-pong: dpverbs against the kernel (same sitting)"\nplot %s\n') % (
                      png, 'set logscale y\n' if col == 0 else '', ylabel,
                      ', '.join('"%s" using 1:2 with linespoints title "%s"' % f for f in files))
        if subprocess.run(['gnuplot'], input=script.encode(), capture_output=True).returncode == 0:
            made.append(png)
    return made


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    d = sys.argv[1]
    path = os.path.join(d, 'raw', 'apps.tsv')
    if not os.path.exists(path):
        print('dpv_bench_apps_report: %s missing' % path, file=sys.stderr)
        return 1
    rows = load(path)
    recs, lines = [], []
    met = missed = 0
    hdr = '%-6s %-18s %6s | %10s %10s %10s | %10s %10s %10s | %s' % (
        'app', 'test', 'size', 'lat emb', 'lat shr', 'lat kern', 'bw emb', 'bw shr', 'bw kern', 'targets')
    lines += ['Applications on dpverbs against the kernel alternative (same sitting; latency in us, '
              'bandwidth in MB/s = 10^6 B/s; kernel = TCP over 127.0.0.1)', hdr, '-' * len(hdr)]
    for k in sorted(rows):
        figs = rows[k]
        v = verdicts(k, figs)
        met += sum(1 for x in v if x[2])
        missed += sum(1 for x in v if not x[2])
        g = lambda s, c: figs.get(s, (None, None))[c]
        lines.append('%-6s %-18s %6s | %10s %10s %10s | %10s %10s %10s | %s' % (
            k[0], k[1], size_str(k[2]), fmt(g('embedded', 0)), fmt(g('shared', 0)), fmt(g('kernel', 0)),
            fmt(g('embedded', 1), True), fmt(g('shared', 1), True), fmt(g('kernel', 1), True),
            '; '.join('%s %.2f %s' % (n, r, 'MET' if m else 'NOT MET') for n, r, m in v)))
        recs.append({'workload': k[0], 'test': k[1], 'size': k[2],
                     'figures': {s: {'lat_us': f[0], 'bw_MBps': f[1]} for s, f in figs.items()},
                     'targets': [{'target': n, 'ratio': round(r, 3), 'met': m} for n, r, m in v]})
    lines.append('targets: %d met, %d not met' % (met, missed))
    cl = []
    for part in ('apps', 'apps_end'):
        try:
            with open(os.path.join(d, 'raw', 'cacheline_%s.json' % part)) as f:
                cl.append(json.load(f)['cacheline']['one_way_ns_p50'])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if cl:
        # the two vCPUs' distance before and after the section (on a VM it moves)
        lines.append('vCPUs: cache line one way p50 %s ns: %s' % (' / '.join('%.0f' % x for x in cl),
                                                                 cl_verdict(cl)))
    runs = os.path.join(d, 'raw', 'apps-runs.tsv')
    if os.path.exists(runs):
        with open(runs) as f:
            rr = list(csv.DictReader(f, delimiter='\t'))
        bad = [r for r in rr if r['result'] != 'ok']
        lines.append('runs: %d, %d failed%s' % (len(rr), len(bad), ''.join(
            '\n  FAILED %s: %s' % (r['run'], r['why']) for r in bad)))
    with open(os.path.join(d, 'apps.json'), 'w') as f:
        json.dump(recs, f, indent=1)
    with open(os.path.join(d, 'apps.csv'), 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['workload', 'test', 'size', 'stack', 'lat_us', 'bw_MBps'])
        for k in sorted(rows):
            for s, fg in sorted(rows[k].items()):
                w.writerow([k[0], k[1], k[2], s, '' if fg[0] is None else fg[0], '' if fg[1] is None else fg[1]])
    if '--no-plots' not in sys.argv:
        for p in plots(d, rows):
            lines.append('plot: %s' % p)
    text = '\n'.join(lines) + '\n'
    with open(os.path.join(d, 'apps_summary.txt'), 'w') as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
