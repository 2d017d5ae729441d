#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two processes over net_memif: Debian's unmodified ibv_ud_pingpong, server
# with config/pair-a.json (memif server, creates /tmp/dpverbs-pair.sock) and
# client with config/pair-b.json, both on build/compat/libibverbs.so.1.
#
# Runs:  -g 1 (IPv4-mapped GID), -g 1 -s 1024, -g 2 (IPv6 GID fd00:6470:7600::x)
# Asserts for each: both exit 0, both print "10000 iters in ...", and
# afterwards /var/run/dpdk/dpv-pair-a and dpv-pair-b are gone (the library
# removes its EAL runtime directory at exit).
#
# usage: ud_pingpong_memif.sh [BUILD_DIR]      (meson passes the build root)
# env:   DPV_ITERS (default 10000), DPV_TIMEOUT per process (default 60 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"

ITERS=${DPV_ITERS:-10000}
TMO=${DPV_TIMEOUT:-60}
SOCK=/tmp/dpverbs-pair.sock
RUNDIRS="/var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b"
WORK=$(mktemp -d /tmp/dpv-multi-memif.XXXXXX)

on_exit memif_cleanup

# The pair configs fix the socket path and the EAL file prefixes, so two runs
# of this test cannot overlap: serialize on a lock file.
take_lock /tmp/dpverbs-pair.lock
# shellcheck disable=SC2086
claim_rundirs --stale $RUNDIRS
if [ -e "$SOCK" ]; then
	log "WARN: removing stale $SOCK"
	rm -f "$SOCK"
fi

run_case() {
	local name=$1; shift
	local port srv cli rc_s rc_c t0 t1 d
	port=$(pick_port)
	log "=== $name: ibv_ud_pingpong -d dpv0 $* -n $ITERS (tcp port $port)"
	t0=$(date +%s.%N)
	DPVERBS_CONFIG=$SRC/config/pair-a.json LD_LIBRARY_PATH=$COMPAT \
		timeout -k 5 "$TMO" "$PINGPONG" -d dpv0 "$@" -n "$ITERS" -p "$port" \
		>"$WORK/$name.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$MULTI_PIDS $srv"
	if ! wait_listen "$srv" "$port"; then
		fail "$name: server did not listen on tcp port $port"
		kill_own
		sed "s/^/    [server] /" "$WORK/$name.server"
		return
	fi
	DPVERBS_CONFIG=$SRC/config/pair-b.json LD_LIBRARY_PATH=$COMPAT \
		timeout -k 5 "$TMO" "$PINGPONG" -d dpv0 "$@" -n "$ITERS" -p "$port" 127.0.0.1 \
		>"$WORK/$name.client" 2>&1 &
	cli=$!
	MULTI_PIDS="$MULTI_PIDS $cli"
	wait "$cli"; rc_c=$?
	wait "$srv"; rc_s=$?
	MULTI_PIDS=""
	t1=$(date +%s.%N)
	[ "$rc_c" = 124 ] && log "client timed out after $TMO s"
	[ "$rc_s" = 124 ] && log "server timed out after $TMO s"
	check_output server "$WORK/$name.server" "$rc_s" "$ITERS"
	check_output client "$WORK/$name.client" "$rc_c" "$ITERS"
	for d in $RUNDIRS; do
		if [ -e "$d" ]; then
			fail "$name: $d still exists after both processes exited"
			ls -la "$d" | sed 's/^/    /'
			rm -rf "$d"
		fi
	done
	if [ -e "$SOCK" ]; then
		log "note: $SOCK left behind by the memif server; removing it"
		rm -f "$SOCK"
	fi
	log "--- $name: $(echo "$t1 - $t0" | bc 2>/dev/null || echo '?') s"
}

run_case ipv4 -g 1
run_case ipv4-s1024 -g 1 -s 1024
run_case ipv6 -g 2

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
