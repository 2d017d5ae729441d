#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_sidr_capture.py PCAP SERVER_IP CLIENT_IP PORT COUNT ICRC_CHECK_PY

Checks, with tshark, what two Debian udaddy processes on dpverbs sent over
the veth link (captured with 'udp port 4791' in the server's namespace):

  * every frame: no malformed flag, no expert info of severity warning or
    error (IPv4/UDP checksum checks on), IPv4 header checksum good;
  * the CM exchange on QP 1 (DETH Q_Key 0x80010000, source QP 1), MAD
    class 7 (CM) version 2, method Send: SIDR_REQ (0x0017) client ->
    server with service ID 0x01110000 + PORT (RDMA_PS_UDP) and the rdma_cm
    IP header (version 0, IPv4, the client's address then the server's) at
    the start of its private data; SIDR_REP (0x0018) server -> client with
    the same request ID, TID and service ID, status 0, Q_Key 0x01234567
    (RDMA_UDP_QKEY) and a QPN;
  * the data: COUNT UD SENDs (with immediate, opcode 0x65) client ->
    server to the QPN of the SIDR_REP with Q_Key 0x01234567, and COUNT
    back (Q_Key 0x01234567);
  * icrc_check.py --expect 0x64,0x65: every ICRC recomputed.
Prints "N passed, N failed"; exit 1 on a failure, 77 without tshark.
"""
import shutil
import subprocess
import sys

SEV_WARN = 0x600000
FIELDS = ["frame.number", "ip.src", "ip.dst", "ip.checksum.status", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.deth.q_key", "infiniband.deth.srcqp",
          "infiniband.mad.mgmtclass", "infiniband.mad.classversion", "infiniband.mad.method",
          "infiniband.mad.transactionid", "infiniband.mad.attributeid", "infiniband.mad.data",
          "_ws.malformed", "_ws.expert.severity", "_ws.expert.message"]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")
    return cond


def num(s):
    s = s.split(",")[0]
    return int(s, 0) if s else -1


def ip4(s):
    return bytes(int(x) for x in s.split("."))


def frames(pcap):
    cmd = ["tshark", "-r", pcap, "-n", "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
           "-T", "fields", "-E", "separator=|", "-E", "occurrence=a"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True)
    check(out.returncode == 0, f"tshark exit {out.returncode}: {out.stderr.strip()}")
    rows = [r.split("|") for r in out.stdout.splitlines() if r.strip()]
    return [dict(zip(FIELDS, r + [""] * (len(FIELDS) - len(r)))) for r in rows]


def check_cm(v, srv, cli, port):
    """One CM frame; returns (attr, request ID, TID, data bytes)."""
    n = v["frame.number"]
    check(num(v["infiniband.deth.q_key"]) == 0x80010000 and num(v["infiniband.deth.srcqp"]) == 1,
          f"frame {n}: GSI Q_Key and source QP 1")
    check(num(v["infiniband.mad.mgmtclass"]) == 7 and num(v["infiniband.mad.classversion"]) == 2 and
          num(v["infiniband.mad.method"]) == 3, f"frame {n}: CM class 7 v2, method Send")
    attr = num(v["infiniband.mad.attributeid"])
    d = bytes.fromhex(v["infiniband.mad.data"].replace(":", ""))
    if not check(len(d) == 232, f"frame {n}: {len(d)} bytes of CM data"):
        return attr, -1, -1, d
    sid = 0x01110000 + port
    if attr == 0x0017:
        check(v["ip.src"] == cli and v["ip.dst"] == srv, f"frame {n}: SIDR_REQ client -> server")
        check(int.from_bytes(d[8:16], "big") == sid, f"frame {n}: SIDR_REQ service ID {d[8:16].hex()}")
        pd = d[16:]
        check(pd[0] == 0 and pd[1] == 0x40 and pd[16:20] == ip4(cli) and pd[32:36] == ip4(srv) and
              pd[4:16] == bytes(12) and pd[20:32] == bytes(12),
              f"frame {n}: rdma_cm IPv4 header {pd[:36].hex()}")
    elif attr == 0x0018:
        check(v["ip.src"] == srv and v["ip.dst"] == cli, f"frame {n}: SIDR_REP server -> client")
        check(d[4] == 0, f"frame {n}: SIDR_REP status {d[4]}")
        check(int.from_bytes(d[12:20], "big") == sid, f"frame {n}: SIDR_REP service ID")
        check(int.from_bytes(d[20:24], "big") == 0x01234567, f"frame {n}: SIDR_REP Q_Key {d[20:24].hex()}")
    else:
        check(False, f"frame {n}: CM attribute {attr:#x}, not SIDR")
    return attr, int.from_bytes(d[0:4], "big"), num(v["infiniband.mad.transactionid"]), d


def main():
    if len(sys.argv) != 7:
        print(__doc__)
        return 2
    pcap, srv, cli, port, count, verify = sys.argv[1:]
    port, count = int(port), int(count)
    if shutil.which("tshark") is None:
        print("tshark not installed")
        return 77
    reqs, reps, data = [], [], {"c2s": [], "s2c": []}
    for v in frames(pcap):
        n = v["frame.number"]
        check(v["_ws.malformed"] == "", f"frame {n}: malformed")
        sev = [int(x, 0) for x in v["_ws.expert.severity"].split(",") if x]
        check(all(s < SEV_WARN for s in sev), f"frame {n}: expert {v['_ws.expert.message']!r}")
        check(num(v["ip.checksum.status"]) == 1, f"frame {n}: IPv4 checksum")
        if num(v["infiniband.bth.destqp"]) == 1:
            r = check_cm(v, srv, cli, port)
            (reqs if r[0] == 0x0017 else reps).append(r)
        else:
            key = "c2s" if v["ip.src"] == cli else "s2c"
            data[key].append((num(v["infiniband.bth.opcode"]), num(v["infiniband.bth.destqp"]),
                              num(v["infiniband.deth.q_key"])))
    check(len(reqs) >= 1 and len(reps) >= 1, f"{len(reqs)} SIDR_REQ, {len(reps)} SIDR_REP captured")
    if reqs and reps:
        check(reps[-1][1] == reqs[-1][1] and reps[-1][2] == reqs[-1][2],
              "SIDR_REP answers the SIDR_REQ (request ID, TID)")
        qpn = int.from_bytes(reps[-1][3][8:11], "big")
        c2s = data["c2s"]
        check(len(c2s) == count and all(d == (0x65, qpn, 0x01234567) for d in c2s),
              f"{len(c2s)} UD SEND with immediate client -> server QPN {qpn:#x}, Q_Key RDMA_UDP_QKEY: {c2s[:2]}")
        s2c = data["s2c"]
        check(len(s2c) == count and all(d[0] == 0x65 and d[2] == 0x01234567 for d in s2c),
              f"{len(s2c)} UD SEND with immediate server -> client, Q_Key RDMA_UDP_QKEY")
    total = len(reqs) + len(reps) + len(data["c2s"]) + len(data["s2c"])
    vr = subprocess.run([sys.executable, verify, "--expect", "0x64,0x65", pcap], capture_output=True, text=True)
    print(vr.stdout.strip())
    check(vr.returncode == 0 and f"{total} RoCEv2 packets, {total} ICRC ok, 0 bad" in vr.stdout,
          f"icrc_check.py over {total} frames: {vr.stdout.strip()} {vr.stderr.strip()}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
