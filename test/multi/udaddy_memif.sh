#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified udaddy (rdmacm-utils) through the launcher
# build/apps/dpverbs-run (the drop-in build/compat/librdmacm.so.1 +
# libibverbs.so.1), two processes over net_memif: UD ids, SIDR on QP 1 of
# each process. Two runs:
#   server "udaddy" (-c 1)            / client "udaddy -s 192.0.2.1"
#   server "udaddy -c 2 -C 10"        / client "udaddy -s 192.0.2.1 -c 2 -C 10"
# with config/pair-a.json (server, 192.0.2.1) and config/pair-b.json
# (client). Asserts that both exit 0 and print "data transfers complete"
# and "return status 0". The server is given DPV_UDADDY_WAIT seconds
# (default 3) to start listening.
#
# usage: udaddy_memif.sh [BUILD_DIR]   env: DPV_TIMEOUT (default 30 s a run)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
command -v udaddy >/dev/null || skip "udaddy (Debian rdmacm-utils) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
RUN=$BUILD/apps/dpverbs-run
[ -e "$RUN" ] || { log "$RUN not built"; exit 1; }
export DPVERBS_DROPIN=$COMPAT
unset DPVERBS_CONFIG
TMO=${DPV_TIMEOUT:-30}
SOCK=/tmp/dpverbs-pair.sock
LOCKF=/tmp/dpverbs-pair.lock
WORK=$(mktemp -d /tmp/dpv-multi-udaddy.XXXXXX)
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

# run NAME ARGS...: one server/client pair with the same udaddy ARGS
run() {
	local name=$1 srv rc_c rc_s
	shift
	rm -f "$SOCK"
	timeout -k 5 "$TMO" sh "$RUN" -c "$SRC/config/pair-a.json" udaddy "$@" \
		>"$WORK/$name.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	sleep "${DPV_UDADDY_WAIT:-3}"
	timeout -k 5 "$TMO" sh "$RUN" -c "$SRC/config/pair-b.json" udaddy -s 192.0.2.1 "$@" \
		>"$WORK/$name.client" 2>&1
	rc_c=$?
	wait "$srv"; rc_s=$?
	MULTI_PIDS=""
	local bad=0
	[ "$rc_c" = 0 ] || { fail "$name: client exit $rc_c"; bad=1; }
	[ "$rc_s" = 0 ] || { fail "$name: server exit $rc_s"; bad=1; }
	for side in server client; do
		grep -q "^data transfers complete" "$WORK/$name.$side" ||
			{ fail "$name: $side did not complete its transfers"; bad=1; }
		grep -q "^return status 0" "$WORK/$name.$side" ||
			{ fail "$name: $side did not print return status 0"; bad=1; }
	done
	if [ "$bad" != 0 ]; then
		log "$name server:"; grep -v '^EAL' "$WORK/$name.server" | tail -n 20
		log "$name client:"; grep -v '^EAL' "$WORK/$name.client" | tail -n 20
	else
		log "OK: udaddy $* (server and client exit 0)"
	fi
}

run one
run two_x10 -c 2 -C 10
[ "$MULTI_FAIL" = 0 ] || exit 1
log "OK: udaddy over memif through dpverbs-run, both runs"
exit 0
