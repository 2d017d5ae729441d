#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""make_corpus.py OUTDIR FILE.pcap|DIR [...]

Seed corpus for fuzz_parse: writes every packet of the given classic pcap
files (or of every *.pcap in a given folder, e.g. test/data/wire) to
OUTDIR/<file>_<frame>, one raw Ethernet frame per file. Prints the count.
"""
import os
import struct
import sys


def pcap_packets(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise SystemExit(f"{path}: not a classic pcap file")
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(e + "I", data[off + 8:off + 12])[0]
        off += 16
        yield data[off:off + incl]
        off += incl


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip())
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = []
    for a in sys.argv[2:]:
        if os.path.isdir(a):
            files += sorted(os.path.join(a, n) for n in os.listdir(a) if n.endswith(".pcap"))
        elif os.path.exists(a):
            files.append(a)
    n = 0
    for p in files:
        base = os.path.splitext(os.path.basename(p))[0]
        for i, pkt in enumerate(pcap_packets(p), 1):
            with open(os.path.join(out, f"{base}_{i:03d}"), "wb") as f:
                f.write(pkt)
            n += 1
    print(f"{n} seed frames from {len(files)} pcap files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
