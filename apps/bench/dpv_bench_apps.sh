#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpv_bench_apps.sh: the section "apps" of the benchmark suite (dpv_bench.sh
# --apps, part of full runs): applications on dpverbs beside their kernel
# alternative, in one sitting.
#
#   fio       ioengine=rdma (verb=write for writes, verb=read for reads)
#             against ioengine=net over TCP, 4 KiB and 64 KiB blocks,
#             iodepth 1 and 16 (TCP's iodepth is the engine's), a fixed
#             time each; bandwidth and mean completion latency of the client
#   mpi       apps/dpv_mpi_pingpong/ (ping-pong 8 B..4 MiB, allreduce) with
#             Open MPI over UCX (pml ucx, UCX_TLS=self,rc_verbs,ud_verbs)
#             against pml ob1 with btl self,tcp
#   qperf     rc_lat, rc_bw, rc_rdma_write_bw, ud_lat against tcp_lat,
#             tcp_bw (shared mode only: qperf's server forks per test)
#   ucx       ucx_perftest tag_lat 8 B and tag_bw 64 KiB / 1 MiB on rc_verbs
#             against UCX_TLS=tcp
#
# dpverbs runs in embedded mode (two processes over net_memif, private
# copies of config/pair-a.json and pair-b.json: their own memif socket and
# EAL file prefixes) and in shared mode (one dpverbsd of its own with the
# built-in default's two ring ports: server dpv0, client dpv1). The kernel
# alternative runs over 127.0.0.1, the same two processes. Nothing is pinned.
#
# Results: DIR/raw/apps.tsv, one row per figure:
#   workload  test  size  stack(embedded|shared|kernel)  lat_us  bw_MBps
# (empty where a figure does not apply); DIR/logs/apps/ the outputs; every
# run and its outcome in DIR/raw/apps-runs.tsv. apps/bench/dpv_bench_apps_report.py
# turns it into the table, the targets and the plots.
#
# usage: dpv_bench_apps.sh -b BUILD -o DIR [--quick] [--timeout SEC]
#                          [--only fio,mpi,qperf,ucx]
# Exit: 0 every run passed, 1 some failed (still reported), 2 usage.
set -u
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
src=$(cd "$here/../.." && pwd)
build="" out="" quick=0 tmo=120 only="fio,mpi,qperf,ucx"
while [ $# -gt 0 ]; do
	case "$1" in
	-b) build=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	--quick) quick=1; tmo=60; shift ;;
	--timeout) tmo=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	-h|--help) sed -n '3,36p' "$0"; exit 0 ;;
	*) echo "dpv_bench_apps.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -n "$build" ] && [ -n "$out" ] || { echo "usage: dpv_bench_apps.sh -b BUILD -o DIR" >&2; exit 2; }
build=$(cd "$build" && pwd)
mkdir -p "$out/raw" "$out/logs/apps"
out=$(cd "$out" && pwd)
run="$build/apps/dpverbs-run"
export DPVERBS_DROPIN=$build/compat
work=$(mktemp -d /tmp/dpv-bench-apps.XXXXXX)
tsv=$out/raw/apps.tsv
runs=$out/raw/apps-runs.tsv
printf 'workload\ttest\tsize\tstack\tlat_us\tbw_MBps\n' >"$tsv"
printf 'run\tresult\twhy\n' >"$runs"
groups_own="" daemon="" failed=0

cleanup() {
	local g
	for g in $groups_own; do kill -TERM -- "-$g" 2>/dev/null; done
	[ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null
	sleep 0.5
	for g in $groups_own; do kill -KILL -- "-$g" 2>/dev/null; done
	if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then kill -KILL "$daemon" 2>/dev/null; fi
	rm -rf "$work" "/var/run/dpdk/dpv-bapps-$$-a" "/var/run/dpdk/dpv-bapps-$$-b" "/var/run/dpdk/dpv-bapps-$$-d"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$tsv"; }
ok() { printf '%s\tok\t\n' "$1" >>"$runs"; }
bad() { printf '%s\tFAILED\t%s\n' "$1" "$2" >>"$runs"; echo "dpv_bench_apps: $1: FAILED: $2" >&2; failed=1; }
has() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }

# spawn LOG CMD...: in a process group of its own (fio and mpirun fork);
# SPAWNED = its PID = its group
spawn() {
	local log=$1; shift
	setsid timeout -k 5 "$tmo" "$@" >"$out/logs/apps/$log" 2>&1 &
	SPAWNED=$!
	groups_own="$groups_own $SPAWNED"
}
wait_text() { # FILE TEXT PID
	local i
	for i in $(seq 1 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
port=$((30000 + $$ % 10000))
next_port() { port=$((port + 1)); }

# ---- configurations ----
for s in a b; do
	python3 - "$src/config/pair-$s.json" "$work/pair-$s.json" "$work/memif.sock" "dpv-bapps-$$-$s" <<'PY' || exit 2
import json, re, sys
c = json.load(open(sys.argv[1]))
c['eal']['file_prefix'] = sys.argv[4]
c['ports'][0]['device']['args'] = re.sub(r'socket=[^,]*', 'socket=' + sys.argv[3], c['ports'][0]['device']['args'])
c['ports'][0]['lid'] = 'auto'
json.dump(c, open(sys.argv[2], 'w'), indent=2)
PY
done
python3 - "$work/shared.json" "$work/dpverbsd.sock" "dpv-bapps-$$-d" <<'PY' || exit 2
import json, sys
d = {"mode": "shared", "shared": {"socket": sys.argv[2]}, "eal": {"file_prefix": sys.argv[3]},
     "ports": [
        {"name": "dpv0", "device": {"type": "ring", "peer": "dpv1"}, "mac": "02:64:70:76:00:01",
         "ipv4": "192.0.2.1/24", "lid": "auto"},
        {"name": "dpv1", "device": {"type": "ring", "peer": "dpv0"}, "mac": "02:64:70:76:00:02",
         "ipv4": "192.0.2.2/24", "lid": "auto"}]}
import json as j
j.dump(d, open(sys.argv[1], "w"), indent=1)
PY

# set_mode embedded|shared|kernel: SRV / CLI command prefixes, DEV_S / DEV_C,
# HOST (what the client connects to for RDMA), and the daemon for shared
set_mode() {
	mode=$1
	case $mode in
	embedded)
		SRV=(sh "$run" -c "$work/pair-a.json") CLI=(sh "$run" -c "$work/pair-b.json")
		DEV_S=dpv0 DEV_C=dpv0 ;;
	shared)
		if [ -z "$daemon" ]; then
			"$build/apps/dpverbsd/dpverbsd" "$work/shared.json" >"$out/logs/apps/dpverbsd.log" 2>&1 </dev/null &
			daemon=$!
			local i
			for i in $(seq 1 100); do [ -S "$work/dpverbsd.sock" ] && break; sleep 0.1; done
			[ -S "$work/dpverbsd.sock" ] || { bad dpverbsd "did not start"; return 1; }
		fi
		SRV=(env DPVERBS_CONFIG="$work/shared.json" sh "$run") CLI=("${SRV[@]}")
		DEV_S=dpv0 DEV_C=dpv1 ;;
	kernel)
		SRV=() CLI=() ;;
	esac
	return 0
}

# ---- fio ----
# fio_one NAME DIR(write|read) BS DEPTH: one pair in the current mode
fio_json_field() { # FILE DIR: "lat_us bw_MBps" of the job in fio's JSON
	python3 - "$1" "$2" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
t = t[t.index('{'):]
j = json.loads(t)['jobs'][0]
d = j['write'] if sys.argv[2] == 'write' else j['read']
if d['io_bytes'] == 0:
    sys.exit(1)
print('%.3f %.1f' % (d['clat_ns']['mean'] / 1000.0, d['bw_bytes'] / 1e6))
PY
}
fio_one() {
	local name=$1 dir=$2 bs=$3 depth=$4 s c rt=5 sdir cdir r
	[ $quick = 1 ] && rt=2
	next_port
	local common=(--bs="$bs" --iodepth="$depth" --time_based --runtime="$rt" --size=64m --output-format=json)
	if [ "$mode" = kernel ]; then
		# TCP is symmetric over loopback and fio's net engine aborts as a
		# listening writer: the client writes, the listener reads, for both
		sdir=read cdir=write
		spawn "$name.srv" fio --name=srv --ioengine=net --listen --port="$port" --protocol=tcp --rw="$sdir" "${common[@]}"
		s=$SPAWNED
		local i; for i in $(seq 1 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
		spawn "$name.cli" fio --name=cli --ioengine=net --hostname=127.0.0.1 --port="$port" --protocol=tcp \
			--rw="$cdir" "${common[@]}"
		c=$SPAWNED
		r=$cdir
	else
		spawn "$name.srv" "${SRV[@]}" fio --name=srv --ioengine=rdma --port="$port" --rw=read "${common[@]}"
		s=$SPAWNED
		wait_text "$out/logs/apps/$name.srv" "waiting for connection" "$s" || { bad "$name" "server did not listen"; return; }
		spawn "$name.cli" "${CLI[@]}" fio --name=cli --ioengine=rdma --hostname=192.0.2.1 --port="$port" \
			--verb="$dir" --rw=write "${common[@]}"
		c=$SPAWNED
		r=write # the rdma client is a writer whichever verb moves the data
	fi
	wait "$c"; local rc_c=$?
	wait "$s"; local rc_s=$?
	local v
	if [ $rc_c != 0 ] || [ $rc_s != 0 ] || ! v=$(fio_json_field "$out/logs/apps/$name.cli" "$r"); then
		bad "$name" "exit client $rc_c server $rc_s"
		return
	fi
	row fio "$dir-qd$depth" "$bs" "$mode" ${v% *} ${v#* }
	ok "$name"
}
bench_fio() {
	local dir bs depth
	for dir in write read; do
		for bs in 4096 65536; do
			for depth in 1 16; do
				[ $quick = 1 ] && [ "$depth" = 1 ] && [ "$bs" = 4096 ] && continue
				fio_one "fio-$mode-$dir-$bs-qd$depth" "$dir" "$bs" "$depth"
			done
		done
	done
}

# ---- MPI ----
bench_mpi() {
	local mp=$build/apps/dpv_mpi_pingpong/dpv_mpi_pingpong args name=mpi-$mode
	[ -x "$mp" ] || { bad "$name" "dpv_mpi_pingpong not built (no MPI at configure time)"; return; }
	args=(--max 4m --json "$work/$name.json")
	[ $quick = 1 ] && args=(--max 1m --iters 200 --big-iters 20 --json "$work/$name.json")
	local mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
	if [ "$mode" = kernel ]; then
		spawn "$name" "${mpi[@]}" --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo \
			-np 2 "$mp" "${args[@]}"
	else
		spawn "$name" "${mpi[@]}" --mca pml ucx --mca pml_ucx_devices any --mca btl self --mca osc ^ucx \
			-x UCX_TLS=self,rc_verbs,ud_verbs -x DPVERBS_DROPIN \
			-np 1 env UCX_NET_DEVICES="$DEV_S:1" "${SRV[@]}" --view "$mp" "${args[@]}" : \
			-np 1 env UCX_NET_DEVICES="$DEV_C:1" "${CLI[@]}" --view "$mp" "${args[@]}"
	fi
	wait "$SPAWNED"; local rc=$?
	if [ $rc != 0 ] || ! grep -qx "all messages checked" "$out/logs/apps/$name"; then
		bad "$name" "exit $rc"
		return
	fi
	python3 - "$work/$name.json" "$mode" >>"$tsv" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    if r['test'] in ('pingpong', 'startup'):
        print('mpi\t%s\t%d\t%s\t%.3f\t%.1f' % (r['test'], r['size'], sys.argv[2], r['p50_us'], r['MBps']))
    else:
        print('mpi\tallreduce\t%d\t%s\t%.3f\t' % (r['size'], sys.argv[2], r['mean_us']))
PY
	ok "$name"
}

# ---- qperf ----
qperf_parse() { # FILE: "test lat_us bw_MBps" lines from qperf's output
	python3 - "$1" <<'PY'
import re, sys
test = None
units = {'ns': 1e-3, 'us': 1, 'ms': 1e3, 'sec': 1e6}
bwu = {'KB/sec': 1e-3, 'MB/sec': 1, 'GB/sec': 1e3, 'bytes/sec': 1e-6}
for l in open(sys.argv[1]):
    m = re.match(r'^(\w+):\s*$', l)
    if m:
        test = m.group(1); continue
    m = re.match(r'^\s*latency\s*=\s*([\d.]+)\s*(\w+)', l)
    if m and test:
        print('%s %.3f -' % (test, float(m.group(1)) * units.get(m.group(2), 1)))
    m = re.match(r'^\s*bw\s*=\s*([\d.]+)\s*(\S+)', l)
    if m and test:
        print('%s - %.1f' % (test, float(m.group(1)) * bwu.get(m.group(2), 1)))
PY
}
bench_qperf() {
	local name=qperf-$mode s tests
	if [ "$mode" = embedded ]; then
		return # qperf's server forks a child per test: shared mode only
	fi
	next_port
	spawn "$name.srv" "${SRV[@]}" qperf -lp "$port"
	s=$SPAWNED
	local i; for i in $(seq 1 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
	local t=3; [ $quick = 1 ] && t=1
	if [ "$mode" = kernel ]; then
		tests=(tcp_lat tcp_bw)
		timeout -k 5 "$tmo" qperf 127.0.0.1 -lp "$port" -t "$t" -m 64 tcp_lat -m 65536 tcp_bw \
			>"$out/logs/apps/$name.cli" 2>&1
	else
		tests=(rc_lat rc_bw rc_rdma_write_bw ud_lat)
		timeout -k 5 "$tmo" "${CLI[@]}" qperf 127.0.0.1 -lp "$port" -li "$DEV_C:1" -ri "$DEV_S:1" -t "$t" \
			-m 64 rc_lat -m 65536 rc_bw rc_rdma_write_bw -m 64 ud_lat >"$out/logs/apps/$name.cli" 2>&1
	fi
	local rc=$?
	kill -TERM -- "-$s" 2>/dev/null
	wait "$s" 2>/dev/null
	local n=0 test lat bw
	while read -r test lat bw; do
		case $test in *lat) row qperf "$test" 64 "$mode" "$lat" "" ;; *) row qperf "$test" 65536 "$mode" "" "$bw" ;; esac
		n=$((n + 1))
	done < <(qperf_parse "$out/logs/apps/$name.cli")
	if [ $rc != 0 ] || [ $n -lt ${#tests[@]} ]; then bad "$name" "exit $rc, $n of ${#tests[@]} results"; else ok "$name"; fi
}

# ---- UCX ----
ucx_one() { # NAME TLS TEST SIZE ITERS
	local name=$1 tls=$2 test=$3 size=$4 iters=$5 s
	next_port
	if [ "$mode" = kernel ]; then
		spawn "$name.srv" env UCX_TLS="$tls" ucx_perftest -p "$port"
	else
		spawn "$name.srv" env UCX_TLS="$tls" UCX_NET_DEVICES="$DEV_S:1" "${SRV[@]}" --view ucx_perftest -p "$port"
	fi
	s=$SPAWNED
	local i; for i in $(seq 1 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
	if [ "$mode" = kernel ]; then
		timeout -k 5 "$tmo" env UCX_TLS="$tls" ucx_perftest -p "$port" -t "$test" -s "$size" -n "$iters" 127.0.0.1 \
			>"$out/logs/apps/$name.cli" 2>&1
	else
		timeout -k 5 "$tmo" env UCX_TLS="$tls" UCX_NET_DEVICES="$DEV_C:1" "${CLI[@]}" --view ucx_perftest -p "$port" \
			-t "$test" -s "$size" -n "$iters" 127.0.0.1 >"$out/logs/apps/$name.cli" 2>&1
	fi
	local rc=$?
	wait "$s"
	# Final: iters typical_lat avg_lat overall_lat avg_bw(MB/s) overall_bw avg_mr overall_mr
	local f; f=$(grep -E '^Final:' "$out/logs/apps/$name.cli" | tail -1)
	if [ $rc != 0 ] || [ -z "$f" ]; then bad "$name" "exit $rc"; return; fi
	set -- $f
	# typical latency (us) for tag_lat, bandwidth (UCX's MB/s are MiB/s) for tag_bw
	case $test in
	*_lat) row ucx "$test" "$size" "$mode" "$3" "" ;;
	*) row ucx "$test" "$size" "$mode" "" "$(awk -v b="$6" 'BEGIN { printf "%.1f", b * 1.048576 }')" ;;
	esac
	ok "$name"
}
bench_ucx() {
	local tls=self,rc_verbs,ud_verbs n1=20000 n2=2000 n3=200
	[ "$mode" = kernel ] && tls=self,tcp
	[ $quick = 1 ] && { n1=2000; n2=200; n3=20; }
	ucx_one "ucx-$mode-tag_lat-8" "$tls" tag_lat 8 $n1
	ucx_one "ucx-$mode-tag_lat-4096" "$tls" tag_lat 4096 $n1
	ucx_one "ucx-$mode-tag_bw-65536" "$tls" tag_bw 65536 $n2
	ucx_one "ucx-$mode-tag_bw-1048576" "$tls" tag_bw 1048576 $n3
}

for m in kernel embedded shared; do
	set_mode $m || continue
	has fio && command -v fio >/dev/null && bench_fio
	has mpi && command -v mpirun >/dev/null && bench_mpi
	has qperf && command -v qperf >/dev/null && bench_qperf
	has ucx && command -v ucx_perftest >/dev/null && bench_ucx
	rm -f "$work/memif.sock"
done
exit $failed
