#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified rping (rdmacm-utils) on the drop-in
# build/compat/librdmacm.so.1 + libibverbs.so.1, two processes over
# net_memif: server "rping -s -a 192.0.2.1 -v -C 100" with
# config/pair-a.json, client "rping -c -a 192.0.2.1 -v -C 100" with
# config/pair-b.json (connection by the IB CM on QP 1 of each process).
# Asserts both exit 0 and print the 100 "ping data" lines (client) and
# "server ping data" lines (server) with exactly the data rping puts in
# each ping (rping_check in lib.sh: what the server RDMA-read and the client
# got back by RDMA write). The client starts once the server runs dpverbs'
# CM thread ("dpv-cm", started by its rdma_listen), plus DPV_RPING_WAIT
# seconds (default 0.2).
#
# usage: rping_memif.sh [BUILD_DIR]   env: DPV_TIMEOUT (default 30 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
command -v rping >/dev/null || skip "rping (Debian rdmacm-utils) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
TMO=${DPV_TIMEOUT:-30}
COUNT=100
MODE=memif
pair_mode_vars memif
WORK=$(mktemp -d /tmp/dpv-multi-rping.XXXXXX)
on_exit memif_cleanup
pair_prepare

DPVERBS_CONFIG=$CONF_S LD_LIBRARY_PATH=$COMPAT \
	timeout -k 5 "$TMO" rping -s -a 192.0.2.1 -v -C "$COUNT" >"$WORK/server" 2>"$WORK/server.err" &
srv=$!
MULTI_PIDS="$srv"
# listening once its CM thread runs (rdma_listen opens the CM)
wait_cm_thread "$srv" || fail "rping -s: no dpverbs CM thread (dpv-cm) within 30 s"
sleep "${DPV_RPING_WAIT:-0.2}"
DPVERBS_CONFIG=$CONF_C LD_LIBRARY_PATH=$COMPAT \
	timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -v -C "$COUNT" >"$WORK/client" 2>"$WORK/client.err"
rc_c=$?
wait "$srv"; rc_s=$?
MULTI_PIDS=""
[ "$rc_c" = 0 ] || fail "client exit $rc_c"
[ "$rc_s" = 0 ] || fail "server exit $rc_s"
rping_check client "$WORK/client" "ping data" "$COUNT"
rping_check server "$WORK/server" "server ping data" "$COUNT"
if [ "$MULTI_FAIL" != 0 ]; then
	log "server:"; cat "$WORK/server" "$WORK/server.err" | grep -v "^EAL" | tail -n 20
	log "client:"; cat "$WORK/client" "$WORK/client.err" | grep -v "^EAL" | tail -n 20
	exit 1
fi
log "OK: rping -C $COUNT over memif, both sides, every ping's data verified"
grep "ping data" "$WORK/client" | sed -n "1p;\$p" | sed "s/^/    [client] /"
exit 0
