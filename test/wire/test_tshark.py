#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""test_tshark.py GEN_PCAP ICRC_CHECK_PY

Cross-checks dpv_pkt_build_hdrs()/dpv_pkt_finish() against Wireshark's
InfiniBand dissector and against test/tools/icrc_check.py.

GEN_PCAP --zero writes one frame per (opcode, IP version, payload 16..19 so
pad 0..3) plus one zero-length frame per payload opcode, and prints a
manifest line per frame. For every frame tshark must report the intended
BTH opcode, QPN, PSN, pad count, SE and AckReq bits, the extension header
values we wrote (DETH, RETH, AETH, ImmDt, IETH, AtomicETH, AtomicAckETH),
the ICRC at the end of the frame, a good IPv4 header checksum, and no
malformed flag and no expert info of severity warning or error.

Preferences used (and why):
  ip.check_checksum:TRUE, udp.check_checksum:TRUE   verify both.
  udp.ignore_ipv6_zero_checksum:TRUE   RoCEv2 sends UDP checksum 0 also over
      IPv6, exactly as Linux rxe does (test/data/wire/CAPTURES.md); without this
      Wireshark 4.0 raises the expert error "Illegal checksum value (0)".

Known Wireshark 4.0.x limitations, checked precisely rather than ignored:
  * XRC (opcodes 0xa0-0xb7): the BTH is decoded and the opcode named
    ("Extended Reliable Connection (XRC) - ..."), but the packet list says
    "Unknown OpCode" and everything after the BTH, ICRC included, is shown as
    "Vendor Specific or Unknown Header Sequence": no XRCETH/RETH/... fields
    and no "Invariant CRC". For XRC we check the BTH fields, that no
    extension header is (mis)decoded, and no malformed/expert flag.
  * RDMA FLUSH (0x1c) and ATOMIC WRITE (0x1d) of IBA 1.5 annex A19: not in
    Wireshark 4.0's table: the BTH is decoded, the opcode shown as
    "Unknown (28)" / "Unknown (29)", and everything after the BTH as
    "Vendor Specific or Unknown Header Sequence", exactly as for XRC; the
    same checks apply (their FETH/RETH bytes are checked byte by byte by
    test/sw/test_sw_aw.c, their ICRC by icrc_check.py below).
  * Zero-length payloads: InfiniBand payload heuristics (RPC-over-RDMA for
    RC/UC, Mellanox EoIB for UD) throw on an empty payload and the frame is
    shown "[Malformed Packet: RPCoRDMA]" / "[Malformed Packet: Mellanox EoIB]".
    The same happens to rxe's 2- and 4-byte perftest sync SENDs in
    test/data/wire/rdma_cm_send.pcap. For zero-length frames exactly that
    malformed flag is tolerated (and counted); the exception also stops the
    dissection before the ICRC, so "Invariant CRC" is not compared for them
    (icrc_check.py still checks it); everything else is checked.
  * AtomicETH: Wireshark shows its VA and R_Key as infiniband.reth.va and
    infiniband.reth.r_key (shared fields), so those are expected there.

Exit 77 (skip) when tshark is not installed.
"""
import os
import shutil
import subprocess
import sys
import tempfile

FIELDS = [
    "frame.number", "infiniband.bth.opcode", "infiniband.bth.destqp",
    "infiniband.bth.psn", "infiniband.bth.padcnt", "infiniband.bth.se",
    "infiniband.bth.a", "infiniband.bth.tver", "infiniband.bth.p_key",
    "infiniband.deth.q_key", "infiniband.deth.srcqp",
    "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome", "infiniband.aeth.msn", "infiniband.immdt",
    "infiniband.ieth", "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt", "infiniband.invariant.crc",
    "_ws.malformed", "_ws.expert.severity", "_ws.expert.message",
    "ip.checksum.status", "udp.checksum.status", "udp.dstport",
]
EXT_FIELDS = FIELDS[9:22]

# enum dpv_hdr_mask
M_DETH, M_RETH, M_AETH, M_IMMDT, M_IETH, M_ATMETH, M_ATMACK = (
    1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7)
M_PAYLOAD = 1 << 9

SEV_WARN = 0x600000  # Wireshark PI_WARN; PI_ERROR is 0x800000
CKSUM_GOOD, CKSUM_NOT_PRESENT = 1, 3

FAMILY = {0x00: "RC", 0x20: "UC", 0x60: "UD", 0xa0: "XRC"}
# opcodes Wireshark 4.0 does not dissect past the BTH (see the docstring)
UNDISSECTED = {0x1c: "RC FLUSH", 0x1d: "RC ATOMIC_WRITE"}

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
    """first value of a possibly repeated field, as int (hex or decimal)"""
    s = s.split(",")[0].strip()
    if s == "":
        return None
    if s in ("True", "False"):
        return int(s == "True")
    try:
        return int(s, 0)
    except ValueError:
        return int(s, 16)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gen, verify = sys.argv[1], sys.argv[2]
    tshark = shutil.which("tshark")
    if not tshark:
        print("SKIP: tshark not installed")
        return 77

    with tempfile.TemporaryDirectory(prefix="dpv_tshark_") as tmp:
        pcap = os.path.join(tmp, "gen.pcap")
        man = subprocess.run([gen, pcap, "--zero"], check=True, capture_output=True,
                             text=True).stdout.split("\n")
        frames = {}
        for line in man:
            if not line.strip():
                continue
            f = line.split()
            frames[int(f[0])] = dict(
                op=int(f[1], 16), ipver=int(f[2]), paylen=int(f[3]), pad=int(f[4]),
                qpn=int(f[5], 16), psn=int(f[6], 16), mask=int(f[7], 16),
                se=int(f[8]), ack=int(f[9]), msn=int(f[10]), icrc=int(f[11], 16))
        check(len(frames) > 0, "gen_pcap wrote no frames")

        cmd = [tshark, "-r", pcap, "-n",
               "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
               "-o", "udp.ignore_ipv6_zero_checksum:TRUE",
               "-T", "fields", "-E", "separator=|", "-E", "occurrence=a"]
        for fld in FIELDS:
            cmd += ["-e", fld]
        out = subprocess.run(cmd, capture_output=True, text=True)
        check(out.returncode == 0, f"tshark exit {out.returncode}: {out.stderr.strip()}")
        rows = [r.split("|") for r in out.stdout.splitlines() if r.strip()]
        check(len(rows) == len(frames), f"tshark decoded {len(rows)} frames of {len(frames)}")

        fam_ok, fam_n, zero_malformed = {}, {}, 0
        for r in rows:
            v = dict(zip(FIELDS, r + [""] * (len(FIELDS) - len(r))))
            n = int(v["frame.number"])
            e = frames.get(n)
            if not check(e is not None, f"frame {n} not in the manifest"):
                continue
            fam = "%s/IPv%d" % (UNDISSECTED.get(e["op"], FAMILY.get(e["op"] & 0xe0, "?")), e["ipver"])
            fam_n[fam] = fam_n.get(fam, 0) + 1
            before = failed
            tag = f"frame {n} (opcode 0x{e['op']:02x} IPv{e['ipver']} {e['paylen']} B)"
            check(num(v["infiniband.bth.opcode"]) == e["op"],
                  f"{tag}: tshark opcode {v['infiniband.bth.opcode']}")
            check(num(v["infiniband.bth.destqp"]) == e["qpn"], f"{tag}: destqp")
            check(num(v["infiniband.bth.psn"]) == e["psn"], f"{tag}: psn")
            check(num(v["infiniband.bth.padcnt"]) == e["pad"], f"{tag}: padcnt")
            check(num(v["infiniband.bth.se"]) == e["se"], f"{tag}: SE")
            check(num(v["infiniband.bth.a"]) == e["ack"], f"{tag}: AckReq")
            check(num(v["infiniband.bth.tver"]) == 0, f"{tag}: tver")
            check(num(v["infiniband.bth.p_key"]) == 0xffff, f"{tag}: pkey")
            check(num(v["udp.dstport"]) == 4791, f"{tag}: UDP port")
            check(num(v["udp.checksum.status"]) == CKSUM_NOT_PRESENT,
                  f"{tag}: UDP checksum status {v['udp.checksum.status']}")
            if e["ipver"] == 4:
                check(num(v["ip.checksum.status"]) == CKSUM_GOOD,
                      f"{tag}: IPv4 checksum status {v['ip.checksum.status']}")

            undissected = (e["op"] & 0xe0) == 0xa0 or e["op"] in UNDISSECTED
            zero = e["paylen"] == 0 and e["mask"] & M_PAYLOAD and not undissected
            malformed = v["_ws.malformed"]
            sev = [int(x, 0) for x in v["_ws.expert.severity"].split(",") if x]
            msgs = v["_ws.expert.message"]
            if zero and malformed:
                zero_malformed += 1
                check(("RPCoRDMA" in malformed or "EoIB" in malformed) and
                      all(m.strip() == "Malformed Packet (Exception occurred)"
                          for m in msgs.split(",")),
                      f"{tag}: zero-length malformed by {malformed!r} / {msgs!r}")
            else:
                check(malformed == "", f"{tag}: malformed {malformed!r}")
                check(all(s < SEV_WARN for s in sev), f"{tag}: expert {msgs!r}")

            m = e["mask"]
            if undissected:
                # Wireshark 4.0: no XRC, FLUSH, ATOMIC WRITE extension header
                # dissection (see doc)
                check(all(v[f] == "" for f in EXT_FIELDS),
                      f"{tag}: now dissected? update the test: "
                      + ",".join(f for f in EXT_FIELDS if v[f]))
            elif not (zero and malformed):  # the exception stops dissection
                check(num(v["infiniband.invariant.crc"]) == e["icrc"],
                      f"{tag}: ICRC {v['infiniband.invariant.crc']} != 0x{e['icrc']:08x}")
                exp = {}
                if m & M_DETH:
                    exp["infiniband.deth.q_key"] = 0x11111111
                    exp["infiniband.deth.srcqp"] = 0x42
                if m & M_RETH:
                    exp["infiniband.reth.r_key"] = 0x1234
                    exp["infiniband.reth.dmalen"] = e["paylen"] or 4096
                    exp["infiniband.reth.va"] = 0x00007f0012345000 + n - 1
                if m & M_AETH:
                    exp["infiniband.aeth.syndrome"] = 0x1f
                    exp["infiniband.aeth.msn"] = e["msn"]
                if m & M_IMMDT:
                    exp["infiniband.immdt"] = 0x11223344
                if m & M_IETH:
                    exp["infiniband.ieth"] = 0x080001e5
                if m & M_ATMETH:
                    # Wireshark reuses the RETH VA/R_Key fields for AtomicETH
                    exp["infiniband.reth.va"] = 0x00007f0012346000
                    exp["infiniband.reth.r_key"] = 0x5678
                    exp["infiniband.atomiceth.swapdt"] = 0x0102030405060708
                    exp["infiniband.atomiceth.cmpdt"] = 0x1112131415161718
                if m & M_ATMACK:
                    exp["infiniband.atomicacketh.origremdt"] = 0x2122232425262728
                for f in EXT_FIELDS[:-1]:
                    if f in exp:
                        got = v[f].split(",")[0]
                        # ImmDt/IETH are FT_BYTES: hex without 0x
                        gotv = int(got, 16) if got and f in (
                            "infiniband.immdt", "infiniband.ieth") else num(got)
                        check(gotv == exp[f], f"{tag}: {f} = {got!r}, want 0x{exp[f]:x}")
                    else:
                        check(v[f] == "", f"{tag}: unexpected {f} = {v[f]!r}")
            if failed == before:
                fam_ok[fam] = fam_ok.get(fam, 0) + 1

        for fam in sorted(fam_n):
            print(f"tshark {fam:10s} {fam_ok.get(fam, 0):3d}/{fam_n[fam]:3d} frames ok")
        print(f"zero-length frames flagged malformed by a payload heuristic: {zero_malformed}")

        ops = sorted({e["op"] for e in frames.values()})
        vr = subprocess.run(["/usr/bin/python3", verify, "--expect",
                             ",".join(f"0x{o:02x}" for o in ops), pcap],
                            capture_output=True, text=True)
        print(vr.stdout.strip())
        check(vr.returncode == 0, f"icrc_check.py failed: {vr.stdout} {vr.stderr}")
        check(f"{len(frames)} RoCEv2 packets, {len(frames)} ICRC ok, 0 bad" in vr.stdout,
              "icrc_check.py did not check every frame")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
