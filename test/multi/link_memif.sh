#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# How people really run two processes over net_memif (config/pair-a.json is
# the memif server, pair-b.json the client), and what the port reports:
#  A. the server's port follows its link: the client is killed (SIGKILL):
#     IBV_EVENT_PORT_ERR and ibv_query_port DOWN; a new client connects:
#     IBV_EVENT_PORT_ACTIVE and ACTIVE (test/multi/link_watch);
#  B. the server is stopped with Ctrl-C (SIGINT, no exit handler runs): the
#     client gets PORT_ERR; a new server takes the stale socket over, the
#     client reconnects by itself and gets PORT_ACTIVE;
#  C. a second process started with a configuration in use fails at once
#     with a message naming the process that holds it;
#  D. server and client started together, 5 times (the server up to 0.4 s
#     after the client: a client can reach the server between its probe and
#     its start and be turned away, then reconnects): Debian's
#     ibv_rc_pingpong completes every time (the client is restarted while
#     the server does not listen yet) and no process crashes;
#  E. a ping-pong after all of this: data flows over the reconnected link.
# Only PIDs started here are signalled.
#
# usage: link_memif.sh [BUILD_DIR]
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
WATCH=$BUILD/test/multi/link_watch
[ -x "$WATCH" ] || { log "$WATCH not built"; exit 1; }
command -v ibv_rc_pingpong >/dev/null || skip "ibv_rc_pingpong (Debian ibverbs-utils) not installed"
[ "${DPVERBS_HUGEPAGES:-1}" = 0 ] && skip "net_memif needs hugepages (DPVERBS_HUGEPAGES=0)"

SOCK=/tmp/dpverbs-pair.sock
A=$SRC/config/pair-a.json
B=$SRC/config/pair-b.json
WORK=$(mktemp -d /tmp/dpv-multi-link.XXXXXX)
on_exit memif_cleanup
take_lock /tmp/dpverbs-pair.lock
rm -f "$SOCK"

# Job control: background processes keep the default SIGINT action (a
# non-interactive shell would start them with SIGINT ignored), so that
# kill -INT acts as Ctrl-C does.
set -m
# watch NAME CONFIG SECONDS [EVENTS]: link_watch in the background (bounded
# by its own -t); LAST_PID is link_watch's own PID
watch() {
	local name=$1 cfg=$2 secs=$3 ev=${4:-}
	DPVERBS_CONFIG=$cfg LD_LIBRARY_PATH=$COMPAT \
		"$WATCH" -d dpv0 -t "$secs" ${ev:+-e "$ev"} >"$WORK/$name" 2>&1 &
	LAST_PID=$!
	MULTI_PIDS="$MULTI_PIDS $LAST_PID"
}
# wait_for FILE REGEX SECONDS: 0 once FILE has a line matching REGEX
wait_for() {
	local i
	for i in $(seq 1 $(($3 * 10))); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# finish PID NAME: waits for PID, asserts exit 0
finish() {
	local rc=0
	wait "$1" || rc=$?
	[ "$rc" = 0 ] || fail "$2 exited with $rc"
	sed "s/^/    [$2] /" "$WORK/$2"
}

log "=== A: the server's port follows its link"
watch srvA "$A" 30 err,active; SRV=$LAST_PID
wait_for "$WORK/srvA" '^ready state=active' 15 || fail "A: server not ready and ACTIVE"
watch cli1 "$B" 60; C1=$LAST_PID
wait_for "$WORK/cli1" '^ready' 15 || fail "A: client 1 not ready"
sleep 0.5
grep -q '^event' "$WORK/srvA" && fail "A: an event before the link went down"
kill -KILL "$C1"
wait_for "$WORK/srvA" '^event port error state=down' 5 ||
	fail "A: no PORT_ERR with state DOWN after the client was killed"
watch cli2 "$B" 60; C2=$LAST_PID
wait_for "$WORK/srvA" '^event port active state=active' 15 ||
	fail "A: no PORT_ACTIVE with state ACTIVE after a new client"
finish "$SRV" srvA
kill -TERM "$C2"; wait "$C2" 2>/dev/null

log "=== B: Ctrl-C on the server; a new server takes over, the client reconnects"
watch srvB1 "$A" 60; S1=$LAST_PID
wait_for "$WORK/srvB1" '^ready' 15 || fail "B: server 1 not ready"
watch cliB "$B" 30 err,active; CB=$LAST_PID
wait_for "$WORK/cliB" '^ready state=active' 15 || fail "B: client not ready and ACTIVE"
kill -INT "$S1"; wait "$S1" 2>/dev/null
[ -S "$SOCK" ] || log "note: the killed server left no socket file"
wait_for "$WORK/cliB" '^event port error state=down' 5 ||
	fail "B: client saw no PORT_ERR / DOWN after its server was stopped"
watch srvB2 "$A" 60; S2=$LAST_PID
wait_for "$WORK/srvB2" '^ready' 15 || { fail "B: a new server did not start"; sed 's/^/    /' "$WORK/srvB2"; }
wait_for "$WORK/cliB" '^event port active state=active' 15 ||
	fail "B: the client did not reconnect (no PORT_ACTIVE)"
finish "$CB" cliB

log "=== C: a second process on a configuration in use"
rc=0
DPVERBS_CONFIG=$A LD_LIBRARY_PATH=$COMPAT timeout 20 "$WATCH" -d dpv0 -t 1 >"$WORK/dup" 2>&1 || rc=$?
sed 's/^/    [dup] /' "$WORK/dup"
[ "$rc" != 0 ] || fail "C: a second process with $A did not fail"
grep -Eq "\"dpv-pair-a\" is in use by process $S2 \\(" "$WORK/dup" ||
	grep -Eq "\"dpv-pair-a\" is in use by process [0-9]+ \\(link_watch\\)" "$WORK/dup" ||
	fail "C: the message does not name the process holding dpv-pair-a"
kill -TERM "$S2"; wait "$S2" 2>/dev/null

log "=== D: server and client started together (the server 0 to 0.4 s after the client)"
i=0
for delay in 0 0 0.1 0.25 0.4; do
	i=$((i + 1))
	port=$(pick_port)
	(sleep "$delay"; DPVERBS_CONFIG=$A LD_LIBRARY_PATH=$COMPAT exec timeout -k 5 60 \
		ibv_rc_pingpong -d dpv0 -g 1 -n 200 -p "$port" >"$WORK/d$i.srv" 2>&1) &
	S=$!; MULTI_PIDS="$MULTI_PIDS $S"
	crc=1
	for t in $(seq 1 50); do
		DPVERBS_CONFIG=$B LD_LIBRARY_PATH=$COMPAT timeout -k 5 60 \
			ibv_rc_pingpong -d dpv0 -g 1 -n 200 -p "$port" 127.0.0.1 >"$WORK/d$i.cli" 2>&1 && { crc=0; break; }
		grep -q "Couldn't connect" "$WORK/d$i.cli" || break
		sleep 0.1
	done
	srvrc=0; wait "$S" || srvrc=$?
	if [ "$srvrc" != 0 ] || [ "$crc" != 0 ]; then
		fail "D$i: server exited $srvrc, client $crc (after $t tries)"
		sed 's/^/    [srv] /' "$WORK/d$i.srv"; sed 's/^/    [cli] /' "$WORK/d$i.cli"
	else
		log "D$i: ok (server $delay s after the client; client started $t times)"
	fi
	grep -h PANIC "$WORK/d$i.srv" "$WORK/d$i.cli" && fail "D$i: a process panicked"
done

log "=== E: a ping-pong (1000 x 4 KiB) after all of this"
port=$(pick_port)
DPVERBS_CONFIG=$A LD_LIBRARY_PATH=$COMPAT timeout -k 5 60 \
	ibv_rc_pingpong -d dpv0 -g 1 -n 1000 -s 4096 -c -p "$port" >"$WORK/e.srv" 2>&1 &
S=$!; MULTI_PIDS="$MULTI_PIDS $S"
wait_listen "$S" "$port" || fail "E: server did not listen"
crc=0
DPVERBS_CONFIG=$B LD_LIBRARY_PATH=$COMPAT timeout -k 5 60 \
	ibv_rc_pingpong -d dpv0 -g 1 -n 1000 -s 4096 -c -p "$port" 127.0.0.1 >"$WORK/e.cli" 2>&1 || crc=$?
srvrc=0; wait "$S" || srvrc=$?
[ "$srvrc" = 0 ] && [ "$crc" = 0 ] || fail "E: server exited $srvrc, client $crc"
grep -q '^1000 iters in' "$WORK/e.cli" || fail "E: the client did not print '1000 iters in'"
sed 's/^/    [cli] /' "$WORK/e.cli"

kill_own
for d in /var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b; do
	[ -e "$d" ] && log "note: $d left by a process that was killed (EAL reuses it)"
done
[ "$MULTI_FAIL" = 0 ] && log "PASS" || log "FAILED"
exit "$MULTI_FAIL"
