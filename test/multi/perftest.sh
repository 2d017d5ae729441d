#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified perftest (no -R: the connection data goes over TCP) on
# the drop-in build/compat/libibverbs.so.1, two processes over net_memif:
# server with config/pair-a.json (no host), client with config/pair-b.json
# connecting to 127.0.0.1, both "-d dpv0 -x 1 -p <free port>":
#   ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat     -n 1000
#   ib_send_bw  ib_write_bw  ib_read_bw  ib_atomic_bw      -n 5000
# Asserts for each: both sides exit 0 (each bounded by timeout) and the
# client printed the result table line (and the server too, except for
# ib_read_lat and ib_atomic_lat, whose servers print none). The result lines
# are collected (with the table header) into SUMMARY and printed.
# Under test/shared/with_daemon.sh (DPV_SHARED_SOCK set) both sides are
# applications of that dpverbsd instead: server -d dpv0, client -d dpv1.
# With DPV_PERFTEST_RDMACM=1 (test perftest_rdmacm) both sides run with -R
# on the drop-in librdmacm.so.1 too: perftest connects its data-exchange QP
# and then its test QP with rdma_cm (IB CM on QP 1), the client to
# 192.0.2.1 -p <port> (pair-a's address; under a shared daemon dpv0's, the
# daemon's QP 1 handing each process its CM MADs); there is no TCP port to watch, so
# the client starts once the server printed "Waiting for client to connect"
# (just before its rdma_listen) plus DPV_RDMACM_WAIT seconds (default 1).
# perftest -R makes a second connection for the test QP right after a
# handshake on the first; its server listens for it only after that
# handshake, so on a loaded machine the client's REQ can come first and be
# rejected (reason 8, as Linux's CM does), and perftest 4.5's own retry then
# crashes (it reuses the ids it destroyed). A run that fails that way is
# started again, at most twice, with a WARN line each time.
#
# usage: perftest.sh [BUILD_DIR] [SUMMARY]   (default BUILD_DIR/perftest-summary.txt)
# env:   DPV_TIMEOUT per process (default 60 s), DPV_LAT_ITERS (1000),
#        DPV_BW_ITERS (5000), DPV_ONLY=regex of the tests to run,
#        DPV_PERFTEST_ARGS extra arguments for both sides, DPV_KEEP_LOGS=DIR,
#        DPV_PERFTEST_RDMACM=1 (-R, see above)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
SUMMARY_FILE=${2:-$BUILD/perftest-summary.txt}

TESTS="ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw ib_atomic_lat ib_atomic_bw"
for t in $TESTS; do
	command -v "$t" >/dev/null || skip "$t (Debian perftest) not installed"
done

LAT_ITERS=${DPV_LAT_ITERS:-1000}
BW_ITERS=${DPV_BW_ITERS:-5000}
TMO=${DPV_TIMEOUT:-60}
ONLY=${DPV_ONLY:-}
# shellcheck disable=SC2206
EXTRA=(${DPV_PERFTEST_ARGS:-})
SOCK=/tmp/dpverbs-pair.sock
RUNDIRS="/var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b"
LOCKF=/tmp/dpverbs-pair.lock
CONF_S=$SRC/config/pair-a.json CONF_C=$SRC/config/pair-b.json DEV_C=dpv0
if [ -n "${DPV_SHARED_SOCK:-}" ]; then
	SOCK=/nonexistent RUNDIRS="" LOCKF=$DPV_SHARED_TMP/perftest.lock
	CONF_S=$DPVERBS_CONFIG CONF_C=$DPVERBS_CONFIG DEV_C=dpv1
fi
RDMACM=${DPV_PERFTEST_RDMACM:-}
CLIENT_HOST=127.0.0.1
STDBUF=()
if [ -n "$RDMACM" ]; then
	[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
	EXTRA=(-R "${EXTRA[@]}")
	CLIENT_HOST=192.0.2.1
	# line-buffered stdout: the server's banner tells when it listens
	STDBUF=(stdbuf -oL)
fi
WORK=$(mktemp -d /tmp/dpv-multi-perftest.XXXXXX)
# a result row: "#bytes #iterations" then at least two more numbers
RESULT_RE='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'

cleanup() {
	kill_own
	rm -f "$SOCK"
	if [ -n "${DPV_KEEP_LOGS:-}" ]; then
		mkdir -p "$DPV_KEEP_LOGS" && cp "$WORK"/*.server "$WORK"/*.client "$DPV_KEEP_LOGS"/ 2>/dev/null
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

exec 9>"$LOCKF"
flock -w 300 9 || { log "could not get $LOCKF within 300 s"; exit 1; }

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
[ -e "$SOCK" ] && { log "WARN: removing stale $SOCK"; rm -f "$SOCK"; }

mkdir -p "$(dirname "$SUMMARY_FILE")" || exit 1
{
	echo "# dpverbs perftest summary, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(uname -n)"
	where="memif pair (config/pair-a.json server, pair-b.json client)"
	[ -n "$RDMACM" ] && where="$where, rdma_cm (-R, client to 192.0.2.1)"
	[ -n "${DPV_SHARED_SOCK:-}" ] && where="shared mode (one dpverbsd, server dpv0, client dpv1)"
	echo "# $where, -x 1," \
		"lat -n $LAT_ITERS, bw -n $BW_ITERS${EXTRA[*]:+, extra: ${EXTRA[*]}}"
} >"$SUMMARY_FILE.tmp"
TIMES=""

# server_prints_result TEST: does perftest print the result row on the
# server side too? (perftest 4.5: ib_read_lat and ib_atomic_lat servers are
# passive and print only the banner; the others print the row)
server_prints_result() {
	case "$1" in
	ib_read_lat|ib_atomic_lat) return 1 ;;
	*) return 0 ;;
	esac
}

# server_ready PID PORT LOG: the server listens (TCP port, or with -R its
# "Waiting for client to connect" banner + DPV_RDMACM_WAIT s); 0 if so.
server_ready() {
	local i
	[ -z "$RDMACM" ] && { wait_listen "$1" "$2"; return; }
	for i in $(seq 1 300); do
		kill -0 "$1" 2>/dev/null || return 1
		if grep -q "Waiting for client to connect" "$3"; then
			sleep "${DPV_RDMACM_WAIT:-1}"
			kill -0 "$1" 2>/dev/null
			return
		fi
		sleep 0.1
	done
	return 1
}

run_test() {
	local t=$1 n port srv cli rc_s rc_c t0 dt nfail=$MULTI_FAIL
	local tool; tool=$(command -v "$t")
	if [ -n "$ONLY" ] && ! [[ $t =~ $ONLY ]]; then
		return
	fi
	MULTI_FAIL=0
	case "$t" in
	*_lat) n=$LAT_ITERS ;;
	*) n=$BW_ITERS ;;
	esac
	port=$(pick_port)
	log "=== $t -d dpv0 -x 1 -n $n ${EXTRA[*]} ($([ -n "$RDMACM" ] && echo rdma_cm || echo tcp) port $port)"
	t0=$(date +%s.%N)
	DPVERBS_CONFIG=$CONF_S LD_LIBRARY_PATH=$COMPAT \
		timeout -k 5 "$TMO" "${STDBUF[@]}" "$tool" -d dpv0 -x 1 -n "$n" -p "$port" "${EXTRA[@]}" \
		>"$WORK/$t.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$MULTI_PIDS $srv"
	if ! server_ready "$srv" "$port" "$WORK/$t.server"; then
		fail "$t: server did not start listening"
		kill_own
	else
		DPVERBS_CONFIG=$CONF_C LD_LIBRARY_PATH=$COMPAT \
			timeout -k 5 "$TMO" "${STDBUF[@]}" "$tool" -d "$DEV_C" -x 1 -n "$n" -p "$port" "${EXTRA[@]}" \
			"$CLIENT_HOST" >"$WORK/$t.client" 2>&1 &
		cli=$!
		MULTI_PIDS="$MULTI_PIDS $cli"
		wait "$cli"; rc_c=$?
		if [ "$rc_c" != 0 ]; then
			# a server whose client failed early may wait forever
			local i
			for i in $(seq 1 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
			if kill -0 "$srv" 2>/dev/null; then
				log "client failed ($rc_c), server still running: stopping it"
				kill -TERM "$srv" 2>/dev/null
			fi
		fi
		wait "$srv"; rc_s=$?
		MULTI_PIDS=""
		# perftest -R's listen race (see the header): once, start again
		if [ -n "$RDMACM" ] && [ "$RETRIED" -lt 2 ] && [ "$rc_c" != 0 ] &&
			perftest_rejected "$WORK/$t.client"; then
			log "WARN: $t: the client was rejected (8: nobody listened yet," \
				"perftest's listen race, lib.sh perftest_rejected): running $t again"
			for d in $RUNDIRS; do rm -rf "$d"; done
			[ -e "$SOCK" ] && rm -f "$SOCK"
			MULTI_FAIL=$nfail
			RETRY=1
			return
		fi
		[ "$rc_s" = 124 ] && fail "$t: server timed out after $TMO s"
		[ "$rc_c" = 124 ] && fail "$t: client timed out after $TMO s"
		[ "$rc_s" = 0 ] || fail "$t: server exited with $rc_s"
		[ "$rc_c" = 0 ] || fail "$t: client exited with $rc_c"
		grep -Eq "$RESULT_RE" "$WORK/$t.client" || fail "$t: client printed no result line"
		if server_prints_result "$t"; then
			grep -Eq "$RESULT_RE" "$WORK/$t.server" || fail "$t: server printed no result line"
		fi
	fi
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	for d in $RUNDIRS; do
		if [ -e "$d" ]; then
			fail "$t: $d still exists after both processes exited"
			rm -rf "$d"
		fi
	done
	[ -e "$SOCK" ] && rm -f "$SOCK"
	if [ "$MULTI_FAIL" != 0 ]; then
		sed "s/^/    [server] /" "$WORK/$t.server"
		sed "s/^/    [client] /" "$WORK/$t.client" 2>/dev/null
		echo "$t: FAILED" >>"$SUMMARY_FILE.tmp"
	else
		{
			echo "$t:"
			grep -E '^ *#bytes' "$WORK/$t.client" | head -1 | sed 's/^/  client /'
			grep -E "$RESULT_RE" "$WORK/$t.client" | sed 's/^/  client /'
			if server_prints_result "$t"; then
				grep -E "$RESULT_RE" "$WORK/$t.server" | sed 's/^/  server /'
			fi
		} >>"$SUMMARY_FILE.tmp"
	fi
	log "--- $t: $([ "$MULTI_FAIL" = 0 ] && echo ok || echo FAILED), $dt s"
	TIMES="$TIMES$(printf '%-14s %-6s %6.2f s' "$t" "$([ "$MULTI_FAIL" = 0 ] && echo ok || echo FAILED)" "$dt")"$'\n'
	[ "$nfail" != 0 ] && MULTI_FAIL=1
}

T0=$(date +%s.%N)
for t in $TESTS; do
	RETRY=0 RETRIED=0
	run_test "$t"
	while [ "$RETRY" = 1 ]; do
		RETRY=0 RETRIED=$((RETRIED + 1))
		run_test "$t"
	done
done
{
	echo "# durations (both processes, incl. EAL start and exit):"
	printf '%s' "$TIMES" | sed 's/^/#   /'
	echo "# total $(echo "$(date +%s.%N) - $T0" | bc) s"
} >>"$SUMMARY_FILE.tmp"
mv "$SUMMARY_FILE.tmp" "$SUMMARY_FILE"
log "summary ($SUMMARY_FILE):"
cat "$SUMMARY_FILE"

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
