#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's rping between two dpverbsd daemons over the memif pair: daemon A
# on config/pair-a.json (192.0.2.1), daemon B on config/pair-b.json
# (192.0.2.2), both made shared by with_daemon.sh; "rping -s -a 192.0.2.1
# -v -C 10" is an application of A, "rping -c -a 192.0.2.1 -v -C 10" one of
# B: the REQ goes from B's QP 1 to A's, whose demultiplexer hands it to the
# listening process. Asserts both exit 0 with 10 "ping data" lines, then
# that a client with no server gets REJ 8 from daemon A's own CM endpoint
# at once. Takes /tmp/dpverbs-pair.lock (one pair test at a time).
#
# usage: rping_pair.sh BUILD_DIR   env: DPV_TIMEOUT (default 30 s)
set -u
. "$(dirname "$(readlink -f "$0")")/../multi/lib.sh"
resolve_build "${1:-}"
command -v rping >/dev/null || skip "rping (Debian rdmacm-utils) not installed"
W=$SRC/test/shared/with_daemon.sh
if [ "${DPV_PAIR_INNER:-}" != 1 ]; then
	exec 9>/tmp/dpverbs-pair.lock
	flock -w 300 9 || { log "could not get /tmp/dpverbs-pair.lock within 300 s"; exit 1; }
	rm -f /tmp/dpverbs-pair.sock
	# daemon A, then inside it daemon B, then this script again as the applications
	exec "$W" "$BUILD" --config "$SRC/config/pair-a.json" -- \
		env DPV_PAIR_INNER=1 bash -c 'export CONF_A=$DPVERBS_CONFIG; exec "$0" "$1" --config "$2" -- "$3" "$4"' \
		"$W" "$BUILD" "$SRC/config/pair-b.json" "$(readlink -f "$0")" "$BUILD"
fi
TMO=${DPV_TIMEOUT:-30}
WORK=$(mktemp -d /tmp/dpv-pair-rping.XXXXXX)
trap 'kill_own; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
sleep "${DPV_RPING_WAIT:-2}" # the memif link comes up
DPVERBS_CONFIG=$CONF_A timeout -k 5 "$TMO" rping -s -a 192.0.2.1 -v -C 10 >"$WORK/srv" 2>&1 &
srv=$!
MULTI_PIDS="$srv"
sleep "${DPV_RPING_WAIT:-2}"
timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -v -C 10 >"$WORK/cli" 2>&1
rc_c=$?
wait "$srv"
rc_s=$?
MULTI_PIDS=""
n_c=$(grep -c "ping data" "$WORK/cli")
n_s=$(grep -c "ping data" "$WORK/srv")
if [ "$rc_c" != 0 ] || [ "$rc_s" != 0 ] || [ "$n_c" != 10 ] || [ "$n_s" != 10 ]; then
	fail "client exit $rc_c ($n_c lines), server exit $rc_s ($n_s lines)"
	tail -n 5 "$WORK/srv" "$WORK/cli"
	exit 1
fi
log "rping -C 10 between two daemons over memif: OK, both sides"
timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -v -C 1 >"$WORK/n.cli" 2>&1
rc=$?
if grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$WORK/n.cli"; then
	log "client without server: REJECTED, error 8 (exit $rc)"
else
	fail "client without server: exit $rc: $(grep -v '^EAL' "$WORK/n.cli" | head -n 3 | tr '\n' ' ')"
fi
[ "$MULTI_FAIL" = 0 ] || exit 1
exit 0
