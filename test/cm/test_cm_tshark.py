#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""test_cm_tshark.py GEN_CM_PCAP ICRC_CHECK_PY

Cross-checks lib/cm's encoder (dpv_cm_mad_encode, dpv_cma_hdr_encode)
against Wireshark's InfiniBand CM dissector. GEN_CM_PCAP writes CM MADs of
every message type in RoCEv2 frames (UD SEND ONLY to QP 1, built by
lib/wire) and a manifest of the values it encoded; for every frame tshark
must show a UD SEND ONLY to QP 1 with DETH Q_Key 0x80010000 / source QP 1,
the CM message named in the packet list, the MAD header we wrote, every
message field it dissects with the value we encoded, every reserved field
it shows as 0, a good IPv4 header checksum, and no malformed flag and no
expert info of severity warning or error. icrc_check.py checks the ICRCs.

Preferences (as test/wire/test_tshark.py): ip/udp checksum checks on, and
udp.ignore_ipv6_zero_checksum:TRUE (RoCEv2 sends UDP checksum 0 over IPv6).

Known Wireshark 4.0.x limitations, checked precisely rather than ignored:
  * REQ path flow label and packet rate: Wireshark reads the flow label from
    3 bytes (REQ bytes 88-90, resp. 132-134) instead of the 32-bit word,
    and the packet rate and the 6 reserved bits from the first of those
    bytes, so it shows flow_label >> 8 as "Flow Label", (flow_label >> 12)
    & 0x3f as "Packet Rate" and (flow_label >> 18) & 3 as "Reserved". The
    same is visible on Linux's own REQs in test/data/wire/rdma_cm_send.txt
    (flow label 0x8f33e shown as 0x008f3); test_cm_mad checks the real
    layout against that capture (the flow label gives the data QP's UDP
    source port). Those fields are compared with that model; the packet
    rate we encoded is not visible in Wireshark 4.0.
  * In an IPv4 frame the REQ's primary GIDs are shown as the IPv4 address
    of their last 4 bytes (prim_localgid_ipv4): compared that way.
  * MRA, SIDR_REQ and SIDR_REP: "Dissector Not Implemented"; only the MAD
    header is dissected. The header fields and the MAD data bytes
    (infiniband.mad.data) are compared.
  * The DREQ's remote QPN is infiniband.cm.req.remoteqpneecn (sic).

tshark is a dependency (dpv.sh installs it): its absence is a failure.
"""
import ipaddress
import os
import shutil
import subprocess
import sys
import tempfile

P = "infiniband.cm."
HDR_FIELDS = ["baseversion", "mgmtclass", "classversion", "method", "status",
              "classspecific", "transactionid", "attributeid", "attributemodifier", "data"]

# manifest name -> tshark field, per attribute (value compared as number or bytes)
REQ = {
    "local_comm_id": "req", "service_id": "req.serviceid",
    "local_ca_guid": "req.localcaguid", "local_qkey": "req.localqkey",
    "local_qpn": "req.localqpn", "responder_resources": "req.responderres",
    "local_eecn": "req.localeecn", "initiator_depth": "req.initdepth",
    "remote_eecn": "req.remoteeecn", "remote_cm_response_timeout": "req.remoteresptout",
    "transport_service_type": "req.transpsvctype", "end_to_end_flow_control": "req.e2eflowctrl",
    "starting_psn": "req.startpsn", "local_cm_response_timeout": "req.localresptout",
    "retry_count": "req.retrcount", "pkey": "req.pkey", "path_mtu": "req.pppmtu",
    "rdc_exists": "req.rdcexist", "rnr_retry_count": "req.rnrretrcount",
    "max_cm_retries": "req.maxcmretr", "srq": "req.srq",
    "extended_transport_type": "req.ext_transport",
    "cma_ip_version": "req.ip_cm.ipv", "cma_src_port": "req.ip_cm.sport",
    "cma_private": "req.ip_cm.private",
}
for pre, ws in (("pri", "prim"), ("alt", "alt")):
    REQ.update({
        pre + "_local_lid": "req.%s_locallid" % ws, pre + "_remote_lid": "req.%s_remotelid" % ws,
        pre + "_traffic_class": "req.%s_tfcclass" % ws, pre + "_hop_limit": "req.%s_hoplim" % ws,
        pre + "_sl": "req.%s_sl" % ws, pre + "_subnet_local": "req.%s_subnetlocal" % ws,
        pre + "_local_ack_timeout": "req.%s_localacktout" % ws,
    })
REQ.update({"alt_local_gid": "req.alt_localgid", "alt_remote_gid": "req.alt_remotegid"})
REP = {
    "local_comm_id": "rep", "remote_comm_id": "rep.remotecommid", "local_qkey": "rep.localqkey",
    "local_qpn": "rep.localqpn", "local_eecn": "rep.localeecn", "starting_psn": "rep.startpsn",
    "responder_resources": "rep.respres", "initiator_depth": "rep.initdepth",
    "target_ack_delay": "rep.tgtackdelay", "failover_accepted": "rep.failoveracc",
    "end_to_end_flow_control": "rep.e2eflowctrl", "rnr_retry_count": "rep.rnrretrcount",
    "srq": "rep.srq", "local_ca_guid": "rep.localcaguid", "private_data": "rep.private",
}
REJ = {
    "local_comm_id": "rej.localcommid", "remote_comm_id": "rej.remotecommid",
    "message_rejected": "rej.msgrej", "ari_length": "rej.rejinfolen", "reason": "rej.reason",
    "ari": "rej.ari", "private_data": "rej.private",
}


def short(name):
    return {"local_comm_id": name + ".localcommid", "remote_comm_id": name + ".remotecommid",
            "private_data": name + ".private"}


MSGS = {  # attr: (packet list name, field map, reserved fields that must be 0)
    0x0010: ("ConnectRequest", REQ, ["req.prim_reserved1", "req.prim_reserved2",
                                     "req.alt_reserved1", "req.ip_cm.majv",
                                     "req.ip_cm.minv", "req.ip_cm.reserved"]),
    0x0011: ("MsgRcptAck", {}, []),
    0x0012: ("ConnectReject", REJ, ["rej.reserved0", "rej.reserved1"]),
    0x0013: ("ConnectReply", REP, ["rep.reserved"]),
    0x0014: ("ReadyToUse", short("rtu"), []),
    0x0015: ("DisconnectRequest", dict(short("dreq"), remote_qpn_eecn="req.remoteqpneecn"), []),
    0x0016: ("DisconnectReply", short("drsp"), []),
    0x0017: ("ServiceIDResReq", {}, []),
    0x0018: ("ServiceIDResReqResp", {}, []),
}

FIELDS = ["frame.number", "_ws.col.Info", "infiniband.bth.opcode", "infiniband.bth.destqp",
          "infiniband.deth.q_key", "infiniband.deth.srcqp", "_ws.malformed",
          "_ws.expert.severity", "_ws.expert.message", "ip.checksum.status",
          "infiniband.cm.req.prim_localgid", "infiniband.cm.req.prim_remotegid",
          "infiniband.cm.req.prim_localgid_ipv4", "infiniband.cm.req.prim_remotegid_ipv4",
          "infiniband.cm.req.ip_cm.sip4", "infiniband.cm.req.ip_cm.dip4",
          "infiniband.cm.req.ip_cm.sip6", "infiniband.cm.req.ip_cm.dip6"]
FIELDS += ["infiniband.mad." + f for f in HDR_FIELDS]
for pre in ("prim", "alt"):
    FIELDS += ["infiniband.cm.req.%s_%s" % (pre, f) for f in ("flowlabel", "pktrate", "reserved0")]
for _, fmap, resv in MSGS.values():
    FIELDS += [P + f for f in list(fmap.values()) + resv if P + f not in FIELDS]

SEV_WARN = 0x600000
passed = failed = 0


def check(cond, msg):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", msg)
    return cond


def num(s):
    s = s.split(",")[0].strip()
    return None if s == "" else int(s, 0)


def parse_manifest(text):
    frames = {}
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        vals = dict(kv.split("=", 1) for kv in f[3:])
        frames[int(f[0])] = dict(attr=int(f[1], 16), ipver=int(f[2]), vals=vals)
    return frames


def expect_req_extras(v, e, tag):
    """The REQ fields Wireshark 4.0 shows in its own way (see the docstring)."""
    ev = e["vals"]
    for pre, ws in (("pri", "prim"), ("alt", "alt")):
        fl = int(ev[pre + "_flow_label"], 16)
        for f, want in (("flowlabel", fl >> 8), ("pktrate", (fl >> 12) & 0x3f),
                        ("reserved0", (fl >> 18) & 3)):
            got = num(v["infiniband.cm.req.%s_%s" % (ws, f)])
            check(got == want, f"{tag}: {ws}_{f} {got} != Wireshark 4.0 model {want:#x}")
    if e["ipver"] == 4:
        gids = [("prim_localgid_ipv4", "pri_local_gid"), ("prim_remotegid_ipv4", "pri_remote_gid")]
        addrs = [("ip_cm.sip4", "cma_src_addr"), ("ip_cm.dip4", "cma_dst_addr")]
        conv = lambda h: ipaddress.IPv4Address(bytes.fromhex(h)[12:])
    else:
        gids = [("prim_localgid", "pri_local_gid"), ("prim_remotegid", "pri_remote_gid")]
        addrs = [("ip_cm.sip6", "cma_src_addr"), ("ip_cm.dip6", "cma_dst_addr")]
        conv = lambda h: ipaddress.IPv6Address(bytes.fromhex(h))
    for ws, ours in gids + addrs:
        got = v["infiniband.cm.req." + ws]
        want = conv(ev[ours])
        check(got != "" and ipaddress.ip_address(got) == want, f"{tag}: {ws} {got!r} != {want}")


def check_frame(v, e, tag):
    attr = e["attr"]
    name, fmap, resv = MSGS[attr]
    ev = e["vals"]
    mad = bytes.fromhex(ev["mad"])
    check(name in v["_ws.col.Info"], f"{tag}: packet list {v['_ws.col.Info']!r}, want {name}")
    check(num(v["infiniband.bth.opcode"]) == 0x64, f"{tag}: opcode {v['infiniband.bth.opcode']}")
    check(num(v["infiniband.bth.destqp"]) == 1, f"{tag}: destqp")
    check(num(v["infiniband.deth.q_key"]) == 0x80010000, f"{tag}: DETH Q_Key")
    check(num(v["infiniband.deth.srcqp"]) == 1, f"{tag}: DETH source QP")
    check(v["_ws.malformed"] == "", f"{tag}: malformed {v['_ws.malformed']!r}")
    sev = [int(x, 0) for x in v["_ws.expert.severity"].split(",") if x]
    check(all(s < SEV_WARN for s in sev), f"{tag}: expert {v['_ws.expert.message']!r}")
    if e["ipver"] == 4:
        check(num(v["ip.checksum.status"]) == 1, f"{tag}: IPv4 checksum")
    hdr = {"baseversion": 1, "mgmtclass": 7, "classversion": 2, "method": 3, "status": 0,
           "classspecific": 0, "transactionid": int(ev["tid"], 16), "attributeid": attr,
           "attributemodifier": int(ev["attr_mod"], 16)}
    for f, want in hdr.items():
        got = num(v["infiniband.mad." + f])
        check(got == want, f"{tag}: mad.{f} = {got}, want {want:#x}")
    got = v["infiniband.mad.data"].replace(":", "")
    check(got == mad[24:].hex(), f"{tag}: MAD data bytes differ")
    for ours, ws in fmap.items():
        got, want = v[P + ws].split(",")[0], ev.get(ours)
        if not check(want is not None and got != "", f"{tag}: {ours} ({ws}) missing: {got!r}"):
            continue
        if not want.startswith("0x"):  # a byte string
            check(got.replace(":", "") == want, f"{tag}: {ws} bytes {got} != {want}")
        else:
            check(num(got) == int(want, 16), f"{tag}: {ws} = {got}, want {want}")
    for ws in resv:
        vals = [num(x) for x in v[P + ws].split(",") if x]
        check(vals and all(x == 0 for x in vals), f"{tag}: reserved {ws} = {v[P + ws]!r}")
    if attr == 0x0010:
        expect_req_extras(v, e, tag)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gen, verify = sys.argv[1], sys.argv[2]
    tshark = shutil.which("tshark")
    if not check(tshark is not None, "tshark not installed (dpv.sh installs it)"):
        print(f"{passed} passed, {failed} failed")
        return 1
    with tempfile.TemporaryDirectory(prefix="dpv_cm_tshark_") as tmp:
        pcap = os.path.join(tmp, "cm.pcap")
        frames = parse_manifest(subprocess.run([gen, pcap], check=True, capture_output=True,
                                               text=True).stdout)
        check(sorted({e["attr"] for e in frames.values()}) == sorted(MSGS),
              "gen_cm_pcap does not cover every CM message")
        cmd = [tshark, "-r", pcap, "-n", "-o", "ip.check_checksum:TRUE",
               "-o", "udp.check_checksum:TRUE", "-o", "udp.ignore_ipv6_zero_checksum:TRUE",
               "-T", "fields", "-E", "separator=|", "-E", "occurrence=a"]
        for fld in FIELDS:
            cmd += ["-e", fld]
        out = subprocess.run(cmd, capture_output=True, text=True)
        check(out.returncode == 0, f"tshark exit {out.returncode}: {out.stderr.strip()}")
        rows = [r.split("|") for r in out.stdout.splitlines() if r.strip()]
        check(len(rows) == len(frames), f"tshark decoded {len(rows)} frames of {len(frames)}")
        ok = 0
        for r in rows:
            v = dict(zip(FIELDS, r + [""] * (len(FIELDS) - len(r))))
            n = int(v["frame.number"])
            e = frames.get(n)
            if not check(e is not None, f"frame {n} not in the manifest"):
                continue
            before = failed
            check_frame(v, e, f"frame {n} ({MSGS[e['attr']][0]}, IPv{e['ipver']})")
            ok += failed == before
        print(f"tshark: {ok}/{len(frames)} CM frames as encoded")
        vr = subprocess.run(["/usr/bin/python3", verify, "--expect", "0x64", pcap],
                            capture_output=True, text=True)
        print(vr.stdout.strip())
        check(vr.returncode == 0, f"icrc_check.py failed: {vr.stdout} {vr.stderr}")
        check(f"{len(frames)} RoCEv2 packets, {len(frames)} ICRC ok, 0 bad" in vr.stdout,
              "icrc_check.py did not check every frame")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
