#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""icrc_check.py: recompute the RoCEv2 invariant CRC of every packet of a capture.

usage: icrc_check.py [--expect OP[,OP...]] CAPTURE [CAPTURE...]
       icrc_check.py --self-test DIR

Reads pcap (either byte order, micro- or nanosecond) and pcapng files with
Ethernet framing (802.1Q tags are skipped). For every IPv4 or IPv6 UDP
datagram to port 4791 it rebuilds the ICRC input of IBTA Annex A17:

    8 bytes of 0xff (where an InfiniBand LRH would be)
    the IP header, its variant fields replaced with ones:
        IPv4  type of service, time to live, header checksum
        IPv6  traffic class, flow label, hop limit
    the UDP header with the checksum replaced with ones
    the BTH with its byte 4 (FECN, BECN, reserved bits) replaced with ones
    everything after the BTH up to the last 4 bytes of the UDP payload

and compares CRC-32 (reflected 0x04c11db7, as Ethernet) of it with those
last 4 bytes, least significant byte first.

Prints, per capture, "PATH: N RoCEv2 packets, G ICRC ok, B bad; opcodes ..."
and one line per bad packet. Exit status 1 if any ICRC is wrong, if a capture
holds no RoCEv2 packet, or if an opcode given with --expect (hex or decimal)
is absent from a capture.

--self-test DIR checks the checker on the captures in DIR: every one must
pass; a copy with a payload bit flipped must fail; a copy with every variant
field changed must still pass.
"""
import contextlib
import io
import os
import struct
import sys
import tempfile
import zlib

ROCE_PORT = 4791
ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
VLAN_TYPES = (0x8100, 0x88A8)
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",   # microseconds
    b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">",   # nanoseconds
}
PCAPNG_SHB = 0x0A0D0D0A


class CaptureError(Exception):
    pass


def frames_pcap(data, path):
    order = PCAP_MAGICS[data[:4]]
    link = struct.unpack_from(order + "I", data, 20)[0]
    if link != 1:
        raise CaptureError(f"{path}: link type {link} is not Ethernet")
    pos = 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from(order + "I", data, pos + 8)[0]
        pos += 16
        yield data[pos:pos + incl]
        pos += incl


def frames_pcapng(data, path):
    pos = 0
    order = "<"
    links = []
    while pos + 12 <= len(data):
        btype = struct.unpack_from(order + "I", data, pos)[0]
        if btype == PCAPNG_SHB:
            bom = data[pos + 8:pos + 12]
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            links = []
        blen = struct.unpack_from(order + "I", data, pos + 4)[0]
        if blen < 12 or pos + blen > len(data):
            raise CaptureError(f"{path}: truncated pcapng block at offset {pos}")
        body = data[pos + 8:pos + blen - 4]
        if btype == 1:                                  # interface description
            links.append(struct.unpack_from(order + "H", body, 0)[0])
        elif btype == 6:                                # enhanced packet
            ifc, _, _, cap = struct.unpack_from(order + "IIII", body, 0)
            if ifc >= len(links) or links[ifc] != 1:
                raise CaptureError(f"{path}: interface {ifc} is not Ethernet")
            yield body[20:20 + cap]
        elif btype == 3:                                # simple packet
            if not links or links[0] != 1:
                raise CaptureError(f"{path}: interface 0 is not Ethernet")
            yield body[4:]
        pos += blen


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] in PCAP_MAGICS:
        return list(frames_pcap(data, path))
    if len(data) >= 4 and struct.unpack_from("<I", data, 0)[0] == PCAPNG_SHB:
        return list(frames_pcapng(data, path))
    raise CaptureError(f"{path}: neither pcap nor pcapng")


def roce_parts(frame):
    """(masked IP header, UDP header, UDP payload) of a RoCEv2 frame, or None."""
    off = 12
    etype = struct.unpack_from(">H", frame, off)[0]
    while etype in VLAN_TYPES and len(frame) >= off + 6:
        off += 4
        etype = struct.unpack_from(">H", frame, off)[0]
    off += 2
    if etype == ETH_IPV4 and len(frame) >= off + 20:
        ihl = (frame[off] & 0x0F) * 4
        total = struct.unpack_from(">H", frame, off + 2)[0]
        if frame[off + 9] != 17 or ihl < 20:
            return None
        ip = bytearray(frame[off:off + ihl])
        ip[1] = 0xFF                       # type of service
        ip[8] = 0xFF                       # time to live
        ip[10:12] = b"\xff\xff"            # header checksum
        l4 = off + ihl
        end = off + total
    elif etype == ETH_IPV6 and len(frame) >= off + 40:
        if frame[off + 6] != 17:           # UDP right after the fixed header
            return None
        ip = bytearray(frame[off:off + 40])
        ip[0] |= 0x0F                      # low half of the version byte: traffic class
        ip[1:4] = b"\xff\xff\xff"          # traffic class (rest), flow label
        ip[7] = 0xFF                       # hop limit
        l4 = off + 40
        end = l4 + struct.unpack_from(">H", frame, off + 4)[0]
    else:
        return None
    if len(frame) < l4 + 8 or struct.unpack_from(">H", frame, l4 + 2)[0] != ROCE_PORT:
        return None
    udp = bytearray(frame[l4:l4 + 8])
    udp[6:8] = b"\xff\xff"
    payload = frame[l4 + 8:min(end, len(frame))]
    if len(payload) < 12 + 4:
        return None
    return bytes(ip), bytes(udp), payload


def check_frame(frame):
    """None if not RoCEv2, else (opcode, ICRC ok, on-wire, computed)."""
    parts = roce_parts(frame)
    if parts is None:
        return None
    ip, udp, payload = parts
    bth = bytearray(payload[:12])
    bth[4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + ip + udp + bytes(bth) + payload[12:-4]) & 0xFFFFFFFF
    wire = struct.unpack("<I", payload[-4:])[0]
    return payload[0], wire == crc, wire, crc


def check_capture(path, expect):
    n = good = 0
    ops = {}
    for i, fr in enumerate(frames(path), 1):
        r = check_frame(fr)
        if r is None:
            continue
        op, ok, wire, crc = r
        n += 1
        ops[op] = ops.get(op, 0) + 1
        if ok:
            good += 1
        else:
            print(f"{path}: frame {i}: opcode 0x{op:02x}: ICRC 0x{wire:08x} on the wire, "
                  f"0x{crc:08x} computed")
    seen = " ".join(f"0x{o:02x}x{c}" for o, c in sorted(ops.items()))
    print(f"{path}: {n} RoCEv2 packets, {good} ICRC ok, {n - good} bad; opcodes {seen}")
    errors = n - good
    absent = [f"0x{o:02x}" for o in expect if o not in ops]
    if n == 0:
        print(f"{path}: no RoCEv2 packet")
        errors += 1
    if absent:
        print(f"{path}: expected opcodes absent: {' '.join(absent)}")
        errors += 1
    return errors


def rewrite_pcap(src, dst, change):
    """Copies a classic pcap, applying change(bytearray frame) to each frame."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    order = PCAP_MAGICS[bytes(data[:4])]
    pos = 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from(order + "I", data, pos + 8)[0]
        fr = bytearray(data[pos + 16:pos + 16 + incl])
        change(fr)
        data[pos + 16:pos + 16 + incl] = fr
        pos += 16 + incl
    with open(dst, "wb") as f:
        f.write(data)


def ip_offset(fr):
    off = 14
    while struct.unpack_from(">H", fr, off - 2)[0] in VLAN_TYPES:
        off += 4
    return off


def vary(fr):
    """Changes every variant field of a RoCEv2 frame; the ICRC must not change."""
    if roce_parts(bytes(fr)) is None:
        return
    off = ip_offset(fr)
    if fr[off] >> 4 == 4:
        fr[off + 1] ^= 0x5A
        fr[off + 8] ^= 0x3C
        fr[off + 10] ^= 0x12
        l4 = off + (fr[off] & 0x0F) * 4
    else:
        fr[off] ^= 0x0A
        fr[off + 1] ^= 0xB7
        fr[off + 3] ^= 0x11
        fr[off + 7] ^= 0x40
        l4 = off + 40
    fr[l4 + 6] ^= 0x77
    fr[l4 + 8 + 4] ^= 0xC0                  # FECN, BECN


def flip(fr):
    """Flips one bit of the invariant part (the BTH's destination QP)."""
    if roce_parts(bytes(fr)) is None:
        return
    off = ip_offset(fr)
    l4 = off + ((fr[off] & 0x0F) * 4 if fr[off] >> 4 == 4 else 40)
    fr[l4 + 8 + 7] ^= 0x01


def quiet_check(path):
    with contextlib.redirect_stdout(io.StringIO()):
        return check_capture(path, [])


def self_test(folder):
    caps = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".pcap"))
    if not caps:
        print(f"{folder}: no captures")
        return 1
    failed = 0
    with tempfile.TemporaryDirectory(prefix="icrc_check_") as tmp:
        for c in caps:
            if check_capture(c, []) != 0:
                print(f"FAIL {c}: capture rejected")
                failed += 1
            varied = os.path.join(tmp, "varied.pcap")
            rewrite_pcap(c, varied, vary)
            if quiet_check(varied) != 0:
                print(f"FAIL {c}: variant fields were not masked")
                failed += 1
            flipped = os.path.join(tmp, "flipped.pcap")
            rewrite_pcap(c, flipped, flip)
            if quiet_check(flipped) == 0:
                print(f"FAIL {c}: a flipped bit went unnoticed")
                failed += 1
    print(f"{3 * len(caps) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    if len(argv) == 2 and argv[0] == "--self-test":
        return self_test(argv[1])
    expect = []
    if argv[:1] == ["--expect"] and len(argv) >= 2:
        expect = [int(o, 0) for o in argv[1].split(",") if o]
        argv = argv[2:]
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    errors = 0
    for path in argv:
        try:
            errors += check_capture(path, expect)
        except (OSError, CaptureError, struct.error) as e:
            print(f"{path}: {e}")
            errors += 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
