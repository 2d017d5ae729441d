#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_cm_capture.py PCAP PORT CLOSED_PORT

Checks, with tshark, the IB CM exchange two dpverbs processes sent over the
veth link while rping connected (captured with 'udp port 4791'; see
rdmacm_veth.sh): first a connect to CLOSED_PORT (nothing listens: REJ),
then rping -c to PORT (REQ, REP, RTU, ... DREQ, DREP).

Every frame to or from QP 1 must decode in Wireshark as a clean CM MAD:
  * RoCEv2 "UD Send Only" (BTH opcode 0x64) with a DETH whose Q_Key is
    0x80010000 (the GSI Q_Key) and whose source QP is 1, destination QP 1;
  * MAD base version 1, management class 0x07 (CM), class version 2,
    method Send (0x03), status 0, an attribute ID of a CM message
    (REQ 0x10, MRA 0x11, REJ 0x12, REP 0x13, RTU 0x14, DREQ 0x15,
    DREP 0x16); Wireshark names the message in the Info column;
  * no malformed flag and no expert info of severity warning or error,
    with the IPv4 and UDP checksums verified (UDP checksum good or 0).
Every other frame (the RC traffic of rping) must be free of malformed flags
and expert warnings too (with Wireshark's heuristic RPC-over-RDMA dissector
disabled: rping's payloads are not RPC).

The messages: at least 2 REQ, 1 REP, 1 RTU, 1 DREQ, 1 DREP and 1 REJ;
each REQ's service ID is the RDMA CM IP service ID (prefix 0x0000000001,
protocol 0x06 TCP, the destination port), its private data the RDMA CM IP
header (version 4, source/destination IPs = the frame's IPv4 addresses);
one REQ to PORT and one to CLOSED_PORT; the REJ answers the REQ to
CLOSED_PORT with reason 8 (invalid service ID, as Linux's ib_cm), and its
remote communication ID is that REQ's local one; the REP and RTU carry the
communication IDs of the REQ to PORT.
Prints one line per CM MAD. Exit 1 on any failure, 77 if tshark is missing.
"""
import shutil
import subprocess
import sys

SEV_WARN = 0x600000
CM_ATTRS = {0x10: "REQ", 0x11: "MRA", 0x12: "REJ", 0x13: "REP", 0x14: "RTU",
            0x15: "DREQ", 0x16: "DREP"}
FIELDS = ["frame.number", "ip.src", "ip.dst", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.deth.q_key", "infiniband.deth.srcqp",
          "infiniband.mad.baseversion", "infiniband.mad.mgmtclass",
          "infiniband.mad.classversion", "infiniband.mad.method",
          "infiniband.mad.status", "infiniband.mad.attributeid",
          "infiniband.cm.req", "infiniband.cm.req.serviceid.prefix",
          "infiniband.cm.req.serviceid.protocol", "infiniband.cm.req.serviceid.dport",
          "infiniband.cm.req.ip_cm.ipv", "infiniband.cm.req.ip_cm.sip4",
          "infiniband.cm.req.ip_cm.dip4",
          "infiniband.cm.rep", "infiniband.cm.rep.remotecommid",
          "infiniband.cm.rtu.localcommid", "infiniband.cm.rtu.remotecommid",
          "infiniband.cm.rej.remotecommid", "infiniband.cm.rej.reason",
          "_ws.malformed", "_ws.expert.severity", "_ws.expert.message",
          "ip.checksum.status", "udp.checksum.status", "udp.checksum", "_ws.col.Info"]


def num(s):
    s = s.split(",")[0].strip()
    if s == "":
        return None
    try:
        return int(s, 0)
    except ValueError:
        return int(s, 16)  # byte fields print as bare hex ("0000000001")


def rows(tshark, pcap):
    # the RC payloads are rping's, not RPC over RDMA: Wireshark 4.0's
    # heuristic rpcordma dissector flags short ones as malformed (it does so
    # in Linux rxe's own capture, test/data/wire/rdma_cm_send.pcap, too)
    cmd = [tshark, "-r", pcap, "-n", "--disable-protocol", "rpcordma", "-o", "ip.check_checksum:TRUE",
           "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=\t",
           "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"tshark failed: {out.stderr.strip()}")
    for line in out.stdout.splitlines():
        vals = line.split("\t")
        vals += [""] * (len(FIELDS) - len(vals))
        yield dict(zip(FIELDS, vals))


def frame_errors(r):
    errs = []
    if r["_ws.malformed"]:
        errs.append("malformed")
    sev = [num(s) for s in r["_ws.expert.severity"].split(",") if s.strip()]
    if any(s is not None and s >= SEV_WARN for s in sev):
        errs.append(f"expert: {r['_ws.expert.message']}")
    if r["ip.checksum.status"] and num(r["ip.checksum.status"]) != 1:
        errs.append("IPv4 checksum not good")
    if num(r["udp.checksum"]) and r["udp.checksum.status"] and num(r["udp.checksum.status"]) != 1:
        errs.append("UDP checksum not good")
    return errs


def check_mad(r):
    errs = []
    want = {"infiniband.bth.opcode": 0x64, "infiniband.deth.q_key": 0x80010000,
            "infiniband.deth.srcqp": 1, "infiniband.bth.destqp": 1,
            "infiniband.mad.baseversion": 1, "infiniband.mad.mgmtclass": 0x07,
            "infiniband.mad.classversion": 2, "infiniband.mad.method": 0x03,
            "infiniband.mad.status": 0}
    for f, v in want.items():
        if num(r[f]) != v:
            errs.append(f"{f} = {r[f] or '(absent)'}, want {v:#x}")
    attr = num(r["infiniband.mad.attributeid"])
    if attr not in CM_ATTRS:
        errs.append(f"attribute ID {r['infiniband.mad.attributeid'] or '(absent)'} is no CM message")
    elif "CM:" not in r["_ws.col.Info"]:
        errs.append(f"Info column '{r['_ws.col.Info']}' does not name a CM message")
    return errs


def check_req(r, errs):
    if num(r["infiniband.cm.req.serviceid.prefix"]) != 1:
        errs.append(f"REQ service ID prefix {r['infiniband.cm.req.serviceid.prefix']}")
    if num(r["infiniband.cm.req.serviceid.protocol"]) != 0x06:
        errs.append(f"REQ service ID protocol {r['infiniband.cm.req.serviceid.protocol']}")
    if num(r["infiniband.cm.req.ip_cm.ipv"]) != 4:
        errs.append(f"REQ RDMA CM IP version {r['infiniband.cm.req.ip_cm.ipv'] or '(absent)'}")
    if r["infiniband.cm.req.ip_cm.sip4"] != r["ip.src"] or r["infiniband.cm.req.ip_cm.dip4"] != r["ip.dst"]:
        errs.append(f"REQ RDMA CM IPs {r['infiniband.cm.req.ip_cm.sip4']} -> "
                    f"{r['infiniband.cm.req.ip_cm.dip4']}, frame {r['ip.src']} -> {r['ip.dst']}")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    pcap, port, closed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    tshark = shutil.which("tshark")
    if not tshark:
        print("tshark missing")
        return 77
    fails, seen, reqs = [], {}, {}
    rej, rep, rtu, nframes = [], [], [], 0
    for r in rows(tshark, pcap):
        nframes += 1
        fno = r["frame.number"]
        errs = frame_errors(r)
        gsi = num(r["infiniband.bth.destqp"]) == 1 or num(r["infiniband.deth.srcqp"]) == 1
        if gsi:
            errs += check_mad(r)
            name = CM_ATTRS.get(num(r["infiniband.mad.attributeid"]), "?")
            seen[name] = seen.get(name, 0) + 1
            if name == "REQ":
                check_req(r, errs)
                reqs.setdefault(num(r["infiniband.cm.req.serviceid.dport"]), []).append(
                    num(r["infiniband.cm.req"]))
            elif name == "REJ":
                rej.append((num(r["infiniband.cm.rej.remotecommid"]), num(r["infiniband.cm.rej.reason"])))
            elif name == "REP":
                rep.append((num(r["infiniband.cm.rep"]), num(r["infiniband.cm.rep.remotecommid"])))
            elif name == "RTU":
                rtu.append((num(r["infiniband.cm.rtu.localcommid"]), num(r["infiniband.cm.rtu.remotecommid"])))
            print(f"  frame {fno}: {r['ip.src']} -> {r['ip.dst']} {name} ({r['_ws.col.Info']})"
                  f"{' ERRORS: ' + '; '.join(errs) if errs else ''}")
        if errs:
            fails.append(f"frame {fno}: {'; '.join(errs)}")
    print(f"{nframes} RoCEv2 frames, CM MADs: " + ", ".join(f"{k} {v}" for k, v in sorted(seen.items())))
    for name, least in (("REQ", 2), ("REP", 1), ("RTU", 1), ("DREQ", 1), ("DREP", 1), ("REJ", 1)):
        if seen.get(name, 0) < least:
            fails.append(f"{seen.get(name, 0)} {name}, want at least {least}")
    if port not in reqs or closed not in reqs:
        fails.append(f"REQs to ports {sorted(k for k in reqs if k is not None)}, want {port} and {closed}")
    else:
        closed_ids = set(reqs[closed])
        if not any(cid in closed_ids and reason == 8 for cid, reason in rej):
            fails.append(f"no REJ reason 8 answering the REQ to port {closed} (REJs: {rej})")
        open_ids = set(reqs[port])
        if not any(remote in open_ids for _, remote in rep):
            fails.append(f"no REP answering the REQ to port {port}")
        rep_ids = {(loc, rem) for loc, rem in rep}
        if not any((rem, loc) in rep_ids for loc, rem in rtu):
            fails.append("no RTU with the REP's communication IDs")
    for f in fails:
        print(f"FAIL: {f}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
