#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""run_fuzz.py FUZZER GEN_PCAP SEED_DIR [libFuzzer options...]

Bounded fuzz run for meson (suite 'fuzz'): builds a seed corpus in a temporary
folder from the captures in SEED_DIR (if it exists) and from a gen_pcap
packet set (every opcode, IPv4/IPv6, pad 0..3), then runs the libFuzzer
binary on it with the given options (e.g. -max_total_time=20).
"""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip())
        return 2
    fuzzer, gen, seeds, opts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    with tempfile.TemporaryDirectory(prefix="dpv_fuzz_") as tmp:
        corpus = os.path.join(tmp, "corpus")
        gen_pcap = os.path.join(tmp, "gen.pcap")
        subprocess.run([gen, gen_pcap, "--zero"], check=True, stdout=subprocess.DEVNULL)
        srcs = [gen_pcap] + ([seeds] if os.path.isdir(seeds) else [])
        subprocess.run([sys.executable, os.path.join(here, "make_corpus.py"), corpus] + srcs,
                       check=True)
        r = subprocess.run([fuzzer, corpus, "-artifact_prefix=" + tmp + "/"] + opts)
        if r.returncode != 0:
            for n in os.listdir(tmp):
                if n.startswith(("crash-", "leak-", "timeout-", "oom-")):
                    p = os.path.join(tmp, n)
                    print(f"artifact {n}: {open(p, 'rb').read().hex()}")
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
