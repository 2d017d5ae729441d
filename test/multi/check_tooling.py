#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_tooling.py telemetry TEL1 TEL2 SERVER_OUT CONFIG
   check_tooling.py capture PCAP MIN_FRAMES SERVER_OUT CLIENT_OUT [ONLY_SRC]

Checks for tooling.sh (DPDK's own tools on a running ibv_rc_pingpong server).

telemetry: TEL1 and TEL2 are what `dpdk-telemetry.py -f <prefix>` printed
(one JSON object per command) for the command lists of tooling.sh, TEL2 a
few seconds after TEL1. Asserts:
  * "/" lists the dpverbs commands (/dpverbs/info, ports, port, fault, qps, qp);
  * /dpverbs/info names the server's configuration file, driver "sw";
  * /dpverbs/ports is ["dpv0"]; /dpverbs/port,dpv0 has every frame counter,
    every drop reason (drop_<reason>, summing to "drops") and every transport
    counter, with RoCE traffic both ways, RC ACKs, and rx_roce growing from
    TEL1 to TEL2 (the counters are live); a memif port reports its shared
    regions faulted in at link up (memif_prefault_kib > 0);
  * /dpverbs/qps lists the server's QP (the QPN it printed) as "RC RTS dpv0";
    /dpverbs/qp,<qpn> shows type RC, state RTS, the client's QPN as dest_qp,
    packets sent and received, and no more than the port counted;
  * invalid parameters give null (/dpverbs/qp,0, /dpverbs/port,nosuch);
  * /dpverbs/fault shows fault injection off; DPDK's own /ethdev/stats,0
    counts received packets (EAL telemetry itself is on).

capture: PCAP is what dpdk-dumpcap wrote. Asserts, with tshark (IPv4 and
UDP checksum verification on): at least MIN_FRAMES frames, every frame
Ethernet/IPv4/UDP to port 4791 decoded as InfiniBand (RoCEv2), no
malformed flag, no expert info of severity warning or error, good IPv4
header checksum, UDP checksum good or absent, an RC opcode (SEND
FIRST/MIDDLE/LAST/ONLY, ACK), a destination QP of one of the two
processes, frames in both directions, and an ICRC that this script
recomputes (IBA A17.3.3, independently of dpverbs and of tshark).
With ONLY_SRC (a capture made with the filter "src host ONLY_SRC"): every
frame comes from ONLY_SRC instead of both directions.
Exit 77 if tshark is missing.
"""
import json
import re
import shutil
import struct
import subprocess
import sys
import zlib

DROPS = ["not_roce", "short", "bad_ip", "bad_udp", "bad_opcode", "bad_tver", "bad_pad",
         "bad_icrc", "not_for_us", "no_qp", "qp_state", "bad_qkey", "bad_pkey",
         "bad_transport", "no_recv_wqe", "neigh", "tx_full", "nomem", "fault", "link_down",
         "gsi_unanswered", "gsi_rate_limited"]
CNTS = ["sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "send_rnr_nak",
        "rcvd_rnr_nak", "send_seq_nak", "rcvd_seq_err", "completer_retry_err",
        "retry_exceeded_err", "retry_rnr_exceeded_err", "ack_deferred", "ack_sent",
        "ack_rcvd", "nak_sent", "nak_rcvd", "duplicate_response", "tail_loss_probe",
        "cm_fallback_reply", "cq_overrun"]
FRAME = ["rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "rx_roce", "tx_roce", "rx_loopback",
         "tx_loopback", "arp_rx", "arp_tx", "nd_rx", "nd_tx"]
RC_OPS = {0x00, 0x01, 0x02, 0x04, 0x11}  # SEND FIRST/MIDDLE/LAST/ONLY, ACKNOWLEDGE
SEV_WARN = 0x600000

fails = []


def check(cond, msg):
    if not cond:
        fails.append(msg)
    return cond


def replies_in_order(path):
    """[(command, reply)] from dpdk-telemetry.py output (JSON objects)"""
    text = open(path, errors="replace").read()
    dec, pos, out = json.JSONDecoder(), 0, []
    while True:
        start = text.find("{", pos)
        if start < 0:
            return out
        try:
            obj, pos = dec.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        if isinstance(obj, dict):
            out.extend(obj.items())


def replies(path):
    """{command: first reply}"""
    out = {}
    for k, v in replies_in_order(path):
        out.setdefault(k, v)
    return out


def qpns(path):
    """(local QPN, remote QPN) printed by ibv_rc_pingpong"""
    txt = open(path, errors="replace").read()
    loc = re.search(r"local address:.*QPN (0x[0-9a-f]+)", txt)
    rem = re.search(r"remote address:.*QPN (0x[0-9a-f]+)", txt)
    return (int(loc.group(1), 16) if loc else None, int(rem.group(1), 16) if rem else None)


def check_port(p, tag):
    if not check(isinstance(p, dict), f"{tag}: /dpverbs/port,dpv0 gave {p!r}"):
        return
    for k in FRAME + CNTS + ["drops"] + ["drop_" + d for d in DROPS]:
        check(isinstance(p.get(k), int) and p[k] >= 0, f"{tag}: port counter {k} = {p.get(k)!r}")
    if fails:
        return
    check(p["name"] == "dpv0" and p["link_up"] == 1, f"{tag}: port identity {p}")
    # a memif port's shared buffers were faulted in when its link came up
    if p.get("pmd") == "net_memif":
        check(isinstance(p.get("memif_prefault_kib"), int) and p["memif_prefault_kib"] > 0,
              f"{tag}: memif regions not faulted in at link up: {p.get('memif_prefault_kib')!r}")
    check(p["drops"] == sum(p["drop_" + d] for d in DROPS), f"{tag}: drops != sum of drop_*")
    check(p["rx_roce"] > 0 and p["tx_roce"] > 0, f"{tag}: no RoCE traffic: {p}")
    check(p["rx_pkts"] >= p["rx_roce"], f"{tag}: rx_pkts < rx_roce")
    check(p["sent_pkts"] > 0 and p["rcvd_pkts"] > 0, f"{tag}: transport counters zero")
    check(p["ack_sent"] + p["ack_rcvd"] > 0, f"{tag}: no RC ACKs counted")
    check(p["arp_rx"] + p["arp_tx"] > 0, f"{tag}: no ARP counted (GID index 1 is IPv4)")


def check_telemetry(tel1, tel2, server_out, config):
    a, b = replies(tel1), replies(tel2)
    loc, rem = qpns(server_out)
    check(loc is not None and rem is not None, f"{server_out}: no QPNs printed")
    cmds = a.get("/") or []
    for c in ["/dpverbs/info", "/dpverbs/ports", "/dpverbs/port", "/dpverbs/fault",
              "/dpverbs/qps", "/dpverbs/qp"]:
        check(c in cmds, f"telemetry command {c} not registered")
    info = a.get("/dpverbs/info") or {}
    check(info.get("config") == config and info.get("driver") == "sw",
          f"/dpverbs/info: {info}")
    check(a.get("/dpverbs/ports") == ["dpv0"], f"/dpverbs/ports: {a.get('/dpverbs/ports')!r}")
    check_port(a.get("/dpverbs/port"), "first query")
    check_port(b.get("/dpverbs/port"), "second query")
    pa, pb = a.get("/dpverbs/port") or {}, b.get("/dpverbs/port") or {}
    if isinstance(pa, dict) and isinstance(pb, dict) and "rx_roce" in pa and "rx_roce" in pb:
        check(pb["rx_roce"] > pa["rx_roce"], f"rx_roce did not grow: {pa['rx_roce']} -> "
              f"{pb['rx_roce']}")
    qps = a.get("/dpverbs/qps")
    if loc is not None:
        check(qps == {str(loc): "RC RTS dpv0"}, f"/dpverbs/qps: {qps!r}, expected QPN {loc}")
    qp = b.get("/dpverbs/qp")
    if check(isinstance(qp, dict), f"/dpverbs/qp,{loc}: {qp!r}"):
        check(qp.get("qpn") == loc and qp.get("type") == "RC" and qp.get("state") == "RTS" and
              qp.get("port") == "dpv0", f"/dpverbs/qp identity: {qp}")
        check(qp.get("dest_qp") == rem, f"/dpverbs/qp dest_qp {qp.get('dest_qp')} != {rem}")
        for k in CNTS + ["tx_pkts", "rx_pkts", "rx_drops", "sq_psn", "rq_psn", "cwnd"]:
            check(isinstance(qp.get(k), int), f"/dpverbs/qp: {k} = {qp.get(k)!r}")
        if not fails and isinstance(pb, dict) and "sent_pkts" in pb:
            check(qp["sent_pkts"] > 0 and qp["rcvd_pkts"] > 0, f"/dpverbs/qp counters: {qp}")
            # the QP was read before the port, and the port counts its QP's packets
            check(qp["sent_pkts"] <= pb["sent_pkts"] + 1, "QP sent_pkts > port sent_pkts")
    bad = replies_in_order(tel2)
    check(bad[-2:] == [("/dpverbs/qp", None), ("/dpverbs/port", None)],
          f"invalid parameters: last replies {bad[-2:]!r}, expected null, null")
    fault = a.get("/dpverbs/fault") or {}
    check(fault.get("enabled") == 0 and fault.get("dropped") == 0, f"/dpverbs/fault: {fault}")
    st = a.get("/ethdev/stats") or {}
    check(isinstance(st.get("ipackets"), int) and st["ipackets"] > 0, f"/ethdev/stats,0: {st}")


def icrc_ok(frame):
    """Recompute the RoCEv2 ICRC of an Ethernet/IPv4/UDP/BTH frame (IBA A17.3.3)."""
    if len(frame) < 14 + 20 + 8 + 12 + 4 or frame[12:14] != b"\x08\x00":
        return False
    ihl = (frame[14] & 0x0f) * 4
    ip = bytearray(frame[14:14 + ihl])
    ip[1] = 0xff                # type of service
    ip[8] = 0xff                # TTL
    ip[10:12] = b"\xff\xff"     # header checksum
    udp = bytearray(frame[14 + ihl:14 + ihl + 8])
    udp[6:8] = b"\xff\xff"      # checksum
    ip_len = struct.unpack("!H", frame[16:18])[0]
    rest = bytearray(frame[14 + ihl + 8:14 + ip_len - 4])
    rest[4] = 0xff              # BTH resv8a
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(rest))
    return struct.pack("<I", crc) == frame[14 + ip_len - 4:14 + ip_len]


def num(s):
    s = s.split(",")[0].strip()
    return int(s, 0) if s else None


def check_capture(pcap, min_frames, server_out, client_out, only_src=None):
    tshark = shutil.which("tshark")
    if not tshark:
        print("SKIP: tshark not installed")
        return 77
    s_loc, _ = qpns(server_out)
    c_loc, _ = qpns(client_out)
    fields = ["frame.number", "frame.protocols", "ip.src", "udp.dstport",
              "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.invariant.crc",
              "_ws.malformed", "_ws.expert.severity", "_ws.expert.message",
              "ip.checksum.status", "udp.checksum.status", "data.data"]
    cmd = [tshark, "-r", pcap, "-n", "-o", "ip.check_checksum:TRUE",
           "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|",
           "-E", "occurrence=a"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True)
    check(out.returncode == 0, f"tshark exit {out.returncode}: {out.stderr.strip()}")
    raw = subprocess.run([tshark, "-r", pcap, "-n", "-x", "-T", "json"], capture_output=True,
                         text=True)
    frames = []
    try:
        for pkt in json.loads(raw.stdout or "[]"):
            hexs = pkt["_source"]["layers"].get("frame_raw")
            frames.append(bytes.fromhex(hexs[0] if isinstance(hexs, list) else hexs))
    except (ValueError, KeyError) as e:
        fails.append(f"tshark -x -T json: {e}")
    rows = [dict(zip(fields, r.split("|") + [""] * len(fields)))
            for r in out.stdout.splitlines() if r.strip()]
    check(len(rows) >= min_frames, f"{len(rows)} frames captured, expected >= {min_frames}")
    check(len(frames) == len(rows), f"{len(frames)} raw frames for {len(rows)} decoded")
    bad, srcs, ops = 0, {}, {}
    for i, v in enumerate(rows):
        problems = []
        if not v["frame.protocols"].startswith("eth:ethertype:ip:udp:infiniband"):
            problems.append(f"protocols {v['frame.protocols']!r}")
        if num(v["udp.dstport"]) != 4791:
            problems.append(f"UDP dst port {v['udp.dstport']!r}")
        op = num(v["infiniband.bth.opcode"])
        ops[op] = ops.get(op, 0) + 1
        if op not in RC_OPS:
            problems.append(f"opcode {v['infiniband.bth.opcode']!r}")
        if num(v["infiniband.bth.destqp"]) not in (s_loc, c_loc):
            problems.append(f"DestQP {v['infiniband.bth.destqp']!r}")
        if v["infiniband.invariant.crc"] == "":
            problems.append("no Invariant CRC decoded")
        if v["_ws.malformed"]:
            problems.append(f"malformed {v['_ws.malformed']!r}")
        sev = [int(x, 0) for x in v["_ws.expert.severity"].split(",") if x]
        if any(s >= SEV_WARN for s in sev):
            problems.append(f"expert {v['_ws.expert.message']!r}")
        if num(v["ip.checksum.status"]) != 1:
            problems.append(f"IPv4 checksum status {v['ip.checksum.status']!r}")
        if num(v["udp.checksum.status"]) not in (1, 3):
            problems.append(f"UDP checksum status {v['udp.checksum.status']!r}")
        if i < len(frames) and not icrc_ok(frames[i]):
            problems.append("ICRC does not match")
        srcs[v["ip.src"]] = srcs.get(v["ip.src"], 0) + 1
        if problems:
            bad += 1
            if bad <= 10:
                fails.append(f"frame {v['frame.number']}: " + "; ".join(problems))
    if bad > 10:
        fails.append(f"... {bad} bad frames in all")
    if only_src:
        check(list(srcs) == [only_src], f"frames from {srcs}, expected only {only_src} (filter)")
    else:
        check(len(srcs) == 2, f"frames from {srcs}, expected both directions")
    print(f"{pcap}: {len(rows)} frames, {len(rows) - bad} valid RoCEv2; per source {srcs}; "
          "opcodes " + ", ".join(f"{k:#04x}: {c}" for k, c in sorted(ops.items(),
                                                                 key=lambda x: x[0] or 0)))
    return 0


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "telemetry":
        check_telemetry(*sys.argv[2:6])
    elif len(sys.argv) in (6, 7) and sys.argv[1] == "capture":
        if check_capture(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5],
                         sys.argv[6] if len(sys.argv) == 7 else None) == 77:
            return 77
    else:
        print(__doc__)
        return 2
    for f in fails:
        print("FAIL:", f)
    print("PASS" if not fails else "FAILED")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
