#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dpverbs-hosts (apps/scripts/dpverbs-hosts.in): hosts on one machine, what does not
# need dpverbs' AF_XDP port code.
#
# Asserts:
#   1. usage errors (bad N, name, MTU, queues, mode, command) exit 2 and
#      make nothing; --help exits 0;
#   2. up 3: namespaces NAME-sw and NAME-h1..3, br0 with ports h1..h3, each
#      eth0 with its MAC 02:64:70:68:XX:0I, MTU 1500, 198.51.100.I/24 and
#      fd00:6470:7668::I/64 (not tentative); nothing of it in the initial
#      network namespace;
#   3. addr (-6), config (the JSON parses: one af_xdp port dpv0 on eth0,
#      embedded), list (3 lines);
#   4. exec: the host's namespace, DPVERBS_HOST, DPVERBS_HOST_ADDR,
#      DPVERBS_CONFIG, the caller's environment, CMD's exit status;
#   5. the hosts ping each other over IPv4 and IPv6 (ping -c 2 -W 2
#      through exec --no-view; a raw-socket echo in python3 where iputils'
#      ping is not installed);
#   6. up again with the same name fails, says how to take it down, and
#      leaves the hosts working; exec/addr of a host that is not up fail;
#   7. down: no namespace of NAME, no state folder; down again succeeds;
#   8. up 2 --queues 2 --mtu 9000: the veths' queues and MTU, "queues": 2
#      in the configuration, a 8000-byte ping that must not fragment;
#   9. a state folder lost after up: up refuses, down removes the
#      namespaces; an up killed midway (SIGTERM) leaves nothing;
#  10. --mode shared with DPVERBS_DRIVER=null (the daemon serves devices
#      without EAL and ports, so that the script's handling of dpverbsd is
#      tested without the AF_XDP port code), in a DPVERBS_HOSTS_DIR of its
#      own: one dpverbsd per host in its namespace, list shows them
#      running, the configuration is shared with the daemon's socket and
#      file prefix, an application in host 1 lists dpv0 through the daemon
#      (ibv_devices), down stops the daemons (SIGTERM) and removes all;
#  11. --mode shared for real: the daemons own AF_XDP ports; skipped with a
#      message when the daemon fails to start with an error naming af_xdp,
#      XDP or the device type (dpverbs without the AF_XDP port code; up
#      must then have undone everything), else ibv_devinfo in host 1 shows
#      dpv0 active.
# Parts 10 and 11 need build/apps/dpverbsd/dpverbsd.
# Exit 77 (skip) when not root or when network namespaces cannot be made.
#
# usage: hosts.sh [BUILD_DIR]
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
SRC=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
BUILD=${1:-$SRC/build}
[ -d "$BUILD" ] || { log "build dir '$BUILD' not found"; exit 1; }
BUILD=$(cd "$BUILD" && pwd)
HOSTS=$BUILD/apps/dpverbs-hosts
DAEMON=$BUILD/apps/dpverbsd/dpverbsd
[ -x "$HOSTS" ] || { log "$HOSTS not built"; exit 1; }
[ -x "$BUILD/apps/dpverbs-run" ] || { log "$BUILD/apps/dpverbs-run not built"; exit 1; }
# exec runs CMD through dpverbs-run, which wants the drop-in libibverbs.so.1
[ -e "$BUILD/compat/libibverbs.so.1" ] || { log "$BUILD/compat/libibverbs.so.1 not built"; exit 1; }
[ "$(id -u)" = 0 ] || skip "not root (network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN)"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not installed"
ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"

NAME=$(printf 't%s' "$$" | cut -c1-8)
unset DPVERBS_HOSTS_DIR DPVERBS_DRIVER DPVERBS_CONFIG
STATE=/run/dpverbs-hosts                 # the default state folder
STATE2=/run/dpverbs-hosts-$NAME          # part 10's DPVERBS_HOSTS_DIR
TMO=${DPV_TIMEOUT:-60}
WORK=$(mktemp -d /tmp/dpv-multi-hosts.XXXXXX)
export DPV_HOSTS_TEST_MARK=m$$           # an environment variable exec must pass

# the namespaces of NAME that exist
ns_left() {
	local list n _
	list=$(ip netns list 2>/dev/null)
	while read -r n _; do
		[[ $n =~ ^$NAME-(sw|h[0-9]+)$ ]] && echo "$n"
	done <<<"$list"
	return 0
}
cleanup() {
	kill_own
	timeout -k 5 30 "$HOSTS" down --name "$NAME" >/dev/null 2>&1
	DPVERBS_HOSTS_DIR=$STATE2 timeout -k 5 30 "$HOSTS" down --name "$NAME" >/dev/null 2>&1
	local ns
	for ns in $(ns_left); do
		log "WARN: namespace $ns left by the script: deleting it"
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "${STATE:?}/$NAME" "$STATE2" "$WORK"
}
on_exit cleanup

h() { timeout -k 5 "$TMO" "$HOSTS" "$@"; }
# expect WANT DESC CMD...: CMD's exit status is WANT; its output in $WORK/out
expect() {
	local want=$1 desc=$2 rc
	shift 2
	"$@" >"$WORK/out" 2>&1
	rc=$?
	if [ "$rc" != "$want" ]; then
		fail "$desc: exit status $rc, expected $want"
		sed 's/^/    /' "$WORK/out"
		return 1
	fi
	return 0
}
out_has() { # out_has DESC PATTERN: $WORK/out matches the extended regex
	grep -Eq -- "$2" "$WORK/out" || { fail "$1: output does not match '$2':"; sed 's/^/    /' "$WORK/out"; }
}
nothing_left() { # nothing_left DESC [STATE]
	local st=${2:-$STATE} left
	left=$(ns_left | tr '\n' ' ')
	[ -z "$left" ] || fail "$1: namespaces left: $left"
	[ ! -e "$st/$NAME" ] || fail "$1: $st/$NAME left"
}

# an ICMP echo over a raw socket, for machines without iputils' ping:
# PYPING ADDR COUNT SIZE (DF set over IPv4)
PYPING='
import os, socket, struct, sys, time
addr, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
v6 = ":" in addr
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_RAW,
                  socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP)
if not v6:
    s.setsockopt(socket.IPPROTO_IP, 10, 2)   # IP_MTU_DISCOVER, IP_PMTUDISC_DO
ident = os.getpid() & 0xffff
def csum(b):
    b += b"\0" * (len(b) % 2)
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    t = (t >> 16) + (t & 0xffff)
    return ~(t + (t >> 16)) & 0xffff
ok = 0
for seq in range(1, count + 1):
    pkt = struct.pack("!BBHHH", 128 if v6 else 8, 0, 0, ident, seq) + b"d" * size
    if not v6:
        pkt = pkt[:2] + struct.pack("!H", csum(pkt)) + pkt[4:]
    s.sendto(pkt, (addr, 0))
    end = time.time() + 2
    while time.time() < end:
        s.settimeout(max(0.01, end - time.time()))
        try:
            data, src = s.recvfrom(65536)
        except socket.timeout:
            break
        if not v6:
            data = data[(data[0] & 15) * 4:]
        t, _, _, i, q = struct.unpack("!BBHHH", data[:8])
        if t == (129 if v6 else 0) and i == ident and q == seq and src[0] == addr:
            ok += 1
            break
print("%d/%d echo replies from %s (%d bytes)" % (ok, count, addr, size))
sys.exit(0 if ok == count else 1)
'
PING=$(command -v ping || true)
[ -n "$PING" ] || log "NOTE: iputils ping not installed: ICMP echo by python3 instead"
# hping I ADDR [SIZE]: host I pings ADDR twice (exec --no-view)
hping() {
	local i=$1 addr=$2 size=${3:-56} fam=-4
	case $addr in *:*) fam=-6 ;; esac
	if [ -n "$PING" ]; then
		h exec "$i" --name "$NAME" --no-view ping "$fam" -c 2 -i 0.2 -W 2 -s "$size" -M "do" "$addr"
	else
		h exec "$i" --name "$NAME" --no-view python3 -c "$PYPING" "$addr" 2 "$size"
	fi
}

# 1. usage errors
for args in "up 0" "up 17" "up abc" "up" "up 2 3" "up 2 --name Bad" "up 2 --name toolongname" \
	"up 2 --mtu 100" "up 2 --mtu 9001" "up 2 --queues 9" "up 2 --queues 0" "up 2 --mode foo" \
	"frob" "" "exec 1" "exec 0 true" "addr x" "list --mtu 1500" "down 3"; do
	# the command, --name NAME, the rest (a --name in the rest wins)
	# shellcheck disable=SC2086
	set -- $args
	[ $# -gt 0 ] && set -- "$1" --name "$NAME" "${@:2}"
	expect 2 "dpverbs-hosts $args" h "$@" || continue
	out_has "dpverbs-hosts $args" '^dpverbs-hosts: '
done
expect 0 "--help" h --help && out_has "--help" '^usage: dpverbs-hosts up N'
nothing_left "after the usage errors"

# 2. up 3
init_links() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort; }
init_before=$(init_links)
log "=== up 3 --name $NAME"
if ! h up 3 --name "$NAME" >"$WORK/up" 2>&1; then
	cat "$WORK/up"
	grep -q "cannot create network namespace" "$WORK/up" &&
		skip "network namespaces cannot be made here"
	fail "up 3 failed"
	exit 1
fi
sed 's/^/    [up] /' "$WORK/up"
for ns in "$NAME-sw" "$NAME-h1" "$NAME-h2" "$NAME-h3"; do
	ns_left | grep -qx "$ns" || fail "namespace $ns missing"
done
[ "$(ns_left | wc -l)" = 4 ] || fail "not 4 namespaces: $(ns_left | tr '\n' ' ')"
ports=$(ip -n "$NAME-sw" -o link show master br0 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
[ "$ports" = "h1 h2 h3 " ] || fail "br0's ports: '$ports', expected h1 h2 h3"
ip -n "$NAME-sw" -d link show br0 | grep -q "stp_state 0" || fail "br0: STP not off"
for i in 1 2 3; do
	ns=$NAME-h$i
	link=$(ip -n "$ns" -o link show dev eth0 2>&1)
	echo "$link" | grep -Eq "link/ether 02:64:70:68:[0-9a-f]{2}:0$i " || fail "$ns eth0 MAC: $link"
	echo "$link" | grep -q "mtu 1500 " || fail "$ns eth0 MTU: $link"
	echo "$link" | grep -q "LOWER_UP" || fail "$ns eth0 not up: $link"
	ip -n "$ns" -o link show dev lo | grep -q "UP" || fail "$ns: lo not up"
	a=$(ip -n "$ns" -o addr show dev eth0)
	echo "$a" | grep -q "inet 198.51.100.$i/24 " || fail "$ns: no 198.51.100.$i/24: $a"
	echo "$a" | grep -q "inet6 fd00:6470:7668::$i/64 " || fail "$ns: no fd00:6470:7668::$i/64: $a"
	echo "$a" | grep -q tentative && fail "$ns: a tentative address: $a"
	[ "$(ip -n "$ns" -o link show | wc -l)" = 2 ] || fail "$ns: other interfaces than lo and eth0"
done
if [ "$(init_links)" != "$init_before" ]; then
	# others may add interfaces meanwhile: only ours must not be here
	for n in $(comm -13 <(echo "$init_before") <(init_links)); do
		case $n in h[0-9]*|br0|eth0) fail "interface $n appeared in the initial namespace" ;; esac
	done
fi
ip -o link show | grep -q "link/ether 02:64:70:68:" && fail "a host's MAC in the initial namespace"

# 3. addr, config, list
if expect 0 "addr 2" h addr 2 --name "$NAME"; then
	[ "$(cat "$WORK/out")" = 198.51.100.2 ] || fail "addr 2: '$(cat "$WORK/out")'"
fi
if expect 0 "addr 3 -6" h addr 3 --name "$NAME" -6; then
	[ "$(cat "$WORK/out")" = fd00:6470:7668::3 ] || fail "addr 3 -6: '$(cat "$WORK/out")'"
fi
expect 0 "config 1" h config 1 --name "$NAME"
cfg=$(cat "$WORK/out")
[ "$cfg" = "$STATE/$NAME/h1.json" ] || fail "config 1: '$cfg', expected $STATE/$NAME/h1.json"
python3 - "$cfg" <<'EOF' || fail "config 1: not the expected configuration"
import json, sys
c = json.load(open(sys.argv[1]))
p = c["ports"]
assert len(p) == 1 and p[0]["name"] == "dpv0", p
assert p[0]["device"] == {"type": "af_xdp", "iface": "eth0"}, p[0]
assert "mode" not in c and "ipv4" not in p[0] and "mtu" not in p[0], c
EOF
expect 0 "list" h list --name "$NAME"
[ "$(wc -l <"$WORK/out")" = 3 ] || fail "list: not 3 lines"
out_has "list" "^2 $NAME-h2 198\.51\.100\.2 embedded -$"

# 4. exec
# shellcheck disable=SC2016
expect 0 "exec 2 env" h exec 2 --name "$NAME" --no-view sh -c \
	'echo "$(ip netns identify) $DPVERBS_HOST $DPVERBS_HOST_ADDR $DPVERBS_CONFIG $DPV_HOSTS_TEST_MARK"'
want="$NAME-h2 2 198.51.100.2 $STATE/$NAME/h2.json m$$"
[ "$(cat "$WORK/out")" = "$want" ] || fail "exec 2: '$(cat "$WORK/out")', expected '$want'"
expect 7 "exec 1 exit 7" h exec 1 --name "$NAME" --no-view sh -c 'exit 7'
expect 3 "exec 3 -- (exit 3)" h exec --name "$NAME" 3 --no-view -- sh -c 'exit 3'
expect 0 "exec 1 (--view)" h exec 1 --name "$NAME" sh -c 'test -d /sys/class/infiniband/dpv0' ||
	log "NOTE: no sysfs view in host 1 (dpv_sysfs --exec)"

# 5. ping over IPv4 and IPv6
for pair in "1 2" "2 3" "3 1"; do
	# shellcheck disable=SC2086
	set -- $pair
	expect 0 "ping host $1 -> 198.51.100.$2" hping "$1" "198.51.100.$2" &&
		log "ping $1 -> $2: $(grep -E 'received|replies' "$WORK/out")"
	expect 0 "ping host $1 -> fd00:6470:7668::$2" hping "$1" "fd00:6470:7668::$2" &&
		log "ping -6 $1 -> $2: $(grep -E 'received|replies' "$WORK/out")"
done

# 6. errors while up
if expect 1 "up 2 again" h up 2 --name "$NAME"; then
	out_has "up 2 again" "already up"
	out_has "up 2 again" "down --name $NAME"
fi
[ "$(ns_left | wc -l)" = 4 ] || fail "after the second up: namespaces $(ns_left | tr '\n' ' ')"
[ -f "$STATE/$NAME/h3.json" ] || fail "after the second up: $STATE/$NAME/h3.json gone"
expect 0 "ping 2 -> 1 after the second up" hping 2 198.51.100.1
expect 1 "exec 9 (3 hosts)" h exec 9 --name "$NAME" true && out_has "exec 9" "hosts 1 to 3"
expect 2 "exec 17" h exec 17 --name "$NAME" true
expect 1 "addr 4 (3 hosts)" h addr 4 --name "$NAME"
expect 1 "list of another name" h list --name "x${NAME:1}"

# 7. down
expect 0 "down" h down --name "$NAME"
nothing_left "after down"
[ -e "$STATE" ] && [ -z "$(ls -A "$STATE")" ] && fail "$STATE left empty"
expect 0 "down again" h down --name "$NAME"

# 8. queues and MTU
log "=== up 2 --queues 2 --mtu 9000"
expect 1 "up 2 --queues 2 (one queue on a veth)" h up 2 --name "$NAME" --queues 2 &&
	out_has "up --queues 2" "serves one queue"
if DPVERBS_HOSTS_QUEUES_ANYWAY=1 expect 0 "up 2 --queues 2 --mtu 9000" h up 2 --name "$NAME" --queues 2 --mtu 9000; then
	d=$(ip -n "$NAME-h1" -d -o link show dev eth0)
	echo "$d" | grep -q "mtu 9000 " || fail "eth0 MTU not 9000: $d"
	echo "$d" | grep -q "numtxqueues 2 numrxqueues 2" || fail "eth0 not 2 queues: $d"
	d=$(ip -n "$NAME-sw" -d -o link show dev h2)
	echo "$d" | grep -q "mtu 9000 " || fail "h2 MTU not 9000: $d"
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["ports"][0]["device"]; assert d.get("queues") == 2, d' \
		"$STATE/$NAME/h2.json" || fail "h2.json: no \"queues\": 2"
	expect 0 "8000-byte ping 1 -> 2" hping 1 198.51.100.2 8000
	expect 0 "8000-byte ping -6 2 -> 1" hping 2 fd00:6470:7668::1 8000
	expect 0 "down" h down --name "$NAME"
fi
nothing_left "after the MTU run"

# 9. a lost state folder; an up killed midway
if expect 0 "up 1" h up 1 --name "$NAME"; then
	rm -rf "${STATE:?}/$NAME"
	expect 1 "up 1 without its state" h up 1 --name "$NAME" && out_has "up without state" "already up"
	expect 0 "down without state" h down --name "$NAME"
fi
nothing_left "after a lost state folder"
"$HOSTS" up 16 --name "$NAME" >"$WORK/up16" 2>&1 &
p=$!
MULTI_PIDS=$p
sleep 0.3
kill -TERM "$p" 2>/dev/null
wait "$p"
rc=$?
MULTI_PIDS=""
if [ "$rc" = 0 ]; then
	log "NOTE: up 16 completed before SIGTERM"
	h down --name "$NAME" >/dev/null 2>&1
else
	log "up 16 stopped by SIGTERM (exit $rc): $(tail -n 1 "$WORK/up16")"
fi
nothing_left "after an up killed midway"

# 10. shared mode: the daemons' life cycle (null driver)
if [ -x "$DAEMON" ] && command -v ibv_devices >/dev/null 2>&1; then
	log "=== DPVERBS_DRIVER=null up 2 --mode shared (state in $STATE2)"
	export DPVERBS_HOSTS_DIR=$STATE2
	if expect 0 "shared up (null driver)" env DPVERBS_DRIVER=null "$HOSTS" up 2 --name "$NAME" --mode shared; then
		expect 0 "shared list" h list --name "$NAME"
		sed 's/^/    [list] /' "$WORK/out"
		pids=""
		for i in 1 2; do
			p=$(sed -n "s/^$i $NAME-h$i 198\.51\.100\.$i shared running:\([0-9]*\)$/\1/p" "$WORK/out")
			[ -n "$p" ] || { fail "list: host $i's daemon not running"; continue; }
			pids="$pids $p"
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = dpverbsd ] || fail "pid $p is not a dpverbsd"
			[ "$(ip netns identify "$p")" = "$NAME-h$i" ] || fail "dpverbsd $p not in $NAME-h$i"
			[ -S "$STATE2/$NAME/h$i/dpverbsd.sock" ] || fail "no socket $STATE2/$NAME/h$i/dpverbsd.sock"
		done
		python3 - "$STATE2/$NAME/h2.json" "$STATE2/$NAME/h2/dpverbsd.sock" "$NAME-h2" <<'EOF' ||
import json, sys
c = json.load(open(sys.argv[1]))
assert c["mode"] == "shared" and c["shared"]["socket"] == sys.argv[2], c
assert c["eal"]["file_prefix"] == sys.argv[3], c
assert c["ports"][0]["device"] == {"type": "af_xdp", "iface": "eth0"}, c
EOF
			fail "h2.json: not the shared configuration"
		expect 0 "ibv_devices in host 1 (shared)" h exec 1 --name "$NAME" --no-view ibv_devices &&
			out_has "ibv_devices (shared)" "dpv0"
		expect 0 "shared down" h down --name "$NAME"
		for p in $pids; do   # gone, or a zombie its new parent has not reaped yet
			st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
			[ -n "$st" ] && [ "$st" != Z ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dpverbsd ] &&
				fail "dpverbsd $p still runs after down (state $st)"
		done
	fi
	nothing_left "after the shared run (null driver)" "$STATE2"
	[ -d "$STATE2" ] || fail "$STATE2 (DPVERBS_HOSTS_DIR) removed by down"

	# 11. shared mode on AF_XDP ports
	log "=== up 2 --mode shared (AF_XDP ports)"
	if h up 2 --name "$NAME" --mode shared >"$WORK/out" 2>&1; then
		expect 0 "ibv_devinfo in host 1 (AF_XDP, shared)" h exec 1 --name "$NAME" ibv_devinfo -d dpv0 &&
			out_has "ibv_devinfo (AF_XDP)" "PORT_ACTIVE"
		expect 0 "shared down (AF_XDP)" h down --name "$NAME"
	elif grep -Eiq 'af_xdp|xdp|device[ ._]type' "$WORK/out"; then
		log "SKIP part 11: dpverbsd does not start on the AF_XDP port yet:"
		sed 's/^/    /' "$WORK/out"
	else
		fail "shared up (AF_XDP) failed:"
		sed 's/^/    /' "$WORK/out"
	fi
	nothing_left "after the shared run (AF_XDP)" "$STATE2"
	unset DPVERBS_HOSTS_DIR
else
	log "SKIP parts 10 and 11: $DAEMON or ibv_devices missing"
fi

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASS"
exit 0
