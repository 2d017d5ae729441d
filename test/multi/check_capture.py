#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_capture.py PCAP ITERS SERVER_OUT CLIENT_OUT [ARP_PCAP]

Checks, with tshark, the RoCEv2 packets that two ibv_ud_pingpong processes on
dpverbs sent over the veth link (captured with 'udp port 4791'):

  * every packet decodes as RoCE (infiniband) "UD Send Only" (BTH opcode
    0x64) with a DETH, Q_Key 0x11111111 (ibv_ud_pingpong's), the source QP
    and destination QP the two processes printed, P_Key 0xffff, tver 0;
  * no malformed flag and no expert info of severity warning or error, with
    IPv4 and UDP checksum verification enabled; IPv4 header checksum good;
    UDP checksum good or absent (0, allowed by RoCEv2);
  * ITERS packets in each direction between 198.51.100.1 and .2 (plus at
    most a few more: ibv_ud_pingpong posts one extra receive-side send in
    some versions) - reported, and a failure if fewer than ITERS;
  * PSNs of each direction consecutive.

With ARP_PCAP (captured with 'arp or icmp'): reports who answered ARP for
the dpverbs addresses and whether the kernel sent any ICMP; fails if any
ICMP destination unreachable refers to the RoCE traffic.
Exit 77 if tshark is missing.
"""
import re
import shutil
import subprocess
import sys

SEV_WARN = 0x600000
FIELDS = ["frame.number", "ip.src", "ip.dst", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.p_key",
          "infiniband.bth.tver", "infiniband.deth.q_key", "infiniband.deth.srcqp",
          "infiniband.invariant.crc", "_ws.malformed", "_ws.expert.severity",
          "_ws.expert.message", "ip.checksum.status", "udp.checksum.status",
          "udp.dstport", "_ws.col.Info"]


def qpns(path):
    """(local QPN, remote QPN) printed by ibv_ud_pingpong"""
    txt = open(path, errors="replace").read()
    loc = re.search(r"local address:.*QPN (0x[0-9a-f]+)", txt)
    rem = re.search(r"remote address:.*QPN (0x[0-9a-f]+)", txt)
    return (int(loc.group(1), 16) if loc else None, int(rem.group(1), 16) if rem else None)


def num(s):
    s = s.split(",")[0].strip()
    if s == "":
        return None
    return int(s, 0)


def main():
    if len(sys.argv) not in (5, 6):
        print(__doc__)
        return 2
    pcap, iters, srv_out, cli_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    tshark = shutil.which("tshark")
    if not tshark:
        print("SKIP: tshark not installed")
        return 77
    fails = []
    s_loc, s_rem = qpns(srv_out)
    c_loc, c_rem = qpns(cli_out)
    # server = 198.51.100.1 (veth-a.json), client = 198.51.100.2
    src_qp = {"198.51.100.1": s_loc, "198.51.100.2": c_loc}
    dst_qp = {"198.51.100.1": s_rem, "198.51.100.2": c_rem}

    cmd = [tshark, "-r", pcap, "-n", "-o", "ip.check_checksum:TRUE",
           "-o", "udp.check_checksum:TRUE", "-o", "udp.ignore_ipv6_zero_checksum:TRUE",
           "-T", "fields", "-E", "separator=|", "-E", "occurrence=a"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        fails.append(f"tshark exit {out.returncode}: {out.stderr.strip()}")
    rows = [dict(zip(FIELDS, r.split("|") + [""] * len(FIELDS)))
            for r in out.stdout.splitlines() if r.strip()]
    per_dir, last_psn, bad_examples = {}, {}, 0
    info = {}
    for v in rows:
        n = v["frame.number"]
        problems = []
        if num(v["udp.dstport"]) != 4791:
            problems.append(f"UDP dst port {v['udp.dstport']}")
        if num(v["infiniband.bth.opcode"]) != 0x64:
            problems.append(f"opcode {v['infiniband.bth.opcode']!r} (not UD Send Only 0x64)")
        if "UD Send Only" not in v["_ws.col.Info"]:
            problems.append(f"info column {v['_ws.col.Info']!r}")
        if num(v["infiniband.deth.q_key"]) != 0x11111111:
            problems.append(f"Q_Key {v['infiniband.deth.q_key']!r}")
        if num(v["infiniband.bth.p_key"]) != 0xffff:
            problems.append(f"P_Key {v['infiniband.bth.p_key']!r}")
        if num(v["infiniband.bth.tver"]) != 0:
            problems.append(f"tver {v['infiniband.bth.tver']!r}")
        if v["infiniband.invariant.crc"] == "":
            problems.append("no Invariant CRC decoded")
        if v["_ws.malformed"]:
            problems.append(f"malformed {v['_ws.malformed']!r}")
        sev = [int(x, 0) for x in v["_ws.expert.severity"].split(",") if x]
        if any(s >= SEV_WARN for s in sev):
            problems.append(f"expert {v['_ws.expert.message']!r}")
        if v["ip.src"] and num(v["ip.checksum.status"]) != 1:
            problems.append(f"IPv4 checksum status {v['ip.checksum.status']!r}")
        if num(v["udp.checksum.status"]) not in (1, 3):
            problems.append(f"UDP checksum status {v['udp.checksum.status']!r}")
        src, dst = v["ip.src"], v["ip.dst"]
        if src not in src_qp or dst not in src_qp or src == dst:
            problems.append(f"addresses {src} -> {dst}")
        else:
            if src_qp[src] is not None and num(v["infiniband.deth.srcqp"]) != src_qp[src]:
                problems.append(f"DETH SrcQP {v['infiniband.deth.srcqp']} != {src_qp[src]:#x}")
            if dst_qp[src] is not None and num(v["infiniband.bth.destqp"]) != dst_qp[src]:
                problems.append(f"DestQP {v['infiniband.bth.destqp']} != {dst_qp[src]:#x}")
            per_dir[src] = per_dir.get(src, 0) + 1
            psn = num(v["infiniband.bth.psn"])
            if src in last_psn and psn is not None and psn != (last_psn[src] + 1) & 0xffffff:
                info.setdefault("psn_gaps", []).append((src, last_psn[src], psn))
            last_psn[src] = psn
        if problems:
            bad_examples += 1
            if bad_examples <= 10:
                fails.append(f"frame {n}: " + "; ".join(problems))
    if bad_examples > 10:
        fails.append(f"... {bad_examples} bad frames in all")
    print(f"{pcap}: {len(rows)} RoCEv2 frames, {len(rows) - bad_examples} fully valid; "
          f"per source: {per_dir}")
    for src in src_qp:
        c = per_dir.get(src, 0)
        if c < iters:
            fails.append(f"only {c} frames from {src}, expected >= {iters}")
    gaps = info.get("psn_gaps", [])
    if gaps:
        fails.append(f"{len(gaps)} PSN discontinuities, first {gaps[:3]}")

    if len(sys.argv) == 6:
        arp = subprocess.run([tshark, "-r", sys.argv[5], "-n", "-T", "fields", "-E", "separator=|",
                              "-e", "eth.src", "-e", "arp.opcode", "-e", "arp.src.proto_ipv4",
                              "-e", "arp.dst.proto_ipv4", "-e", "icmp.type", "-e", "icmp.code",
                              "-e", "ip.src", "-e", "udp.dstport"],
                             capture_output=True, text=True)
        seen = {}
        for r in arp.stdout.splitlines():
            f = r.split("|")
            if f[1] == "1":
                key = f"ARP who-has {f[3]} tell {f[2]}"
            elif f[1] == "2":
                key = f"ARP reply {f[2]} is-at {f[0]}"
            elif f[4]:
                key = f"ICMP type {f[4]} code {f[5]} from {f[6]} (inner udp dport {f[7]})"
                if f[4] == "3" and "4791" in f[7]:
                    fails.append(f"kernel sent ICMP unreachable for RoCE traffic: {key}")
            else:
                key = r
            seen[key] = seen.get(key, 0) + 1
        print(f"{sys.argv[5]}: ARP/ICMP on dpv-veth-a:")
        for k, c in sorted(seen.items()):
            print(f"    {c:5d} x {k}")
        for ip in ("198.51.100.1", "198.51.100.2"):
            req = sum(c for k, c in seen.items() if k.startswith(f"ARP who-has {ip} "))
            rep = sum(c for k, c in seen.items() if k.startswith(f"ARP reply {ip} "))
            if rep > req:
                fails.append(f"{rep} ARP replies for {ip} to {req} requests: someone else "
                             "(the kernel?) answers for the dpverbs address")

    for f in fails:
        print("FAIL:", f)
    print("PASS" if not fails else "FAILED")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
