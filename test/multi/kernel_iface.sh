#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# kernel_iface.sh BUILD [embedded|shared]: the exception path of ports that
# dpverbs owns whole ("kernel_iface", lib/port/dpv_exc.c).
#
#   netns NSA                                     netns NSB
#   dpverbs (memif server)  <==== memif ====>     dpverbs (memif client)
#   kernel iface dpvk0 192.0.2.1                  kernel iface dpvk0 192.0.2.2
#
# Both kernel interfaces are made by dpverbs (net_tap) with the port's MAC
# and addresses. While Debian's ib_send_bw runs between the two (its TCP
# exchange goes through the exception path too), ping (IPv4, IPv6) and a
# 32 MiB TCP stream from NSB to 192.0.2.1 must work, every byte arriving;
# the kernel answers ARP and dpverbs does not (one reply per request on the
# wire, dpverbs' arp_tx/nd_tx stay 0). In shared mode the two dpverbsd own
# the ports and the interfaces. A process killed with SIGKILL takes its
# interface with it, and the next start makes it again; a kernel_iface that
# exists already is refused with a message naming the field.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
resolve_build "${1:-}"
MODE=${2:-embedded}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ib_send_bw >/dev/null || skip "ib_send_bw (perftest) not installed"
command -v tshark >/dev/null || skip "tshark not installed"
DAEMON=$BUILD/apps/dpverbsd/dpverbsd
STAT=$BUILD/apps/dpv_stat/dpv_stat

WORK=$(mktemp -d /tmp/dpv-kif.XXXXXX)
NSA=dpvkA$$
NSB=dpvkB$$
SOCK=$WORK/memif.sock
NS_MADE=0

cleanup() {
	kill_own
	if [ "$NS_MADE" = 1 ]; then
		ip netns del "$NSA" 2>/dev/null
		ip netns del "$NSB" 2>/dev/null
	fi
	rm -rf "$WORK" /var/run/dpdk/dpv-kif-a-$$ /var/run/dpdk/dpv-kif-b-$$
}
on_exit cleanup

ip netns add "$NSA" 2>"$WORK/ns.err" || skip "cannot create network namespaces: $(cat "$WORK/ns.err")"
NS_MADE=1
ip netns add "$NSB" || exit 1
ip -n "$NSA" link set lo up
ip -n "$NSB" link set lo up

# conf SIDE ROLE LAST: the configuration of one side
conf() {
	local side=$1 role=$2 last=$3 shared=""
	[ "$MODE" = shared ] && shared="\"mode\": \"shared\", \"shared\": {\"socket\": \"$WORK/$side.sock\"},"
	cat >"$WORK/$side.json" <<EOF
{ $shared
  "eal": {"file_prefix": "dpv-kif-$side-$$"},
  "ports": [{"name": "dpv0",
    "device": {"type": "vdev", "args": "net_memif0,role=$role,socket=$SOCK,socket-abstract=no"},
    "mac": "02:64:70:6b:00:0$last", "ipv4": "192.0.2.$last/24", "ipv6": ["fd00:6470:7600::$last/64"],
    "kernel_iface": "dpvk0"}]}
EOF
}
conf a server 1
conf b client 2

# start_daemon SIDE NS: dpverbsd of one side (shared mode); waits for its socket
start_daemon() {
	local side=$1 ns=$2 i
	ip netns exec "$ns" "$DAEMON" "$WORK/$side.json" >"$WORK/dpverbsd-$side.log" 2>&1 &
	eval "DPID_$side=$!"
	MULTI_PIDS="$MULTI_PIDS $!"
	for i in $(seq 1 150); do
		[ -S "$WORK/$side.sock" ] && return 0
		kill -0 "$!" 2>/dev/null || break
		sleep 0.1
	done
	fail "dpverbsd of side $side did not start"
	sed 's/^/    /' "$WORK/dpverbsd-$side.log"
	exit 1
}

# wait_iface NS: until dpvk0 exists in NS with its address (max 15 s)
wait_iface() {
	local i
	for i in $(seq 1 150); do
		ip -n "$1" -4 addr show dev dpvk0 2>/dev/null | grep -q 'inet 192.0.2' && return 0
		sleep 0.1
	done
	return 1
}

if [ "$MODE" = shared ]; then
	[ -x "$DAEMON" ] || skip "dpverbsd not built"
	start_daemon a "$NSA"
	start_daemon b "$NSB"
fi

# ---- perftest between the two, the kernel's traffic meanwhile ----
PORT=$(pick_port "$NSA")
log "=== ib_send_bw (-D 30) over memif, TCP exchange over the exception path (port $PORT)"
timeout -k 5 60 ip netns exec "$NSA" env DPVERBS_CONFIG="$WORK/a.json" LD_LIBRARY_PATH="$COMPAT" \
	ib_send_bw -d dpv0 -x 1 -s 4096 -D 30 -p "$PORT" >"$WORK/bw.server" 2>&1 &
SRV=$!
MULTI_PIDS="$MULTI_PIDS $SRV"
wait_iface "$NSA" || { fail "dpvk0 with 192.0.2.1 did not appear in $NSA"; exit 1; }
sleep 1
timeout -k 5 60 ip netns exec "$NSB" env DPVERBS_CONFIG="$WORK/b.json" LD_LIBRARY_PATH="$COMPAT" \
	ib_send_bw -d dpv0 -x 1 -s 4096 -D 30 -p "$PORT" 192.0.2.1 >"$WORK/bw.client" 2>&1 &
CLI=$!
MULTI_PIDS="$MULTI_PIDS $CLI"
wait_iface "$NSB" || { fail "dpvk0 with 192.0.2.2 did not appear in $NSB"; exit 1; }
for ns in "$NSA" "$NSB"; do
	mac=$(ip -n "$ns" -o link show dev dpvk0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
	want=02:64:70:6b:00:0$([ "$ns" = "$NSA" ] && echo 1 || echo 2)
	[ "$mac" = "$want" ] || fail "dpvk0 in $ns has MAC $mac, not the port's $want"
	ip -n "$ns" -6 addr show dev dpvk0 | grep -q fd00:6470:7600:: || fail "dpvk0 in $ns lacks its IPv6 address"
done
sleep 2 # the bandwidth test runs

# ARP: every request of NSB's kernel gets one answer, from NSA's kernel
ip -n "$NSB" neigh flush dev dpvk0
timeout 20 ip netns exec "$NSB" tshark -i dpvk0 -f arp -a duration:6 -w "$WORK/arp.pcap" >"$WORK/tshark.log" 2>&1 &
TSH=$!
for i in $(seq 1 100); do grep -q "Capturing on" "$WORK/tshark.log" && break; sleep 0.1; done
sleep 0.5
ip netns exec "$NSB" ping -c 5 -i 0.2 -W 2 192.0.2.1 >"$WORK/ping4" 2>&1 || fail "ping 192.0.2.1 from $NSB: $(tail -2 "$WORK/ping4")"
ip netns exec "$NSB" ping -6 -c 5 -i 0.2 -W 2 fd00:6470:7600::1 >"$WORK/ping6" 2>&1 ||
	fail "ping fd00:6470:7600::1 from $NSB: $(tail -2 "$WORK/ping6")"
wait "$TSH"
req=$(tshark -r "$WORK/arp.pcap" -Y 'arp.opcode == 1 && arp.dst.proto_ipv4 == 192.0.2.1' 2>/dev/null | wc -l)
rep=$(tshark -r "$WORK/arp.pcap" -Y 'arp.opcode == 2 && arp.src.proto_ipv4 == 192.0.2.1' 2>/dev/null | wc -l)
log "ARP for 192.0.2.1 seen by $NSB's kernel: $req request(s), $rep reply(ies)"
if [ "$req" -lt 1 ] || [ "$rep" != "$req" ]; then
	fail "ARP for 192.0.2.1: $req request(s), $rep reply(ies): want one reply per request"
fi
grep -E 'packets transmitted|rtt' "$WORK/ping4" "$WORK/ping6" | sed 's/^/    /'

# a TCP stream NSB -> NSA's 192.0.2.1, every byte checked
TPORT=$(( PORT + 1 ))
timeout 40 ip netns exec "$NSA" /usr/bin/python3 "$(dirname "$0")/tcp_stream.py" server 192.0.2.1 "$TPORT" >"$WORK/tcp.server" 2>&1 &
TS=$!
wait_listen "$TS" "$TPORT" "$NSA" || fail "TCP server did not listen"
timeout 40 ip netns exec "$NSB" /usr/bin/python3 "$(dirname "$0")/tcp_stream.py" client 192.0.2.1 "$TPORT" $((32 << 20)) >"$WORK/tcp.client" 2>&1 ||
	fail "TCP client: $(cat "$WORK/tcp.client")"
wait "$TS" || fail "TCP server: $(cat "$WORK/tcp.server")"
if [ -s "$WORK/tcp.client" ] && [ "$(cat "$WORK/tcp.server")" = "$(cat "$WORK/tcp.client")" ]; then
	log "TCP stream: $(cut -d' ' -f1 "$WORK/tcp.client") bytes arrived, sha256 equal"
else
	fail "TCP stream: sent '$(cat "$WORK/tcp.client")', received '$(cat "$WORK/tcp.server")'"
fi

# dpverbs answered and asked no ARP/ND itself; what went where
"$STAT" --json >"$WORK/stat.json" 2>/dev/null
/usr/bin/python3 - "$WORK/stat.json" <<'EOF' || fail "counters: see above"
import json, sys
procs = json.load(open(sys.argv[1]))
procs = procs if isinstance(procs, list) else procs.get('processes', [procs])
seen = 0
bad = 0
for p in procs:
    for port in p.get('ports', []):
        if port.get('kernel_iface') != 'dpvk0':
            continue
        seen += 1
        print('    pid %s: arp_tx %d nd_tx %d, to the kernel %d, from the kernel %d, dropped %d' % (
            p.get('pid'), port['arp_tx'], port['nd_tx'], port['exc_to_kernel'],
            port['exc_from_kernel'], port['exc_drops']))
        if port['arp_tx'] or port['nd_tx'] or port['exc_to_kernel'] == 0 or port['exc_from_kernel'] == 0:
            bad = 1
if seen < 2:
    print('    %d process(es) with kernel_iface dpvk0 published counters, want 2' % seen)
    bad = 1
sys.exit(bad)
EOF

wait "$CLI"; RC_C=$?
wait "$SRV"; RC_S=$?
MULTI_PIDS=$(echo "$MULTI_PIDS" | tr ' ' '\n' | grep -vx "$CLI" | grep -vx "$SRV" | tr '\n' ' ')
for side in server client; do
	f=$WORK/bw.$side
	rc=$([ $side = server ] && echo $RC_S || echo $RC_C)
	bw=$(awk '$1 == 4096 && NF >= 5 {print $4}' "$f" | tail -1)
	if [ "$rc" != 0 ] || [ -z "$bw" ]; then
		fail "ib_send_bw $side: exit $rc"
		sed 's/^/    /' "$f"
	else
		log "ib_send_bw $side: $bw MB/s average"
	fi
done

# ---- SIGKILL takes the interface along; the next start makes it again ----
if [ "$MODE" = shared ]; then
	victim=$DPID_a
else
	timeout -k 5 60 ip netns exec "$NSA" env DPVERBS_CONFIG="$WORK/a.json" LD_LIBRARY_PATH="$COMPAT" \
		ib_send_bw -d dpv0 -x 1 -p "$PORT" >"$WORK/kill.server" 2>&1 &
	victim=$!
	MULTI_PIDS="$MULTI_PIDS $victim"
	wait_iface "$NSA" || fail "dpvk0 did not appear for the second server"
fi
for p in $(descendants "$victim"); do kill -KILL "$p" 2>/dev/null; done
wait "$victim" 2>/dev/null
gone=0
for i in $(seq 1 50); do
	ip -n "$NSA" link show dev dpvk0 >/dev/null 2>&1 || { gone=1; break; }
	sleep 0.1
done
[ "$gone" = 1 ] && log "SIGKILL: dpvk0 gone from $NSA with its process" || fail "dpvk0 still in $NSA after SIGKILL"
kill_own
rm -f "$SOCK" "$WORK/a.sock"
if [ "$MODE" = shared ]; then
	start_daemon a "$NSA"
	wait_iface "$NSA" && log "restart: dpverbsd made dpvk0 again" || fail "restarted dpverbsd made no dpvk0"
	kill -TERM "$DPID_a"; wait "$DPID_a" 2>/dev/null
else
	timeout -k 5 60 ip netns exec "$NSA" env DPVERBS_CONFIG="$WORK/a.json" LD_LIBRARY_PATH="$COMPAT" \
		ib_send_bw -d dpv0 -x 1 -p "$PORT" >"$WORK/again.server" 2>&1 &
	again=$!
	MULTI_PIDS="$MULTI_PIDS $again"
	wait_iface "$NSA" && log "restart: dpvk0 made again" || fail "the restarted process made no dpvk0"
	kill_own
fi

# ---- an interface of that name exists already: refused, nothing made ----
ip -n "$NSA" link add dpvk0 type veth peer name dpvk0p
timeout -k 5 30 ip netns exec "$NSA" env DPVERBS_CONFIG="$WORK/a.json" LD_LIBRARY_PATH="$COMPAT" \
	ibv_devinfo >"$WORK/exists.out" 2>&1
if grep -q 'ports\[0\].kernel_iface: interface dpvk0 exists already' "$WORK/exists.out" &&
	ip -n "$NSA" -o link show dev dpvk0 | grep -q 'dpvk0@dpvk0p' ; then
	log "existing dpvk0 refused: $(grep -o 'ports\[0\].kernel_iface: [^:]*' "$WORK/exists.out" | head -1)"
elif [ "$MODE" = shared ]; then
	# in shared mode the application does not own ports: the daemon refuses
	timeout -k 2 20 ip netns exec "$NSA" "$DAEMON" "$WORK/a.json" >"$WORK/exists.out" 2>&1
	if grep -q 'ports\[0\].kernel_iface: interface dpvk0 exists already' "$WORK/exists.out"; then
		log "existing dpvk0 refused by dpverbsd"
	else
		fail "dpverbsd with an existing dpvk0: $(tail -3 "$WORK/exists.out")"
	fi
else
	fail "an existing dpvk0: $(tail -3 "$WORK/exists.out")"
fi
ip -n "$NSA" link del dpvk0

[ "$MULTI_FAIL" = 0 ] || { log "FAILED"; exit 1; }
log "OK: ping, TCP and RoCEv2 share 192.0.2.1 through kernel_iface ($MODE mode)"
exit 0
