#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# rdma_cm between two dpverbs processes over a real (virtual) Ethernet link:
# the veth topology of ud_pingpong_veth.sh (lib.sh: namespaces NS_A/NS_B,
# dpverbs 198.51.100.1/.2 through net_af_packet, config/veth-a.json and
# veth-b.json), Debian's unmodified rping and perftest on the drop-in
# build/compat/librdmacm.so.1 + libibverbs.so.1. In order:
#   1. tshark captures 'udp port 4791' on dpv-veth-a (namespace A) while
#      server "rping -s -a 198.51.100.1 -p PORT -v -C 100" runs in A and,
#      in B, "rping -c -a 198.51.100.1 -p CLOSED -C 1" (nobody listens
#      there: exit 255 after "cma event RDMA_CM_EVENT_REJECTED, error 8",
#      as on Linux) then "rping -c -a 198.51.100.1 -p PORT -v -C 100":
#      both exit 0 and print the 100 pings' data exactly (rping_check);
#   2. the capture: test/tools/icrc_check.py (every frame's ICRC
#      recomputed; UD SEND only = the CM MADs present) and
#      check_cm_capture.py (every CM MAD decoded cleanly by tshark as
#      InfiniBand CM: REQ, REJ reason 8 for CLOSED, REP, RTU, DREQ, DREP,
#      the RDMA CM IP service ID and private data);
#   3. bad input, rping -c in B: to 198.51.100.77 (on the link, no ARP
#      answer): "cma event RDMA_CM_EVENT_ADDR_ERROR, error -110"; to
#      203.0.113.5 (no route): "rdma_resolve_addr: Network is unreachable";
#      to 198.51.100.11 (namespace A's kernel: answers ARP, runs no CM):
#      "cma event RDMA_CM_EVENT_UNREACHABLE, error -110" (CM retries cut
#      short with DPVERBS_RDMACM_CM_TIMEOUT=14 DPVERBS_RDMACM_CM_RETRIES=2);
#      each exit 255, as on Linux;
#   4. ib_send_lat -R, ib_write_bw -R, ib_read_lat -R, ib_atomic_lat -R
#      (server in A, client in B to 198.51.100.1): both exit 0, result line.
# The clients start once the rping server runs dpverbs' CM thread ("dpv-cm",
# started by its rdma_bind_addr) plus DPV_RPING_WAIT s (default 0.2), and once
# a perftest server printed "Waiting for client to connect" and runs the
# CM thread, plus 1 s; a client rejected all the same (a
# listen race of perftest's, lib.sh perftest_rejected) runs again, twice at
# most, with a WARN line; the CM MADs of section 4 (captured too) are then
# listed at the end with their sender and REJ reason.
# Always removes its namespaces (and with them the veth). Skips (77) if
# rping, perftest, tshark or network namespaces are missing.
#
# usage: rdmacm_veth.sh [BUILD_DIR] [ICRC_CHECK_PY]
# env:   DPV_TIMEOUT (60 s per process), DPV_KEEP_PCAP=DIR to keep the capture
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
VERIFY=${2:-$SRC/test/tools/icrc_check.py}
[ -f "$VERIFY" ] || { log "FAIL: $VERIFY not found"; exit 1; }
command -v ip >/dev/null || skip "iproute2 (ip) not installed"
command -v rping >/dev/null || skip "rping (Debian rdmacm-utils) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
PERFTESTS="ib_send_lat ib_write_bw ib_read_lat ib_atomic_lat"
for t in $PERFTESTS; do
	command -v "$t" >/dev/null || skip "$t (Debian perftest) not installed"
done
TSHARK=$(command -v tshark || true)
[ -n "$TSHARK" ] || skip "tshark not installed"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

TMO=${DPV_TIMEOUT:-60}
COUNT=100
PORT=7471
CLOSED=7999
RUNDIRS="/var/run/dpdk/dpv-veth-a /var/run/dpdk/dpv-veth-b"
WORK=$(mktemp -d /tmp/dpv-multi-rdmacm-veth.XXXXXX)
CAP_PID=""

cleanup() {
	kill_own
	if [ -n "$CAP_PID" ]; then
		kill -INT "$CAP_PID" 2>/dev/null
		{ wait "$CAP_PID"; } 2>/dev/null
	fi
	veth_teardown
	if [ -n "${DPV_KEEP_PCAP:-}" ]; then
		mkdir -p "$DPV_KEEP_PCAP" && cp "$WORK"/*.pcap "$DPV_KEEP_PCAP"/ 2>/dev/null
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

veth_prepare
log "namespaces $NS_A, $NS_B; veth dpv-veth-a <-> dpv-veth-b up"

# in_ns NS CONF CMD...: CMD in namespace NS on the drop-ins, bounded by TMO
in_ns() {
	local ns=$1 conf=$2; shift 2
	timeout -k 5 "$TMO" ip netns exec "$ns" env DPVERBS_CONFIG="$SRC/config/$conf" \
		LD_LIBRARY_PATH="$COMPAT" "$@"
}

# ---- 1. rping, captured ----
veth_capture cm 'udp port 4791' $((TMO * 3 + 30)) || exit 1

log "=== rping -s -a 198.51.100.1 -p $PORT -v -C $COUNT (A); rping -c to port $CLOSED, then to $PORT (B)"
in_ns "$NS_A" veth-a.json rping -s -a 198.51.100.1 -p "$PORT" -v -C "$COUNT" \
	>"$WORK/rping.server" 2>"$WORK/rping.server.err" &
srv=$!
MULTI_PIDS="$srv"
# listening once its CM thread runs (rdma_listen opens the CM)
wait_cm_thread "$srv" || fail "rping -s: no dpverbs CM thread (dpv-cm) within 30 s"
sleep "${DPV_RPING_WAIT:-0.2}"
in_ns "$NS_B" veth-b.json rping -c -a 198.51.100.1 -p "$CLOSED" -C 1 \
	>"$WORK/closed.client" 2>"$WORK/closed.client.err"
rc_x=$?
in_ns "$NS_B" veth-b.json rping -c -a 198.51.100.1 -p "$PORT" -v -C "$COUNT" \
	>"$WORK/rping.client" 2>"$WORK/rping.client.err"
rc_c=$?
wait "$srv"; rc_s=$?
MULTI_PIDS=""
sleep 0.5 # the last frames
kill -INT "$CAP_PID" 2>/dev/null
wait "$CAP_PID"
CAP_PID=""
check_rundirs_gone $RUNDIRS

[ "$rc_x" = 255 ] || fail "rping -c to closed port $CLOSED: exit $rc_x, want 255 (as on Linux)"
grep -q "cma event RDMA_CM_EVENT_REJECTED, error 8" "$WORK/closed.client.err" ||
	fail "rping -c to closed port $CLOSED did not print 'cma event RDMA_CM_EVENT_REJECTED, error 8'"
log "closed port: exit $rc_x, $(grep -m1 'cma event' "$WORK/closed.client.err")"
[ "$rc_c" = 0 ] || fail "rping client exit $rc_c"
[ "$rc_s" = 0 ] || fail "rping server exit $rc_s"
rping_check client "$WORK/rping.client" "ping data" "$COUNT"
rping_check server "$WORK/rping.server" "server ping data" "$COUNT"
if [ "$MULTI_FAIL" != 0 ]; then
	for f in rping.server rping.server.err closed.client.err rping.client rping.client.err; do
		grep -v '^EAL' "$WORK/$f" | tail -n 15 | sed "s/^/    [$f] /"
	done
else
	log "rping -C $COUNT over veth: both exit 0, every ping's data verified"
	sed -n "1p;\$p" "$WORK/rping.client" | sed "s/^/    [client] /"
fi

# ---- 2. the capture ----
log "=== icrc_check.py --expect 0x64 (CM MADs are UD SEND only to QP 1)"
"$PY" "$VERIFY" --expect 0x64 "$WORK/cm.pcap" || fail "icrc_check.py rejected the capture"
log "=== check_cm_capture.py"
"$PY" "$SRC/test/multi/check_cm_capture.py" "$WORK/cm.pcap" "$PORT" "$CLOSED"
rc=$?
[ "$rc" = 77 ] && skip "check_cm_capture.py skipped"
[ "$rc" = 0 ] || fail "check_cm_capture.py failed"

# ---- 3. bad input, from namespace B: rping's message and exit status as on
# Linux (exit 255: rping's cm thread exits with -1) ----
# bad_rping NAME MESSAGE ENV... -- ARGS...: rping -c ARGS in B must exit 255
# and print MESSAGE on stderr
bad_rping() {
	local name=$1 msg=$2 envs=() rc
	shift 2
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	log "=== $name: ${envs[*]} rping -c $*"
	timeout -k 5 "$TMO" ip netns exec "$NS_B" env DPVERBS_CONFIG="$SRC/config/veth-b.json" \
		LD_LIBRARY_PATH="$COMPAT" "${envs[@]}" rping -c "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
	rc=$?
	# rping's event thread calls exit() while its main thread returns from
	# main(): the second exit() ends the process while the first runs the
	# atexit handlers, before dpverbs removed its EAL runtime directory (the
	# next start sweeps it): reported, not a failure here
	if [ -e /var/run/dpdk/dpv-veth-b ]; then
		log "$name: /var/run/dpdk/dpv-veth-b left (two threads called exit)"
		rm -rf /var/run/dpdk/dpv-veth-b
	fi
	[ "$rc" = 255 ] || fail "$name: exit $rc, want 255"
	if grep -qF "$msg" "$WORK/$name.err"; then
		log "$name: exit $rc, $msg"
	else
		fail "$name: no '$msg' on stderr:"
		grep -v '^EAL' "$WORK/$name.err" | tail -n 10 | sed "s/^/    [$name] /"
	fi
}
# 198.51.100.77: on the link, nobody answers ARP: ADDR_ERROR after rping's 2 s
bad_rping unknown_addr "cma event RDMA_CM_EVENT_ADDR_ERROR, error -110" -- -a 198.51.100.77 -C 1
# 203.0.113.5: no port's subnet (dpverbs has no gateways): no route
bad_rping no_route "rdma_resolve_addr: Network is unreachable" -- -a 203.0.113.5 -C 1
# 198.51.100.11: the kernel of namespace A answers ARP but runs no CM (its
# UDP port 4791 is closed): every REQ is lost, UNREACHABLE -ETIMEDOUT after
# the CM's retries (here 3 sends 67 ms apart; by default 16 x 4.3 s)
bad_rping unreachable "cma event RDMA_CM_EVENT_UNREACHABLE, error -110" \
	DPVERBS_RDMACM_CM_TIMEOUT=14 DPVERBS_RDMACM_CM_RETRIES=2 -- -a 198.51.100.11 -C 1

# ---- 4. perftest -R ----
RESULT_RE='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
# the CM MADs of this section (UDP 4791, BTH destination QP 1) are captured
# too: when a client was rejected, every MAD is listed at the end (who sent
# the REJ, its reason, when), to tell a listen race from anything else
REJECTED=0
veth_capture perf-cm 'udp port 4791 and (udp[12:4] & 0xffffff) = 1' $((TMO * 12)) || exit 1
# perf_run T: one run; sets rc_c, rc_s
perf_run() {
	local t=$1 srv i
	log "=== $t -R -d dpv0 -x 1 -n 200 -p $PORT (A: server, B: client to 198.51.100.1)"
	in_ns "$NS_A" veth-a.json stdbuf -oL "$t" -R -d dpv0 -x 1 -n 200 -p "$PORT" \
		>"$WORK/$t.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	for i in $(seq 1 300); do
		grep -q "Waiting for client to connect" "$WORK/$t.server" && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	wait_cm_thread "$srv" 50
	sleep 1
	in_ns "$NS_B" veth-b.json stdbuf -oL "$t" -R -d dpv0 -x 1 -n 200 -p "$PORT" 198.51.100.1 \
		>"$WORK/$t.client" 2>&1
	rc_c=$?
	if [ "$rc_c" != 0 ]; then
		for i in $(seq 1 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
		kill_tree TERM "$srv" # in_ns runs in a subshell: perftest is below it
	fi
	wait "$srv"; rc_s=$?
	MULTI_PIDS=""
}
for t in $PERFTESTS; do
	perf_run "$t"
	# perftest's listen race (perftest.sh's header): at most twice again
	for again in 1 2; do
		[ "$rc_c" != 0 ] && perftest_rejected "$WORK/$t.client" || break
		log "WARN: $t: the client was rejected (perftest's listen race, lib.sh perftest_rejected; the CM MADs are listed at the end): again ($again)"
		REJECTED=$((REJECTED + 1))
		rm -rf $RUNDIRS
		perf_run "$t"
	done
	check_rundirs_gone $RUNDIRS
	nf=$MULTI_FAIL
	MULTI_FAIL=0
	[ "$rc_c" = 0 ] || fail "$t client exit $rc_c"
	[ "$rc_s" = 0 ] || fail "$t server exit $rc_s"
	grep -Eq "$RESULT_RE" "$WORK/$t.client" || fail "$t: client printed no result line"
	if [ "$MULTI_FAIL" != 0 ]; then
		grep -v '^EAL' "$WORK/$t.server" | tail -n 15 | sed "s/^/    [server] /"
		grep -v '^EAL' "$WORK/$t.client" | tail -n 15 | sed "s/^/    [client] /"
	else
		grep -E "$RESULT_RE" "$WORK/$t.client" | sed "s/^/    [client] /"
	fi
	[ "$nf" != 0 ] && MULTI_FAIL=1
done

kill -INT "$CAP_PID" 2>/dev/null
wait "$CAP_PID"
CAP_PID=""
if [ "$REJECTED" != 0 ]; then
	log "the CM MADs of the perftest runs (time, source IP and MAC, attribute, REJ reason):"
	"$TSHARK" -r "$WORK/perf-cm.pcap" -n --disable-protocol rpcordma -T fields -e frame.time_relative \
		-e ip.src -e eth.src -e infiniband.mad.attributeid -e infiniband.cm.rej.reason 2>/dev/null |
		sed 's/^/    [cm] /'
fi
if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
