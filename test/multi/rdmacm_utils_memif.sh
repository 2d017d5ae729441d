#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified rdmacm-utils on the drop-in librdmacm.so.1 +
# libibverbs.so.1, two processes over net_memif, each started by
# build/apps/dpverbs-run -c config/pair-a.json (server, 192.0.2.1) or
# config/pair-b.json (client):
#  - rdma_server -p 7471 / rdma_client -s 192.0.2.1 -p 7471: synchronous
#    ids from rdma_create_ep, rdma_get_request, rdma_accept and
#    rdma_connect waiting for ESTABLISHED, one SEND each way, disconnect;
#  - ucmatose -c 2 -C 10 / ucmatose -s 192.0.2.1 -c 2 -C 10: two
#    connections on an event channel, 10 messages each way, disconnect;
#  - ucmatose -P ib (RDMA_PS_IB with IP addresses), the client with an ACK
#    timeout option (-a 16) and migrating its ids to a new channel (-m).
# Asserts every process exits 0 and prints its "end 0" / "return status 0"
# line. A client that finds no listener yet (the server's DPDK start is
# slow on a loaded machine: the REQ is rejected) is started again, at most
# DPV_CLIENT_TRIES times (default 5), 2 s apart; every retry is logged.
#
# usage: rdmacm_utils_memif.sh [BUILD_DIR]   env: DPV_TIMEOUT (default 30 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
for t in rdma_server rdma_client ucmatose; do
	command -v $t >/dev/null || skip "$t (Debian rdmacm-utils) not installed"
done
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
RUN="$BUILD/apps/dpverbs-run"
[ -e "$RUN" ] || { log "$RUN not built"; exit 1; }
export DPVERBS_DROPIN=$COMPAT
unset DPVERBS_CONFIG
TMO=${DPV_TIMEOUT:-30}
TRIES=${DPV_CLIENT_TRIES:-5}
SOCK=/tmp/dpverbs-pair.sock
LOCKF=/tmp/dpverbs-pair.lock
WORK=$(mktemp -d /tmp/dpv-multi-rdmacm.XXXXXX)
cleanup() {
	kill_own
	rm -f "$SOCK"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
exec 9>"$LOCKF"
flock -w 300 9 || { log "could not get $LOCKF within 300 s"; exit 1; }
for d in /var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b; do
	if [ -e "$d" ] && ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q "/dpdk/${d##*/}/"; then
		log "$d is in use by another process"
		exit 1
	fi
done

# pair NAME "SERVER CMD" "CLIENT CMD" SERVER_OK_RE CLIENT_OK_RE
pair() {
	local name=$1 scmd=$2 ccmd=$3 sre=$4 cre=$5 srv rc_c rc_s try=1
	rm -f "$SOCK"
	# shellcheck disable=SC2086
	timeout -k 5 "$TMO" sh "$RUN" -c "$SRC/config/pair-a.json" $scmd >"$WORK/$name.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	sleep 2
	while :; do
		# shellcheck disable=SC2086
		timeout -k 5 "$TMO" sh "$RUN" -c "$SRC/config/pair-b.json" $ccmd >"$WORK/$name.client" 2>&1
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
		log "$name server:"; grep -v '^EAL' "$WORK/$name.server" | tail -n 20
		log "$name client:"; grep -v '^EAL' "$WORK/$name.client" | tail -n 20
	else
		log "OK: $name (client attempts: $try)"
	fi
}

pair rdma_server_client "rdma_server -p 7471" "rdma_client -s 192.0.2.1 -p 7471" \
	'^rdma_server: end 0$' '^rdma_client: end 0$'
pair ucmatose "ucmatose -c 2 -C 10" "ucmatose -s 192.0.2.1 -c 2 -C 10" \
	'^return status 0$' '^return status 0$'
pair ucmatose_ib "ucmatose -P ib -c 1 -C 4" "ucmatose -s 192.0.2.1 -P ib -c 1 -C 4 -a 16 -m" \
	'^return status 0$' '^return status 0$'
rm -f "$SOCK"
[ "$MULTI_FAIL" = 0 ] || exit 1
log "OK: rdma_server/rdma_client and ucmatose (TCP, IB port spaces) over memif"
exit 0
