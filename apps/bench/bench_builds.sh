#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Compare two dpverbs builds (A, B) on the same machine in one sitting,
# alternating A and B for each round so that load drift hits both alike:
#   dpv_perf --loopback ud_lat (one-way p50, p99) and ud_bw (msg/s), 64 B
#   perftest over net_memif between two processes (config/pair-a.json and
#   pair-b.json, Debian's perftest on each build's drop-in libibverbs.so.1):
#   ib_send_lat 2 B (typical, p99), ib_send_bw -s 64 (Mpps),
#   ib_write_bw -s 65536 (MB/s)
# Prints every round and, per metric, the median and spread (min..max) of
# A and B. Run it on a quiet machine: it is a measurement, not a test.
#
# usage: apps/bench/bench_builds.sh [-r ROUNDS] [-o CSV] BUILD_A BUILD_B
#   BUILD_x: a build directory (with apps/dpv_perf/dpv_perf and compat/libibverbs.so.1)
set -u
ROUNDS=3
CSV=""
while getopts "r:o:" o; do
	case $o in
	r) ROUNDS=$OPTARG ;;
	o) CSV=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-o CSV] BUILD_A BUILD_B" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "usage: $0 [-r ROUNDS] [-o CSV] BUILD_A BUILD_B" >&2; exit 2; }
A=$(cd "$1" && pwd) || exit 2
B=$(cd "$2" && pwd) || exit 2
SRC=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
SOCK=/tmp/dpverbs-pair.sock
WORK=$(mktemp -d /tmp/dpv-bench-builds.XXXXXX)
RES=$WORK/results
PIDS=""
cleanup() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	rm -f "$SOCK"
	[ -n "$CSV" ] && cp "$RES" "$CSV"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
exec 9>/tmp/dpverbs-pair.lock
flock -w 600 9 || { echo "cannot get /tmp/dpverbs-pair.lock" >&2; exit 1; }
: >"$RES"

record() { echo "$1,$2,$3,$4" >>"$RES"; printf '  %-4s %-28s %s\n' "$1" "$2" "$4"; } # build,metric,round,value

# jget FILE KEY...: a value of dpv_perf's --json output
jget() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d=d[k]
print(d)' "$@"; }

dpv_perf_round() { # tag build round
	local tag=$1 b=$2 r=$3 out=$WORK/perf.json
	if (cd "$SRC" && DPVERBS_CONFIG= timeout 120 "$b/apps/dpv_perf/dpv_perf" --loopback -t ud_lat -n 200000 --json >"$out" 2>/dev/null); then
		record "$tag" ud_lat_p50_us "$r" "$(jget "$out" results one_way_us p50)"
		record "$tag" ud_lat_p99_us "$r" "$(jget "$out" results one_way_us p99)"
	fi
	if (cd "$SRC" && DPVERBS_CONFIG= timeout 120 "$b/apps/dpv_perf/dpv_perf" --loopback -t ud_bw -n 2000000 --json >"$out" 2>/dev/null); then
		record "$tag" ud_bw_msgs_per_s "$r" "$(jget "$out" results msg_per_s)"
	fi
}

# perftest over memif: prints the client's result row
perftest_run() { # build test args...
	local b=$1 t=$2; shift 2
	local port=$(( 21000 + RANDOM % 9000 ))
	rm -f "$SOCK"
	(cd "$SRC" && DPVERBS_CONFIG=config/pair-a.json LD_LIBRARY_PATH=$b/compat timeout 90 \
		"$t" -d dpv0 -x 1 -p "$port" "$@" >"$WORK/srv" 2>&1) &
	local sp=$!
	PIDS="$PIDS $sp"
	sleep 1.5
	(cd "$SRC" && DPVERBS_CONFIG=config/pair-b.json LD_LIBRARY_PATH=$b/compat timeout 90 \
		"$t" -d dpv0 -x 1 -p "$port" "$@" 127.0.0.1 >"$WORK/cli" 2>&1)
	wait "$sp" 2>/dev/null
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$WORK/cli" | tail -1
}

perftest_round() { # tag build round
	local tag=$1 b=$2 r=$3 row
	row=$(perftest_run "$b" ib_send_lat -s 2 -n 5000)
	[ -n "$row" ] && record "$tag" send_lat_typical_us "$r" "$(echo "$row" | awk '{print $5}')" &&
		record "$tag" send_lat_p99_us "$r" "$(echo "$row" | awk '{print $8}')"
	row=$(perftest_run "$b" ib_send_bw -s 64 -n 200000)
	[ -n "$row" ] && record "$tag" send_bw_64_mpps "$r" "$(echo "$row" | awk '{print $5}')"
	row=$(perftest_run "$b" ib_write_bw -s 65536 -n 5000)
	[ -n "$row" ] && record "$tag" write_bw_64k_MBps "$r" "$(echo "$row" | awk '{print $4}')"
}

for r in $(seq 1 "$ROUNDS"); do
	echo "round $r"
	for tag in A B; do
		[ $tag = A ] && b=$A || b=$B
		dpv_perf_round $tag "$b" "$r"
		perftest_round $tag "$b" "$r"
	done
done

echo
echo "A = $A"
echo "B = $B"
/usr/bin/python3 - "$RES" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
metrics = []
for r in rows:
    if r[1] not in metrics:
        metrics.append(r[1])
print('%-22s %30s %30s %8s' % ('metric', 'A median (min..max)', 'B median (min..max)', 'B/A'))
for m in metrics:
    out = []
    med = {}
    for tag in ('A', 'B'):
        v = [float(r[3]) for r in rows if r[0] == tag and r[1] == m and r[3] not in ('', 'None')]
        if v:
            med[tag] = statistics.median(v)
            out.append('%10.3f (%.3f..%.3f)' % (med[tag], min(v), max(v)))
        else:
            out.append('-')
    ratio = '%.3f' % (med['B'] / med['A']) if 'A' in med and 'B' in med and med['A'] else '-'
    print('%-22s %30s %30s %8s' % (m, out[0], out[1], ratio))
PY
