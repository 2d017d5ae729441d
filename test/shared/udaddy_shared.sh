#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified udaddy between two applications of one dpverbsd (run
# under with_daemon.sh, which sets DPVERBS_CONFIG and LD_LIBRARY_PATH): UD
# ids, SIDR through the daemon's QP 1 (it hands a SIDR_REQ to the process
# listening on its service ID and a SIDR_REP to the owner of its request
# ID, doc/shared-mode.md).
#  1. udaddy -b 192.0.2.1 / udaddy -s 192.0.2.1, then the same with
#     -c 2 -C 10: both exit 0 with "data transfers complete".
#  2. A server on another port space (-P ipoib, another service ID) and a
#     RDMA_PS_UDP client: the client prints "RDMA_CM_EVENT_UNREACHABLE,
#     error: 1" (SIDR_REP status 1, nobody listens) and exits 1.
#
# usage: udaddy_shared.sh   env: DPV_TIMEOUT (default 30 s per program)
set -u
. "$(dirname "$(readlink -f "$0")")/../multi/lib.sh"
command -v udaddy >/dev/null || skip "udaddy (Debian rdmacm-utils) not installed"
[ -n "${DPVERBS_CONFIG:-}" ] || { log "run me under with_daemon.sh"; exit 2; }
TMO=${DPV_TIMEOUT:-30}
WORK=$(mktemp -d /tmp/dpv-shared-udaddy.XXXXXX)
trap 'kill_own; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# pair TAG ARGS...: server "udaddy -b 192.0.2.1 ARGS", client "udaddy -s 192.0.2.1 ARGS"
pair() {
	local tag=$1 srv rc_c rc_s
	shift
	timeout -k 5 "$TMO" udaddy -b 192.0.2.1 "$@" >"$WORK/$tag.srv" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	sleep "${DPV_UDADDY_WAIT:-2}"
	timeout -k 5 "$TMO" udaddy -s 192.0.2.1 "$@" >"$WORK/$tag.cli" 2>&1
	rc_c=$?
	wait "$srv"; rc_s=$?
	MULTI_PIDS=""
	if [ "$rc_c" != 0 ] || [ "$rc_s" != 0 ] || ! grep -q "^data transfers complete" "$WORK/$tag.cli" ||
		! grep -q "^data transfers complete" "$WORK/$tag.srv"; then
		fail "$tag: client exit $rc_c, server exit $rc_s"
		grep -v '^EAL' "$WORK/$tag.srv" | tail -n 5; grep -v '^EAL' "$WORK/$tag.cli" | tail -n 5
		return 1
	fi
	log "$tag: udaddy $* OK, both sides"
}

pair one
pair two_x10 -c 2 -C 10

timeout -k 5 "$TMO" udaddy -b 192.0.2.1 -P ipoib >"$WORK/r.srv" 2>&1 &
MULTI_PIDS="$!"
sleep "${DPV_UDADDY_WAIT:-2}"
timeout -k 5 "$TMO" udaddy -s 192.0.2.1 >"$WORK/r.cli" 2>&1
rc=$?
kill_own
if [ "$rc" = 1 ] && grep -q "RDMA_CM_EVENT_UNREACHABLE, error: 1$" "$WORK/r.cli"; then
	log "refused: UNREACHABLE, error 1, exit 1"
else
	fail "refused: client exit $rc"
	grep -v '^EAL' "$WORK/r.cli" | tail -n 5
fi
[ "$MULTI_FAIL" = 0 ] || exit 1
log "OK"
exit 0
