#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# xdp_bad.sh BUILD OTHER_XDP_O DPV_XDP_O: "af_xdp" ports refused with a clear
# error naming the field, and nothing left behind (no XDP program on the
# interface, no interface, no pinned map):
#  - an interface that does not exist;
#  - no CAP_NET_ADMIN / CAP_NET_RAW / CAP_BPF (capsh drops them);
#  - "xdp_mode": "native" on a driver without native XDP (a bridge);
#  - an interface that has somebody else's XDP program (OTHER_XDP_O): refused,
#    and that program is still there, untouched;
#  - "queues" above the interface's RX queues;
#  - a second process on an interface a live dpverbs process owns;
#  - what a dead process left: SIGKILL takes the program along (bpf_link),
#    and dpverbs' program attached by rtnetlink with no live owner (a start
#    killed half-way; DPV_XDP_O attached by `ip link`) is removed by the next
#    start, which then runs.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
resolve_build "${1:-}"
OTHER=${2:-}
DPVXDP=${3:-}
[ "$(id -u)" = 0 ] || skip "needs root"
[ -r "$OTHER" ] && [ -r "$DPVXDP" ] || { log "usage: $0 BUILD OTHER_XDP_O DPV_XDP_O"; exit 1; }
WORK=$(mktemp -d /tmp/dpv-xdpbad.XXXXXX)
NS=dpvxb$$
NS_MADE=0
cleanup() {
	kill_own
	[ "$NS_MADE" = 1 ] && ip netns del "$NS" 2>/dev/null
	rm -rf "$WORK"
}
on_exit cleanup
ip netns add "$NS" 2>"$WORK/ns.err" || skip "cannot create a network namespace: $(cat "$WORK/ns.err")"
NS_MADE=1
NSX=(ip netns exec "$NS")
ip -n "$NS" link set lo up
ip -n "$NS" link add xa type veth peer name xb
ip -n "$NS" addr add 203.0.113.1/24 dev xa
ip -n "$NS" link set xa up
ip -n "$NS" link set xb up
PINNED_BEFORE=$(find /sys/fs/bpf -name 'dpv*' 2>/dev/null | wc -l)

# cfg NAME IFACE [DEVICE EXTRA]: a configuration with one af_xdp port
cfg() {
	cat >"$WORK/$1.json" <<EOF
{"eal": {"hugepages": false}, "ports": [{"name": "dpv0",
  "device": {"type": "af_xdp", "iface": "$2"${3:+, $3}}}]}
EOF
}
# xdp_id IFACE: the id of the XDP program on IFACE, empty if none
xdp_id() { ip -n "$NS" -d link show dev "$1" 2>/dev/null | sed -n 's/.*prog\/xdp[a-z]* id \([0-9]*\).*/\1/p' | head -1; }
# expect NAME PATTERN CMD...: CMD fails and prints PATTERN
expect() {
	local name=$1 pat=$2; shift 2
	timeout -k 5 60 "$@" >"$WORK/$name.out" 2>&1
	local rc=$?
	if [ "$rc" = 0 ] || ! grep -Eq "$pat" "$WORK/$name.out"; then
		fail "$name: exit $rc, expected /$pat/:"
		sed 's/^/    /' "$WORK/$name.out"
		return 1
	fi
	log "$name: refused: $(grep -Eo "$pat.*" "$WORK/$name.out" | head -1 | cut -c1-160)"
}
# nothing_left NAME IFACE...: no XDP program on the interfaces, no pinned map
nothing_left() {
	local name=$1 i; shift
	for i in "$@"; do
		[ -z "$(xdp_id "$i")" ] || fail "$name: an XDP program (id $(xdp_id "$i")) is left on $i"
	done
	[ "$(find /sys/fs/bpf -name 'dpv*' 2>/dev/null | wc -l)" = "$PINNED_BEFORE" ] ||
		fail "$name: a pinned BPF object was left under /sys/fs/bpf"
}
# dev CONF: DEV is the command that opens dpv0 with configuration CONF
dev() { DEV=("${NSX[@]}" env DPVERBS_CONFIG="$WORK/$1.json" LD_LIBRARY_PATH="$COMPAT" ibv_devinfo -d dpv0); }

cfg noiface nosuch0
dev noiface
expect no_iface 'ports\[0\]\.device\.iface: no interface "nosuch0" in this network namespace' "${DEV[@]}"
nothing_left no_iface xa xb

cfg good xa
if command -v capsh >/dev/null; then
	expect no_caps 'ports\[0\] \(dpv0\): device.type "af_xdp" needs the capabilities CAP_NET_ADMIN CAP_NET_RAW CAP_BPF' \
		"${NSX[@]}" capsh --drop=cap_net_admin,cap_net_raw,cap_bpf,cap_sys_admin -- -c \
		"env DPVERBS_CONFIG=$WORK/good.json LD_LIBRARY_PATH=$COMPAT ibv_devinfo -d dpv0" ||
		true
	nothing_left no_caps xa
else
	log "capsh not installed: capabilities case not run"
fi

ip -n "$NS" link add xbr type bridge
ip -n "$NS" link set xbr up
cfg native xbr '"xdp_mode": "native"'
dev native
expect no_native 'ports\[0\]\.device\.xdp_mode: "native": the driver of xbr has no native XDP' "${DEV[@]}"
nothing_left no_native xbr

ip -n "$NS" link set dev xb xdpgeneric obj "$OTHER" sec xdp || { fail "cannot attach the other XDP program"; exit 1; }
other_id=$(xdp_id xb)
cfg other xb
dev other
expect other_prog "ports\\[0\\]\\.device\\.iface: xb already has an XDP program \\(id $other_id, \"not_dpverbs\"\\): dpverbs never replaces another program" "${DEV[@]}"
[ "$(xdp_id xb)" = "$other_id" ] && log "other_prog: program $other_id still on xb" ||
	fail "other_prog: the other program $other_id is no longer on xb ($(xdp_id xb))"
ip -n "$NS" link set dev xb xdpgeneric off

cfg queues xa '"queues": 2'
dev queues
expect queues 'ports\[0\]\.device\.queues: 2 requested, interface xa has 1 combined channel\(s\)' "${DEV[@]}"
nothing_left queues xa

# a live owner: the second process is refused with the first's pid
"${NSX[@]}" env DPVERBS_CONFIG="$WORK/good.json" LD_LIBRARY_PATH="$COMPAT" \
	ibv_rc_pingpong -d dpv0 -g 1 -p 18999 >"$WORK/owner.out" 2>&1 &
OWNER=$!
MULTI_PIDS="$MULTI_PIDS $OWNER"
for i in $(seq 1 100); do [ -n "$(xdp_id xa)" ] && break; sleep 0.1; done
sleep 0.5
owner_pid=$(descendants "$OWNER" | while read -r p; do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = ibv_rc_pingpong ] && echo "$p"; done | head -1)
dev good
expect in_use "ports\\[0\\]\\.device\\.iface: xa is in use by dpverbs process $owner_pid \\(ibv_rc_pingpong\\)" "${DEV[@]}"
id_live=$(xdp_id xa)
[ -n "$id_live" ] || fail "in_use: the owner's program is gone from xa"

# SIGKILL: the bpf_link goes with the process, and the program with it
for p in $(descendants "$OWNER"); do kill -KILL "$p" 2>/dev/null; done
wait "$OWNER" 2>/dev/null
MULTI_PIDS=""
gone=0
for i in $(seq 1 50); do [ -z "$(xdp_id xa)" ] && { gone=1; break; }; sleep 0.1; done
[ "$gone" = 1 ] && log "sigkill: program $id_live left xa with its process" ||
	fail "sigkill: program $(xdp_id xa) still on xa after SIGKILL"
timeout -k 5 60 "${DEV[@]}" >"$WORK/after_kill.out" 2>&1 || {
	fail "the start after SIGKILL failed"
	sed 's/^/    /' "$WORK/after_kill.out"
}
nothing_left after_kill xa

# dpverbs' program attached by rtnetlink, owner unknown/dead: removed at start
ip -n "$NS" link set dev xa xdp obj "$DPVXDP" sec xdp || { fail "cannot attach dpv_xdp.bpf.o"; exit 1; }
stale=$(xdp_id xa)
timeout -k 5 60 "${DEV[@]}" >"$WORK/stale.out" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q "removed the XDP program a dpverbs process left on xa before it finished starting" "$WORK/stale.out"; then
	log "stale: $(grep -o 'removed the XDP program.*' "$WORK/stale.out")"
else
	fail "stale program $stale: exit $rc"
	sed 's/^/    /' "$WORK/stale.out"
fi
nothing_left stale xa

[ "$MULTI_FAIL" = 0 ] || { log "FAILED"; exit 1; }
log "OK: every bad af_xdp port refused with its field named, nothing left behind"
exit 0
