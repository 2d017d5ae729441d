#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified rping (rdmacm-utils) on the drop-in
# build/compat/librdmacm.so.1 + libibverbs.so.1, two processes over
# net_memif: server "rping -s -a 192.0.2.1 -v -C 10" with
# config/pair-a.json, client "rping -c -a 192.0.2.1 -v -C 10" with
# config/pair-b.json (connection by the IB CM on QP 1 of each process).
# Asserts both exit 0 and print 10 "ping data" lines. The server is given
# DPV_RPING_WAIT seconds (default 4) to start listening.
#
# usage: rping_memif.sh [BUILD_DIR]   env: DPV_TIMEOUT (default 30 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
command -v rping >/dev/null || skip "rping (Debian rdmacm-utils) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
TMO=${DPV_TIMEOUT:-30}
SOCK=/tmp/dpverbs-pair.sock
LOCKF=/tmp/dpverbs-pair.lock
WORK=$(mktemp -d /tmp/dpv-multi-rping.XXXXXX)
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
[ -e "$SOCK" ] && rm -f "$SOCK"

DPVERBS_CONFIG=$SRC/config/pair-a.json LD_LIBRARY_PATH=$COMPAT \
	timeout -k 5 "$TMO" rping -s -a 192.0.2.1 -v -C 10 >"$WORK/server" 2>&1 &
srv=$!
MULTI_PIDS="$srv"
sleep "${DPV_RPING_WAIT:-4}"
DPVERBS_CONFIG=$SRC/config/pair-b.json LD_LIBRARY_PATH=$COMPAT \
	timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -v -C 10 >"$WORK/client" 2>&1
rc_c=$?
wait "$srv"; rc_s=$?
MULTI_PIDS=""
[ "$rc_c" = 0 ] || fail "client exit $rc_c"
[ "$rc_s" = 0 ] || fail "server exit $rc_s"
n_c=$(grep -c "ping data" "$WORK/client"); n_s=$(grep -c "ping data" "$WORK/server")
[ "$n_c" = 10 ] || fail "client printed $n_c ping lines"
[ "$n_s" = 10 ] || fail "server printed $n_s ping lines"
if [ "$MULTI_FAIL" != 0 ]; then
	log "server:"; grep -v '^EAL' "$WORK/server" | tail -n 20
	log "client:"; grep -v '^EAL' "$WORK/client" | tail -n 20
	exit 1
fi
log "OK: rping -C 10 over memif, both sides"
exit 0
