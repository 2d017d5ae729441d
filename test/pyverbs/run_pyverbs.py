#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""run_pyverbs.py - rdma-core's pyverbs test suite against dpverbs.

usage: /usr/bin/python3 run_pyverbs.py --build BUILD_DIR [--dev dpv0]
           [--modules test_device,test_pd,...] [--all] [--json FILE]
           [--min-pass N] [--report-only]
           [--timeout SEC] [--suite DIR] [--config JSON] [--keep] [-q]

Copies rdma-core's tests (default /usr/share/doc/rdma-core/tests) to a
temporary directory, gunzips the *.gz files, and runs each selected module
on its own:

    LD_LIBRARY_PATH=BUILD/compat /usr/bin/python3 TMP/tests/run_tests.py \
        --dev DEV -v tests.MODULE

bounded by --timeout seconds (the whole process group is killed on
timeout). The unittest -v output is parsed into per-test results (ok, skip,
fail, error, expected failure, unexpected success); a module that times out,
crashes or whose "Ran N tests" summary does not match the parsed results
counts as an error. Prints a table per module (and the failures/errors with
their last traceback line), writes it as JSON with --json.

Also checks that the EAL runtime directory of each run
(/var/run/dpdk/dpv-<pid>, the default file prefix) is gone afterwards.

Exit status: 0 if no failure/error in the selected modules, 1 otherwise,
77 if pyverbs cannot be imported by this interpreter, 2 on usage errors.
With --all every module of the suite is run (273 cases in rdma-core 44;
the mlx5 and EFA ones skip without such a device). --min-pass N also fails
the run when fewer than N cases pass; --report-only exits 0 unless the
runner itself fails.

DPVERBS_CONFIG is passed through (or set with --config); without it the
library's built-in default gives dpv0/dpv1 in one process.

Modules in NET_MODULES (test_rdmacm) need what a kernel RDMA device has
besides the verbs: RDMACMBaseTest finds the device's IP address through
/sys/class/infiniband/<dev>/device/net/<iface> and `ip -j addr show
<iface>` (no interface: every case skips), and each case forks a passive
and an active process that both use the device (one port, one address).
Such a module runs

    ip netns exec NS [with_daemon.sh BUILD --] \
        sh BUILD/apps/dpverbs-run --view --netns-iface python3 run_tests.py ...

in a network namespace NS made for the run and deleted after it: the
launcher's --view shows the configured ports under /sys/class/infiniband,
--netns-iface puts a dummy interface holding each port's addresses into NS.
Two processes on one port need shared mode: unless DPVERBS_CONFIG already
says "mode": "shared" (the shared_pyverbs test runs under a daemon),
test/shared/with_daemon.sh starts a dpverbsd of the run's own on the
built-in default's two ports (or the --config file) for the module. Not
being able to make the namespace (not root) is an error of the module, not
a skip.
"""
import argparse
import glob
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DEFAULT_MODULES = ["test_device", "test_pd", "test_mr", "test_cq", "test_addr",
                   "test_qp", "test_cq_events", "test_qpex"]
SUITE = "/usr/share/doc/rdma-core/tests"
# modules that need an interface holding the device's address, and two
# processes on one device: run in a network namespace, under the launcher's
# view, in shared mode (see the docstring)
NET_MODULES = {"test_rdmacm"}
HERE = os.path.dirname(os.path.abspath(__file__))
WITH_DAEMON = os.path.join(HERE, "..", "shared", "with_daemon.sh")

# "test_name (tests.test_x.Class.test_name)" (3.11) or "(tests.test_x.Class)"
HDR = re.compile(r"^(\w+) \((tests\.[\w.]+)\)", re.M)
# the result follows " ... " on the same line, or (when the test printed
# something to stdout/stderr after " ... ") stands alone on a later line
RES = re.compile(r"(?: \.\.\. |^)(ok|skipped(?: '.*'| \".*\")?|FAIL|ERROR|expected failure|"
                 r"unexpected success)\s*$", re.M)
RAN = re.compile(r"^Ran (\d+) tests? in ([\d.]+)s", re.M)
BLOCK = re.compile(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\w+) \((tests\.[\w.]+)\)", re.M)
SUMMARY = re.compile(r"^(OK|FAILED)(?: \((.*)\))?\s*$", re.M)
SEP = "=" * 70
# what the forked sides of an rdma_cm case print before exiting with 2
# (RDMACMBaseTest._rdmacm_exception_handler); the case itself only says
# "Exception in active/passive side occurred"
PLAYER = re.compile(r"Player (passive|active) got: (.*?)(?=Player (?:passive|active) got:|$)", re.M)


def prepare(suite, tmp):
    dst = os.path.join(tmp, "tests")
    shutil.copytree(suite, dst)
    for gz in glob.glob(os.path.join(dst, "*.gz")):
        with gzip.open(gz, "rb") as fi, open(gz[:-3], "wb") as fo:
            shutil.copyfileobj(fi, fo)
        os.unlink(gz)
    return dst


def all_modules(tdir):
    """Every module of the suite: the mlx5 and EFA ones too (their cases
    skip without such a device, and count in the suite's total)."""
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(tdir, "test_*.py")))


def norm_result(r):
    if r == "ok":
        return "pass"
    if r.startswith("skipped"):
        return "skip"
    return {"FAIL": "fail", "ERROR": "error", "expected failure": "xfail",
            "unexpected success": "xpass"}[r]


def parse(out):
    """-> (list of dict(name, id, result, reason), ran or None)"""
    tests = []
    hdrs = list(HDR.finditer(out))
    for i, h in enumerate(hdrs):
        end = hdrs[i + 1].start() if i + 1 < len(hdrs) else len(out)
        seg = out[h.start():end]
        # the result must come before the first "=====" block of the summary
        cut = seg.find(SEP)
        if cut >= 0:
            seg = seg[:cut]
        dots = seg.find(" ... ")
        ms = list(RES.finditer(seg, dots)) if dots >= 0 else []
        m = ms[-1] if ms else None
        cls = h.group(2)
        tid = cls if cls.endswith("." + h.group(1)) else cls + "." + h.group(1)
        players = "; ".join(f"{pm.group(1)}: {pm.group(2).strip()}" for pm in PLAYER.finditer(seg)
                            if pm.group(2).strip())
        if m:
            r = m.group(1)
            reason = r[len("skipped "):].strip("'\"") if r.startswith("skipped ") else ""
            tests.append(dict(name=h.group(1), id=tid, result=norm_result(r), reason=reason,
                              players=players))
        else:
            tests.append(dict(name=h.group(1), id=tid, result="error",
                              reason="no result line (crash or timeout?)", players=players))
    # deduplicate: the FAIL:/ERROR: blocks repeat the header form
    seen, uniq = set(), []
    for t in tests:
        if t["id"] in seen:
            continue
        seen.add(t["id"])
        uniq.append(t)
    # reasons of failures/errors: last non-empty line of each block's traceback
    blocks = list(BLOCK.finditer(out))
    for i, b in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(out)
        body = out[b.end():end]
        body = body.split("-" * 70, 2)
        text = body[1] if len(body) > 1 else body[0]
        lines = [ln for ln in text.strip().splitlines() if ln.strip() and ln != SEP]
        reason = lines[-1].strip() if lines else ""
        for t in uniq:
            if t["name"] == b.group(2) and t["id"].startswith(b.group(3).rsplit(".", 1)[0]):
                if t["result"] in ("fail", "error") and not t["reason"]:
                    t["reason"] = reason[:300]
    for t in uniq:
        players = t.pop("players", "")
        if t["result"] in ("fail", "error") and players:
            t["reason"] = (t["reason"] + " [" + players + "]")[:600]
    m = RAN.search(out)
    summ = None
    s = SUMMARY.search(out, m.end()) if m else None
    if s:
        summ = {"status": s.group(1)}
        for kv in (s.group(2) or "").split(","):
            if "=" in kv:
                k, v = kv.strip().split("=")
                summ[k] = int(v)
    return uniq, (int(m.group(1)) if m else None), summ


def config_is_shared(env):
    path = env.get("DPVERBS_CONFIG")
    if not path:
        return False
    try:
        with open(path) as f:
            return json.load(f).get("mode") == "shared"
    except (OSError, ValueError):
        return False


def net_wrap(cmd, args, env, ns):
    """cmd run in namespace ns under dpverbs-run --view --netns-iface, in
    shared mode (a daemon of our own unless the configuration is shared)."""
    run = os.path.join(os.path.abspath(args.build), "apps", "dpverbs-run")
    inner = ["sh", run, "--view", "--netns-iface"] + cmd
    if not config_is_shared(env):
        inner = [WITH_DAEMON, os.path.abspath(args.build)] + \
            (["--config", env["DPVERBS_CONFIG"]] if env.get("DPVERBS_CONFIG") else []) + ["--"] + inner
    return ["ip", "netns", "exec", ns] + inner


def netns_add(ns):
    """'' or why the namespace cannot be made."""
    if not shutil.which("ip"):
        return "ip (iproute2) not installed"
    r = subprocess.run(["ip", "netns", "add", ns], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode:
        return r.stdout.decode("utf-8", "replace").strip() or f"ip netns add: status {r.returncode}"
    subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=False)
    return ""


def stop_group(p):
    """TERM to the group of the child we started (with_daemon.sh stops its
    daemon and cleans up), KILL after 10 s."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
        return p.communicate(timeout=10)[0]
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        return p.communicate()[0]
    except ProcessLookupError:
        return p.communicate()[0]


def run_module(tdir, mod, args, env):
    names = ["tests." + mod + "." + t for t in args.only.split(",")] if args.only else ["tests." + mod]
    cmd = [sys.executable, os.path.join(tdir, "run_tests.py"), "--dev", args.dev, "-v"] + names
    ns = ""
    if mod in NET_MODULES:
        ns = f"dpvpy{os.getpid()}"
        why = netns_add(ns)
        if why:
            cnt = {k: 0 for k in ("pass", "skip", "fail", "error", "xfail", "xpass")}
            cnt["error"] = 1
            return dict(module=mod, rc=None, seconds=0.0, timed_out=False, ran=None, tests=[],
                        notes=[f"needs a network namespace of its own: {why}"], counts=cnt,
                        output_tail="")
        cmd = net_wrap(cmd, args, env, ns)
        env = dict(env, DPVERBS_DROPIN=os.path.join(os.path.abspath(args.build), "compat"))
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=os.path.dirname(tdir), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = False
    try:
        out, _ = p.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        out = stop_group(p)
    finally:
        if ns:
            subprocess.run(["ip", "netns", "del", ns], check=False)
    dt = time.monotonic() - t0
    out = out.decode("utf-8", "replace")
    tests, ran, summ = parse(out)
    rec = dict(module=mod, rc=p.returncode, seconds=round(dt, 2), timed_out=timed_out,
               ran=ran, tests=tests, notes=[])
    cnt = {k: 0 for k in ("pass", "skip", "fail", "error", "xfail", "xpass")}
    for t in tests:
        cnt[t["result"]] += 1
    # a test without a result line is already counted as an error
    cut_short = any(t["reason"].startswith("no result line") for t in tests)
    if timed_out:
        rec["notes"].append(f"timed out after {args.timeout} s")
        cnt["error"] += 0 if cut_short else 1
    elif p.returncode is not None and p.returncode < 0:
        rec["notes"].append(f"killed by signal {-p.returncode}")
        cnt["error"] += 0 if cut_short else 1
    elif ran is None:
        rec["notes"].append(f"no 'Ran N tests' line (rc {p.returncode})")
        cnt["error"] += 1
    elif ran != len(tests):
        rec["notes"].append(f"Ran {ran} tests but parsed {len(tests)} results")
        if ran > len(tests):
            cnt["error"] += 1
    if summ:
        for key, res in (("skipped", "skip"), ("failures", "fail"), ("errors", "error"),
                         ("expected failures", "xfail"), ("unexpected successes", "xpass")):
            if summ.get(key, 0) != sum(1 for t in tests if t["result"] == res):
                rec["notes"].append(f"summary says {key}={summ.get(key, 0)}, parsed "
                                    f"{sum(1 for t in tests if t['result'] == res)}")
    if p.returncode not in (0, None) and cnt["fail"] + cnt["error"] + cnt["xpass"] == 0:
        rec["notes"].append(f"exit status {p.returncode} without a parsed failure")
        cnt["error"] += 1
    rundir = f"/var/run/dpdk/dpv-{p.pid}"
    if os.path.exists(rundir):
        rec["notes"].append(f"{rundir} left behind")
        shutil.rmtree(rundir, ignore_errors=True)
    rec["counts"] = cnt
    if args.keep_output:
        with open(os.path.join(args.keep_output, mod + ".log"), "w") as f:
            f.write(out)
    rec["output_tail"] = out[-4000:] if (cnt["fail"] or cnt["error"]) else ""
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="meson build directory")
    ap.add_argument("--dev", default="dpv0")
    ap.add_argument("--modules", help="comma-separated, default: " + ",".join(DEFAULT_MODULES))
    ap.add_argument("--all", action="store_true",
                    help="run every module of the suite (mlx5 and EFA ones included)")
    ap.add_argument("--report-only", action="store_true",
                    help="exit 0 whatever the results (unless the runner itself fails)")
    ap.add_argument("--min-pass", type=int, default=0, metavar="N",
                    help="fail unless at least N tests pass (a floor against lost passes)")
    ap.add_argument("--only", metavar="CLASS.TEST[,...]",
                    help="only these tests of the module(s), e.g. CMTestCase.test_rdmacm_async_traffic_external_qp")
    ap.add_argument("--json", help="write the results as JSON to this file")
    ap.add_argument("--timeout", type=int, default=300, help="per module, seconds")
    ap.add_argument("--suite", default=SUITE, help="rdma-core tests directory")
    ap.add_argument("--config", help="DPVERBS_CONFIG for the runs")
    ap.add_argument("--keep-output", metavar="DIR", help="write each module's full output here")
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-test lines")
    args = ap.parse_args()

    try:
        import pyverbs.device  # noqa: F401
    except Exception as e:  # ImportError, or the C extension failing to load
        print(f"SKIP: pyverbs not importable by {sys.executable}: {e}")
        return 77
    if not os.path.isfile(os.path.join(args.suite, "run_tests.py")):
        print(f"SKIP: rdma-core test suite not found in {args.suite}")
        return 77
    build = os.path.abspath(args.build)
    compat = os.path.join(build, "compat")
    if not os.path.exists(os.path.join(compat, "libibverbs.so.1")):
        print(f"{compat}/libibverbs.so.1 not found")
        return 2
    if args.keep_output:
        os.makedirs(args.keep_output, exist_ok=True)

    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = compat + (":" + env["LD_LIBRARY_PATH"]
                                       if env.get("LD_LIBRARY_PATH") else "")
    env.pop("PYTHONPATH", None)
    env["PYTHONUNBUFFERED"] = "1"  # keep the output up to a crash
    if args.config:
        env["DPVERBS_CONFIG"] = os.path.abspath(args.config)

    results = []
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dpv_pyverbs_") as tmp:
        tdir = prepare(args.suite, tmp)
        if args.all:
            mods = all_modules(tdir)
        elif args.modules:
            mods = [m.strip().removesuffix(".py") for m in args.modules.split(",") if m.strip()]
        else:
            mods = DEFAULT_MODULES
        for m in mods:
            if not os.path.isfile(os.path.join(tdir, m + ".py")):
                print(f"unknown module {m}")
                return 2
        for m in mods:
            rec = run_module(tdir, m, args, env)
            results.append(rec)
            c = rec["counts"]
            print(f"{m:24s} pass {c['pass']:3d}  skip {c['skip']:3d}  fail {c['fail']:3d}  "
                  f"error {c['error']:3d}  {rec['seconds']:7.2f} s"
                  + ("  [" + "; ".join(rec["notes"]) + "]" if rec["notes"] else ""),
                  flush=True)
    total_s = time.monotonic() - t_all

    # the table
    keys = ("pass", "skip", "fail", "error", "xfail", "xpass")
    tot = {k: sum(r["counts"][k] for r in results) for k in keys}
    print()
    print(f"{'module':24s} {'tests':>5s} {'pass':>5s} {'skip':>5s} {'fail':>5s} {'error':>5s} "
          f"{'xfail':>5s} {'xpass':>5s} {'secs':>7s}")
    print("-" * 78)
    for r in results:
        c = r["counts"]
        print(f"{r['module']:24s} {len(r['tests']):5d} " + " ".join(f"{c[k]:5d}" for k in keys)
              + f" {r['seconds']:7.2f}")
    print("-" * 78)
    print(f"{'TOTAL':24s} {sum(len(r['tests']) for r in results):5d} "
          + " ".join(f"{tot[k]:5d}" for k in keys) + f" {total_s:7.2f}")

    if not args.quiet:
        print()
        for r in results:
            for t in r["tests"]:
                if t["result"] in ("fail", "error", "xpass"):
                    print(f"{t['result'].upper():5s} {t['id']}: {t['reason']}")
            for n in r["notes"]:
                print(f"NOTE  {r['module']}: {n}")
        skips = {}
        for r in results:
            for t in r["tests"]:
                if t["result"] == "skip":
                    skips.setdefault(t["reason"], []).append(t["id"])
        if skips:
            print("\nskip reasons:")
            for reason, ids in sorted(skips.items(), key=lambda x: -len(x[1])):
                print(f"  {len(ids):4d} x {reason[:110]}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(build=build, dev=args.dev, all=args.all, seconds=round(total_s, 2),
                           totals=tot, modules=results), f, indent=1)

    bad = tot["fail"] + tot["error"] + tot["xpass"]
    ntests = sum(len(r["tests"]) for r in results)
    short = tot["pass"] < args.min_pass
    print(f"\n{tot['pass']} of {ntests} passed, {tot['skip']} skipped, {bad} failures/errors"
          + (f" (floor: {args.min_pass} passes)" if args.min_pass else ""))
    if args.report_only:
        print("(reported only)")
        return 0
    if short:
        print(f"FAILED: {tot['pass']} passes, fewer than the floor of {args.min_pass}")
    print(f"{'FAILED' if bad or short else 'PASSED'}: {bad} failures/errors in {len(results)} modules")
    return 1 if bad or short else 0


if __name__ == "__main__":
    sys.exit(main())
