#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified rping between two applications of one dpverbsd (run
# under with_daemon.sh, which sets DPVERBS_CONFIG and LD_LIBRARY_PATH): the
# daemon owns QP 1 of each port and hands each process the CM MADs for its
# listens and comm IDs (doc/shared-mode.md, "Connection management").
#
#  1. rping -s -a 192.0.2.1 -v -C 10 / rping -c -a 192.0.2.1 -v -C 10:
#     both exit 0 with 10 "ping data" lines.
#     Then three pairs at once (ports 7201..7203): all six exit 0.
#  2. A client killed with SIGKILL in the middle of its connection (after
#     at least 20 pings): the daemon sends the DREQ Linux's CM would, so
#     its server is disconnected and ends by itself (DPV_GONE_TIMEOUT, 30 s,
#     bounds the wait; the daemon's log says whether it sent the DREQ or
#     the peer disconnected first); the next
#     pair (1 again) connects and exits 0. The same with the server killed:
#     the client ends by itself.
#  3. A server killed with SIGKILL while it listens: its listen goes with
#     it, so the next server listens on the same port and the next pair
#     exits 0.
#  4. A client with no server: rping -c exits non-zero at once (the REQ is
#     answered with a REJ, "invalid service ID", not timed out).
#
# usage: rping_shared.sh   env: DPV_TIMEOUT (default 30 s per program)
set -u
. "$(dirname "$(readlink -f "$0")")/../multi/lib.sh"
command -v rping >/dev/null || skip "rping (Debian rdmacm-utils) not installed"
[ -n "${DPVERBS_CONFIG:-}" ] || { log "run me under with_daemon.sh"; exit 2; }
TMO=${DPV_TIMEOUT:-30}
# how long a peer of a killed process may take to end (it gets the daemon's
# DREQ at once; a bound, not a measure: generous for loaded machines)
GONE_TMO=${DPV_GONE_TIMEOUT:-30}
WORK=$(mktemp -d /tmp/dpv-shared-rping.XXXXXX)
trap 'kill_own; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# wait_for FILE PATTERN COUNT SECONDS: COUNT lines matching PATTERN appear
wait_for() {
	local i
	for i in $(seq $(( $4 * 10 ))); do
		[ "$(grep -c "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_gone PID SECONDS: PID (a child) exits within SECONDS
wait_gone() {
	local i
	for i in $(seq $(( $2 * 10 ))); do
		[ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ] && return 0
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# dreq_note PID: whether the daemon sent the DREQ for the killed PID's
# connection (its log). Not a check: when the peer notices first (its QP
# fails under RDMA traffic and it disconnects), its DREQ ends the connection
# and the daemon has nothing to send; test shared_cmrt_dead checks the DREQ
# where only it can tell the peer.
dreq_note() {
	[ -n "${DPV_SHARED_TMP:-}" ] || return 0
	if grep -q "application pid $1 gone: DREQ sent for 1 connection" "$DPV_SHARED_TMP/dpverbsd.log"; then
		log "  the daemon sent the DREQ for pid $1"
	else
		log "  the peer disconnected first (no DREQ from the daemon for pid $1)"
	fi
}

# pair TAG: one server/client pair with -C 10, both must exit 0 with 10 lines
pair() {
	timeout -k 5 "$TMO" rping -s -a 192.0.2.1 -v -C 10 >"$WORK/$1.srv" 2>&1 &
	local srv=$!
	MULTI_PIDS="$srv"
	sleep "${DPV_RPING_WAIT:-2}"
	timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -v -C 10 >"$WORK/$1.cli" 2>&1
	local rc_c=$?
	wait "$srv"
	local rc_s=$?
	MULTI_PIDS=""
	local n_c n_s
	n_c=$(grep -c "ping data" "$WORK/$1.cli")
	n_s=$(grep -c "ping data" "$WORK/$1.srv")
	if [ "$rc_c" != 0 ] || [ "$rc_s" != 0 ] || [ "$n_c" != 10 ] || [ "$n_s" != 10 ]; then
		fail "$1: client exit $rc_c ($n_c lines), server exit $rc_s ($n_s lines)"
		tail -n 5 "$WORK/$1.srv" "$WORK/$1.cli"
		return 1
	fi
	log "$1: rping -C 10 OK, both sides"
}

pair first || exit 1

# 1b. three pairs at once (six processes on the daemon's QP 1), ports 7201..7203
pids=""
for i in 1 2 3; do
	timeout -k 5 "$TMO" rping -s -a 192.0.2.1 -p 720$i -v -C 20 >"$WORK/c$i.srv" 2>&1 &
	pids="$pids $!"
done
MULTI_PIDS="$pids"
sleep "${DPV_RPING_WAIT:-2}"
for i in 1 2 3; do
	timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -p 720$i -v -C 20 >"$WORK/c$i.cli" 2>&1 &
	pids="$pids $!"
done
MULTI_PIDS="$pids"
nok=0
sts=""
for p in $pids; do
	wait "$p"
	st=$?
	sts="$sts $st"
	[ "$st" = 0 ] && nok=$((nok + 1))
done
MULTI_PIDS=""
for i in 1 2 3; do
	for side in srv cli; do
		if [ "$(grep -c "ping data" "$WORK/c$i.$side")" != 20 ]; then
			fail "concurrent pair $i: $side printed $(grep -c "ping data" "$WORK/c$i.$side") lines (exit statuses:$sts)"
			grep -v "ping data" "$WORK/c$i.$side" | tail -n 5
		fi
	done
done
[ "$nok" = 6 ] && log "three concurrent pairs: all six exit 0 with 20 pings each" || fail "concurrent pairs: $nok of 6 exited 0"

# 2. client killed mid-connection (rping itself, not a wrapper, gets SIGKILL)
timeout -k 5 "$TMO" rping -s -a 192.0.2.1 -v -C 1000000 >"$WORK/k.srv" 2>&1 &
srv=$!
MULTI_PIDS="$srv"
sleep "${DPV_RPING_WAIT:-2}"
rping -c -a 192.0.2.1 -v -C 1000000 >"$WORK/k.cli" 2>&1 &
cli=$!
MULTI_PIDS="$srv $cli"
if ! wait_for "$WORK/k.cli" "ping data" 20 "$TMO"; then
	fail "killed client: fewer than 20 pings before the kill"
	tail -n 5 "$WORK/k.srv" "$WORK/k.cli"
fi
kill -KILL "$cli"
wait "$cli" 2>/dev/null
log "client killed after $(grep -c "ping data" "$WORK/k.cli") pings"
# the daemon sends the DREQ Linux's CM sends for a dead process' connection:
# the server sees DISCONNECTED and ends by itself
if wait_gone "$srv" "$GONE_TMO"; then
	wait "$srv"
	log "server ended by itself after the client's SIGKILL (exit $?)"
	dreq_note "$cli"
else
	fail "server still running $GONE_TMO s after its client's SIGKILL (no DREQ?)"
fi
kill_own
pair after-client-kill || exit 1

# 2b. server killed mid-connection: the client is disconnected and ends
rping -s -a 192.0.2.1 -v -C 1000000 >"$WORK/k2.srv" 2>&1 &
srv=$!
MULTI_PIDS="$srv"
sleep "${DPV_RPING_WAIT:-2}"
timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -v -C 1000000 >"$WORK/k2.cli" 2>&1 &
cli=$!
MULTI_PIDS="$srv $cli"
wait_for "$WORK/k2.cli" "ping data" 20 "$TMO" || fail "killed server: fewer than 20 pings before the kill"
kill -KILL "$srv"
wait "$srv" 2>/dev/null
if wait_gone "$cli" "$GONE_TMO"; then
	wait "$cli"
	log "client ended by itself after the server's SIGKILL (exit $?)"
	dreq_note "$srv"
else
	fail "client still running $GONE_TMO s after its server's SIGKILL"
	grep -v "ping data" "$WORK/k2.cli" | tail -n 5
	[ -n "${DPV_SHARED_TMP:-}" ] && grep "pid $srv gone" "$DPV_SHARED_TMP/dpverbsd.log"
fi
kill_own
pair after-server-kill-connected || exit 1

# 3. listening server killed: its listen goes with it
rping -s -a 192.0.2.1 -v -C 10 >"$WORK/l.srv" 2>&1 &
srv=$!
MULTI_PIDS="$srv"
sleep "${DPV_RPING_WAIT:-2}"
kill -KILL "$srv"
wait "$srv" 2>/dev/null
MULTI_PIDS=""
pair after-server-kill || exit 1

# 4. nobody listens: REJ (invalid service ID), so the client fails fast
start=$(date +%s)
timeout -k 5 "$TMO" rping -c -a 192.0.2.1 -v -C 1 >"$WORK/n.cli" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
if [ "$rc" = 0 ] || [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	fail "client without server: exit $rc"
else
	log "client without server: exit $rc after ${took}s: $(grep -v '^EAL' "$WORK/n.cli" | head -n 2 | tr '\n' ' ')"
fi
[ "$MULTI_FAIL" = 0 ] || exit 1
log "OK"
exit 0
