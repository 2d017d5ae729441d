#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# DPDK's own tools on a running dpverbs process. Debian's unmodified
# ibv_rc_pingpong (server and client, -g 1, many iterations) on the drop-in
# build/compat/libibverbs.so.1, over one transport:
#   memif  config/pair-a.json (server) / pair-b.json (client), EAL file
#          prefixes dpv-pair-a / dpv-pair-b, lock /tmp/dpverbs-pair.lock
#   veth   config/veth-a.json / veth-b.json, net_af_packet on a veth pair
#          between two network namespaces created here (lib.sh veth_setup),
#          prefixes dpv-veth-a / dpv-veth-b, lock /tmp/dpverbs-veth.lock
# While both run:
#   1. dpdk-telemetry.py -f <server prefix> reads the dpverbs commands
#      (/dpverbs/info, ports, port,dpv0, qps, qp,<qpn>, fault) and DPDK's
#      /ethdev/stats,0 twice; check_tooling.py telemetry checks them;
#   2. dpdk-dumpcap --file-prefix=<server prefix> -i <server port> -c N
#      captures the server's RoCEv2 frames into a pcapng file (a DPDK
#      secondary process: retried up to 3 times if it cannot attach);
#      check_tooling.py capture checks every frame with tshark and the ICRC;
#   3. DPV_RECAPTURES (default 6) more short captures (30 frames) while the
#      traffic goes on, every other one with the BPF filter "src host <the
#      server's address>" (only the server's frames): each dumpcap ends
#      while the server sends and receives, which is when DPDK 22.11's own
#      pdump server let a poll run into freed client memory
#      (lib/port/dpv_pdump.c); the server must live through all of them.
# Then both processes are stopped (TERM, then KILL) and what a killed
# process leaves is removed: its EAL runtime directory, its hugepage files
# (only those no process holds locked, as EAL does), the memif socket.
# Last, a short run that exits by itself (-n 200) must leave no runtime
# directory and no hugepage file of either prefix behind.
# dpdk-dumpcap (22.11) always scans the PCI bus (it passes no --no-pci to
# its EAL); as a secondary it can only attach devices the primary drives,
# so it reports "Device ... is not driven by the primary process" for the
# machine's own NICs and leaves them alone.
#
# usage: tooling.sh memif|veth [BUILD_DIR]
# env:   DPV_TIMEOUT per process (default 120 s), DPV_FRAMES (200),
#        DPV_KEEP_LOGS=DIR to keep outputs, telemetry replies and the capture
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

TRANSPORT=${1:-}
case "$TRANSPORT" in
memif|veth) ;;
*) echo "usage: ${0##*/} memif|veth [BUILD_DIR]" >&2; exit 2 ;;
esac
resolve_build "${2:-}"
PP=$(command -v ibv_rc_pingpong || true)
[ -n "$PP" ] || skip "ibv_rc_pingpong (Debian ibverbs-utils) not installed"
TEL=$(command -v dpdk-telemetry.py || true)
[ -n "$TEL" ] || skip "dpdk-telemetry.py (Debian dpdk) not installed"
DUMPCAP=$(command -v dpdk-dumpcap || true)
[ -n "$DUMPCAP" ] || skip "dpdk-dumpcap (Debian dpdk) not installed"
command -v tshark >/dev/null || skip "tshark not installed"
[ "${DPVERBS_HUGEPAGES:-1}" != 0 ] || skip "no hugepages: secondary processes cannot attach"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

TMO=${DPV_TIMEOUT:-120}
FRAMES=${DPV_FRAMES:-200}
RECAPTURES=${DPV_RECAPTURES:-6}
ITERS=100000000   # never reached: the processes are stopped after the checks
SOCK=/tmp/dpverbs-pair.sock
if [ "$TRANSPORT" = memif ]; then
	PFX_A=dpv-pair-a PFX_B=dpv-pair-b
	CFG_A=$SRC/config/pair-a.json CFG_B=$SRC/config/pair-b.json
	IFACE=net_memif0 HOST=127.0.0.1 LOCK=/tmp/dpverbs-pair.lock SRV_IP=192.0.2.1
else
	command -v ip >/dev/null || skip "iproute2 (ip) not installed"
	PFX_A=dpv-veth-a PFX_B=dpv-veth-b
	CFG_A=$SRC/config/veth-a.json CFG_B=$SRC/config/veth-b.json
	IFACE=net_af_packet0 HOST=198.51.100.11 LOCK=/tmp/dpverbs-veth.lock SRV_IP=198.51.100.1
fi
RUNDIRS="/var/run/dpdk/$PFX_A /var/run/dpdk/$PFX_B"
HUGEDIRS=$(awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts)
WORK=$(mktemp -d "/tmp/dpv-multi-tooling-$TRANSPORT.XXXXXX")

# remove_state: what killed processes of our two prefixes leave behind.
# Hugepage files are removed only if no process holds them locked (EAL
# keeps a shared lock on every file it maps, a secondary too).
remove_state() {
	local d f
	for d in $HUGEDIRS; do
		for f in "$d/${PFX_A}map_"* "$d/${PFX_B}map_"*; do
			[ -e "$f" ] || continue
			flock -n -x "$f" rm -f "$f" 2>/dev/null ||
				log "WARN: $f is still locked by a process"
		done
	done
	for d in $RUNDIRS; do
		rm -rf "$d"
	done
	[ "$TRANSPORT" = memif ] && rm -f "$SOCK"
}

cleanup() {
	kill_own
	remove_state
	[ "$TRANSPORT" = veth ] && veth_teardown
	if [ -n "${DPV_KEEP_LOGS:-}" ]; then
		mkdir -p "$DPV_KEEP_LOGS" && cp "$WORK"/* "$DPV_KEEP_LOGS"/ 2>/dev/null
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

exec 9>"$LOCK"
flock -w 300 9 || { log "could not get $LOCK within 300 s"; exit 1; }
for d in $RUNDIRS; do
	if [ -e "$d" ]; then
		if ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q "/dpdk/${d##*/}/"; then
			log "$d is in use by another process"
			exit 1
		fi
		log "WARN: removing stale $d"
	fi
done
remove_state
if [ "$TRANSPORT" = veth ]; then
	veth_setup || { log "veth/namespace setup failed"; exit 1; }
fi

# start_side server|client NAME ITERS: ibv_rc_pingpong in the background,
# bounded by timeout, stdout line-buffered (the QPNs are read while it runs).
start_side() {
	local side=$1 name=$2 iters=$3 cfg=$CFG_A host=
	[ "$side" = client ] && { cfg=$CFG_B; host=$HOST; }
	local cmd=(env DPVERBS_CONFIG="$cfg" LD_LIBRARY_PATH="$COMPAT"
		stdbuf -oL "$PP" -d dpv0 -g 1 -n "$iters" -p "$PORT" $host)
	if [ "$TRANSPORT" = veth ]; then
		local ns=$NS_A
		[ "$side" = client ] && ns=$NS_B
		cmd=(ip netns exec "$ns" "${cmd[@]}")
	fi
	timeout -k 5 "$TMO" "${cmd[@]}" >"$WORK/$name.$side" 2>&1 &
	LAST_PID=$!
	MULTI_PIDS="$MULTI_PIDS $LAST_PID"
}

# start_pair NAME ITERS: server, then client once the server listens.
start_pair() {
	local ns=
	[ "$TRANSPORT" = veth ] && ns=$NS_A
	PORT=$(pick_port $ns)
	start_side server "$1" "$2"; SRV=$LAST_PID
	if ! wait_listen "$SRV" "$PORT" $ns; then
		fail "$1: server did not listen on tcp port $PORT"
		sed "s/^/    [server] /" "$WORK/$1.server"
		return 1
	fi
	start_side client "$1" "$2"; CLI=$LAST_PID
}

# telemetry FILE CMD...: one dpdk-telemetry.py session with these commands.
telemetry() {
	local out=$1; shift
	printf '%s\n' "$@" | timeout -k 5 30 "$PY" "$TEL" -f "$PFX_A" >"$out" 2>&1
}

alive() {
	kill -0 "$SRV" 2>/dev/null && kill -0 "$CLI" 2>/dev/null
}

t0=$(date +%s.%N)
log "=== ibv_rc_pingpong -g 1 over $TRANSPORT; telemetry and dumpcap on $PFX_A"
start_pair live "$ITERS" || exit 1

# wait until the server's port counts RoCE traffic both ways
ok=0
for i in $(seq 1 100); do
	alive || break
	telemetry "$WORK/probe.tel" /dpverbs/port,dpv0
	if "$PY" - "$WORK/probe.tel" <<'EOF'
import json, sys
t = open(sys.argv[1]).read()
p = json.loads(t[t.index("{"):]).get("/dpverbs/port") if "{" in t else None
sys.exit(0 if p and p["rx_roce"] > 0 and p["tx_roce"] > 0 else 1)
EOF
	then ok=1; break; fi
	sleep 0.2
done
if [ "$ok" != 1 ]; then
	fail "no RoCE traffic seen by telemetry (processes alive: $(alive && echo yes || echo no))"
	sed "s/^/    [telemetry] /" "$WORK/probe.tel"
	kill_own
	sed "s/^/    [server] /" "$WORK/live.server"
	sed "s/^/    [client] /" "$WORK/live.client"
	exit 1
fi
QPN=$(sed -n 's/.*local address:.*QPN \(0x[0-9a-f]*\).*/\1/p' "$WORK/live.server")
[ -n "$QPN" ] || fail "server printed no local QPN"
QPN=$((QPN))

telemetry "$WORK/tel1.json" / /dpverbs/info /dpverbs/ports /dpverbs/port,dpv0 \
	/dpverbs/qps /dpverbs/fault /ethdev/stats,0
log "telemetry (first query):"
sed 's/^/    /' "$WORK/tel1.json" | cut -c1-400 | grep -v '^    {"/": '

rc=1
for try in 1 2 3; do
	alive || break
	timeout -k 5 60 "$DUMPCAP" --file-prefix="$PFX_A" -i "$IFACE" -c "$FRAMES" \
		-a duration:30 -w "$WORK/capture.pcapng" >"$WORK/dumpcap.out" 2>&1
	rc=$?
	sed "s/^/    [dumpcap $try] /" "$WORK/dumpcap.out"
	[ "$rc" = 0 ] && [ -s "$WORK/capture.pcapng" ] && break
	log "dumpcap attempt $try failed ($rc)"
	sleep 1
done
[ "$rc" = 0 ] || fail "dpdk-dumpcap failed ($rc)"

# captures that start and end while the traffic goes on
for n in $(seq 1 "$RECAPTURES"); do
	alive || { fail "ibv_rc_pingpong ended before recapture $n"; break; }
	filt=()
	[ $((n % 2)) = 0 ] && filt=(-f "src host $SRV_IP")
	timeout -k 5 60 "$DUMPCAP" --file-prefix="$PFX_A" -i "$IFACE" -c 30 "${filt[@]}" \
		-a duration:30 -w "$WORK/re$n.pcapng" >"$WORK/re$n.out" 2>&1
	rc=$?
	if [ "$rc" != 0 ] || [ ! -s "$WORK/re$n.pcapng" ]; then
		sed "s/^/    [recapture $n] /" "$WORK/re$n.out"
		fail "recapture $n: dpdk-dumpcap failed ($rc)"
	fi
done
alive || fail "ibv_rc_pingpong did not live through $RECAPTURES captures ending during traffic"
log "$RECAPTURES more captures started and ended during traffic, the server alive"

sleep 0.5
telemetry "$WORK/tel2.json" "/dpverbs/qp,$QPN" /dpverbs/port,dpv0 /dpverbs/qp,0 \
	/dpverbs/port,nosuch
log "telemetry (second query):"
sed 's/^/    /' "$WORK/tel2.json" | cut -c1-400
alive || fail "ibv_rc_pingpong ended before the checks were done"
kill_own
remove_state

log "=== check_tooling.py telemetry"
"$PY" "$SRC/test/multi/check_tooling.py" telemetry "$WORK/tel1.json" "$WORK/tel2.json" \
	"$WORK/live.server" "$CFG_A" || fail "telemetry check failed"
if [ -s "$WORK/capture.pcapng" ]; then
	log "=== check_tooling.py capture"
	"$PY" "$SRC/test/multi/check_tooling.py" capture "$WORK/capture.pcapng" "$FRAMES" \
		"$WORK/live.server" "$WORK/live.client" || fail "capture check failed"
fi
if [ "$RECAPTURES" -ge 2 ] && [ -s "$WORK/re2.pcapng" ]; then
	log "=== check_tooling.py capture (filter \"src host $SRV_IP\")"
	"$PY" "$SRC/test/multi/check_tooling.py" capture "$WORK/re2.pcapng" 30 \
		"$WORK/live.server" "$WORK/live.client" "$SRV_IP" || fail "filtered capture check failed"
fi

# a run that ends by itself leaves neither runtime dirs nor hugepage files
log "=== short run (-n 200): nothing left behind at exit"
if start_pair short 200; then
	wait "$CLI"; rc_c=$?
	wait "$SRV"; rc_s=$?
	MULTI_PIDS=""
	[ "$rc_s" = 0 ] && [ "$rc_c" = 0 ] || fail "short run: server $rc_s, client $rc_c"
	for d in $RUNDIRS; do
		[ -e "$d" ] && fail "$d left behind after exit"
	done
	for d in $HUGEDIRS; do
		for f in "$d/${PFX_A}map_"* "$d/${PFX_B}map_"*; do
			[ -e "$f" ] && fail "hugepage file $f left behind after exit"
		done
	done
fi
log "--- $(echo "$(date +%s.%N) - $t0" | bc) s"

if [ "$MULTI_FAIL" != 0 ]; then
	for f in "$WORK"/live.server "$WORK"/live.client "$WORK"/short.*; do
		[ -e "$f" ] && sed "s/^/    [${f##*/}] /" "$f"
	done
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
