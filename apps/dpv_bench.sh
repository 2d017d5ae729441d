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
#      on two CPUs).
# Then apps/dpv_bench_report.py writes results.json, results.csv, summary.txt
# (every dpverbs figure next to its baseline and the ratio; with --shared
# also the section "shared mode vs embedded mode": every shared figure next
# to its embedded counterpart and the ratio) and the plots latency_cdf.png
# and sweep.png (gnuplot), and prints the summary.
#
# usage: apps/dpv_bench.sh [options]
#   --quick            short runs (under a minute in all), for smoke use
#   --two-process      also the two-process part (serialized with other
#                      two-process runs on /tmp/dpverbs-pair.lock)
#   --shared           also the shared-mode part (after the others; starts
#                      and stops its own dpverbsd on a private configuration;
#                      its two-process runs hold /tmp/dpverbs-pair.lock too)
#   --progress MODE    inline (default) or lcore: config/loopback-lcore.json
#                      (and pair-a-lcore.json / pair-b-lcore.json)
#   -o DIR             results directory (default BUILD/bench/<timestamp>)
#   -b BUILD           build directory (default <repo>/build)
#   --no-plots         do not run gnuplot
#   --timeout SEC      per process (default 120, quick 30)
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
repo=$(cd "$here/.." && pwd)
build=$repo/build
out=
quick=0
two=0
shared=0
progress=inline
plots=1
tmo=

usage() { sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1; shift ;;
	--two-process) two=1; shift ;;
	--shared) shared=1; shift ;;
	--progress) progress=${2:-}; shift 2 ;;
	--progress=*) progress=${1#*=}; shift ;;
	-o) out=${2:-}; shift 2 ;;
	-b) build=${2:-}; shift 2 ;;
	--no-plots) plots=0; shift ;;
	--timeout) tmo=${2:-}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "dpv_bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
case "$progress" in inline|lcore) ;; *) echo "dpv_bench.sh: --progress inline or lcore" >&2; exit 2 ;; esac
build=$(cd "$build" 2>/dev/null && pwd) || { echo "dpv_bench.sh: no build directory" >&2; exit 2; }
perf=$build/apps/dpv_perf
base=$build/apps/dpv_baseline
daemon=$build/apps/dpverbsd
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

t0=$(date +%s)
log "dpv_bench: results in $out ($([ $quick = 1 ] && echo quick || echo full), progress $progress$([ $two = 1 ] && echo ', two-process')$([ $shared = 1 ] && echo ', shared'))"
run_baseline
run_loopback
[ $two = 1 ] && run_two_process
[ $shared = 1 ] && run_shared
log "dpv_bench: runs took $(( $(date +%s) - t0 )) s"

report_args=(--dir "$out" --build "$build" --progress "$progress")
[ $quick = 1 ] && report_args+=(--quick)
[ $plots = 0 ] && report_args+=(--no-plots)
python3 "$here/dpv_bench_report.py" "${report_args[@]}" || status=1
exit $status
