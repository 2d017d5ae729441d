#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two processes over a real (virtual) Ethernet link: a veth pair between two
# network namespaces, dpverbs on each end through net_af_packet
# (config/veth-a.json, config/veth-b.json), Debian's unmodified
# ibv_ud_pingpong on build/compat/libibverbs.so.1. The kernel owns
# 198.51.100.11/.12 on the same interfaces for the pingpong's TCP exchange;
# dpverbs uses 198.51.100.1/.2 (GID index 1).
#
# Asserts: both exit 0 and print "N iters in ...", for -g 1 and -g 1 -s 1024;
# the EAL runtime dirs are gone afterwards; reports the kernel's ICMP
# "destination unreachable" counters and neighbour tables (the kernel must
# neither answer the RoCE packets nor ARP for the dpverbs addresses).
# Always removes its namespaces (and with them the veth). Skips (77) if
# network namespaces cannot be created.
#
# usage: ud_pingpong_veth.sh [BUILD_DIR]
# env:   DPV_ITERS (10000), DPV_TIMEOUT (60 s per process),
#        DPV_VETH_TX_CSUM_OFF=1 to run "ethtool -K <if> tx off" on both ends
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
command -v ip >/dev/null || skip "iproute2 (ip) not installed"

ITERS=${DPV_ITERS:-10000}
TMO=${DPV_TIMEOUT:-60}
RUNDIRS="/var/run/dpdk/dpv-veth-a /var/run/dpdk/dpv-veth-b"
WORK=$(mktemp -d /tmp/dpv-multi-veth.XXXXXX)

cleanup() {
	kill_own
	veth_teardown
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

veth_prepare
log "namespaces $NS_A, $NS_B; veth dpv-veth-a <-> dpv-veth-b up, MTU 1500"

icmp_unreach() {  # NS -> "OutDestUnreachs" of Icmp in that namespace
	ip netns exec "$1" awk '/^Icmp:/ { if (!h) { for (i = 1; i <= NF; i++) n[$i] = i; h = 1 } else print $n["OutDestUnreachs"] }' /proc/net/snmp
}

for spec in "ipv4|-g 1" "ipv4-s1024|-g 1 -s 1024"; do
	name=${spec%%|*}
	# shellcheck disable=SC2086
	set -- ${spec#*|}
	t0=$(date +%s.%N)
	u0a=$(icmp_unreach "$NS_A"); u0b=$(icmp_unreach "$NS_B")
	if veth_pingpong "$name" "$TMO" "$ITERS" "$@"; then
		check_output server "$WORK/$name.server" "$RC_S" "$ITERS"
		check_output client "$WORK/$name.client" "$RC_C" "$ITERS"
	fi
	check_rundirs_gone $RUNDIRS
	u1a=$(icmp_unreach "$NS_A"); u1b=$(icmp_unreach "$NS_B")
	log "kernel ICMP dest-unreachable sent during the run: ns A $((u1a - u0a)), ns B $((u1b - u0b))"
	log "--- $name: $(echo "$(date +%s.%N) - $t0" | bc) s"
done

# The kernel's neighbour tables: it may have learnt .1/.2 from dpverbs' ARP
# requests, but it must not have claimed them (ARP replies for .1/.2 come
# from dpverbs, with the same MAC, since af_packet uses the interface MAC).
log "neighbour table ns A: $(ip -n "$NS_A" neigh show dev dpv-veth-a | tr '\n' ';')"
log "neighbour table ns B: $(ip -n "$NS_B" neigh show dev dpv-veth-b | tr '\n' ';')"
log "kernel addresses ns A: $(ip -n "$NS_A" -br addr show dev dpv-veth-a)"

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
