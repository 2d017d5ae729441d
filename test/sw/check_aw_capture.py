#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_aw_capture.py TEST_SW_AW ICRC_CHECK_PY

Runs test_sw_aw with a pcap file, so that every frame the engine sent
(RDMA ATOMIC WRITE 0x1d and FLUSH 0x1c requests, their zero-length READ
RESPONSE ONLY 0x10, NAKs 0x11) is in it, then:
  * tshark (Wireshark 4.0) must read every frame as RoCEv2 (infiniband)
    with the BTH opcode the manifest of the capture says, and show no
    malformed flag and no expert info of severity warning or error.
    Wireshark 4.0 does not know 0x1c/0x1d (annex A19): their opcode is
    "Unknown (28)" / "Unknown (29)" and what follows the BTH an unknown
    header sequence, as test/wire/test_tshark.py explains;
  * test/tools/icrc_check.py --expect 0x1c,0x1d,0x10,0x11 must pass (every
    ICRC recomputed).
Prints "N passed, N failed". Exit 77 if tshark is missing.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SEV_WARN = 0x600000


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    test, icrc = sys.argv[1], sys.argv[2]
    tshark = shutil.which("tshark")
    if not tshark:
        print("SKIP: tshark not installed")
        return 77
    passed = failed = 0

    def check(cond, msg):
        nonlocal passed, failed
        if cond:
            passed += 1
        else:
            failed += 1
            print("FAIL:", msg)

    with tempfile.TemporaryDirectory(prefix="dpv_aw_") as tmp:
        pcap = os.path.join(tmp, "aw.pcap")
        r = subprocess.run([test, pcap], capture_output=True, text=True)
        print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "(no output)")
        check(r.returncode == 0, f"test_sw_aw exit {r.returncode}: {r.stdout[-2000:]} {r.stderr[-2000:]}")
        out = subprocess.run([tshark, "-r", pcap, "-n", "-o", "ip.check_checksum:TRUE",
                              "-T", "fields", "-E", "separator=|", "-e", "frame.number",
                              "-e", "infiniband.bth.opcode", "-e", "_ws.malformed",
                              "-e", "_ws.expert.severity", "-e", "_ws.expert.message",
                              "-e", "ip.checksum.status", "-e", "_ws.col.Info"],
                             capture_output=True, text=True)
        check(out.returncode == 0, f"tshark: {out.stderr.strip()}")
        ops = {}
        for row in out.stdout.splitlines():
            f = row.split("|")
            if len(f) < 7:
                continue
            op = int(f[1], 0) if f[1] else None
            ops[op] = ops.get(op, 0) + 1
            sev = [int(x, 0) for x in f[3].split(",") if x]
            check(op is not None, f"frame {f[0]}: not decoded as InfiniBand: {f[6]}")
            check(f[2] == "", f"frame {f[0]} (opcode {op}): malformed {f[2]!r}")
            check(all(s < SEV_WARN for s in sev), f"frame {f[0]} (opcode {op}): expert {f[4]!r}")
            check(f[5] == "1", f"frame {f[0]}: IPv4 checksum status {f[5]!r}")
        print("opcodes: " + ", ".join(f"0x{o:02x} x{n}" for o, n in sorted(ops.items()) if o is not None))
        for o in (0x1c, 0x1d, 0x10, 0x11):
            check(o in ops, f"no frame of opcode 0x{o:02x} in the capture")
        v = subprocess.run(["/usr/bin/python3", icrc, "--expect", "0x1c,0x1d,0x10,0x11", pcap],
                           capture_output=True, text=True)
        print(v.stdout.strip())
        check(v.returncode == 0, f"icrc_check.py: {v.stdout} {v.stderr}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
