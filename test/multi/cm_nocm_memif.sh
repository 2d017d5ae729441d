#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A dpverbs process that does not use rdma_cm still answers the CM on QP 1,
# as a Linux host's kernel CM does (drivers/sw/sw_gsi_fb.c). Two processes
# over net_memif: Debian's ibv_rc_pingpong server (-d dpv0 -g 1, waiting for
# its TCP peer) with config/pair-a.json on the drop-in libibverbs.so.1, and
# Debian's rping client "rping -c -a 192.0.2.1 -p PORT -C 1" with
# config/pair-b.json on the drop-in librdmacm.so.1. Asserts the client
# prints "cma event RDMA_CM_EVENT_REJECTED, error 8" and exits 255, as
# against a Linux host where nobody listens (before: no answer, UNREACHABLE
# after ~70 s; the 30 s timeout would end it), and that dpv_stat -p of the
# server shows a cm_fallback_reply. The server is then stopped (TERM).
#
# usage: cm_nocm_memif.sh [BUILD_DIR]   env: DPV_TIMEOUT (default 30 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
command -v rping >/dev/null || skip "rping (Debian rdmacm-utils) not installed"
PP=$(command -v ibv_rc_pingpong || true)
[ -n "$PP" ] || skip "ibv_rc_pingpong (Debian ibverbs-utils) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
TMO=${DPV_TIMEOUT:-30}
MODE=memif
pair_mode_vars memif
WORK=$(mktemp -d /tmp/dpv-multi-nocm.XXXXXX)
on_exit memif_cleanup
pair_prepare

PORT=$(pick_port)
DPVERBS_CONFIG=$CONF_S LD_LIBRARY_PATH=$COMPAT \
	timeout -k 5 "$TMO" "$PP" -d dpv0 -g 1 -p "$PORT" >"$WORK/server" 2>&1 &
srv=$!
MULTI_PIDS="$srv"
wait_listen "$srv" "$PORT" || { cat "$WORK/server"; fail "ibv_rc_pingpong: no TCP listen on $PORT"; exit 1; }
DPVERBS_CONFIG=$CONF_C LD_LIBRARY_PATH=$COMPAT \
	timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -p 7999 -C 1 >"$WORK/client" 2>&1
rc=$?
grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$WORK/client" ||
	fail "rping -c: no 'RDMA_CM_EVENT_REJECTED, error 8' (exit $rc)"
[ "$rc" = 255 ] || fail "rping -c exit $rc, want 255"
STAT=$BUILD/apps/dpv_stat/dpv_stat
if [ -x "$STAT" ]; then
	pp=$(pgrep -f -P "$srv" "ibv_rc_pingpong" | head -n 1) # the pingpong under timeout
	# the counters are published every 100 ms (DPV_STATS_PERIOD_MS): the
	# client can end before the next snapshot; read again for up to 3 s
	for _ in $(seq 30); do
		"$STAT" -p "${pp:-$srv}" -a >"$WORK/stat" 2>&1
		grep -Eq "^ *cm_fallback_reply +[1-9]" "$WORK/stat" && break
		sleep 0.1
	done
	grep -Eq "^ *cm_fallback_reply +[1-9]" "$WORK/stat" ||
		fail "dpv_stat -p ${pp:-$srv}: no cm_fallback_reply ($(head -c 300 "$WORK/stat"))"
fi
kill_own
if [ "$MULTI_FAIL" != 0 ]; then
	log "client:"; grep -v "^EAL" "$WORK/client" | tail -n 20
	log "dpv_stat:"; grep -E "cm_|gsi" "$WORK/stat" 2>/dev/null | tail -n 10
	exit 1
fi
log "OK: rping to a dpverbs process without rdma_cm: REJECTED 8 at once (exit 255)"
grep -E "cm_fallback_reply" "$WORK/stat" 2>/dev/null | head -n 2 | sed "s/^/    [server dpv_stat] /"
exit 0
