#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpv_bench.sh: the benchmark suite. Runs, in one sitting on this machine:
#   1. dpv_baseline: memcpy 64 B .. 1 MiB and 64 MiB, a cache line between
#      two CPUs, kernel UDP ping-pong and stream, kernel TCP stream;
#   2. dpv_perf in one process (--loopback, dpv0 -> dpv1): UD SEND 64 B rate
#      (post lists of 16, one signalled WR in 16; also with the QPs and CQs
#      in a thread domain), RC WRITE 64 B rate,
#      RC WRITE 64 KiB bandwidth, RC and UD SEND 64 B latency, an RC WRITE
#      size sweep, RC WRITE 64 B rate over 1 QP and over 1024 QPs (with the
#      QP creation rate and memory per QP);
#   3. with --two-process, over net_memif between two processes: the same
#      dpv_perf tests, and Debian's perftest (ib_send_lat, ib_send_bw -s 64,
#      ib_write_bw -s 65536) on the drop-in BUILD/compat/libibverbs.so.1;
#   4. with --shared, shared mode against embedded mode in the same sitting
#      (needs 2 CPUs): RC SEND 64 B latency and rate and RC WRITE 64 KiB
#      bandwidth in one process (--loopback, application on CPU 0), with
#      heap buffers and with --hugepage-buf, embedded (inline progress: one
#      core; lcore progress, config/loopback-lcore.json: engine on CPU 1)
#      and through dpverbsd (a private shared configuration, its engine on
#      an lcore on CPU 1); then two processes: dpv_perf RC SEND 64 B
#      latency and rate and perftest, embedded over net_memif (server on
#      CPU 0, client on CPU 1) and through the daemon (-d dpv0 / -d dpv1,
#      both pinned to CPU 0: with the daemon's lcore, three spinning threads
#      on two CPUs);
#   5. the section "ports" (full runs, or alone with --ports; needs root):
#      dpverbs' three kinds of port side by side in one sitting, over one
#      veth pair between two network namespaces the section makes and
#      removes (servers in one, clients in the other):
#      perftest ib_send_lat -s 64, ib_send_bw -s 64 and ib_write_bw -s 65536
#      over net_memif, AF_XDP beside the kernel (the veth's own addresses)
#      and net_af_packet (addresses of their own), and the kernel's figures
#      over the same veth: UDP ping-pong (blocking and --busy), UDP stream,
#      TCP stream (udp_pingpong); the cache line between CPU 0 and CPU 1
#      before each group; R rounds (--ports-repeat) alternating the
#      transports, reported as median and range.
#   6. the section "apps" (full runs, or alone with --apps;
#      apps/bench/dpv_bench_apps.sh): fio (rdma against net over TCP), Open MPI
#      over UCX (apps/dpv_mpi_pingpong/, against ob1/tcp), qperf (rc/ud
#      against tcp_lat/tcp_bw) and ucx_perftest (rc_verbs against tcp), each
#      in embedded and in shared mode beside the kernel alternative over
#      127.0.0.1; apps/bench/dpv_bench_apps_report.py writes apps.json, apps.csv,
#      apps_summary.txt (the targets: latency up to 4 KiB <= 0.5x the
#      kernel's, bandwidth from 64 KiB >= 1.5x, shared within 1.5x of
#      embedded) and the MPI plots.
# Then apps/bench/dpv_bench_report.py writes results.json, results.csv, summary.txt
# (every dpverbs figure next to its baseline and the ratio; with --shared
# also the section "shared mode vs embedded mode": every shared figure next
# to its embedded counterpart and the ratio; with the ports section memif,
# AF_XDP and af_packet side by side, each figure next to the kernel's over
# the same veth and the project's targets, met or not) and the plots
# latency_cdf.png and sweep.png (gnuplot), and prints the summary.
#
# usage: apps/bench/dpv_bench.sh [options]
#   --quick            short runs (under a minute in all), for smoke use
#   --two-process      also the two-process part (serialized with other
#                      two-process runs on /tmp/dpverbs-pair.lock)
#   --shared           also the shared-mode part (after the others; starts
#                      and stops its own dpverbsd on a private configuration;
#                      its two-process runs hold /tmp/dpverbs-pair.lock too)
#   --progress MODE    inline (default) or lcore: config/loopback-lcore.json
#                      (and pair-a-lcore.json / pair-b-lcore.json)
#   --ports            only the section "ports" (not the other parts); with
#                      --quick, short runs and one round (about a minute)
#   --no-ports         without the section "ports" (which full runs include)
#   --apps             only the section "apps" (fio, MPI, qperf, UCX); with
#                      --quick, short runs
#   --no-apps          without the section "apps" (which full runs include)
#   --ports-repeat R   rounds of the ports section (default 3, --quick 1)
#   --ports-pin        ports section: servers on CPU 0, clients on CPU 1
#                      (default: not pinned; pinned, the busy-polling
#                      processes share their CPU with the kernel's softirq
#                      work for the veth, and the AF_XDP and af_packet
#                      message rates fall about tenfold)
#   -o DIR             results directory (default BUILD/bench/<timestamp>)
#   -b BUILD           build directory (default <repo>/build)
#   --no-plots         do not run gnuplot
#   --timeout SEC      per process (default 120, quick 30; the ports
#                      section: 60, quick 30)
#   -h, --help         this text
# Exit status: 0 every run passed its checks, 1 some run failed (the others
# are still reported), 2 usage or missing programs.
#
# Two-process runs use private copies of the pair configurations (their own
# memif socket in the work directory and EAL file prefixes), so they do not
# disturb the test suite's shared names; so does the shared-mode part's
# daemon configuration (its own socket and EAL file prefix). Only processes
# this script started are ever signalled.
set -u

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$repo/build
out=
quick=0
two=0
shared=0
progress=inline
plots=1
tmo=
ports=           # the section "ports": default in full runs, not in --quick
ports_only=0
apps=            # the section "apps": default in full runs, not in --quick
apps_only=0
pt_rounds=
pt_pin=0

usage() { sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1; shift ;;
	--two-process) two=1; shift ;;
	--shared) shared=1; shift ;;
	--progress) progress=${2:-}; shift 2 ;;
	--progress=*) progress=${1#*=}; shift ;;
	--ports) ports_only=1; shift ;;
	--no-ports) ports=0; shift ;;
	--apps) apps_only=1; shift ;;
	--no-apps) apps=0; shift ;;
	--ports-repeat) pt_rounds=${2:-}; shift 2 ;;
	--ports-repeat=*) pt_rounds=${1#*=}; shift ;;
	--ports-pin) pt_pin=1; shift ;;
	-o) out=${2:-}; shift 2 ;;
	-b) build=${2:-}; shift 2 ;;
	--no-plots) plots=0; shift ;;
	--timeout) tmo=${2:-}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "dpv_bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
case "$progress" in inline|lcore) ;; *) echo "dpv_bench.sh: --progress inline or lcore" >&2; exit 2 ;; esac
if [ $ports_only = 1 ]; then
	if [ "$ports" = 0 ] || [ $two = 1 ] || [ $shared = 1 ]; then
		echo "dpv_bench.sh: --ports runs the ports section alone (not with --no-ports, --two-process, --shared)" >&2
		exit 2
	fi
	ports=1
fi
if [ $apps_only = 1 ]; then
	if [ "$apps" = 0 ] || [ $ports_only = 1 ] || [ $two = 1 ] || [ $shared = 1 ]; then
		echo "dpv_bench.sh: --apps runs the apps section alone (not with --no-apps, --ports, --two-process, --shared)" >&2
		exit 2
	fi
	apps=1 ports=0
fi
[ -n "$apps" ] || { [ $quick = 1 ] && apps=0 || apps=1; }
[ -n "$ports" ] || { [ $quick = 1 ] && ports=0 || ports=1; }
[ -n "$pt_rounds" ] || { [ $quick = 1 ] && pt_rounds=1 || pt_rounds=3; }
case "$pt_rounds" in [1-9]|[1-9][0-9]) ;; *) echo "dpv_bench.sh: --ports-repeat 1 .. 99" >&2; exit 2 ;; esac
case "${tmo:-30}" in [1-9][0-9]|[1-9][0-9][0-9]|[1-9][0-9][0-9][0-9]) ;;
*) echo "dpv_bench.sh: --timeout 10 .. 9999" >&2; exit 2 ;; esac
build=$(cd "$build" 2>/dev/null && pwd) || { echo "dpv_bench.sh: no build directory" >&2; exit 2; }
perf=$build/apps/dpv_perf/dpv_perf
base=$build/apps/dpv_baseline/dpv_baseline
daemon=$build/apps/dpverbsd/dpverbsd
for b in "$perf" "$base" $([ $shared = 1 ] && echo "$daemon"); do
	[ -x "$b" ] || { echo "dpv_bench.sh: $b not built (ninja -C $build)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "dpv_bench.sh: needs python3" >&2; exit 2; }
[ -n "$out" ] || out=$build/bench/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out/raw" "$out/logs" || exit 2
out=$(cd "$out" && pwd)

work=$(mktemp -d /tmp/dpv-bench.XXXXXX)
pids=()
status=0
sh_prefix=dpv-bench-$$-sh   # the shared-mode daemon's EAL file prefix
cleanup() {
	local p
	for p in "${pids[@]}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
	[ "$shared" = 1 ] && rm -rf "/var/run/dpdk/$sh_prefix" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$sh_prefix" 2>/dev/null
	[ "$ports" = 1 ] && declare -F ports_teardown >/dev/null && ports_teardown
	rm -rf "$work"
}
# forget_pid PID: PID has been waited for (exact match: no other PID is touched)
forget_pid() {
	local p keep=()
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$progress" = lcore ]; then
	loop_cfg=$repo/config/loopback-lcore.json
	pair_a=$repo/config/pair-a-lcore.json
	pair_b=$repo/config/pair-b-lcore.json
else
	loop_cfg=
	pair_a=$repo/config/pair-a.json
	pair_b=$repo/config/pair-b.json
fi

# sizes of the runs: quick / full
# (the ports section: perftest counts, kernel TCP stream seconds, per-process timeout)
if [ $quick = 1 ]; then
	pt_n_lat=2000 pt_n_bw=30000 pt_n_big=300 pt_tcp_s=1 pt_tmo=${tmo:-30}
else
	pt_n_lat=20000 pt_n_bw=300000 pt_n_big=3000 pt_tcp_s=3 pt_tmo=${tmo:-60}
fi
[ -n "$tmo" ] || { [ $quick = 1 ] && tmo=30 || tmo=120; }
if [ $quick = 1 ]; then
	n_rate=1000000 n_big=20000 n_lat=100000 n_qps=20000 sweep=64:1048576 n_sweep=5000 base_args=--quick
	pt_lat=2000 pt_bw=50000 pt_big=2000
	# --shared: heap-buffer runs go through process_vm_readv/writev (about
	# 100 k msg/s), and the two-process runs share CPU 0 between two spinning
	# applications: smaller counts
	sh_lat=20000 sh_rate=200000 sh_big=5000 sh2_lat=1000 sh2_rate=20000 sh_pt_lat=1000 sh_pt_bw=20000 sh_pt_big=1000
else
	n_rate=2000000 n_big=50000 n_lat=200000 n_qps=200000 sweep=1:1048576 n_sweep=20000 base_args=
	pt_lat=20000 pt_bw=1000000 pt_big=20000
	sh_lat=100000 sh_rate=1000000 sh_big=20000 sh2_lat=5000 sh2_rate=200000 sh_pt_lat=5000 sh_pt_bw=200000 sh_pt_big=5000
fi

log() { printf '%s\n' "$*" >&2; }
note_fail() { status=1; log "  FAILED: $*"; }

# cacheline_check JSON PART: a WARNING when the cache line between CPU 0
# and CPU 1 says the two vCPUs are far apart (one way over
# DPV_BENCH_FAR_NS, 150 ns: near is 40-90 ns on this project's VMs, far
# 200-440): every figure that crosses the two CPUs is then 2-4 times worse
# and not comparable with figures taken near. The time goes in the log and
# in the report beside the figures.
far_ns=${DPV_BENCH_FAR_NS:-150}
far_warnings=()
cacheline_check() {
	local ns
	ns=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["cacheline"]["one_way_ns_p50"]))' \
		"$1" 2>/dev/null) || return 0
	if [ "$ns" -gt "$far_ns" ]; then
		far_warnings+=("WARNING: the two vCPUs are far apart ($2): a cache line takes $ns ns one way (near: 40-90 ns); two-process figures of this run are not comparable with near ones")
		log "  ${far_warnings[-1]}"
	else
		log "  [$2] cache line between CPU 0 and CPU 1: $ns ns one way"
	fi
}

# the dpv_perf tests: NAME|ARGS (the same in both modes)
tests=(
	"ud_send_bw_64|-c ud -o send -t bw -s 64 -n $n_rate -l 16 --signal 16"
	"ud_send_bw_64_td|-c ud -o send -t bw -s 64 -n $n_rate -l 16 --signal 16 --td"
	"rc_write_bw_64|-c rc -o write -t bw -s 64 -n $n_rate -l 16 --signal 16"
	"rc_write_bw_64k|-c rc -o write -t bw -s 65536 -n $n_big"
	"rc_send_lat_64|-c rc -o send -t lat -s 64 -n $n_lat"
	"ud_send_lat_64|-c ud -o send -t lat -s 64 -n $n_lat"
	"rc_write_sweep|-c rc -o write -t bw --sweep $sweep -n $n_sweep"
	"rc_write_bw_64_q1|-c rc -o write -t bw -s 64 -n $n_qps -q 1"
	"rc_write_bw_64_q1024|-c rc -o write -t bw -s 64 -n $n_qps -q 1024 --msg-timeout 5000"
)

run_baseline() {
	log "[baseline] dpv_baseline $base_args"
	"$base" $base_args --json --timeout "$tmo" > "$out/raw/baseline.json" 2> "$out/logs/baseline.err" ||
		note_fail "dpv_baseline (see logs/baseline.err)"
	cacheline_check "$out/raw/baseline.json" baseline
}

run_loopback() {
	local t name args
	for t in "${tests[@]}"; do
		name=${t%%|*} args=${t#*|}
		log "[loopback] $name: dpv_perf --loopback $args"
		# shellcheck disable=SC2086
		DPVERBS_CONFIG=$loop_cfg timeout $((tmo + 10)) "$perf" --loopback $args --json --timeout "$tmo" \
			--csv "$out/raw/dpv_perf.csv" > "$out/raw/loop_$name.json" 2> "$out/logs/loop_$name.err" ||
			note_fail "loop_$name (see logs/loop_$name.err)"
	done
}

# ---- two processes over net_memif ----

pick_port() {
	local p i
	for i in 0 1 2 3 4 5 6 7 8 9; do
		p=$(( 20000 + (RANDOM * 7 + i * 131) % 20000 ))
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
	done
	echo 18600
}

# private copies: their own memif socket and EAL file prefixes
make_pair_cfgs() {
	local s src
	for s in a b; do
		[ $s = a ] && src=$pair_a || src=$pair_b
		python3 - "$src" "$work/pair-$s.json" "$work/memif.sock" "dpv-bench-$$-$s" <<'PY' || return 1
import json, re, sys
c = json.load(open(sys.argv[1]))
c['eal']['file_prefix'] = sys.argv[4]
c['ports'][0]['device']['args'] = re.sub(r'socket=[^,]*', 'socket=' + sys.argv[3], c['ports'][0]['device']['args'])
json.dump(c, open(sys.argv[2], 'w'), indent=2)
PY
	done
}

# wait_for FILE PID PATTERN: until PATTERN is in FILE (10 s), or PID ended
wait_for() {
	local i
	for i in $(seq 1 200); do
		grep -q "$3" "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# run_pair NAME WAIT_PATTERN SERVER_CMD... -- CLIENT_CMD...: output in logs/NAME.srv
# (server, stdout and stderr), NAME.cli and NAME.err (client stdout, stderr).
# The server runs on $pair_srv_cfg, the client on $pair_cli_cfg (default the
# memif pair), behind the command prefixes $pair_pin_srv and $pair_pin_cli
# (default none).
pair_srv_cfg='' pair_cli_cfg='' pair_pin_srv='' pair_pin_cli=''
run_pair() {
	local name=$1 pat=$2 scmd=() rc src
	local scfg=${pair_srv_cfg:-$work/pair-a.json} ccfg=${pair_cli_cfg:-$work/pair-b.json}
	shift 2
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	# shellcheck disable=SC2086
	DPVERBS_CONFIG=$scfg timeout $((tmo + 10)) $pair_pin_srv "${scmd[@]}" > "$out/logs/$name.srv" 2>&1 &
	local sp=$!
	pids+=("$sp")
	if [ -n "$pat" ]; then wait_for "$out/logs/$name.srv" "$sp" "$pat"; else sleep 1.5; fi
	# shellcheck disable=SC2086
	DPVERBS_CONFIG=$ccfg timeout $((tmo + 10)) $pair_pin_cli "$@" > "$out/logs/$name.cli" 2> "$out/logs/$name.err"
	rc=$?
	wait "$sp" 2>/dev/null
	src=$?
	forget_pid "$sp"
	rm -f "$work/memif.sock"
	[ $rc = 0 ] && [ $src = 0 ] || { note_fail "$name: client exit $rc, server exit $src (logs/$name.*)"; return 1; }
}

run_two_process() {
	local t name args port
	make_pair_cfgs || { note_fail "pair configurations"; return; }
	exec 9>/tmp/dpverbs-pair.lock
	log "[two-process] waiting for /tmp/dpverbs-pair.lock"
	flock -w 600 9 || { note_fail "could not get /tmp/dpverbs-pair.lock"; return; }
	cacheline_now memif
	for t in "${tests[@]}"; do
		name=${t%%|*} args=${t#*|}
		port=$(pick_port)
		log "[two-process] $name: dpv_perf --server / dpv_perf $args 127.0.0.1"
		# shellcheck disable=SC2086
		run_pair "memif_$name" "waiting for a client" "$perf" --server -p "$port" --timeout "$tmo" -- \
			"$perf" -p "$port" $args --timeout "$tmo" --json --csv "$out/raw/dpv_perf.csv" 127.0.0.1
		cp "$out/logs/memif_$name.cli" "$out/raw/memif_$name.json"
	done
	cacheline_now perftest
	run_perftest
	exec 9>&-
}

# The cache-line round trip between the two CPUs again, just before a part
# that crosses them (raw/cacheline_PART.json): on a VM it moves with where
# the hypervisor places the vCPUs (here 40 ns or 200 ns one way, minutes
# apart), and every two-process figure moves with it.
cacheline_now() {
	"$base" -t cacheline --quick --json --timeout "$tmo" > "$out/raw/cacheline_$1.json" 2>> "$out/logs/baseline.err" ||
		note_fail "dpv_baseline -t cacheline ($1)"
	cacheline_check "$out/raw/cacheline_$1.json" "$1"
}

# Debian's perftest on the drop-in; the client's result line goes to
# raw/pt_TAGNAME.txt. run_perftest [TAG SERVER_DEV CLIENT_DEV N_LAT N_BW N_BIG]
# (default: no tag, dpv0 on both sides, the part's counts)
run_perftest() {
	local tag=${1:-} sdev=${2:-dpv0} cdev=${3:-dpv0}
	local t name args port
	local -a pt=("ib_send_lat|-s 64 -n ${4:-$pt_lat}" "ib_send_bw|-s 64 -n ${5:-$pt_bw}"
		"ib_write_bw|-s 65536 -n ${6:-$pt_big}")
	for t in "${pt[@]}"; do
		name=${t%%|*} args=${t#*|}
		command -v "$name" >/dev/null || { log "[perftest] $name not installed: skipped"; continue; }
		port=$(pick_port)
		log "[perftest${tag:+ $tag}] $name $args (drop-in libibverbs.so.1, server -d $sdev, client -d $cdev${pair_pin_srv:+; server $pair_pin_srv, client $pair_pin_cli})"
		# shellcheck disable=SC2086
		LD_LIBRARY_PATH=$build/compat run_pair "pt_$tag$name" "" "$name" -d "$sdev" -x 1 -p "$port" $args -- \
			"$name" -d "$cdev" -x 1 -p "$port" $args 127.0.0.1
		grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$out/logs/pt_$tag$name.cli" | tail -1 \
			> "$out/raw/pt_$tag$name.txt"
	done
}

# ---- shared mode (dpverbsd) against embedded mode, one sitting ----

sh_cfg=$work/shared.json
sh_sock=$work/dpverbsd.sock
dpid=

# the built-in default's two ports (config/default.json), "mode": "shared",
# a socket and an EAL file prefix of its own, the engine on a service lcore
# on CPU 1 (the ports of config/loopback-lcore.json, served by the daemon)
make_shared_cfg() {
	python3 - "$repo/config/default.json" "$sh_cfg" "$sh_sock" "$sh_prefix" <<'PY' || return 1
import json, sys
c = json.load(open(sys.argv[1]))
c['mode'] = 'shared'
c['shared'] = {'socket': sys.argv[3]}
c.setdefault('eal', {})['file_prefix'] = sys.argv[4]
c['progress'] = 'lcore'
for p in c['ports']:
    p['lcores'] = [1]
json.dump(c, open(sys.argv[2], 'w'), indent=2)
PY
	cp "$sh_cfg" "$out/raw/shared-config.json"
}

# running PID: alive and not a zombie (an exited child stays one until waited for)
running() {
	# (ps, not kill -0 alone: a zombie reaped between two probes is gone,
	# and an empty state means gone too)
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ]
}

start_daemon() {
	local i
	rm -f "$sh_sock"
	"$daemon" "$sh_cfg" > "$out/logs/dpverbsd.log" 2>&1 < /dev/null &
	dpid=$!
	pids+=("$dpid")
	for i in $(seq 1 100); do
		[ -S "$sh_sock" ] && { log "[shared] dpverbsd pid $dpid serving $sh_sock"; return 0; }
		running "$dpid" || break
		sleep 0.1
	done
	note_fail "dpverbsd did not start (logs/dpverbsd.log)"
	stop_daemon
	return 1
}

# SIGTERM to the daemon started above (only that PID), exit status 0
# expected; then nothing may be left behind
stop_daemon() {
	local i rc
	[ -n "$dpid" ] || return 0
	running "$dpid" && kill -TERM "$dpid" 2>/dev/null
	for i in $(seq 1 100); do
		running "$dpid" || break
		sleep 0.1
	done
	if running "$dpid"; then
		note_fail "dpverbsd did not stop within 10 s of SIGTERM (killed)"
		kill -KILL "$dpid" 2>/dev/null
	fi
	wait "$dpid" 2>/dev/null
	rc=$?
	forget_pid "$dpid"
	log "[shared] dpverbsd pid $dpid exited with status $rc"
	[ $rc = 0 ] || note_fail "dpverbsd exited with status $rc (logs/dpverbsd.log)"
	if [ -e "$sh_sock" ]; then
		note_fail "dpverbsd left its socket behind"
		rm -f "$sh_sock"
	fi
	rm -rf "/var/run/dpdk/$sh_prefix" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$sh_prefix" 2>/dev/null
	dpid=
}

# sh_loop SETUP CONFIG BUFFER NAME ARGS: dpv_perf --loopback with the
# application pinned to CPU 0; raw/sh_SETUP_NAME_BUFFER.json
sh_loop() {
	local setup=$1 cfg=$2 buf=$3 name=$4 args=$5 f hb=
	f=sh_${setup}_${name}_$buf
	[ "$buf" = hugepage ] && hb=--hugepage-buf
	log "[shared] $setup $name, $buf buffers: taskset -c 0 dpv_perf --loopback $args $hb"
	# shellcheck disable=SC2086
	DPVERBS_CONFIG=$cfg timeout $((tmo + 10)) taskset -c 0 "$perf" --loopback $args $hb --json --timeout "$tmo" \
		--csv "$out/raw/dpv_perf_shared.csv" > "$out/raw/$f.json" 2> "$out/logs/$f.err" ||
		note_fail "$f (see logs/$f.err)"
}

# sh_pair SETUP NAME ARGS SERVER_DEV CLIENT_DEV: dpv_perf --server / client
# (run_pair's configurations and pinning); raw/sh_SETUP_NAME.json
sh_pair() {
	local setup=$1 name=$2 args=$3 port
	port=$(pick_port)
	log "[shared] $setup $name: ${pair_pin_srv:+$pair_pin_srv }dpv_perf --server -d $4 / ${pair_pin_cli:+$pair_pin_cli }dpv_perf -d $5 $args 127.0.0.1"
	# shellcheck disable=SC2086
	run_pair "sh_${setup}_$name" "waiting for a client" "$perf" --server -d "$4" -p "$port" --timeout "$tmo" -- \
		"$perf" -d "$5" -p "$port" $args --msg-timeout 5000 --timeout "$tmo" --json \
		--csv "$out/raw/dpv_perf_shared.csv" 127.0.0.1
	cp "$out/logs/sh_${setup}_$name.cli" "$out/raw/sh_${setup}_$name.json"
}

run_shared() {
	local t name args buf
	local -a one=(
		"rc_send_lat_64|-c rc -o send -t lat -s 64 -n $sh_lat"
		"rc_send_bw_64|-c rc -o send -t bw -s 64 -n $sh_rate -l 16 --signal 16"
		"rc_write_bw_64k|-c rc -o write -t bw -s 65536 -n $sh_big"
	)
	local -a pairs=(
		"rc_send_lat_64|-c rc -o send -t lat -s 64 -n $sh2_lat"
		"rc_send_bw_64|-c rc -o send -t bw -s 64 -n $sh2_rate -l 16 --signal 16"
	)
	if [ "$(nproc)" -lt 2 ]; then
		log "[shared] needs two CPUs (application on CPU 0, the daemon's engine on CPU 1): skipped"
		return
	fi
	make_shared_cfg || { note_fail "shared configuration"; return; }
	# other work on the machine shows in every figure: the load average
	# at the start and at the end of the part go into the report
	cp /proc/loadavg "$out/raw/sh_loadavg_start.txt"

	# embedded, one process, the same pinning: inline progress (application
	# and engine on CPU 0: one core) and lcore progress (engine on CPU 1:
	# the same two cores as shared mode)
	cacheline_now sh_embedded
	for t in "${one[@]}"; do
		name=${t%%|*} args=${t#*|}
		for buf in heap hugepage; do
			sh_loop emb_inline "" "$buf" "$name" "$args"
			sh_loop emb_lcore "$repo/config/loopback-lcore.json" "$buf" "$name" "$args"
		done
	done

	# two processes: embedded over net_memif (each process its engine inline,
	# server on CPU 0, client on CPU 1: two spinning threads, each on its
	# own CPU; unpinned, the scheduler sometimes puts both on one CPU and
	# the latency jumps from 0.5 to 60 us or more) ...
	make_pair_cfgs || { note_fail "pair configurations"; return; }
	exec 9>/tmp/dpverbs-pair.lock
	log "[shared] waiting for /tmp/dpverbs-pair.lock"
	flock -w 600 9 || { note_fail "could not get /tmp/dpverbs-pair.lock"; exec 9>&-; return; }
	cacheline_now sh_memif
	pair_pin_srv="taskset -c 0" pair_pin_cli="taskset -c 1"
	for t in "${pairs[@]}"; do
		sh_pair memif "${t%%|*}" "${t#*|}" dpv0 dpv0
	done
	run_perftest sh_memif_ dpv0 dpv0 "$sh_pt_lat" "$sh_pt_bw" "$sh_pt_big"
	pair_pin_srv='' pair_pin_cli=''

	# ... and through the daemon. The cache line is measured before the
	# daemon starts: its lcore spins on CPU 1, one of the test's two CPUs.
	cacheline_now shared
	if start_daemon; then
		for t in "${one[@]}"; do
			name=${t%%|*} args=${t#*|}
			for buf in heap hugepage; do
				sh_loop shared "$sh_cfg" "$buf" "$name" "$args"
			done
		done
		# both applications on CPU 0, the daemon's lcore alone on CPU 1:
		# three spinning threads on two CPUs
		pair_srv_cfg=$sh_cfg pair_cli_cfg=$sh_cfg pair_pin_srv="taskset -c 0" pair_pin_cli="taskset -c 0"
		for t in "${pairs[@]}"; do
			sh_pair shared2 "${t%%|*}" "${t#*|}" dpv0 dpv1
		done
		run_perftest sh_shared_ dpv0 dpv1 "$sh_pt_lat" "$sh_pt_bw" "$sh_pt_big"
		pair_srv_cfg='' pair_cli_cfg='' pair_pin_srv='' pair_pin_cli=''
		stop_daemon
	fi
	exec 9>&-
	cp /proc/loadavg "$out/raw/sh_loadavg_end.txt"
}

# ---- ports: memif, AF_XDP and af_packet over one veth, one sitting ----
#
# Two network namespaces of this run (pt_ns_a, pt_ns_b) joined by one veth
# pair with one queue per direction (pt_if_a, pt_if_b), kernel addresses
# 10.77.0.1/24 and .2/24; nothing is made in the initial namespace. Servers
# run in A, clients in B (--ports-pin: on CPU 0 and CPU 1), each under
# timeout. Per round: perftest ib_send_lat -s 64 over memif, AF_XDP and
# af_packet, the kernel's UDP ping-pong (blocking and --busy); ib_send_bw
# -s 64 over the three, the kernel's UDP stream; ib_write_bw -s 65536 over
# the three, the kernel's TCP stream; the cache line between CPU 0 and
# CPU 1 before each of the three groups. Results in raw/ports/ (runs.tsv:
# every run and its outcome), logs in logs/ports/, the configurations in
# ports/.

pt_ns_a=dpvb-$$-a pt_ns_b=dpvb-$$-b
pt_if_a=dpvb$$a pt_if_b=dpvb$$b
pt_k_a=10.77.0.1 pt_k_b=10.77.0.2      # the kernel's, /24 (AF_XDP: RoCEv2's too)
pt_p_a=10.78.0.1 pt_p_b=10.78.0.2      # af_packet: dpverbs' own, /24
pt_sock=$work/ports-memif.sock
pt_made_a=0 pt_made_b=0
pt_pids=()
pt_port=20000
pt_prefixes=()
pt_pin_a='' pt_pin_b=''
declare -A pt_timeouts=()

ports_prereqs() {
	local p
	[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, a veth pair, AF_XDP)"; return 1; }
	for p in ip ss taskset timeout ping ib_send_lat ib_send_bw ib_write_bw; do
		command -v "$p" >/dev/null || { echo "$p not installed"; return 1; }
	done
	[ -x "$build/apps/udp_pingpong/udp_pingpong" ] || { echo "$build/apps/udp_pingpong/udp_pingpong not built"; return 1; }
	[ -e "$build/compat/libibverbs.so.1" ] || { echo "the drop-in $build/compat/libibverbs.so.1 not built"; return 1; }
	return 0
}

# descendants PID: PID and every process below it
descendants() {
	local c
	echo "$1"
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do descendants "$c"; done
}

# ports_stop PID...: TERM to each PID and the processes below it, KILL to
# those still alive 5 s later, then wait for the PIDs (children of this
# script). Only processes this section started.
ports_stop() {
	local p i all=() alive
	for p in "$@"; do mapfile -t -O "${#all[@]}" all < <(descendants "$p"); done
	for p in "${all[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for i in $(seq 1 50); do
		alive=0
		for p in "${all[@]}"; do running "$p" && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for p in "${all[@]}"; do running "$p" && kill -KILL "$p" 2>/dev/null; done
	for p in "$@"; do wait "$p" 2>/dev/null; done
}

pt_forget() {
	local p keep=()
	for p in "${pt_pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pt_pids=("${keep[@]}")
}

hugetlb_dirs() { awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts 2>/dev/null; }

# ports_leftovers: what the section's processes left (namespaces aside)
ports_leftovers() {
	local p d
	[ -e "$pt_sock" ] && echo "memif socket $pt_sock"
	for p in "${pt_prefixes[@]}"; do
		[ -e "/var/run/dpdk/$p" ] && echo "/var/run/dpdk/$p"
		for d in $(hugetlb_dirs); do
			compgen -G "$d/${p}map_*" >/dev/null && echo "hugepage files $d/${p}map_*"
		done
	done
	for p in "${pt_pids[@]}"; do running "$p" && echo "process $p"; done
}

# ports_teardown: the section's processes, namespaces (and with them the
# veth), memif socket, EAL runtime directories and hugepage files; also
# from the EXIT trap
ports_teardown() {
	local p d i
	[ ${#pt_pids[@]} -gt 0 ] && ports_stop "${pt_pids[@]}"
	pt_pids=()
	[ "$pt_made_a" = 1 ] && ip netns del "$pt_ns_a" 2>/dev/null
	[ "$pt_made_b" = 1 ] && ip netns del "$pt_ns_b" 2>/dev/null
	pt_made_a=0 pt_made_b=0
	rm -f "$pt_sock"
	for p in "${pt_prefixes[@]}"; do
		rm -rf "/var/run/dpdk/$p"
		for d in $(hugetlb_dirs); do rm -f "$d/${p}"map_*; done
	done
	# the veth goes with the namespaces, a moment later
	for i in $(seq 1 30); do
		ip netns list 2>/dev/null | grep -Eq "^($pt_ns_a|$pt_ns_b)( |\$)" || break
		sleep 0.1
	done
}

ports_setup() {
	local i
	ip netns add "$pt_ns_a" || return 1
	pt_made_a=1
	ip netns add "$pt_ns_b" || return 1
	pt_made_b=1
	ip link add "$pt_if_a" netns "$pt_ns_a" numtxqueues 1 numrxqueues 1 type veth \
		peer name "$pt_if_b" netns "$pt_ns_b" numtxqueues 1 numrxqueues 1 || return 1
	ip -n "$pt_ns_a" addr add "$pt_k_a/24" dev "$pt_if_a" || return 1
	ip -n "$pt_ns_b" addr add "$pt_k_b/24" dev "$pt_if_b" || return 1
	ip -n "$pt_ns_a" link set lo up && ip -n "$pt_ns_b" link set lo up || return 1
	ip -n "$pt_ns_a" link set "$pt_if_a" up && ip -n "$pt_ns_b" link set "$pt_if_b" up || return 1
	# the link is up and each side knows the other's MAC
	for i in $(seq 1 50); do
		ip netns exec "$pt_ns_b" ping -c 1 -W 1 -q "$pt_k_a" >/dev/null 2>&1 && break
		sleep 0.1
	done
	ip netns exec "$pt_ns_a" ping -c 1 -W 1 -q "$pt_k_b" >/dev/null 2>&1
}

# the private configurations, in the run's folder (ports/): their own EAL
# file prefixes and memif socket
ports_configs() {
	local s role ifc mac ip4 pip pfx
	mkdir -p "$out/ports" || return 1
	for s in a b; do
		if [ $s = a ]; then role=server ifc=$pt_if_a mac=02:64:70:76:0a:01 ip4=192.0.2.1 pip=$pt_p_a
		else role=client ifc=$pt_if_b mac=02:64:70:76:0b:01 ip4=192.0.2.2 pip=$pt_p_b; fi
		pfx=dpv-bench-$$-memif-$s
		pt_prefixes+=("$pfx")
		cat > "$out/ports/memif-$s.json" <<JSON || return 1
{
  "mode": "embedded",
  "progress": "inline",
  "eal": {"file_prefix": "$pfx", "hugepages": true, "log_level": 4},
  "ports": [
    {
      "name": "dpv0",
      "device": {"type": "vdev", "args": "net_memif0,role=$role,id=0,socket=$pt_sock,socket-abstract=no,bsize=2048,rsize=11,zero-copy=no"},
      "mac": "$mac",
      "ipv4": "$ip4/24",
      "mtu": 1500
    }
  ]
}
JSON
		pfx=dpv-bench-$$-xdp-$s
		pt_prefixes+=("$pfx")
		cat > "$out/ports/af_xdp-$s.json" <<JSON || return 1
{
  "mode": "embedded",
  "progress": "inline",
  "eal": {"file_prefix": "$pfx", "hugepages": true, "log_level": 4},
  "ports": [
    {
      "name": "dpv0",
      "device": {"type": "af_xdp", "iface": "$ifc"}
    }
  ]
}
JSON
		pfx=dpv-bench-$$-pkt-$s
		pt_prefixes+=("$pfx")
		cat > "$out/ports/af_packet-$s.json" <<JSON || return 1
{
  "mode": "embedded",
  "progress": "inline",
  "eal": {"file_prefix": "$pfx", "hugepages": true, "log_level": 4},
  "ports": [
    {
      "name": "dpv0",
      "device": {"type": "vdev", "args": "net_af_packet0,iface=$ifc,qpairs=1,blocksz=4096,framesz=2048,framecnt=4096,qdisc_bypass=0"},
      "ipv4": "$pip/24",
      "mtu": 1500
    }
  ]
}
JSON
	done
}

# ports_wait_listen PID PORT: until PORT listens in namespace A (60 s), or PID ended
ports_wait_listen() {
	local i
	for i in $(seq 1 600); do
		ip netns exec "$pt_ns_a" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
		running "$1" || return 1
		sleep 0.1
	done
	return 1
}

# ports_run ROUND TRANSPORT TEST SCFG CCFG SERVER_CMD... -- CLIENT_CMD...:
# the server in namespace A, once it listens on $pt_port the client in B;
# SCFG/CCFG: dpverbs configurations (with the drop-in libibverbs.so.1), ""
# for a kernel program. Output in logs/ports/NAME.{srv,cli,err} (NAME =
# rROUND_TRANSPORT_TEST); one line in raw/ports/runs.tsv: round, transport,
# test, name, status (ok, fail, timeout, skipped), client and server exit
# status, seconds, reason. Returns 0 if both ended with 0.
ports_run() {
	local round=$1 tr=$2 test=$3 scfg=$4 ccfg=$5 name scmd=() senv=() cenv=() sp cp rc_c=- rc_s=- i t0 st why='' hint
	shift 5
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	name=r${round}_${tr}_$test
	if [ "${pt_timeouts[$tr.$test]:-0}" -ge 2 ]; then
		log "[ports] $name: skipped (timed out twice already)"
		printf '%s\t%s\t%s\t%s\tskipped\t-\t-\t0\t%s\n' "$round" "$tr" "$test" "$name" \
			"timed out in two earlier rounds" >> "$pt_raw/runs.tsv"
		return 1
	fi
	[ -n "$scfg" ] && senv=(env DPVERBS_CONFIG="$scfg" LD_LIBRARY_PATH="$build/compat")
	[ -n "$ccfg" ] && cenv=(env DPVERBS_CONFIG="$ccfg" LD_LIBRARY_PATH="$build/compat")
	log "[ports] round $round, $tr: $test"
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	timeout -k 5 "$pt_tmo" ip netns exec "$pt_ns_a" $pt_pin_a "${senv[@]}" "${scmd[@]}" \
		> "$pt_log/$name.srv" 2>&1 < /dev/null &
	sp=$!
	pt_pids+=("$sp")
	if ports_wait_listen "$sp" "$pt_port"; then
		# shellcheck disable=SC2086
		timeout -k 5 "$pt_tmo" ip netns exec "$pt_ns_b" $pt_pin_b "${cenv[@]}" "$@" \
			> "$pt_log/$name.cli" 2> "$pt_log/$name.err" < /dev/null &
		cp=$!
		pt_pids+=("$cp")
		wait "$cp"
		rc_c=$?
		pt_forget "$cp"
		# the server ends by itself once the client is done
		for i in $(seq 1 100); do running "$sp" || break; sleep 0.1; done
	else
		why="the server did not listen on TCP port $pt_port within 60 s"
	fi
	if running "$sp"; then
		[ -n "$why" ] || why="the server did not end within 10 s of the client (stopped)"
		ports_stop "$sp"
	fi
	wait "$sp" 2>/dev/null
	rc_s=$?
	pt_forget "$sp"
	pt_port=$((pt_port + 1))
	rm -f "$pt_sock"
	if [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ] && [ -z "$why" ]; then
		st=ok
	else
		if [ "$rc_c" = 124 ] || [ "$rc_c" = 137 ] || [ "$rc_s" = 124 ] || [ "$rc_s" = 137 ]; then
			st=timeout
			why="timed out after $pt_tmo s${why:+; $why}"
			pt_timeouts[$tr.$test]=$(( ${pt_timeouts[$tr.$test]:-0} + 1 ))
		else
			st=fail
		fi
		why="client exit $rc_c, server exit $rc_s${why:+; $why}"
		# what the programs said about it
		hint=$(grep -hiE 'error|fail|unable|couldn|refused|timed out|timeout' "$pt_log/$name.cli" \
			"$pt_log/$name.err" "$pt_log/$name.srv" 2>/dev/null | grep -v '^EAL' | head -3 |
			tr -s ' \t\n' ' ' | cut -c1-200)
		[ -n "$hint" ] && why="$why: $hint"
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tr" "$test" "$name" "$st" "$rc_c" "$rc_s" \
		"$(awk -v d=$(( $(date +%s%N) - t0 )) 'BEGIN { printf "%.1f", d / 1e9 }')" "$why" >> "$pt_raw/runs.tsv"
	[ $st = ok ] || { note_fail "ports $name: $why (logs/ports/$name.*)"; return 1; }
}

# ports_perftest ROUND TRANSPORT PROGRAM ARGS: perftest on the drop-in, the
# client given the kernel address of namespace A (its TCP exchange; for
# AF_XDP also RoCEv2's address); the result line in raw/ports/NAME.txt
ports_perftest() {
	local round=$1 tr=$2 prog=$3 args=$4 name=r$1_$2_$3
	# shellcheck disable=SC2086
	ports_run "$round" "$tr" "$prog" "$out/ports/$tr-a.json" "$out/ports/$tr-b.json" \
		"$prog" -d dpv0 -x 1 -p "$pt_port" $args -- "$prog" -d dpv0 -x 1 -p "$pt_port" $args "$pt_k_a"
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$pt_log/$name.cli" 2>/dev/null | tail -1 > "$pt_raw/$name.txt"
}

# ports_kernel ROUND TEST ARGS: udp_pingpong --server in A, the client in B
# (JSON in raw/ports/NAME.json)
ports_kernel() {
	local round=$1 test=$2 args=$3 up=$build/apps/udp_pingpong/udp_pingpong name=r$1_kernel_$2
	# shellcheck disable=SC2086
	ports_run "$round" kernel "$test" "" "" "$up" --server -p "$pt_port" --json --timeout $((pt_tmo - 5)) -- \
		"$up" $args -p "$pt_port" --json --timeout $((pt_tmo - 5)) "$pt_k_a"
	cp "$pt_log/$name.cli" "$pt_raw/$name.json" 2>/dev/null
}

# ports_cacheline ROUND GROUP: the cache line between CPU 0 and CPU 1
ports_cacheline() {
	"$base" -t cacheline --quick --json --timeout "$tmo" > "$pt_raw/r$1_cacheline_$2.json" 2>> "$pt_log/cacheline.err" ||
		note_fail "ports: dpv_baseline -t cacheline (round $1, $2)"
	cacheline_check "$pt_raw/r$1_cacheline_$2.json" "ports round $1 $2"
}

run_ports() {
	local why r tr t0 left
	pt_raw=$out/raw/ports pt_log=$out/logs/ports
	mkdir -p "$pt_raw" "$pt_log" || { note_fail "ports: cannot make $pt_raw"; return; }
	: > "$pt_raw/runs.tsv"
	if ! why=$(ports_prereqs); then
		log "[ports] skipped: $why"
		echo "$why" > "$pt_raw/skipped.txt"
		[ "$ports_only" = 1 ] && { note_fail "ports: $why"; status=2; }
		return
	fi
	if [ "$pt_pin" = 1 ] && [ "$(nproc)" -ge 2 ]; then pt_pin_a="taskset -c 0" pt_pin_b="taskset -c 1"; fi
	t0=$(date +%s)
	cp /proc/loadavg "$pt_raw/loadavg_start.txt"
	grep '^cpu ' /proc/stat > "$pt_raw/stat_start.txt"
	# two-process runs of the test suite on this machine would spin beside
	# ours: take their lock as the two-process part does
	exec 8>/tmp/dpverbs-pair.lock
	log "[ports] waiting for /tmp/dpverbs-pair.lock"
	flock -w 600 8 || log "[ports] /tmp/dpverbs-pair.lock still held after 600 s: running anyway"
	if ! ports_configs; then
		note_fail "ports: cannot write the configurations into $out/ports"
		echo "setup: configurations" > "$pt_raw/setup_failed.txt"
	elif ! ports_setup > "$pt_log/setup.log" 2>&1; then
		note_fail "ports: topology setup failed (logs/ports/setup.log)"
		echo "setup: namespaces $pt_ns_a/$pt_ns_b, veth $pt_if_a/$pt_if_b (logs/ports/setup.log)" \
			> "$pt_raw/setup_failed.txt"
	else
		log "[ports] namespaces $pt_ns_a ($pt_if_a $pt_k_a/24), $pt_ns_b ($pt_if_b $pt_k_b/24); $pt_rounds round(s)${pt_pin_a:+, server on CPU 0, client on CPU 1}"
		for r in $(seq 1 "$pt_rounds"); do
			ports_cacheline "$r" lat
			for tr in memif af_xdp af_packet; do ports_perftest "$r" "$tr" ib_send_lat "-s 64 -n $pt_n_lat"; done
			ports_kernel "$r" udp_lat_blocking "-t udp_lat -s 64 -n $pt_n_lat"
			ports_kernel "$r" udp_lat_busy "-t udp_lat -s 64 -n $pt_n_lat --busy"
			ports_cacheline "$r" bw
			for tr in memif af_xdp af_packet; do ports_perftest "$r" "$tr" ib_send_bw "-s 64 -n $pt_n_bw"; done
			ports_kernel "$r" udp_bw "-t udp_bw -s 64 -n $pt_n_bw"
			ports_cacheline "$r" big
			for tr in memif af_xdp af_packet; do ports_perftest "$r" "$tr" ib_write_bw "-s 65536 -n $pt_n_big"; done
			ports_kernel "$r" tcp_bw "-t tcp_bw -s 65536 --duration $pt_tcp_s"
		done
	fi
	# what the processes left (they all ended), then everything removed
	left=$(ports_leftovers)
	ports_teardown
	ip netns list 2>/dev/null | grep -Eq "^($pt_ns_a|$pt_ns_b)( |\$)" && left+=$'\n'"namespace $pt_ns_a or $pt_ns_b"
	ip link show "$pt_if_a" >/dev/null 2>&1 && left+=$'\n'"interface $pt_if_a"
	ip link show "$pt_if_b" >/dev/null 2>&1 && left+=$'\n'"interface $pt_if_b"
	printf '%s\n' "$left" | sed '/^$/d' > "$pt_raw/leftovers.txt"
	[ -s "$pt_raw/leftovers.txt" ] && log "[ports] left behind (removed now where possible): $(tr '\n' ';' < "$pt_raw/leftovers.txt")"
	exec 8>&-
	cp /proc/loadavg "$pt_raw/loadavg_end.txt"
	grep '^cpu ' /proc/stat > "$pt_raw/stat_end.txt"
	python3 - "$pt_raw/meta.json" <<PY
import json, sys
json.dump({'namespaces': ['$pt_ns_a', '$pt_ns_b'], 'veth': ['$pt_if_a', '$pt_if_b'],
           'kernel_addresses': ['$pt_k_a/24', '$pt_k_b/24'], 'af_packet_addresses': ['$pt_p_a/24', '$pt_p_b/24'],
           'memif_socket': '$pt_sock', 'prefixes': '${pt_prefixes[*]}'.split(),
           'rounds': $pt_rounds, 'order': ['memif', 'af_xdp', 'af_packet', 'kernel'],
           'pinned': bool('$pt_pin_a'), 'server_cpu': 0 if '$pt_pin_a' else None,
           'client_cpu': 1 if '$pt_pin_b' else None, 'timeout_s': $pt_tmo,
           'counts': {'ib_send_lat': $pt_n_lat, 'ib_send_bw': $pt_n_bw, 'ib_write_bw': $pt_n_big,
                      'udp_lat': $pt_n_lat, 'udp_bw': $pt_n_bw, 'tcp_bw_s': $pt_tcp_s},
           'seconds': $(( $(date +%s) - t0 ))}, open(sys.argv[1], 'w'), indent=1)
PY
	log "[ports] took $(( $(date +%s) - t0 )) s"
}

t0=$(date +%s)
log "dpv_bench: results in $out ($([ $quick = 1 ] && echo quick || echo full), progress $progress$([ $two = 1 ] && echo ', two-process')$([ $shared = 1 ] && echo ', shared')$([ $ports = 1 ] && echo ", ports ($pt_rounds rounds)")$([ $ports_only = 1 ] && echo ' only'))"
run_apps() {
	local a=(-b "$build" -o "$out")
	[ $quick = 1 ] && a+=(--quick)
	[ -n "$tmo" ] && a+=(--timeout "$tmo")
	log "[apps] fio, MPI, qperf and UCX: kernel, embedded, shared"
	local t=$(date +%s)
	cacheline_now apps
	"$here/dpv_bench_apps.sh" "${a[@]}" || status=1
	cacheline_now apps_end
	log "[apps] took $(( $(date +%s) - t )) s"
}

if [ $apps_only = 1 ]; then
	run_apps
	python3 "$here/dpv_bench_apps_report.py" "$out" $([ $plots = 0 ] && echo --no-plots) || status=1
	exit $status
fi
if [ $ports_only = 0 ]; then
	run_baseline
	run_loopback
	[ $two = 1 ] && run_two_process
	[ $shared = 1 ] && run_shared
fi
[ $ports = 1 ] && run_ports
[ $apps = 1 ] && [ $ports_only = 0 ] && run_apps
log "dpv_bench: runs took $(( $(date +%s) - t0 )) s"

report_args=(--dir "$out" --build "$build" --progress "$progress")
[ $quick = 1 ] && report_args+=(--quick)
[ $ports_only = 1 ] && report_args+=(--ports-only)
[ $plots = 0 ] && report_args+=(--no-plots)
python3 "$here/dpv_bench_report.py" "${report_args[@]}" || status=1
# the warnings again below the summary, and in summary.txt
for w in "${far_warnings[@]}"; do
	printf '%s\n' "$w"
	[ -f "$out/summary.txt" ] && printf '%s\n' "$w" >> "$out/summary.txt"
done
if [ $apps = 1 ] && [ $ports_only = 0 ]; then
	python3 "$here/dpv_bench_apps_report.py" "$out" $([ $plots = 0 ] && echo --no-plots) || status=1
fi
exit $status
