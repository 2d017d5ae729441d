#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench_compare.sh: dpverbs UD over net_memif vs kernel UDP on 127.0.0.1,
# each between two processes on this machine:
#   1. dpv_perf ud_lat   (server DPVERBS_CONFIG=pair-a, client pair-b)
#   2. udp_pingpong udp_lat
#   3. dpv_perf ud_bw
#   4. udp_pingpong udp_bw
# and a side-by-side table (one-way latency = RTT/2).
#
# Usage: apps/bench/bench_compare.sh [-n ITERS] [-s SIZE] [-j OUT.json] [-b BUILD]
#                                    [--busy] [--shared-configs] [--timeout SEC]
#   -n ITERS          measured iterations per test (default 100000; the rate
#                     tests use 10x as many messages)
#   -s SIZE           payload bytes (default 64)
#   -j FILE           also write every result as one JSON document to FILE
#   -b DIR            build directory (default: <repo>/build)
#   --busy            udp_pingpong busy-polls too (default: blocking recv)
#   --shared-configs  use config/pair-a.json and pair-b.json exactly as they
#                     are (socket /tmp/dpverbs-pair.sock, file prefixes
#                     dpv-pair-a/b). The default runs private copies of them
#                     that differ only in the memif socket path and the EAL
#                     file prefix, so the script can run while the test suite
#                     (which uses the shared names) runs too.
#   --timeout SEC     per-process timeout (default 30)
#
# Needs jq. The machine may have only 2 cores: both dpv_perf processes
# busy-poll, so they compete with each other and with everything else.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$repo/build
iters=100000
size=64
json_out=
busy=
shared=0
tmo=30

usage() { sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	-n) iters=$2; shift 2 ;;
	-s) size=$2; shift 2 ;;
	-j) json_out=$2; shift 2 ;;
	-b) build=$2; shift 2 ;;
	--busy) busy=--busy; shift ;;
	--shared-configs) shared=1; shift ;;
	--timeout) tmo=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "bench_compare.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done

dpv_perf=$build/apps/dpv_perf/dpv_perf
udp_pp=$build/apps/udp_pingpong/udp_pingpong
for b in "$dpv_perf" "$udp_pp"; do
	[ -x "$b" ] || { echo "bench_compare.sh: $b not built (ninja -C $build)" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "bench_compare.sh: needs jq" >&2; exit 2; }

work=$(mktemp -d /tmp/dpv-bench.XXXXXX)
pids=()
if [ "$shared" = 1 ]; then
	cfg_a=$repo/config/pair-a.json
	cfg_b=$repo/config/pair-b.json
	sock=/tmp/dpverbs-pair.sock
else
	sock=$work/memif.sock
	for s in a b; do
		jq --arg sock "$sock" --arg pfx "dpv-bench-$$-$s" \
			'.eal.file_prefix = $pfx | .ports[0].device.args |= sub("socket=[^,]*"; "socket=" + $sock)' \
			"$repo/config/pair-$s.json" > "$work/pair-$s.json" || exit 2
	done
	cfg_a=$work/pair-a.json
	cfg_b=$work/pair-b.json
fi
sock_existed=0
[ -e "$sock" ] && sock_existed=1

cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	pids=()
	# the memif server removes its socket when it stops; if one of ours was
	# killed, remove what it left (never a socket that was there before us
	# in shared mode: it may belong to a running test)
	if [ -S "$sock" ] && { [ "$shared" = 0 ] || [ "$sock_existed" = 0 ]; }; then
		rm -f "$sock"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# random-ish ports so parallel runs do not collide
base_port=$((20000 + ($$ % 20000)))

# wait until the server prints its "waiting for a client" line
wait_listen() { # $1 log file, $2 pid
	local i
	for i in $(seq 1 200); do
		grep -q "waiting for a client" "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# run_pair NAME PORT SERVER_ENV CLIENT_ENV BIN ARGS...: server then client, JSON of the client in $work/NAME.json
run_pair() {
	local name=$1 port=$2 senv=$3 cenv=$4 bin=$5
	shift 5
	env $senv "$bin" --server -p "$port" --timeout "$tmo" > "$work/$name.srv" 2>&1 &
	local spid=$!
	pids+=("$spid")
	if ! wait_listen "$work/$name.srv" "$spid"; then
		echo "bench_compare.sh: $name: server did not start:" >&2
		sed 's/^/    /' "$work/$name.srv" >&2
		return 1
	fi
	env $cenv "$bin" -p "$port" --timeout "$tmo" --json "$@" 127.0.0.1 > "$work/$name.json" 2> "$work/$name.err"
	local rc=$?
	wait "$spid" 2>/dev/null
	local src=$?
	pids=("${pids[@]/$spid}")
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		echo "bench_compare.sh: $name: client exit $rc, server exit $src" >&2
		sed 's/^/    client: /' "$work/$name.err" >&2
		tail -n 5 "$work/$name.srv" | sed 's/^/    server: /' >&2
		jq -r '"    error: " + (.error // "none")' "$work/$name.json" 2>/dev/null >&2
	fi
	# memif / EAL noise on stderr is kept for the report
	[ -s "$work/$name.err" ] && grep -v '^$' "$work/$name.err" | sed "s/^/    [$name client stderr] /" >&2
	return 0
}

bw_iters=$((iters * 10))
status=0
echo "bench_compare: size $size B, $iters round trips (latency), $bw_iters messages (rate); $(nproc) CPUs" >&2
echo "  [1/4] dpv_perf ud_lat over net_memif" >&2
run_pair dpv_lat $base_port "DPVERBS_CONFIG=$cfg_a" "DPVERBS_CONFIG=$cfg_b" "$dpv_perf" \
	-t ud_lat -s "$size" -n "$iters" || status=1
echo "  [2/4] udp_pingpong udp_lat on 127.0.0.1 ${busy:-(blocking)}" >&2
run_pair udp_lat $((base_port + 1)) "" "" "$udp_pp" -t udp_lat -s "$size" -n "$iters" $busy || status=1
echo "  [3/4] dpv_perf ud_bw over net_memif" >&2
run_pair dpv_bw $((base_port + 2)) "DPVERBS_CONFIG=$cfg_a" "DPVERBS_CONFIG=$cfg_b" "$dpv_perf" \
	-t ud_bw -s "$size" -n "$bw_iters" || status=1
echo "  [4/4] udp_pingpong udp_bw on 127.0.0.1 ${busy:-(blocking)}" >&2
run_pair udp_bw $((base_port + 3)) "" "" "$udp_pp" -t udp_bw -s "$size" -n "$bw_iters" $busy || status=1

for f in dpv_lat udp_lat dpv_bw udp_bw; do
	[ -s "$work/$f.json" ] || echo '{"status":"fail","error":"no output"}' > "$work/$f.json"
	jq -e '.status == "pass"' "$work/$f.json" >/dev/null 2>&1 || status=1
done

combined=$(jq -n --slurpfile a "$work/dpv_lat.json" --slurpfile b "$work/udp_lat.json" \
	--slurpfile c "$work/dpv_bw.json" --slurpfile d "$work/udp_bw.json" \
	--arg size "$size" --arg iters "$iters" --arg cpus "$(nproc)" --arg busy "${busy:-blocking}" \
	'{size: ($size|tonumber), iters: ($iters|tonumber), cpus: ($cpus|tonumber), udp_recv: $busy,
	  dpv_lat: $a[0], udp_lat: $b[0], dpv_bw: $c[0], udp_bw: $d[0]}')

echo
echo "$combined" | jq -r '"one-way latency = RTT/2 in microseconds, payload \(.size) B, \(.cpus) CPUs; msg/s: streaming test, receiver side"'
echo "$combined" | jq -r '
  def f(x): if x == null then "-" else (x * 1000 | round / 1000 | tostring) end;
  def r(x): if x == null then "-" else (x | round | tostring) end;
  def row(n; v1; v2): "\(n)|\(v1)|\(v2)";
  ( ["metric|dpverbs UD (memif)|kernel UDP (127.0.0.1, \(.udp_recv))",
     row("p50 us"; f(.dpv_lat.results.one_way_us.p50); f(.udp_lat.results.one_way_us.p50)),
     row("p99 us"; f(.dpv_lat.results.one_way_us.p99); f(.udp_lat.results.one_way_us.p99)),
     row("p99.9 us"; f(.dpv_lat.results.one_way_us.p99_9); f(.udp_lat.results.one_way_us.p99_9)),
     row("mean us"; f(.dpv_lat.results.one_way_us.mean); f(.udp_lat.results.one_way_us.mean)),
     row("round trips/s"; r(.dpv_lat.results.round_trips_per_s); r(.udp_lat.results.round_trips_per_s)),
     row("msg/s (stream)"; r(.dpv_bw.results.msg_per_s); r(.udp_bw.results.msg_per_s)),
     row("Gbit/s payload"; f(.dpv_bw.results.gbit_per_s); f(.udp_bw.results.gbit_per_s)),
     row("status lat/bw"; "\(.dpv_lat.status)/\(.dpv_bw.status)"; "\(.udp_lat.status)/\(.udp_bw.status)")
    ] | .[] )' | column -t -s '|'

if [ -n "$json_out" ]; then
	echo "$combined" > "$json_out" && echo "results written to $json_out" >&2
fi
exit $status
