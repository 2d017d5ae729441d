#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's rdmacm-utils besides rping, between two applications of one
# dpverbsd (run under with_daemon.sh): the daemon's QP 1 serves several
# connections per process and synchronous ids.
#  1. ucmatose -b 192.0.2.1 -c 4 -C 10 / ucmatose -s 192.0.2.1 -c 4 -C 10:
#     four RC connections in each process, both exit 0 with "return
#     status 0";
#  2. rdma_server / rdma_client -s 192.0.2.1 (rdma_create_ep, synchronous
#     ids): both exit 0 with "end 0".
#
# usage: cmutils_shared.sh   env: DPV_TIMEOUT (default 30 s per program)
set -u
. "$(dirname "$(readlink -f "$0")")/../multi/lib.sh"
command -v ucmatose >/dev/null || skip "ucmatose (Debian rdmacm-utils) not installed"
[ -n "${DPVERBS_CONFIG:-}" ] || { log "run me under with_daemon.sh"; exit 2; }
TMO=${DPV_TIMEOUT:-30}
WORK=$(mktemp -d /tmp/dpv-shared-cmutils.XXXXXX)
trap 'kill_own; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# run TAG OKPATTERN SERVER... -- CLIENT...: both exit 0 and print OKPATTERN
run() {
	local tag=$1 ok=$2 srv rc_c rc_s
	shift 2
	local sargs=() cargs=()
	while [ "$1" != "--" ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	timeout -k 5 "$TMO" "${sargs[@]}" >"$WORK/$tag.srv" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	sleep "${DPV_CM_WAIT:-2}"
	timeout -k 5 "$TMO" "${cargs[@]}" >"$WORK/$tag.cli" 2>&1
	rc_c=$?
	wait "$srv"
	rc_s=$?
	MULTI_PIDS=""
	if [ "$rc_c" != 0 ] || [ "$rc_s" != 0 ] || ! grep -q "$ok" "$WORK/$tag.srv" || ! grep -q "$ok" "$WORK/$tag.cli"; then
		fail "$tag: client exit $rc_c, server exit $rc_s"
		tail -n 5 "$WORK/$tag.srv" "$WORK/$tag.cli"
		return 1
	fi
	log "$tag: both exit 0 ($ok)"
}

run ucmatose "return status 0" ucmatose -b 192.0.2.1 -c 4 -C 10 -- ucmatose -s 192.0.2.1 -c 4 -C 10
if command -v rdma_server >/dev/null; then
	run rdma_server "end 0" rdma_server -- rdma_client -s 192.0.2.1
fi
[ "$MULTI_FAIL" = 0 ] || exit 1
exit 0
