#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A TCP stream with every byte checked, for tests of the kernel's traffic
beside dpverbs.

  tcp_stream.py server ADDR PORT          accept one connection, read to EOF
  tcp_stream.py client ADDR PORT BYTES    send BYTES bytes at full speed
  tcp_stream.py client ADDR PORT FILE     send 32 KiB every 5 ms until FILE
                                          exists

Each side prints "BYTES SHA256" of what it received or sent: the test
compares the two lines."""
import hashlib
import os
import socket
import sys
import time


def block(i):
    return hashlib.sha256(b'%d' % i).digest() * 1024  # 32 KiB, different each time


def main():
    what, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    h = hashlib.sha256()
    n = 0
    if what == 'server':
        s = socket.socket(socket.AF_INET6 if ':' in addr else socket.AF_INET)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        s.listen(1)
        s.settimeout(60)
        c, _ = s.accept()
        c.settimeout(120)
        while True:
            b = c.recv(1 << 16)
            if not b:
                break
            h.update(b)
            n += len(b)
    else:
        c = socket.create_connection((addr, port), timeout=60)
        until, stop = sys.argv[4].isdigit(), sys.argv[4]
        limit = int(stop) if until else 0
        i = 0
        while (n < limit) if until else not os.path.exists(stop):
            b = block(i)[:limit - n] if until else block(i)
            c.sendall(b)
            h.update(b)
            n += len(b)
            i += 1
            if not until:
                time.sleep(0.005)
        c.close()
    print(n, h.hexdigest())


if __name__ == '__main__':
    main()
