#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified rdmacm-utils on the drop-in librdmacm.so.1 +
# libibverbs.so.1, two processes, each started by build/apps/dpverbs-run:
#   memif: config/pair-a.json (server, 192.0.2.1) / pair-b.json (client)
#          over net_memif on this host (takes /tmp/dpverbs-pair.lock);
#   veth:  config/veth-a.json (server, 198.51.100.1) / veth-b.json
#          (client) over a veth pair between two network namespaces
#          created and removed here, net_af_packet (takes
#          /tmp/dpverbs-veth.lock; skips (77) without namespaces).
# Runs:
#  - rdma_server -p 7471 / rdma_client -s ADDR -p 7471: synchronous ids
#    from rdma_create_ep, rdma_get_request, rdma_accept and rdma_connect
#    waiting for ESTABLISHED, one SEND each way, disconnect;
#  - rdma_xserver -c r -p 7472 / rdma_xclient -s ADDR -c r -p 7472: the
#    same with rdma_create_ep's QP on the listener's request (RC mode);
#  - rdma_xserver -c x / rdma_xclient -c x: XRC over rdma_cm (RDMA_PS_IB,
#    an XRC_RECV QP and an XRC SRQ in the device's XRC domain; the client's
#    XRC_SEND QP sends to the SRQ number of the REP's private data); in
#    veth mode tshark (when installed) checks the captured REQ (transport
#    service type 3, extended transport XRC) and REP (the target QPN as EE
#    context number), RTU, nothing malformed;
#  - ucmatose -c 2 -C 10 / ucmatose -s ADDR -c 2 -C 10: two connections on
#    an event channel, 10 messages each way, disconnect;
#  - ucmatose -P ib (RDMA_PS_IB with IP addresses), the client with an ACK
#    timeout option (-a 16) and migrating its ids to a new channel (-m);
#  - memif only: ucmatose over IPv6 (the pair's fd00:6470:7600::1, the
#    server bound to it with -b).
# Asserts every process exits 0 and prints its "end 0" / "return status 0"
# line. A client that finds no listener yet (the server's DPDK start is
# slow on a loaded machine: the REQ is rejected) is started again, at most
# DPV_CLIENT_TRIES times (default 5), 2 s apart; every retry is logged.
#
# usage: rdmacm_utils.sh [BUILD_DIR] [memif|veth]   env: DPV_TIMEOUT (30 s a run)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
MODE=${2:-memif}
for t in rdma_server rdma_client rdma_xserver rdma_xclient ucmatose; do
	command -v $t >/dev/null || skip "$t (Debian rdmacm-utils) not installed"
done
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
RUN="$BUILD/apps/dpverbs-run"
[ -e "$RUN" ] || { log "$RUN not built"; exit 1; }
export DPVERBS_DROPIN=$COMPAT
unset DPVERBS_CONFIG
TMO=${DPV_TIMEOUT:-30}
TRIES=${DPV_CLIENT_TRIES:-5}
WORK=$(mktemp -d /tmp/dpv-multi-rdmacm.XXXXXX)
case "$MODE" in
memif) ADDR=192.0.2.1 ;;
veth)
	command -v ip >/dev/null || skip "iproute2 (ip) not installed"
	ADDR=198.51.100.1 ;;
*) log "unknown mode $MODE (memif or veth)"; exit 2 ;;
esac
pair_mode_vars "$MODE"
cleanup() {
	kill_own
	if [ -n "${CAP_PID:-}" ]; then
		kill -INT "$CAP_PID" 2>/dev/null
		wait "$CAP_PID" 2>/dev/null
	fi
	pair_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
pair_prepare

# pair NAME "SERVER CMD" "CLIENT CMD" SERVER_OK_RE CLIENT_OK_RE
pair() {
	local name=$1 scmd=$2 ccmd=$3 sre=$4 cre=$5 srv rc_c rc_s try=1 t0=$SECONDS
	[ -n "$SOCK" ] && rm -f "$SOCK"
	# shellcheck disable=SC2086
	timeout -k 5 "$TMO" "${NSX_S[@]}" sh "$RUN" -c "$CONF_S" $scmd >"$WORK/$name.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	sleep 2
	while :; do
		# shellcheck disable=SC2086
		timeout -k 5 "$TMO" "${NSX_C[@]}" sh "$RUN" -c "$CONF_C" $ccmd >"$WORK/$name.client" 2>&1
		rc_c=$?
		[ "$rc_c" = 0 ] || ! kill -0 "$srv" 2>/dev/null || [ "$try" -ge "$TRIES" ] && break
		log "$name: client attempt $try exited $rc_c (server not listening yet?), again in 2 s"
		try=$((try + 1))
		sleep 2
	done
	wait "$srv"; rc_s=$?
	MULTI_PIDS=""
	local bad=0
	[ "$rc_c" = 0 ] || { fail "$name: client exit $rc_c"; bad=1; }
	[ "$rc_s" = 0 ] || { fail "$name: server exit $rc_s"; bad=1; }
	grep -Eq "$sre" "$WORK/$name.server" || { fail "$name: server did not print /$sre/"; bad=1; }
	grep -Eq "$cre" "$WORK/$name.client" || { fail "$name: client did not print /$cre/"; bad=1; }
	if [ "$bad" = 1 ]; then
		log "$name server:"; grep -v 'memif_connect_client' "$WORK/$name.server" | tail -n 20
		log "$name client:"; grep -v 'memif_connect_client' "$WORK/$name.client" | tail -n 20
	else
		log "OK: $MODE: $name: '$scmd' / '$ccmd' (client attempts: $try, $((SECONDS - t0)) s)"
	fi
}

OK_U='^return status 0$'
pair rdma_server_client "rdma_server -p 7471" "rdma_client -s $ADDR -p 7471" \
	'^rdma_server: end 0$' '^rdma_client: end 0$'
pair rdma_xserver_client "rdma_xserver -c r -p 7472" "rdma_xclient -s $ADDR -c r -p 7472" \
	'^rdma_xserver: end 0$' '^rdma_xclient: end 0$'
# veth: tshark (when installed) captures the XRC run in the server's namespace
CAP_PID=""
if [ "$MODE" = veth ] && command -v tshark >/dev/null; then
	ip netns exec "$NS_A" tshark -q -n -i dpv-veth-a -f 'udp port 4791' -a duration:$((TMO * 2 + 20)) \
		-F pcap -w "$WORK/xrc.pcap" >"$WORK/tshark.out" 2>&1 &
	CAP_PID=$!
	for _ in $(seq 1 200); do
		grep -q "Capturing on" "$WORK/tshark.out" && break
		sleep 0.1
	done
	grep -q "Capturing on" "$WORK/tshark.out" || { fail "tshark did not start"; sed 's/^/    /' "$WORK/tshark.out"; }
fi
pair rdma_xserver_client_xrc "rdma_xserver -c x -p 7473" "rdma_xclient -s $ADDR -c x -p 7473" \
	'^rdma_xserver: end 0$' '^rdma_xclient: end 0$'
if [ -n "$CAP_PID" ]; then
	sleep 0.5
	kill -INT "$CAP_PID"; wait "$CAP_PID"; CAP_PID=""
	# the XRC REQ and REP as Linux's ib_cm formats them, clean in tshark
	tshark -r "$WORK/xrc.pcap" -V >"$WORK/xrc.txt" 2>&1
	bad=0
	for want in 'Transport Service Type: 0x3' 'Extended Transport: 0x1' 'Attribute ID: 0x0013' \
		'Attribute ID: 0x0014'; do
		grep -q "$want" "$WORK/xrc.txt" || { fail "XRC capture: no '$want'"; bad=1; }
	done
	grep -Eq 'Local EE Context Number: 0x0*[1-9a-f]' "$WORK/xrc.txt" ||
		{ fail "XRC capture: the REP's EE context number (the target QPN) is 0"; bad=1; }
	grep -qi malformed "$WORK/xrc.txt" && { fail "XRC capture: tshark reports a malformed packet"; bad=1; }
	[ "$bad" = 0 ] && log "OK: veth: XRC REQ (transport 3, extended XRC) / REP (QPN in the EECN), RTU clean in tshark"
fi
pair ucmatose "ucmatose -c 2 -C 10" "ucmatose -s $ADDR -c 2 -C 10" "$OK_U" "$OK_U"
pair ucmatose_ib "ucmatose -P ib -c 1 -C 4" "ucmatose -s $ADDR -P ib -c 1 -C 4 -a 16 -m" "$OK_U" "$OK_U"
# memif: IPv6 too (the pair's fd00:6470:7600::1/64; the veth configs have no IPv6)
[ "$MODE" = memif ] && pair ucmatose_ipv6 "ucmatose -b fd00:6470:7600::1 -C 4" \
	"ucmatose -s fd00:6470:7600::1 -C 4" "$OK_U" "$OK_U"
for d in $RUNDIRS; do
	[ -e "$d" ] && ! ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q "/dpdk/${d##*/}/" && rm -rf "$d"
done
[ "$MULTI_FAIL" = 0 ] || exit 1
log "OK: rdma_server/rdma_client and ucmatose over $MODE through dpverbs-run"
exit 0
