# SPDX-License-Identifier: BSD-3-Clause
# Shared helpers of the test/multi scripts (sourced, not run).
#
# The scripts only ever signal PIDs they started themselves (recorded in
# MULTI_PIDS), never by name.

MULTI_PIDS=""
MULTI_FAIL=0

log() { printf '%s: %s\n' "${0##*/}" "$*"; }
fail() { log "FAIL: $*"; MULTI_FAIL=1; }
skip() { log "SKIP: $*"; exit 77; }

# resolve_build DIR: sets BUILD (absolute), COMPAT, SRC (project root).
resolve_build() {
	SRC=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
	BUILD=${1:-$SRC/build}
	[ -d "$BUILD" ] || { log "build dir '$BUILD' not found"; exit 1; }
	BUILD=$(cd "$BUILD" && pwd)
	COMPAT=$BUILD/compat
	if [ ! -e "$COMPAT/libibverbs.so.1" ]; then
		log "$COMPAT/libibverbs.so.1 not built"
		exit 1
	fi
	PINGPONG=$(command -v ibv_ud_pingpong || true)
	[ -n "$PINGPONG" ] || skip "ibv_ud_pingpong (Debian ibverbs-utils) not installed"
}

# kill_own: TERM, then KILL, every PID we started that is still alive.
kill_own() {
	local p tree
	# each PID with every process below it: a function started with & is a
	# subshell, and killing it alone leaves its children running (a perftest
	# server that outlived its run answered the next runs' REQs)
	# shellcheck disable=SC2086
	tree=$(trees $MULTI_PIDS)
	for p in $tree; do
		kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null
	done
	sleep 0.5
	for p in $tree; do
		kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
	done
	for p in $MULTI_PIDS; do
		{ wait "$p"; } 2>/dev/null
	done
	MULTI_PIDS=""
}

# kill_tree SIG PID...: SIG to each PID and every process below it
kill_tree() {
	local sig=$1
	shift
	# shellcheck disable=SC2046
	kill -"$sig" $(trees "$@") 2>/dev/null
}

# trees PID...: each PID and every process below it (descendants)
trees() {
	local p
	for p in "$@"; do descendants "$p"; done
}

# pick_port: a TCP port for the pingpong exchange that nothing listens on
# (in the current network namespace, or in namespace $1 if given).
pick_port() {
	local ns=${1:-} p i
	for i in 0 1 2 3 4 5 6 7 8 9; do
		p=$(( 20000 + ($$ * 7 + i * 131) % 20000 ))
		if [ -n "$ns" ]; then
			ip netns exec "$ns" ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && continue
		else
			ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && continue
		fi
		echo "$p"
		return 0
	done
	echo 18515
}

# wait_listen PID PORT [NS]: wait (max ~30 s) until PORT is listened on, or
# PID died. Returns 0 if listening.
wait_listen() {
	local pid=$1 port=$2 ns=${3:-} i
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || return 1
		if [ -n "$ns" ]; then
			ip netns exec "$ns" ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && return 0
		else
			ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && return 0
		fi
		sleep 0.1
	done
	return 1
}

# check_output NAME FILE RC ITERS: asserts exit code 0 and the
# "<ITERS> iters in" line; reports EAL/library error lines (as WARN).
check_output() {
	local name=$1 file=$2 rc=$3 iters=$4
	if [ "$rc" != 0 ]; then
		fail "$name exited with $rc"
	fi
	if ! grep -Eq "^$iters iters in [0-9.]+ seconds = [0-9.]+ usec/iter" "$file"; then
		fail "$name did not print '$iters iters in ...'"
	fi
	if grep -Eiq 'error|fail|couldn' "$file"; then
		log "WARN: $name printed error lines:"
		grep -Ei 'error|fail|couldn' "$file" | sed 's/^/    /'
	fi
	sed "s/^/    [$name] /" "$file"
}

# ---- veth topology (ud_pingpong_veth.sh, wire_capture.sh) ----
#
#   netns NS_A                                   netns NS_B
#   dpv-veth-a  <----------- veth ------------>  dpv-veth-b
#   kernel   198.51.100.11/24 (TCP exchange)     kernel   198.51.100.12/24
#   dpverbs  198.51.100.1 (net_af_packet)        dpverbs  198.51.100.2
#
# The interfaces are created directly inside the namespaces, so their names
# never exist in the root namespace. IPv6 is disabled on them: the kernel's
# link-local address would be the same as dpverbs' GID 0 (both derive from
# the interface MAC), and DAD/RS/MLD would only add noise. With forwarding
# off (the namespace default) the kernel drops the RoCE packets addressed to
# .1/.2 silently (no ICMP), and it does not answer ARP for them (they are
# not its addresses).
NS_A=dpvA$$
NS_B=dpvB$$
VETH_UP=0

veth_setup() {
	if ! ip netns add "$NS_A" 2>"$WORK/netns.err"; then
		skip "cannot create network namespaces (ip netns add: $(cat "$WORK/netns.err"))"
	fi
	VETH_UP=1
	ip netns add "$NS_B" || return 1
	ip link add dpv-veth-a netns "$NS_A" mtu 1500 type veth \
		peer name dpv-veth-b netns "$NS_B" mtu 1500 || return 1
	local ns ifc addr
	for ns in "$NS_A:dpv-veth-a:198.51.100.11/24" "$NS_B:dpv-veth-b:198.51.100.12/24"; do
		IFS=: read -r ns ifc addr <<<"$ns"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 || return 1
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=0 || return 1
		ip -n "$ns" link set lo up || return 1
		ip -n "$ns" addr add "$addr" dev "$ifc" || return 1
		ip -n "$ns" link set "$ifc" up || return 1
		if [ -n "${DPV_VETH_TX_CSUM_OFF:-}" ]; then
			ip netns exec "$ns" ethtool -K "$ifc" tx off >/dev/null || return 1
		fi
	done
	# wait for carrier on both ends
	local i
	for i in $(seq 1 50); do
		ip -n "$NS_A" -br link show dpv-veth-a | grep -q LOWER_UP &&
			ip -n "$NS_B" -br link show dpv-veth-b | grep -q LOWER_UP && return 0
		sleep 0.1
	done
	return 1
}

# take_lock FILE: FILE's flock on fd 9 (waits at most 300 s) for the rest of
# the script (the pair and veth configs fix the memif socket and the EAL file
# prefixes, so their tests run one at a time); exits 1 without it.
take_lock() {
	exec 9>"$1"
	flock -w 300 9 || { log "could not get $1 within 300 s"; exit 1; }
}

# claim_rundirs [--stale] DIR...: exits 1 when a process has a file open in
# one of the DPDK runtime dirs DIR; with --stale removes the unused ones
# (left by an earlier crashed run).
claim_rundirs() {
	local d stale=0
	[ "${1:-}" = --stale ] && { stale=1; shift; }
	for d in "$@"; do
		[ -e "$d" ] || continue
		if ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q "/dpdk/${d##*/}/"; then
			log "$d is in use by another process"
			exit 1
		fi
		if [ "$stale" = 1 ]; then
			log "WARN: removing stale $d"
			rm -rf "$d"
		fi
	done
}

# veth_prepare: the veth lock, stale runtime dirs of $RUNDIRS removed, the
# namespaces and the veth pair up (veth_setup), or exit 1.
veth_prepare() {
	take_lock /tmp/dpverbs-veth.lock
	# shellcheck disable=SC2086
	claim_rundirs --stale $RUNDIRS
	veth_setup || { log "veth/namespace setup failed"; exit 1; }
}

# pair_prepare: for the scripts run over MODE=memif|veth: take_lock $LOCKF,
# claim_rundirs $RUNDIRS, a stale memif socket $SOCK removed; in veth mode
# the namespaces and the veth pair up. Sets NSX_S / NSX_C, the command
# prefix (array) that runs a process in the server's / the client's
# namespace (empty for memif).
pair_prepare() {
	take_lock "$LOCKF"
	# shellcheck disable=SC2086
	claim_rundirs $RUNDIRS
	if [ -n "$SOCK" ]; then rm -f "$SOCK"; fi
	NSX_S=(); NSX_C=()
	if [ "$MODE" = veth ]; then
		veth_setup || { log "veth/namespace setup failed"; exit 1; }
		NSX_S=(ip netns exec "$NS_A"); NSX_C=(ip netns exec "$NS_B")
	fi
}

# veth_capture NAME FILTER SECONDS: tshark on dpv-veth-a in namespace NS_A
# writes $WORK/NAME.pcap (capture FILTER, at most SECONDS; its output in
# $WORK/NAME.tshark); CAP_PID is its PID. Waits until it reports "Capturing
# on": 0, or 1 after printing its output. ($TSHARK, else tshark from PATH.)
veth_capture() {
	local i
	ip netns exec "$NS_A" "${TSHARK:-tshark}" -q -n -i dpv-veth-a -f "$2" -B 64 \
		-a duration:"$3" -F pcap -w "$WORK/$1.pcap" >"$WORK/$1.tshark" 2>&1 &
	CAP_PID=$!
	for i in $(seq 1 200); do
		grep -q "Capturing on" "$WORK/$1.tshark" && return 0
		kill -0 "$CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	log "tshark ($1) did not start:"
	sed 's/^/    /' "$WORK/$1.tshark"
	return 1
}

veth_teardown() {
	[ "$VETH_UP" = 1 ] || return 0
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	VETH_UP=0
	local i
	for i in $(seq 1 30); do
		ip link show dpv-veth-a >/dev/null 2>&1 || ip link show dpv-veth-b >/dev/null 2>&1 || break
		sleep 0.1
	done
	if ip netns list | grep -Eq "^($NS_A|$NS_B)( |$)"; then
		log "WARN: namespace $NS_A/$NS_B still listed after ip netns del"
	fi
}

# veth_pingpong NAME TMO ITERS ARGS...: one ibv_ud_pingpong run, server in
# NS_A (veth-a.json), client in NS_B (veth-b.json) connecting to .11.
# Output in $WORK/NAME.server / .client; sets RC_S, RC_C.
veth_pingpong() {
	local name=$1 tmo=$2 iters=$3; shift 3
	local port srv cli
	port=$(pick_port "$NS_A")
	RC_S=99; RC_C=99
	log "=== $name: ibv_ud_pingpong -d dpv0 $* -n $iters over veth (tcp port $port)"
	timeout -k 5 "$tmo" ip netns exec "$NS_A" env DPVERBS_CONFIG="$SRC/config/veth-a.json" \
		LD_LIBRARY_PATH="$COMPAT" "$PINGPONG" -d dpv0 "$@" -n "$iters" -p "$port" \
		>"$WORK/$name.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$MULTI_PIDS $srv"
	if ! wait_listen "$srv" "$port" "$NS_A"; then
		fail "$name: server did not listen on tcp port $port"
		kill_own
		sed "s/^/    [server] /" "$WORK/$name.server"
		return 1
	fi
	timeout -k 5 "$tmo" ip netns exec "$NS_B" env DPVERBS_CONFIG="$SRC/config/veth-b.json" \
		LD_LIBRARY_PATH="$COMPAT" "$PINGPONG" -d dpv0 "$@" -n "$iters" -p "$port" 198.51.100.11 \
		>"$WORK/$name.client" 2>&1 &
	cli=$!
	MULTI_PIDS="$MULTI_PIDS $cli"
	wait "$cli"; RC_C=$?
	wait "$srv"; RC_S=$?
	MULTI_PIDS=""
	[ "$RC_C" = 124 ] && log "client timed out after $tmo s"
	[ "$RC_S" = 124 ] && log "server timed out after $tmo s"
	return 0
}

# EAL runtime dirs of the veth configs must be gone after the processes exit.
check_rundirs_gone() {
	local d
	for d in "$@"; do
		if [ -e "$d" ]; then
			fail "$d still exists after both processes exited"
			rm -rf "$d"
		fi
	done
}

# rping_check NAME FILE PREFIX COUNT [SIZE]: FILE holds exactly COUNT lines
# "PREFIX: rdma-ping-N: <data>" for N = 0..COUNT-1, in order, each with the
# data rping (rdma-core librdmacm/examples/rping.c) puts in ping N: after
# "rdma-ping-N: ", ASCII 'A'..'z' cyclically from 'A' + N mod 58, the
# whole string SIZE-1 characters long (SIZE: rping -S, default 64). PREFIX
# is "ping data" (client) or "server ping data". Fails (MULTI_FAIL) unless.
rping_check() {
	local name=$1 file=$2 prefix=$3 count=$4 size=${5:-64} bad
	bad=$(grep "^$prefix: " "$file" | awk -v n="$count" -v size="$size" -v pfx="$prefix: " '
		{
			want = sprintf("rdma-ping-%d: ", NR - 1)
			c = 65 + (NR - 1) % 58
			while (length(want) < size - 1) {
				want = want sprintf("%c", c)
				c = c == 122 ? 65 : c + 1
			}
			if (substr($0, length(pfx) + 1) != want) {
				print "line " NR ": " $0 " (expected " want ")"
				bad = 1
				exit
			}
		}
		END { if (!bad && NR != n) print NR " lines, expected " n }')
	if [ -n "$bad" ]; then
		fail "$name: rping data: $bad"
		return 1
	fi
	return 0
}

# descendants PID: PID and every process below it
descendants() {
	local c
	echo "$1"
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		descendants "$c"
	done
}

# perftest_rejected FILE: true when perftest -R's client (output in FILE)
# was rejected, on its first connection ("Unexpected CM event bl blka 8":
# 8 is the event, RDMA_CM_EVENT_REJECTED, not the REJ reason; the server
# prints "Waiting for client to connect" just before its rdma_bind_addr/
# rdma_listen) or on its second ("RDMA_CM_EVENT_REJECTED; error: 8": REJ
# reason 8, no listener: its server listens for the test QP only after the
# handshake). The second is perftest's listen race, as on Linux's CM; the
# first is one too when the client came first, but its reason is not
# printed (rdmacm_veth lists the MADs when it happens). A loaded machine
# loses such races; the callers run such a pair again.
perftest_rejected() {
	grep -Eq "Unexpected CM event bl blka 8|RDMA_CM_EVENT_REJECTED; error: 8" "$1"
}

# wait_cm_thread PID [TENTHS]: wait (default 300 x 0.1 s) until PID or a
# process below it (timeout, ip netns exec, env...) runs dpverbs' CM thread
# ("dpv-cm": the drop-in librdmacm opened its CM, e.g. rping -s listens).
# 0 when it does, 1 if PID died or the time ran out.
wait_cm_thread() {
	local root=$1 i p
	for i in $(seq 1 "${2:-300}"); do
		kill -0 "$root" 2>/dev/null || return 1
		for p in $(descendants "$root"); do
			grep -qx dpv-cm /proc/"$p"/task/*/comm 2>/dev/null && return 0
		done
		sleep 0.1
	done
	return 1
}

# memif_cleanup: kill_own, the memif socket $SOCK and $WORK removed.
memif_cleanup() {
	kill_own
	rm -f "$SOCK"
	rm -rf "$WORK"
}

# on_exit FUNC: FUNC runs at exit; SIGINT/SIGTERM exit 130 (FUNC runs then).
on_exit() {
	# shellcheck disable=SC2064
	trap "$1" EXIT
	trap 'exit 130' INT TERM
}

# pair_mode_vars memif|veth: SOCK, LOCKF, CONF_S, CONF_C, RUNDIRS of the
# memif pair (pair-a/b.json, server 192.0.2.1) or of the veth pair
# (veth-a/b.json in NS_A/NS_B, server 198.51.100.1).
pair_mode_vars() {
	if [ "$1" = memif ]; then
		SOCK=/tmp/dpverbs-pair.sock LOCKF=/tmp/dpverbs-pair.lock
		CONF_S=$SRC/config/pair-a.json CONF_C=$SRC/config/pair-b.json
		RUNDIRS="/var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b"
	else
		SOCK="" LOCKF=/tmp/dpverbs-veth.lock
		CONF_S=$SRC/config/veth-a.json CONF_C=$SRC/config/veth-b.json
		RUNDIRS="/var/run/dpdk/dpv-veth-a /var/run/dpdk/dpv-veth-b"
	fi
}

# pair_cleanup: kill_own, the namespaces (veth), the memif socket, $WORK.
pair_cleanup() {
	kill_own
	veth_teardown
	if [ -n "$SOCK" ]; then rm -f "$SOCK"; fi
	rm -rf "$WORK"
}
