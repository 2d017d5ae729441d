#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified libfabric 1.17 (libfabric-bin's fi_pingpong and
# fi_info, verbs provider) on the drop-in libibverbs.so.1 + librdmacm.so.1,
# two processes. libfabric's verbs provider takes its addresses from
# getifaddrs() (an interface whose address rdma_bind_addr accepts),
# connects with rdma_cm, and opens its TCP control channel (-B/-P port) to
# the server's address: each process runs as a host of its own whose port
# address is a kernel interface's, with nothing else made for it:
#
#   memif: the ports of config/pair-a.json (192.0.2.1, server) and
#          pair-b.json (192.0.2.2) over the memif pair (a socket file both
#          network namespaces see), each with "kernel_iface": "dpvk0" (the
#          exception path: the kernel holds the port's address, and TCP to
#          it goes over the memif pair too), each served by a dpverbsd of
#          its namespace ("mode": "shared"), which keeps the interface for
#          the whole test: fi_pingpong's client opens its TCP channel before
#          it touches verbs, when an embedded process would have made no
#          interface yet;
#   hosts: two hosts of dpverbs-hosts (network namespaces on a bridge,
#          198.51.100.1 and .2 on eth0), dpverbs on eth0 through AF_XDP
#          beside the kernel, which owns the addresses.
#
# CONF is the shipped configuration plus "limits": {"max_cqe": 262144}
# (ofi_rxm, the rdm endpoint, opens its MSG CQ with (rx + tx size) x
# FI_UNIVERSE_SIZE (256) = 262144 entries, above dpverbs' default 65536)
# and, for memif, the exception path.
# Asserts:
#   1. fi_info -p verbs (server side) lists an FI_EP_MSG endpoint of domain
#      dpv0 with source address fi_sockaddr_in://<port address>:0;
#   2. fi_pingpong -p verbs -e msg -I 100 (sizes 64 B .. 1 MiB): both sides
#      exit 0 and print the six result rows "=100"; the server logged (at
#      FI_LOG_LEVEL=info) that it listens on the port's address;
#   3. the same with -e rdm (verbs;ofi_rxm);
#   4. -e dgram (verbs UD): the three rows 64 B, 256 B, 1 KiB (what fits the
#      path MTU).
#
# usage: fabric.sh memif|hosts [BUILD_DIR]   env: DPV_TIMEOUT per process (60 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
MODE=${1:-}
case "$MODE" in memif|hosts) ;; *) echo "usage: $0 memif|hosts [BUILD_DIR]" >&2; exit 2 ;; esac
resolve_build "${2:-}"
command -v fi_pingpong >/dev/null || skip "fi_pingpong (Debian libfabric-bin) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
[ -x "$BUILD/apps/dpv_sysfs/dpv_sysfs" ] || skip "$BUILD/apps/dpv_sysfs/dpv_sysfs not built"
RUN="$BUILD/apps/dpverbs-run"
export DPVERBS_DROPIN=$COMPAT
unset DPVERBS_CONFIG FI_PROVIDER FI_LOG_LEVEL
TMO=${DPV_TIMEOUT:-60}
WORK=$(mktemp -d /tmp/dpv-multi-fabric.XXXXXX)
HOSTS=$BUILD/apps/dpverbs-hosts
HNAME=fab$(( $$ % 100000 ))
if [ "$MODE" = memif ]; then
	NS_A=dpvFa$$ NS_B=dpvFb$$ SOCK=/tmp/dpverbs-pair.sock LOCKF=/tmp/dpverbs-pair.lock
	ADDR_S=192.0.2.1 RUNDIRS="/var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b"
else
	[ -x "$HOSTS" ] || skip "$HOSTS not built"
	export DPVERBS_HOSTS_DIR=$WORK/hosts
	NS_A=$HNAME-h1 NS_B=$HNAME-h2 SOCK="" ADDR_S=198.51.100.1
fi
NS_UP=0
cleanup() {
	kill_own
	if [ "$MODE" = hosts ] && [ "$NS_UP" = 1 ]; then
		"$HOSTS" down --name "$HNAME" >/dev/null 2>&1
	elif [ "$NS_UP" = 1 ]; then
		ip netns del "$NS_A" 2>/dev/null
		ip netns del "$NS_B" 2>/dev/null
	fi
	[ -n "$SOCK" ] && rm -f "$SOCK"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# conf IN OUT [SOCKET]: IN plus max_cqe (and, given SOCKET, the exception
# path and shared mode on dpverbsd's socket SOCKET)
conf() {
	python3 - "$1" "$2" "${3:-}" <<'EOF' || exit 1
import json, sys
c = json.load(open(sys.argv[1]))
c.setdefault("limits", {})["max_cqe"] = 262144
if sys.argv[3]:
    c["ports"][0]["kernel_iface"] = "dpvk0"
    c["mode"] = "shared"
    c["shared"] = {"socket": sys.argv[3]}
json.dump(c, open(sys.argv[2], "w"), indent=2)
EOF
}

# daemon SIDE NS: the side's dpverbsd, until its socket and dpvk0 are there
daemon() {
	local i
	ip netns exec "$2" "$BUILD/apps/dpverbsd/dpverbsd" "$WORK/$1.json" >"$WORK/dpverbsd-$1.log" 2>&1 &
	MULTI_PIDS="$MULTI_PIDS $!"
	for i in $(seq 1 150); do
		[ -S "$WORK/$1.sock" ] && ip -n "$2" -4 addr show dev dpvk0 2>/dev/null | grep -q inet && return 0
		sleep 0.1
	done
	log "dpverbsd of side $1 did not start:"
	sed 's/^/    /' "$WORK/dpverbsd-$1.log"
	exit 1
}

if [ "$MODE" = memif ]; then
	conf "$SRC/config/pair-a.json" "$WORK/a.json" "$WORK/a.sock"
	conf "$SRC/config/pair-b.json" "$WORK/b.json" "$WORK/b.sock"
	take_lock "$LOCKF"
	# shellcheck disable=SC2086
	claim_rundirs $RUNDIRS
	rm -f "$SOCK"
	ip netns add "$NS_A" 2>"$WORK/netns.err" ||
		skip "cannot create network namespaces ($(cat "$WORK/netns.err"))"
	NS_UP=1
	ip netns add "$NS_B" && ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up ||
		{ log "cannot set up the namespaces"; exit 1; }
	daemon a "$NS_A"
	daemon b "$NS_B"
else
	"$HOSTS" up 2 --name "$HNAME" >"$WORK/up.log" 2>&1 || {
		cat "$WORK/up.log"
		skip "dpverbs-hosts up 2 failed"
	}
	NS_UP=1
	conf "$("$HOSTS" config 1 --name "$HNAME")" "$WORK/a.json"
	conf "$("$HOSTS" config 2 --name "$HNAME")" "$WORK/b.json"
fi

# in NS SIDE(a|b) CMD...: dpverbs-run --view in that namespace with the side's configuration
in_ns() {
	local ns=$1 side=$2; shift 2
	timeout -k 5 "$TMO" ip netns exec "$ns" sh "$RUN" -c "$WORK/$side.json" --view "$@"
}

# 1. fi_info
in_ns "$NS_A" a fi_info -p verbs -v >"$WORK/fi_info" 2>&1 || fail "fi_info -p verbs exited with $?"
n=$(awk '/^---$/ {n += (msg && src && dom); msg = src = dom = 0}
	/^ *type: FI_EP_MSG$/ {msg = 1} $0 ~ "^ *src_addr: fi_sockaddr_in://" a ":0$" {src = 1}
	/^ *name: dpv0$/ {dom = 1} END {print n + (msg && src && dom)}' a="$ADDR_S" "$WORK/fi_info")
if [ "$n" -lt 1 ]; then
	fail "fi_info: no FI_EP_MSG endpoint of dpv0 with source address $ADDR_S"
	grep -Ev '^EAL' "$WORK/fi_info" | head -n 40 | sed 's/^/    [fi_info] /'
fi
log "fi_info -p verbs: $n FI_EP_MSG endpoint(s) of dpv0 on fi_sockaddr_in://$ADDR_S:0," \
	"$(grep -c 'type: *FI_EP_RDM' "$WORK/fi_info") FI_EP_RDM (verbs;ofi_rxm)"

# pingpong NAME EP: fi_pingpong -p verbs -e EP -I 100, all sizes
pingpong() {
	local name=$1 ep=$2 port srv rc_c rc_s n
	port=$(pick_port "$NS_A")
	FI_LOG_LEVEL=info in_ns "$NS_A" a fi_pingpong -p verbs -e "$ep" -I 100 -B "$port" \
		>"$WORK/$name.server" 2>&1 &
	srv=$!
	local keep=$MULTI_PIDS
	MULTI_PIDS="$MULTI_PIDS $srv"
	if ! wait_listen "$srv" "$port" "$NS_A"; then
		fail "$name: server did not listen on tcp port $port"
		kill_own
		grep -Ev '^EAL|libfabric' "$WORK/$name.server" | tail -n 20 | sed "s/^/    [$name server] /"
		return
	fi
	in_ns "$NS_B" b fi_pingpong -p verbs -e "$ep" -I 100 -P "$port" "$ADDR_S" >"$WORK/$name.client" 2>&1
	rc_c=$?
	wait "$srv"; rc_s=$?
	MULTI_PIDS=$keep
	[ "$rc_c" = 0 ] || fail "$name: client exit $rc_c"
	[ "$rc_s" = 0 ] || fail "$name: server exit $rc_s"
	# dgram: messages up to the path MTU (1 KiB), no listening endpoint
	local rows='(64|256|1k|4k|64k|1m)' want=6
	[ "$ep" = dgram ] && rows='(64|256|1k)' want=3
	for f in client server; do
		n=$(grep -Ec "^$rows +100 +=100 " "$WORK/$name.$f")
		[ "$n" = "$want" ] || fail "$name: the $f printed $n of the $want result rows"
	done
	if [ "$ep" != dgram ]; then
		grep -Fq "listening on: fi_sockaddr_in://$ADDR_S:" "$WORK/$name.server" ||
			fail "$name: the server did not listen on $ADDR_S (dpverbs' port)"
	fi
	grep -E '^(bytes|64|1m) ' "$WORK/$name.client" | sed "s/^/    [$name client] /"
	if [ "$MULTI_FAIL" != 0 ]; then
		grep -Ev '^EAL|fi_param_get|:core:' "$WORK/$name.server" | tail -n 25 | sed "s/^/    [$name server] /"
		grep -Ev '^EAL' "$WORK/$name.client" | tail -n 15 | sed "s/^/    [$name client] /"
	fi
}

# 2., 3.
pingpong msg msg
pingpong rdm rdm
pingpong dgram dgram

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "OK: fi_pingpong -p verbs, msg, rdm and dgram endpoints, over $MODE"
exit 0
