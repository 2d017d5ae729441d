#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified udaddy (rdmacm-utils) through the launcher
# build/apps/dpverbs-run (the drop-in build/compat/librdmacm.so.1 +
# libibverbs.so.1), two processes: UD ids, SIDR on QP 1 of each process.
#   memif: config/pair-a.json (server, 192.0.2.1) / pair-b.json (client)
#          over net_memif on this host (copies with a socket and EAL file
#          prefixes of this run's own; takes /tmp/dpverbs-pair.lock);
#   veth:  config/veth-a.json (server, 198.51.100.1) / veth-b.json
#          (client) over a veth pair between two network namespaces
#          created and removed here, net_af_packet (takes
#          /tmp/dpverbs-veth.lock; skips (77) without namespaces).
# Runs, each asserting both exit 0 and print "data transfers complete" and
# "return status 0":
#   server "udaddy"                   / client "udaddy -s ADDR"
#   server "udaddy -c 2 -C 10"        / client "udaddy -s ADDR -c 2 -C 10"
#   memif only: server "udaddy -C 20" / client "udaddy -s fd00:6470:7600::1 -C 20",
#               server "udaddy -c 100 -C 5" / client "udaddy -s ADDR -c 100 -C 5"
# In veth mode tshark (when installed) captures the first run in the
# server's namespace and check_sidr_capture.py checks it: SIDR_REQ and
# SIDR_REP as clean CM MADs on QP 1 (rdma_cm header, service ID, status 0,
# Q_Key 0x01234567), the 10 UD SENDs each way to the QPN of the SIDR_REP,
# every ICRC (test/tools/icrc_check.py).
# And one refusal: server "udaddy -P ipoib" (another port space, so
# another service ID) / client "udaddy -s ADDR": the client prints
# "RDMA_CM_EVENT_UNREACHABLE, error: 1" (SIDR_REP status 1, nobody listens
# on the service, as Linux reports it) and exits 1; the server is stopped.
# The server is given DPV_UDADDY_WAIT seconds (default 3) to listen, after
# its memif socket appeared (memif mode, at most 20 s).
#
# usage: udaddy.sh [BUILD_DIR] [memif|veth]   env: DPV_TIMEOUT (30 s a run)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
MODE=${2:-memif}
command -v udaddy >/dev/null || skip "udaddy (Debian rdmacm-utils) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
RUN=$BUILD/apps/dpverbs-run
[ -e "$RUN" ] || { log "$RUN not built"; exit 1; }
export DPVERBS_DROPIN=$COMPAT
unset DPVERBS_CONFIG
TMO=${DPV_TIMEOUT:-30}
WORK=$(mktemp -d /tmp/dpv-multi-udaddy.XXXXXX)
case "$MODE" in
memif)
	# pair-a/b.json with this test's own memif socket and EAL prefixes: a
	# pair test of another checkout cannot take them from under it
	LOCKF=/tmp/dpverbs-pair.lock; SOCK=$WORK/memif.sock
	for i in a b; do
		sed -e "s|/tmp/dpverbs-pair.sock|$SOCK|" -e "s|dpv-pair-$i|dpv-udaddy-$i-$$|" \
			"$SRC/config/pair-$i.json" >"$WORK/pair-$i.json"
	done
	CONF_S=$WORK/pair-a.json; CONF_C=$WORK/pair-b.json
	ADDR=192.0.2.1
	RUNDIRS="/var/run/dpdk/dpv-udaddy-a-$$ /var/run/dpdk/dpv-udaddy-b-$$" ;;
veth)
	command -v ip >/dev/null || skip "iproute2 (ip) not installed"
	LOCKF=/tmp/dpverbs-veth.lock; SOCK=""
	CONF_S=$SRC/config/veth-a.json; CONF_C=$SRC/config/veth-b.json
	ADDR=198.51.100.1
	RUNDIRS="/var/run/dpdk/dpv-veth-a /var/run/dpdk/dpv-veth-b" ;;
*) log "unknown mode $MODE (memif or veth)"; exit 2 ;;
esac
CAP_PID=""
cleanup() {
	kill_own
	if [ -n "$CAP_PID" ]; then
		kill -INT "$CAP_PID" 2>/dev/null
		wait "$CAP_PID" 2>/dev/null
	fi
	[ "$MODE" = veth ] && veth_teardown
	[ -n "$SOCK" ] && rm -f "$SOCK"
	rm -rf "$WORK"
	# EAL runtime dirs a killed process left (the refused run's server)
	local d
	for d in $RUNDIRS; do
		[ -e "$d" ] && ! ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q "/dpdk/${d##*/}/" && rm -rf "$d"
	done
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
pair_prepare

# start_server NAME ARGS...: the server in the background (pid in $SRV)
start_server() {
	local name=$1
	shift
	[ -n "$SOCK" ] && rm -f "$SOCK"
	timeout -k 5 "$TMO" "${NSX_S[@]}" sh "$RUN" -c "$CONF_S" udaddy "$@" \
		>"$WORK/$name.server" 2>&1 &
	SRV=$!
	MULTI_PIDS="$SRV"
	# memif: the server's socket first (a client that starts before it
	# exists may never connect), then the fixed wait for rdma_listen
	local i
	for i in $(seq 1 200); do
		[ -z "$SOCK" ] || [ -S "$SOCK" ] && break
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.1
	done
	sleep "${DPV_UDADDY_WAIT:-3}"
}

# client NAME ARGS...: the client in the foreground, exit status in $RC_C
client() {
	local name=$1
	shift
	timeout -k 5 "$TMO" "${NSX_C[@]}" sh "$RUN" -c "$CONF_C" udaddy -s "${TO:-$ADDR}" "$@" \
		>"$WORK/$name.client" 2>&1
	RC_C=$?
}

show() {
	log "$1 server:"; tail -n 30 "$WORK/$1.server"
	log "$1 client:"; tail -n 30 "$WORK/$1.client"
	[ -n "$SOCK" ] && log "socket: $(ls -l "$SOCK" 2>&1)"
}

# run NAME ARGS...: one server/client pair with the same udaddy ARGS
run() {
	local name=$1 rc_s bad=0 side t0=$SECONDS
	shift
	start_server "$name" "$@"
	client "$name" "$@"
	wait "$SRV"; rc_s=$?
	MULTI_PIDS=""
	[ "$RC_C" = 0 ] || { fail "$name: client exit $RC_C"; bad=1; }
	[ "$rc_s" = 0 ] || { fail "$name: server exit $rc_s"; bad=1; }
	for side in server client; do
		grep -q "^data transfers complete" "$WORK/$name.$side" ||
			{ fail "$name: $side did not complete its transfers"; bad=1; }
		grep -q "^return status 0" "$WORK/$name.$side" ||
			{ fail "$name: $side did not print return status 0"; bad=1; }
	done
	if [ "$bad" != 0 ]; then show "$name"; else log "OK: $MODE: udaddy $* (both exit 0, $((SECONDS - t0)) s)"; fi
}

# refused: the server listens on RDMA_PS_IPOIB, the client asks RDMA_PS_UDP
refused() {
	start_server refused -P ipoib
	client refused
	kill_own
	if [ "$RC_C" = 1 ] && grep -q "RDMA_CM_EVENT_UNREACHABLE, error: 1$" "$WORK/refused.client"; then
		log "OK: $MODE: udaddy to a service nobody listens on: UNREACHABLE, error 1, exit 1"
	else
		fail "refused: client exit $RC_C, wanted 1 with UNREACHABLE error 1"
		show refused
	fi
}

CAPTURE=0
if [ "$MODE" = veth ]; then
	if ! command -v tshark >/dev/null; then
		log "tshark not installed: the SIDR capture is not checked"
	elif veth_capture sidr 'udp port 4791' $((TMO * 2 + 30)); then
		CAPTURE=1
	else
		fail "tshark capture did not start"
	fi
fi
run one
if [ "$CAPTURE" = 1 ]; then
	sleep 0.5  # the last frames reach the capture
	kill -INT "$CAP_PID"; wait "$CAP_PID"; CAP_PID=""
	if python3 "$(dirname "$(readlink -f "$0")")/check_sidr_capture.py" "$WORK/sidr.pcap" \
		198.51.100.1 198.51.100.2 7174 10 "$SRC/test/tools/icrc_check.py" >"$WORK/sidr.check" 2>&1; then
		log "OK: veth: SIDR and UD frames clean in tshark: $(tail -n 1 "$WORK/sidr.check")"
	else
		fail "SIDR capture check"; sed 's/^/    /' "$WORK/sidr.check"
	fi
fi
run two_x10 -c 2 -C 10
# memif: IPv6 too (the pair's fd00:6470:7600::1/64; the veth configs have no IPv6)
[ "$MODE" = memif ] && TO=fd00:6470:7600::1 run ipv6 -C 20
# memif: 100 UD ids each side (more than lib/cm's old 64 CM ids; it also
# caught a SIDR_REP handled before rdma_connect had set CONNECT)
[ "$MODE" = memif ] && run many -c 100 -C 5
refused
[ "$MULTI_FAIL" = 0 ] || exit 1
log "OK: udaddy over $MODE through dpverbs-run"
exit 0
