#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Raw Ethernet frames between two processes over net_memif (embedded mode):
# test/multi/raw_peer recv on config/pair-a.json (the memif server) with a
# steering rule on a MAC and EtherType, raw_peer send on config/pair-b.json:
# the receiver gets 50 frames whole from the other process' raw packet QP.
#
# usage: raw_memif.sh [BUILD_DIR]
# env:   DPV_TIMEOUT per process (default 60 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"

TMO=${DPV_TIMEOUT:-60}
N=50
PEER=$BUILD/test/multi/raw_peer
SOCK=/tmp/dpverbs-pair.sock
RUNDIRS="/var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b"
WORK=$(mktemp -d /tmp/dpv-multi-raw.XXXXXX)
[ -x "$PEER" ] || skip "$PEER not built"

on_exit memif_cleanup
take_lock /tmp/dpverbs-pair.lock
# shellcheck disable=SC2086
claim_rundirs --stale $RUNDIRS
rm -f "$SOCK"

DPVERBS_CONFIG=$SRC/config/pair-a.json timeout -k 5 "$TMO" "$PEER" recv $N >"$WORK/recv" 2>&1 &
rcv=$!
MULTI_PIDS="$rcv"
for _ in $(seq 100); do
	grep -q '^ready' "$WORK/recv" && break
	kill -0 "$rcv" 2>/dev/null || break
	sleep 0.1
done
grep -q '^ready' "$WORK/recv" || fail "the receiver did not get ready"
DPVERBS_CONFIG=$SRC/config/pair-b.json timeout -k 5 "$TMO" "$PEER" send $N >"$WORK/send" 2>&1 &
snd=$!
MULTI_PIDS="$rcv $snd"
wait "$snd"; rc_s=$?
wait "$rcv"; rc_r=$?
MULTI_PIDS=""
[ "$rc_s" = 0 ] || { fail "sender exited $rc_s"; sed 's/^/    [send] /' "$WORK/send"; }
[ "$rc_r" = 0 ] || { fail "receiver exited $rc_r"; sed 's/^/    [recv] /' "$WORK/recv"; }
grep -h 'passed' "$WORK/recv" "$WORK/send" | sed 's/^/    /'
if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
