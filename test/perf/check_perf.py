#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_perf.py: functional tests of the benchmark tools (not timed
assertions: the figures only have to be sane).

usage: check_perf.py perf BUILD      dpv_perf --loopback, every QP type x
                                     operation x (lat, bw), then sweeps,
                                     several QPs, post lists, --verify,
                                     --csv, the text output, usage errors
       check_perf.py baseline BUILD  dpv_baseline, short runs
       check_perf.py bench BUILD     apps/bench/dpv_bench.sh --quick (loopback)
       check_perf.py bench_shared BUILD
                                     apps/bench/dpv_bench.sh --quick --shared: every
                                     run passes, the daemon stops cleanly and the
                                     report has the section "shared mode vs
                                     embedded mode" (no speed is asserted)
       check_perf.py bench_ports BUILD
                                     apps/bench/dpv_bench.sh --quick --ports (root):
                                     the section ran every run and reported it,
                                     its report and files are complete, and it
                                     left nothing behind (no speed is asserted;
                                     a transport's failed run is printed, not
                                     failed: test/multi covers the transports)
       check_perf.py two BUILD       dpv_perf --server / client over net_memif
                                     (private copies of config/pair-a.json and
                                     pair-b.json; /tmp/dpverbs-pair.lock held)

Every dpv_perf run must exit 0 and print one JSON object with status
"pass", rates > 0, min <= p50 <= p99 <= p99.9 <= max, an increasing CDF,
as many samples as iterations, and the QP set-up figures. Prints
"N passed, N failed"; exit status 1 on a failure.
"""
import csv
import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile

OPS = {'rc': ['send', 'send_imm', 'write', 'write_imm', 'read', 'fadd', 'cswap'],
       'uc': ['send', 'send_imm', 'write', 'write_imm'],
       'ud': ['send', 'send_imm'],
       'xrc': ['send', 'send_imm', 'write', 'write_imm', 'read', 'fadd', 'cswap']}
ENV = dict(os.environ, DPVERBS_CONFIG='')
RESULTS = {'pass': 0, 'fail': 0}


def check(cond, what):
    RESULTS['pass' if cond else 'fail'] += 1
    if not cond:
        print('FAIL: ' + what)
    return cond


def run(cmd, timeout=60):
    try:
        p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout, check=False)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return -1, '', 'timeout'


def sane_row(r, kind, name):
    ok = check(r.get('status') == 'pass', '%s: row status %s %s' % (name, r.get('status'), r.get('error', '')))
    ok &= check(r.get('msg_per_s', 0) > 0 and r.get('bytes_per_s', 0) > 0 and r.get('gbit_per_s', 0) > 0,
                '%s: rates > 0' % name)
    ok &= check(r.get('lost') == 0 and r.get('corrupt') == 0, '%s: nothing lost or corrupt' % name)
    if kind == 'lat':
        lat = r.get('one_way_us') or r.get('round_trip_us')
        ok &= check(lat is not None, '%s: latency figures' % name)
        if lat:
            v = [lat['min'], lat['p50'], lat['p99'], lat['p99_9'], lat['max']]
            ok &= check(v == sorted(v) and v[0] > 0, '%s: min <= p50 <= p99 <= p99.9 <= max: %s' % (name, v))
            ok &= check(lat['min'] <= lat['mean'] <= lat['max'], '%s: mean within min..max' % name)
        ok &= check(r.get('samples') == r.get('iters'), '%s: one sample per iteration' % name)
        cdf = [p[1] for p in r.get('cdf_us', [])]
        ok &= check(len(cdf) > 100 and cdf == sorted(cdf), '%s: CDF increasing' % name)
        ok &= check(sum(b[2] for b in r.get('histogram_us', [])) == r.get('samples'),
                    '%s: histogram holds every sample' % name)
        ok &= check(r.get('latency_definition') in ('one-way = RTT/2', 'round trip of one operation'),
                    '%s: latency definition' % name)
    else:
        ok &= check(r.get('tx_msg_per_s', 0) > 0 and r.get('duration_s', 0) > 0, '%s: sender rate' % name)
    return ok


def perf_json(build, args, name, rows=1):
    rc, out, err = run([os.path.join(build, 'apps', 'dpv_perf', 'dpv_perf'), '--loopback', '--json', '--timeout', '30']
                       + args)
    if not check(rc == 0, '%s: exit %d: %s' % (name, rc, err.strip()[-300:])):
        return None
    try:
        d = json.loads(out)
    except ValueError:
        check(False, '%s: output is not one JSON object' % name)
        return None
    check(d.get('status') == 'pass' and len(d.get('rows', [])) == rows, '%s: status and %d rows' % (name, rows))
    s = d.get('setup', {})
    check(s.get('qps_created', 0) > 0 and s.get('qp_create_per_s', 0) > 0 and 'bytes_per_qp' in s,
          '%s: set-up figures' % name)
    return d


def test_matrix(build):
    for qpt, ops in OPS.items():
        for op in ops:
            for kind in ('lat', 'bw'):
                name = '%s_%s_%s' % (qpt, op, kind)
                d = perf_json(build, ['-t', name, '-n', '300', '--warmup', '30'], name)
                if d:
                    check(d['test'] == name, '%s: test name %s' % (name, d['test']))
                    sane_row(d['rows'][0], kind, name)


def test_variants(build):
    d = perf_json(build, ['-t', 'rc_write_bw', '--sweep', '1:4096', '-n', '200'], 'sweep', rows=13)
    if d:
        check([r['size'] for r in d['rows']] == [1 << i for i in range(13)], 'sweep: sizes 1 .. 4096')
        for r in d['rows']:
            sane_row(r, 'bw', 'sweep size %d' % r['size'])
    d = perf_json(build, ['-t', 'ud_lat', '--sweep', '64:4096', '-n', '100'], 'ud sweep cut at the MTU', rows=5)
    for args, name in ((['-t', 'rc_send_bw', '-q', '16', '-l', '8', '--signal', '8', '-n', '5000'], 'qps+post list'),
                       (['-t', 'xrc_send_bw', '-q', '8', '-n', '2000'], 'xrc several QPs'),
                       (['-t', 'uc_write_imm_lat', '-q', '3', '-n', '300'], 'uc several QPs lat'),
                       (['-t', 'rc_read_bw', '-s', '3000', '--verify', '-n', '500'], 'read verify'),
                       (['-t', 'rc_send_lat', '-s', '5', '--verify', '--no-inline', '-n', '300'], 'small verify'),
                       (['-t', 'ud_bw', '-s', '1024', '--verify', '-n', '2000'], 'ud verify'),
                       (['-t', 'rc_write_lat', '-s', '65536', '--verify', '-n', '100'], 'write lat 64k verify'),
                       (['-c', 'rc', '-o', 'cswap', '-t', 'bw', '-w', '8', '-n', '500'], 'cswap -c -o'),
                       # thread domains: the stream must arrive complete and in order (packets the
                       # assist thread receives for a TD's QP are handed to the owner thread)
                       (['-t', 'ud_bw', '--td', '-l', '16', '--signal', '16', '-n', '400000'], 'ud td stream'),
                       (['-t', 'rc_send_bw', '--td', '-l', '16', '--signal', '16', '-n', '200000'],
                        'rc td stream'),
                       (['-t', 'rc_write_lat', '--td', '-n', '2000'], 'rc td lat')):
        d = perf_json(build, args, name)
        if d:
            sane_row(d['rows'][0], 'lat' if 'lat' in ' '.join(args) else 'bw', name)


def test_csv_text_usage(build):
    perf = os.path.join(build, 'apps', 'dpv_perf', 'dpv_perf')
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'out.csv')
        for _ in range(2):
            rc, _, err = run([perf, '--loopback', '-t', 'rc_send_lat', '--sweep', '64:128', '-n', '100',
                              '--csv', path])
            check(rc == 0, 'csv run: exit %d %s' % (rc, err[-200:]))
        with open(path, encoding='utf-8') as f:
            rows = list(csv.DictReader(f))
        check(len(rows) == 4 and all(r['status'] == 'pass' and float(r['lat_p50_us']) > 0 for r in rows),
              'csv: one header, 4 rows appended')
    rc, out, _ = run([perf, '--loopback', '-t', 'ud_lat', '-n', '200', '--histogram'])
    check(rc == 0 and 'result: PASS' in out and 'one-way = RTT/2' in out and ') us' in out, 'text output')
    rc, out, _ = run([perf, '-t', 'rc_bw', '-n', '200'])
    check(rc == 0 and 'result: PASS' in out, 'loopback is the default without DPVERBS_CONFIG')
    rc, out, _ = run([perf, '--help'])
    check(rc == 0 and '--post-list' in out and '--sweep' in out, '--help')
    for args in (['-t', 'ud_write_bw'], ['-c', 'uc', '-o', 'read'], ['-t', 'bogus'], ['-s', '0'],
                 ['--qps', '1025'], ['-t', 'rc_fadd_lat', '--sweep', '8:64'], ['--server', '--loopback']):
        rc, _, err = run([perf] + args)
        check(rc == 2 and err, 'usage error %s: exit %d' % (' '.join(args), rc))


def test_baseline(build):
    base = os.path.join(build, 'apps', 'dpv_baseline', 'dpv_baseline')
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'b.csv')
        rc, out, err = run([base, '--json', '--duration', '5', '--sizes', '64:4096', '--no-big', '-n', '2000',
                            '--msgs', '5000', '--cl-iters', '5000', '--csv', path])
        if not check(rc == 0, 'dpv_baseline: exit %d %s' % (rc, err[-300:])):
            return
        d = json.loads(out)
        check(d['status'] == 'pass', 'baseline status')
        mem = d['memcpy']['rows']
        check([r['size'] for r in mem] == [64 << i for i in range(7)] and all(r['bytes_per_s'] > 0 for r in mem),
              'memcpy rows 64 .. 4096, > 0')
        cl = d['cacheline']
        if cl['status'] != 'skipped':
            v = cl['rtt_ns']
            check(0 < v['min'] <= v['p50'] <= v['p99'] <= v['max'], 'cache line percentiles ordered')
        u = d['udp_lat']['one_way_us']
        check(0 < u['min'] <= u['p50'] <= u['p99'] <= u['p99_9'] <= u['max'], 'udp_lat percentiles ordered')
        check(d['udp_bw']['msg_per_s'] > 0 and d['udp_bw']['received'] == 6000, 'udp_bw rate, every message')
        check(d['tcp_bw']['bytes_per_s'] > 0, 'tcp_bw rate')
        with open(path, encoding='utf-8') as f:
            rows = list(csv.DictReader(f))
        check(len(rows) >= 10 and all(float(r['value']) > 0 for r in rows), 'baseline csv')
    rc, out, _ = run([base, '-t', 'memcpy', '--duration', '2', '--no-big', '--sizes', '64:64'])
    check(rc == 0 and 'result: PASS' in out, 'baseline text output')
    rc, _, _ = run([base, '-t', 'nothing'])
    check(rc == 2, 'baseline usage error')


def test_bench(build):
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run([os.path.join(src, 'apps', 'bench', 'dpv_bench.sh'), '--quick', '-b', build, '-o', tmp],
                           timeout=300)
        check(rc == 0, 'dpv_bench.sh --quick: exit %d %s' % (rc, err[-500:]))
        d = json.load(open(os.path.join(tmp, 'results.json'), encoding='utf-8'))
        rows = d['summary']
        check(len(rows) >= 10 and all(r['dpverbs'] for r in rows), 'every summary row has a dpverbs figure')
        check(all(r['ratio'] > 0 for r in rows if r['baseline'] != '-'), 'every baseline row has a ratio')
        check(len(d['sweep']['RC WRITE, loopback']) >= 10, 'size sweep rows')
        for f in ('results.csv', 'summary.txt'):
            check(os.path.getsize(os.path.join(tmp, f)) > 0, f)
        for p in ('latency_cdf.png', 'sweep.png'):
            check(not d['plots'] or p in d['plots'], 'plot ' + p)
        check('ratio' in out, 'summary printed')


def run_bench(src, build, tmp, part, timeout):
    """apps/bench/dpv_bench.sh --quick PART --no-plots into tmp: (status, stdout,
    stderr); on a timeout SIGTERM (the script cleans up), SIGKILL 60 s later."""
    p = subprocess.Popen([os.path.join(src, 'apps', 'bench', 'dpv_bench.sh'), '--quick', part, '--no-plots',
                          '-b', build, '-o', tmp], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.terminate()
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        err += ' (timeout)'
    return p.returncode, out, err


def test_bench_shared(build):
    if (os.cpu_count() or 1) < 2:
        print('SKIP: --shared needs two CPUs')
        sys.exit(77)
    if os.environ.get('DPVERBS_HUGEPAGES') == '0':
        print('SKIP: net_memif and the daemon need hugepages (DPVERBS_HUGEPAGES=0)')
        sys.exit(77)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as tmp:
        # SIGTERM, not SIGKILL, on a timeout: the script then stops its daemon
        rc, out, err = run_bench(src, build, tmp, '--shared', 840)
        check(rc == 0, 'dpv_bench.sh --quick --shared: exit %d %s' % (rc, err[-800:]))
        check('dpverbsd pid' in err and 'exited with status 0' in err, 'the daemon started and exited with 0')
        d = json.load(open(os.path.join(tmp, 'results.json'), encoding='utf-8'))
        check(not d['failed'], 'no failed run: %s' % d['failed'])
        rows = d.get('shared_vs_embedded') or []
        check(len(rows) >= 19, 'shared_vs_embedded rows: %d' % len(rows))
        check(all(r['shared'] and r['embedded'] and r['ratio'] > 0 for r in rows),
              'every shared row has both figures and a ratio')
        setups = {(r['buffer'], r['embedded_short']) for r in rows}
        check({('heap', 'inline, 1 core'), ('hugepage', 'inline, 1 core'), ('heap', 'lcore, 2 cores'),
               ('hugepage', 'lcore, 2 cores'), ('heap', 'memif, 2 procs')} <= setups,
              'both buffer kinds and every embedded setup: %s' % sorted(setups))
        check(all(r['cacheline_embedded_ns'] and r['cacheline_shared_ns'] for r in rows),
              'the cache line measured before each side')
        check(d['meta']['shared']['config']['mode'] == 'shared', 'the daemon configuration is recorded')
        summary = open(os.path.join(tmp, 'summary.txt'), encoding='utf-8').read()
        check('== shared mode vs embedded mode' in summary and 'dpverbsd, 2 procs' in summary,
              'summary.txt has the section')
        with open(os.path.join(tmp, 'results.csv'), encoding='utf-8') as f:
            csv_rows = [r for r in csv.DictReader(f) if r['section'] == 'shared mode vs embedded mode']
        check(len(csv_rows) == len(rows) and all(r['buffer'] for r in csv_rows), 'results.csv has the section')
        check(len(d['summary']) >= 10, 'the rest of the report is still there')
        prefix = d['meta']['shared']['config']['eal']['file_prefix']
        check(not os.path.exists(os.path.join('/var/run/dpdk', prefix)), 'no EAL runtime directory left')
        check(not os.path.exists(d['meta']['shared']['config']['shared']['socket']), 'no socket left')


def test_bench_ports(build):
    import shutil
    if os.geteuid() != 0:
        print('SKIP: the ports section needs root (network namespaces, veth, AF_XDP)')
        sys.exit(77)
    if os.environ.get('DPVERBS_HUGEPAGES') == '0':
        print('SKIP: net_memif needs hugepages (DPVERBS_HUGEPAGES=0)')
        sys.exit(77)
    for p in ('ip', 'ib_send_lat', 'ib_send_bw', 'ib_write_bw'):
        if not shutil.which(p):
            print('SKIP: %s not installed' % p)
            sys.exit(77)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as tmp:
        # SIGTERM on a timeout: the script's traps then remove what it made
        rc, out, err = run_bench(src, build, tmp, '--ports', 480)
        m = re.search(r'namespaces (dpvb-\d+-a) ', err)
        check(rc in (0, 1) and m, 'dpv_bench.sh --quick --ports: exit %d %s' % (rc, err[-800:]))
        d = json.load(open(os.path.join(tmp, 'results.json'), encoding='utf-8'))
        ports = d.get('ports') or {}
        check(not ports.get('skipped') and not ports.get('setup_failed'), 'the section ran: %s' % (
            ports.get('skipped') or ports.get('setup_failed')))
        runs = ports.get('runs') or []
        names = {r['name'] for r in runs}
        want = {'r1_%s_%s' % (t, x) for t in ('memif', 'af_xdp', 'af_packet')
                for x in ('ib_send_lat', 'ib_send_bw', 'ib_write_bw')}
        want |= {'r1_kernel_' + x for x in ('udp_lat_blocking', 'udp_lat_busy', 'udp_bw', 'tcp_bw')}
        check(names == want, 'every run recorded: missing %s, extra %s' % (sorted(want - names), sorted(names - want)))
        bad = [r for r in runs if r['status'] != 'ok']
        for r in bad:
            print('note: %s %s: %s' % (r['name'], r['status'], r['reason']))
        check(all(r['status'] == 'ok' for r in runs if r['transport'] == 'kernel'),
              'the kernel baselines over the veth passed')
        check((rc == 0) == (not d['failed']), 'exit status %d and failed[] %s agree' % (rc, d['failed']))
        check(all('ports ' + r['name'] + ' (' in ' '.join(d['failed']) for r in bad),
              'every failed run is in failed[]')
        summary = open(os.path.join(tmp, 'summary.txt'), encoding='utf-8').read()
        check('== ports: memif vs AF_XDP vs af_packet over one veth' in summary, 'summary.txt has the section')
        check(all(r['name'] in summary for r in bad), 'summary.txt names every failed run')
        check(summary.count('target <= 1:') == 2 and summary.count('target >= 3:') == 1, 'the three targets')
        check('cache line CPU 0 <-> CPU 1' in summary or (os.cpu_count() or 1) < 2, 'the cache line')
        rows = ports.get('rows') or []
        check(len(rows) >= 40 and {r['transport'] for r in rows} == {'memif', 'AF_XDP', 'af_packet', 'kernel'},
              'ports rows: %d' % len(rows))
        ok_figs = [r for r in rows if r['kind'] == 'figure' and r['dpverbs'] is not None]
        check(all(r['dpverbs'] > 0 and r['min'] <= r['dpverbs'] <= r['max'] for r in ok_figs) and ok_figs,
              'figures > 0, median within its range')
        with open(os.path.join(tmp, 'results.csv'), encoding='utf-8') as f:
            csv_rows = [r for r in csv.DictReader(f) if r['section'].startswith('ports:')]
        check(len(csv_rows) == len(rows) + 3, 'results.csv: the rows and the targets')
        for s in ('a', 'b'):
            for t in ('memif', 'af_xdp', 'af_packet'):
                check(os.path.exists(os.path.join(tmp, 'ports', '%s-%s.json' % (t, s))), 'configuration %s-%s' % (t, s))
        # nothing left behind
        check(not ports.get('left_behind'), 'the section found nothing left: %s' % ports.get('left_behind'))
        if m:
            ns = m.group(1)[:-2]
            listed = subprocess.run(['ip', 'netns', 'list'], capture_output=True, text=True, check=False).stdout
            check(ns + '-a' not in listed and ns + '-b' not in listed, 'namespaces %s-a/-b removed' % ns)
            pid = ns.split('-')[1]
            links = subprocess.run(['ip', '-o', 'link'], capture_output=True, text=True, check=False).stdout
            check('dpvb%sa' % pid not in links and 'dpvb%sb' % pid not in links, 'no veth in this namespace')
            left = [x for x in os.listdir('/var/run/dpdk') if x.startswith('dpv-bench-%s-' % pid)] \
                if os.path.isdir('/var/run/dpdk') else []
            check(not left, 'no EAL runtime directory left: %s' % left)
            procs = []
            for q in os.listdir('/proc'):
                try:
                    with open('/proc/%s/environ' % q, 'rb') as f:
                        if ('DPVERBS_CONFIG=' + tmp).encode() in f.read():
                            procs.append(q)
                except (OSError, ValueError):
                    pass
            check(not procs, 'no process of the run left: %s' % procs)
        check(summary.count('left behind: nothing') == 1, 'summary: nothing left behind')


TWO = [['-t', 'rc_send_lat', '-n', '2000'],
       ['-t', 'ud_bw', '-n', '20000', '-l', '8', '--signal', '8'],
       ['-t', 'xrc_send_bw', '-q', '4', '--sweep', '64:1024', '-n', '5000'],
       ['-t', 'rc_write_lat', '--sweep', '1:4096', '-n', '500'],
       ['-t', 'rc_read_bw', '-q', '3', '-n', '5000', '--verify'],
       ['-t', 'xrc_fadd_lat', '-n', '1000'],
       ['-t', 'uc_write_imm_bw', '-q', '2', '-n', '5000']]


def pair_configs(src, tmp):
    out = []
    for s in ('a', 'b'):
        c = json.load(open(os.path.join(src, 'config', 'pair-%s.json' % s), encoding='utf-8'))
        c['eal']['file_prefix'] = 'dpv-check-perf-%d-%s' % (os.getpid(), s)
        dev = c['ports'][0]['device']
        dev['args'] = re.sub(r'socket=[^,]*', 'socket=' + os.path.join(tmp, 'memif.sock'), dev['args'])
        path = os.path.join(tmp, 'pair-%s.json' % s)
        json.dump(c, open(path, 'w', encoding='utf-8'))
        out.append(path)
    return out


def two_one(perf, cfg, args, port):
    name = ' '.join(args)
    srv = subprocess.Popen([perf, '--server', '-p', str(port), '--timeout', '30'],
                           env=dict(ENV, DPVERBS_CONFIG=cfg[0]), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        line = '-'
        while line and 'waiting for a client' not in line:  # the runtime is up, the port listens
            line = srv.stdout.readline()
        check('waiting for a client' in line, '%s: server started' % name)
        p = subprocess.run([perf, '-p', str(port), '--json', '--timeout', '30'] + args + ['127.0.0.1'],
                           env=dict(ENV, DPVERBS_CONFIG=cfg[1]), capture_output=True, text=True, timeout=60,
                           check=False)
        srv_out, _ = srv.communicate(timeout=30)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    check(p.returncode == 0 and srv.returncode == 0, '%s: client exit %d, server exit %d: %s %s' % (
        name, p.returncode, srv.returncode, p.stderr.strip()[-200:], srv_out.strip()[-300:]))
    try:
        d = json.loads(p.stdout)
    except ValueError:
        check(False, '%s: client output is not JSON' % name)
        return
    check(d['mode'] == 'two-process' and d['role'] == 'client', name + ': mode')
    for r in d['rows']:
        sane_row(r, 'lat' if args[1].endswith('lat') else 'bw', '%s size %d' % (name, r['size']))


def test_two(build):
    if os.environ.get('DPVERBS_HUGEPAGES') == '0':
        print('SKIP: net_memif needs hugepages (DPVERBS_HUGEPAGES=0)')
        sys.exit(77)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    perf = os.path.join(build, 'apps', 'dpv_perf', 'dpv_perf')
    with open('/tmp/dpverbs-pair.lock', 'w', encoding='utf-8') as lock, tempfile.TemporaryDirectory() as tmp:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cfg = pair_configs(src, tmp)
        for i, args in enumerate(TWO):
            two_one(perf, cfg, args, 20000 + (os.getpid() * 7 + i * 131) % 20000)


def main():
    what, build = sys.argv[1], os.path.abspath(sys.argv[2])
    if what == 'perf':
        test_matrix(build)
        test_variants(build)
        test_csv_text_usage(build)
    elif what == 'baseline':
        test_baseline(build)
    elif what == 'bench':
        test_bench(build)
    elif what == 'bench_shared':
        test_bench_shared(build)
    elif what == 'bench_ports':
        test_bench_ports(build)
    elif what == 'two':
        test_two(build)
    print('%d passed, %d failed' % (RESULTS['pass'], RESULTS['fail']))
    return 1 if RESULTS['fail'] else 0


if __name__ == '__main__':
    sys.exit(main())
