#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified mckey (rdmacm-utils: rdma_join_multicast, UD sends to
# the group) through the launcher build/apps/dpverbs-run, two processes over
# net_memif (config/pair-a.json 192.0.2.1 receives, pair-b.json 192.0.2.2
# sends; takes /tmp/dpverbs-pair.lock). Runs:
#   v4:  "mckey -m 230.0.2.1 -b 192.0.2.1 -C 10" /
#        "mckey -m 230.0.2.1 -b 192.0.2.2 -s -C 10"
#   v6:  the same with the group ff0e::6470:1 and fd00:6470:7600::1/::2
#   each asserting both exit 0, print "joined dgid: <the group's GID>",
#   "data transfers complete" and "return status 0" (the receiver completes
#   only once its 10 messages arrived);
#   other: the receiver joins 230.0.2.1, the sender sends to 230.0.2.9: the
#   receiver gets nothing (stopped by its timeout, DPV_MCKEY_OTHER_TMO s,
#   default 8) and the sender completes.
# With "shared" (run under test/shared/with_daemon.sh: DPVERBS_CONFIG is the
# daemon's, the built-in default's dpv0 192.0.2.1 / dpv1 192.0.2.2, IPv4
# only): two applications of one dpverbsd, the v4 and other runs, and
# "port": receiver and sender both on dpv0 (the group looped back to the
# port, to another process; mckey's sender posts its sends unsignaled and
# destroys its AH at once: the daemon runs the doorbells first).
# The sender starts once the receiver printed "receiving data transfers"
# (it has joined; at most DPV_MCKEY_WAIT seconds, default 20).
#
# usage: mckey_memif.sh [BUILD_DIR] [shared]   env: DPV_TIMEOUT (30 s a run)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
command -v mckey >/dev/null || skip "mckey (Debian rdmacm-utils) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
RUN=$BUILD/apps/dpverbs-run
[ -e "$RUN" ] || { log "$RUN not built"; exit 1; }
export DPVERBS_DROPIN=$COMPAT
SHARED=0
if [ "${2:-}" = shared ]; then
	SHARED=1
	[ -n "${DPV_SHARED_TMP:-}" ] || { log "shared: run under test/shared/with_daemon.sh"; exit 2; }
	CONF_R=(); CONF_S=()
else
	unset DPVERBS_CONFIG
	CONF_R=(-c "$SRC/config/pair-a.json"); CONF_S=(-c "$SRC/config/pair-b.json")
fi
TMO=${DPV_TIMEOUT:-30}
# line-buffered output: a receiver stopped by its timeout still shows how far it got
SB=()
command -v stdbuf >/dev/null && SB=(stdbuf -oL)
LOCKF=/tmp/dpverbs-pair.lock
SOCK=/tmp/dpverbs-pair.sock
WORK=$(mktemp -d /tmp/dpv-multi-mckey.XXXXXX)
on_exit memif_cleanup
[ "$SHARED" = 1 ] && LOCKF=/dev/null
take_lock "$LOCKF"
[ "$SHARED" = 1 ] || claim_rundirs /var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b

# pair NAME RTMO RGROUP RBIND SGROUP SBIND: receiver (timeout RTMO) in the
# background, then the sender; exit statuses in RC_R, RC_S
pair() {
	local name=$1 rtmo=$2 rgroup=$3 rbind=$4 sgroup=$5 sbind=$6 r
	rm -f "$SOCK"
	timeout -k 5 "$rtmo" sh "$RUN" "${CONF_R[@]}" "${SB[@]}" mckey -m "$rgroup" -b "$rbind" -C 10 \
		>"$WORK/$name.recv" 2>&1 &
	r=$!
	MULTI_PIDS="$r"
	# mckey's sender does not wait for receivers: start it once the
	# receiver has joined (its "receiving data transfers" line, printed
	# after the join event; line-buffered), else after DPV_MCKEY_WAIT s
	local i
	for i in $(seq 1 $((${DPV_MCKEY_WAIT:-20} * 10))); do
		grep -q "^receiving data transfers" "$WORK/$name.recv" 2>/dev/null && break
		kill -0 "$r" 2>/dev/null || break
		sleep 0.1
	done
	timeout -k 5 "$TMO" sh "$RUN" "${CONF_S[@]}" "${SB[@]}" mckey -m "$sgroup" -b "$sbind" -s -C 10 \
		>"$WORK/$name.send" 2>&1
	RC_S=$?
	wait "$r"; RC_R=$?
	MULTI_PIDS=""
}

show() {
	local side
	for side in recv send; do
		log "$1 $side:"; grep -v '^EAL' "$WORK/$1.$side" | tail -n 15
	done
}

# run NAME GROUP GID RBIND SBIND
run() {
	local name=$1 group=$2 gid=$3 side bad=0
	pair "$name" "$TMO" "$group" "$4" "$group" "$5"
	[ "$RC_R" = 0 ] || { fail "$name: receiver exit $RC_R"; bad=1; }
	[ "$RC_S" = 0 ] || { fail "$name: sender exit $RC_S"; bad=1; }
	for side in recv send; do
		grep -q "joined dgid: $gid " "$WORK/$name.$side" ||
			{ fail "$name: $side did not join $gid"; bad=1; }
		grep -q "^data transfers complete" "$WORK/$name.$side" ||
			{ fail "$name: $side: no 'data transfers complete'"; bad=1; }
		grep -q "^return status 0" "$WORK/$name.$side" ||
			{ fail "$name: $side: no 'return status 0'"; bad=1; }
	done
	[ "$bad" = 0 ] && log "$name: 10 messages to $group received" || show "$name"
}

run v4 230.0.2.1 "::ffff:230.0.2.1" 192.0.2.1 192.0.2.2
if [ "$SHARED" = 1 ]; then
	run port 230.0.2.3 "::ffff:230.0.2.3" 192.0.2.1 192.0.2.1
else
	run v6 ff0e::6470:1 "ff0e::6470:1" fd00:6470:7600::1 fd00:6470:7600::2
fi

# another group: nothing arrives
pair other "${DPV_MCKEY_OTHER_TMO:-8}" 230.0.2.1 192.0.2.1 230.0.2.9 192.0.2.2
[ "$RC_S" = 0 ] || fail "other: sender exit $RC_S"
if [ "$RC_R" = 0 ] || grep -q "^data transfers complete" "$WORK/other.recv"; then
	fail "other: the receiver of 230.0.2.1 completed with messages sent to 230.0.2.9"
	show other
else
	log "other: the receiver of 230.0.2.1 got nothing sent to 230.0.2.9 (stopped, exit $RC_R)"
fi

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
