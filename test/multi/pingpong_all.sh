#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two processes, Debian's unmodified connected-mode pingpongs on the drop-in
# build/compat/libibverbs.so.1:
#   ibv_rc_pingpong, ibv_uc_pingpong, ibv_srq_pingpong  -d dpv0 -g 1 -c
#       with -s 1 and -s 4096 (-n 1000) and -s 1048576 (-n 50)
#   ibv_xsrq_pingpong -d dpv0 -g 1     (opens /tmp/xrc_domain)
#   ibv_rc_pingpong -d dpv0 -g 1 -t    (completion timestamps: an extended
#       CQ with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, its next SEND posted
#       between ibv_start_poll and ibv_end_poll)
# over one transport:
#   memif  config/pair-a.json (memif server, TCP server) and pair-b.json
#          (client, connects to 127.0.0.1), same lock as ud_pingpong_memif.sh
#   veth   config/veth-a.json / veth-b.json, net_af_packet on the veth pair
#          between two network namespaces created here (lib.sh veth_setup),
#          client connects to 198.51.100.11; same lock as ud_pingpong_veth.sh
#   shared both processes are applications of one dpverbsd (shared mode),
#          under test/shared/with_daemon.sh (DPVERBS_CONFIG is its
#          configuration): server on dpv0, client on dpv1, back to back
# Every run: both processes bounded by timeout, both must exit 0 and print
# "<N> iters in ... usec/iter" (ibv_xsrq_pingpong: "success"), no
# "invalid data" (-c validation), and the EAL runtime dirs are gone after.
#
# usage: pingpong_all.sh memif|veth|shared [BUILD_DIR]
# env:   DPV_TIMEOUT per process (default 60 s), DPV_ITERS (1000),
#        DPV_ITERS_BIG (for sizes >= 64 KiB, 50), DPV_SIZES ("1 4096 1048576"),
#        DPV_ONLY=regex to run only the matching cases (names like rc-s4096,
#        uc-s1048576, xsrq), DPV_SKIP=regex to leave cases out,
#        DPV_KEEP_LOGS=DIR to keep the outputs
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

TRANSPORT=${1:-}
case "$TRANSPORT" in
memif|veth|shared) ;;
*) echo "usage: ${0##*/} memif|veth|shared [BUILD_DIR]" >&2; exit 2 ;;
esac
resolve_build "${2:-}"
for t in ibv_rc_pingpong ibv_uc_pingpong ibv_srq_pingpong ibv_xsrq_pingpong; do
	command -v "$t" >/dev/null || skip "$t (Debian ibverbs-utils) not installed"
done

ITERS=${DPV_ITERS:-1000}
ITERS_BIG=${DPV_ITERS_BIG:-50}
TMO=${DPV_TIMEOUT:-60}
ONLY=${DPV_ONLY:-}
SKIP=${DPV_SKIP:-}
SIZES=${DPV_SIZES:-1 4096 1048576}
SOCK=/tmp/dpverbs-pair.sock
if [ "$TRANSPORT" = memif ]; then
	RUNDIRS="/var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b"
	LOCK=/tmp/dpverbs-pair.lock
elif [ "$TRANSPORT" = shared ]; then
	[ -n "${DPV_SHARED_SOCK:-}" ] || { log "run under test/shared/with_daemon.sh"; exit 2; }
	RUNDIRS="" # applications have no EAL in shared mode
	LOCK=$DPV_SHARED_TMP/pingpong.lock
else
	command -v ip >/dev/null || skip "iproute2 (ip) not installed"
	RUNDIRS="/var/run/dpdk/dpv-veth-a /var/run/dpdk/dpv-veth-b"
	LOCK=/tmp/dpverbs-veth.lock
fi
WORK=$(mktemp -d "/tmp/dpv-multi-pp-$TRANSPORT.XXXXXX")
SUMMARY=""

cleanup() {
	kill_own
	[ "$TRANSPORT" = veth ] && veth_teardown
	[ "$TRANSPORT" = memif ] && rm -f "$SOCK"
	if [ -n "${DPV_KEEP_LOGS:-}" ]; then
		mkdir -p "$DPV_KEEP_LOGS" && cp "$WORK"/*.server "$WORK"/*.client "$DPV_KEEP_LOGS"/ 2>/dev/null
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The configs fix the memif socket / EAL file prefixes: serialize with the
# other scripts using the same configs.
exec 9>"$LOCK"
flock -w 300 9 || { log "could not get $LOCK within 300 s"; exit 1; }

for d in $RUNDIRS; do
	if [ -e "$d" ]; then
		if ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q "/dpdk/${d##*/}/"; then
			log "$d is in use by another process"
			exit 1
		fi
		log "WARN: removing stale $d (left by an earlier crashed run)"
		rm -rf "$d"
	fi
done
if [ "$TRANSPORT" = memif ] && [ -e "$SOCK" ]; then
	log "WARN: removing stale $SOCK"
	rm -f "$SOCK"
fi

if [ "$TRANSPORT" = veth ]; then
	veth_setup || { log "veth/namespace setup failed"; exit 1; }
	log "namespaces $NS_A, $NS_B; veth dpv-veth-a <-> dpv-veth-b up, MTU 1500"
fi

# start_side server|client PORT TOOL ARGS...: starts one side in the
# background (bounded by timeout), output in $WORK/$NAME.<side>; sets LAST_PID.
start_side() {
	local side=$1 port=$2 tool=$3; shift 3
	local out=$WORK/$NAME.$side
	if [ "$TRANSPORT" = memif ]; then
		local cfg=$SRC/config/pair-a.json host=
		[ "$side" = client ] && { cfg=$SRC/config/pair-b.json; host=127.0.0.1; }
		DPVERBS_CONFIG=$cfg LD_LIBRARY_PATH=$COMPAT \
			timeout -k 5 "$TMO" "$tool" "$@" -p "$port" $host >"$out" 2>&1 &
	elif [ "$TRANSPORT" = shared ]; then
		local host= a=("$@")
		if [ "$side" = client ]; then
			host=127.0.0.1
			a=("${a[@]/#dpv0/dpv1}") # the other port of the daemon
		fi
		LD_LIBRARY_PATH=$COMPAT timeout -k 5 "$TMO" "$tool" "${a[@]}" -p "$port" $host >"$out" 2>&1 &
	else
		local ns=$NS_A cfg=$SRC/config/veth-a.json host=
		[ "$side" = client ] && { ns=$NS_B; cfg=$SRC/config/veth-b.json; host=198.51.100.11; }
		timeout -k 5 "$TMO" ip netns exec "$ns" env DPVERBS_CONFIG="$cfg" \
			LD_LIBRARY_PATH="$COMPAT" "$tool" "$@" -p "$port" $host >"$out" 2>&1 &
	fi
	LAST_PID=$!
	MULTI_PIDS="$MULTI_PIDS $LAST_PID"
}

# check_side SIDE RC EXPECT_REGEX
check_side() {
	local side=$1 rc=$2 expect=$3
	local file=$WORK/$NAME.$side
	[ "$rc" = 124 ] && fail "$NAME: $side timed out after $TMO s"
	[ "$rc" != 0 ] && fail "$NAME: $side exited with $rc"
	grep -Eq "$expect" "$file" || fail "$NAME: $side did not print /$expect/"
	grep -q "invalid data" "$file" && fail "$NAME: $side reported invalid data (-c)"
	if grep -Eiq 'error|fail|couldn|invalid' "$file"; then
		log "WARN: $NAME $side printed error lines:"
		grep -Ei 'error|fail|couldn|invalid' "$file" | sed 's/^/    /'
	fi
}

# run_case NAME EXPECT_REGEX TOOL ARGS...
run_case() {
	NAME=$1
	local expect=$2 tool=$3; shift 3
	local port srv cli rc_s rc_c t0 dt nfail=$MULTI_FAIL d lsns=
	if [ -n "$ONLY" ] && ! [[ $NAME =~ $ONLY ]]; then
		return
	fi
	if [ -n "$SKIP" ] && [[ $NAME =~ $SKIP ]]; then
		log "=== $NAME: skipped (DPV_SKIP)"
		SUMMARY="$SUMMARY$(printf '%-14s %-6s' "$NAME" "skip")"$'\n'
		return
	fi
	MULTI_FAIL=0
	[ "$TRANSPORT" = veth ] && lsns=$NS_A
	port=$(pick_port $lsns)
	log "=== $NAME: ${tool##*/} $* over $TRANSPORT (tcp port $port)"
	t0=$(date +%s.%N)
	start_side server "$port" "$tool" "$@"; srv=$LAST_PID
	if ! wait_listen "$srv" "$port" $lsns; then
		fail "$NAME: server did not listen on tcp port $port"
		kill_own
		sed "s/^/    [server] /" "$WORK/$NAME.server"
		MULTI_FAIL=1
	else
		start_side client "$port" "$tool" "$@"; cli=$LAST_PID
		wait "$cli"; rc_c=$?
		if [ "$rc_c" != 0 ]; then
			# the server may wait forever for a client that failed early
			local i
			for i in $(seq 1 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
			kill -0 "$srv" 2>/dev/null && log "client failed ($rc_c), server still running: killing it"
			kill -0 "$srv" 2>/dev/null && kill -TERM "$srv" 2>/dev/null
		fi
		wait "$srv"; rc_s=$?
		MULTI_PIDS=""
		check_side server "$rc_s" "$expect"
		check_side client "$rc_c" "$expect"
	fi
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	for d in $RUNDIRS; do
		if [ -e "$d" ]; then
			fail "$NAME: $d still exists after both processes exited"
			rm -rf "$d"
		fi
	done
	if [ "$TRANSPORT" = memif ] && [ -e "$SOCK" ]; then
		log "note: $SOCK left behind by the memif server; removing it"
		rm -f "$SOCK"
	fi
	local res="ok"
	if [ "$MULTI_FAIL" != 0 ]; then
		res="FAILED"
		sed "s/^/    [server] /" "$WORK/$NAME.server"
		sed "s/^/    [client] /" "$WORK/$NAME.client" 2>/dev/null
	else
		grep -E "$expect|Mbit/sec" "$WORK/$NAME.client" | sed "s/^/    [client] /"
	fi
	log "--- $NAME: $res, $dt s"
	SUMMARY="$SUMMARY$(printf '%-14s %-6s %6.2f s' "$NAME" "$res" "$dt")"$'\n'
	[ "$nfail" != 0 ] && MULTI_FAIL=1
}

T0=$(date +%s.%N)
for tp in rc uc srq; do
	for sz in $SIZES; do
		n=$ITERS
		[ "$sz" -ge 65536 ] && n=$ITERS_BIG
		run_case "$tp-s$sz" "^$n iters in [0-9.]+ seconds = [0-9.]+ usec/iter" \
			"$(command -v ibv_${tp}_pingpong)" -d dpv0 -g 1 -c -s "$sz" -n "$n"
	done
done
# xsrq: -n is per client (default 5); -c would be the number of clients
run_case xsrq '^success$' "$(command -v ibv_xsrq_pingpong)" -d dpv0 -g 1
run_case rc-ts '^Average receive completion clock cycles = [0-9.]+$' "$(command -v ibv_rc_pingpong)" \
	-d dpv0 -g 1 -t -n "$ITERS"
# shared mode: UD too (the other transports have test/multi/ud_pingpong_*.sh)
if [ "$TRANSPORT" = shared ] && command -v ibv_ud_pingpong >/dev/null; then
	run_case ud-s512 "^$ITERS iters in [0-9.]+ seconds = [0-9.]+ usec/iter" \
		"$(command -v ibv_ud_pingpong)" -d dpv0 -g 1 -c -s 512 -n "$ITERS"
fi

log "summary ($TRANSPORT, total $(echo "$(date +%s.%N) - $T0" | bc) s):"
printf '%s' "$SUMMARY" | sed 's/^/    /'
if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
