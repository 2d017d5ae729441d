#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dpverbs-run --view and --netns-iface: what verbs libraries and tools read
# besides the verbs calls (sysfs, /dev/infiniband, getifaddrs), for the
# built-in configuration (dpv0, dpv1 on a ring pair).
#
# Asserts:
#   1. ibstat (infiniband-diags, libibumad reading sysfs) shows CA 'dpv0'
#      and 'dpv1', each port State: Active, Link layer: Ethernet; ibstatus
#      shows "4: ACTIVE" for both;
#   2. ibv_devinfo -v still works under the view (both devices, PORT_ACTIVE);
#   3. view_check: every file of the view equals what the verbs say through
#      the drop-in (GIDs against ibv_query_gid, types "RoCE v2", node GUID,
#      state, cap_mask, uverbs names) and what the drop-in's
#      ibv_read_sysfs_file says; /dev/infiniband/uverbsN is a character
#      device, readable and writable;
#   4. ucx_info -d (UCX 1.13) lists memory domains dpv0 and dpv1 with
#      rc_verbs and ud_verbs on dpv0:1 and dpv1:1 (it skips a device whose
#      /dev/infiniband/<dev> is not a R/W character device), and without
#      --view it lists neither; ucx_perftest tag_bw (UCP, 64 KiB, rc_verbs
#      wired up over ud_verbs) completes between two processes over
#      net_memif;
#   5. as an unprivileged user (setpriv to nobody; needs unprivileged user
#      namespaces) the view is there too, and ibstat reads it;
#   6. nothing leaks into this mount namespace (no dpverbs-view mount, no
#      /sys/class/infiniband or /dev/infiniband that was not there before);
#   7. --netns-iface is refused in the initial network namespace; in a
#      namespace created here it adds dpv0 and dpv1 (dummy, the ports' MACs
#      and IPv4 addresses, the kernel's link-local = GID 0), getifaddrs()
#      finds GID 1's address on them (view_check -i), and pyverbs' recipe
#      (ls device/net/, ip -j addr show <ifname>) finds address and MAC.
# Skips (77) if no private mount namespace can be made here; parts skip
# when their tool (ibstat, ucx_info, setpriv) is missing.
#
# usage: sysfs_view.sh [BUILD_DIR]
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
RUN="$BUILD/apps/dpverbs-run"
CHECK="$BUILD/test/multi/view_check"
[ -x "$CHECK" ] || { log "$CHECK not built"; exit 1; }
export DPVERBS_DROPIN=$COMPAT
unset DPVERBS_CONFIG
TMO=${DPV_TIMEOUT:-120}
NS=dpvS$$
NS_UP=0
WORK=$(mktemp -d /tmp/dpv-multi-view.XXXXXX)

RUNDIRS=""
cleanup() {
	kill_own
	local d
	for d in $RUNDIRS; do rm -rf "$d"; done
	if [ "$NS_UP" = 1 ]; then
		ip netns del "$NS" 2>/dev/null  # the dummy interfaces go with it
		ip netns list | grep -Eq "^$NS( |$)" && log "WARN: namespace $NS still listed"
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run() { timeout -k 5 "$TMO" sh "$RUN" "$@"; }

# 4b. UCP between two processes over net_memif (pair-a/b.json with this
# test's own socket and EAL prefixes): tag_bw 64 KiB, rc_verbs wired up
# over ud_verbs, both on dpv0:1 under --view
ucx_pair() {
	local port srv i
	for i in a b; do
		sed -e "s|/tmp/dpverbs-pair.sock|$WORK/memif.sock|" -e "s|dpv-pair-$i|dpv-view-$i-$$|" \
			"$SRC/config/pair-$i.json" >"$WORK/pair-$i.json"
	done
	RUNDIRS="/var/run/dpdk/dpv-view-a-$$ /var/run/dpdk/dpv-view-b-$$"
	port=$(pick_port)
	export UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=dpv0:1
	run -c "$WORK/pair-a.json" --view ucx_perftest -t tag_bw -s 65536 -n 200 -p "$port" \
		>"$WORK/ucp.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	if wait_listen "$srv" "$port"; then
		run -c "$WORK/pair-b.json" --view ucx_perftest -t tag_bw -s 65536 -n 200 -p "$port" 127.0.0.1 \
			>"$WORK/ucp.client" 2>&1 || fail "ucx_perftest client exited with $?"
		wait "$srv" || fail "ucx_perftest server exited with $?"
	else
		fail "ucx_perftest server did not listen on tcp port $port"
	fi
	MULTI_PIDS=""
	unset UCX_TLS UCX_NET_DEVICES
	grep -E 'Final|ERROR|Fatal' "$WORK/ucp.client" "$WORK/ucp.server" | sed 's/^/    [ucx_perftest] /'
	grep -q '^Final: *200 ' "$WORK/ucp.client" || fail "ucx_perftest tag_bw over rc_verbs did not finish"
}
had_sys=0; [ -e /sys/class/infiniband ] && had_sys=1
had_dev=0; [ -e /dev/infiniband ] && had_dev=1

run --view sh -c 'test -d /sys/class/infiniband/dpv0' 2>"$WORK/probe.err" ||
	skip "no private mount namespace here: $(cat "$WORK/probe.err")"

# 1. ibstat, ibstatus
if command -v ibstat >/dev/null; then
	run --view ibstat >"$WORK/ibstat" 2>&1 || fail "ibstat exited with $?"
	sed 's/^/    [ibstat] /' "$WORK/ibstat"
	for d in dpv0 dpv1; do
		blk=$(awk -v d="CA '$d'" '/^CA /{on = ($0 == d)} on' "$WORK/ibstat")
		echo "$blk" | grep -q "State: Active" || fail "ibstat: $d not Active"
		echo "$blk" | grep -q "Link layer: Ethernet" || fail "ibstat: $d link layer not Ethernet"
	done
	run --view ibstatus >"$WORK/ibstatus" 2>&1 || fail "ibstatus exited with $?"
	[ "$(grep -c 'state:.*4: ACTIVE' "$WORK/ibstatus")" = 2 ] || fail "ibstatus: not two ACTIVE ports"
else
	log "SKIP part 1: ibstat (infiniband-diags) not installed"
fi

# 2. ibv_devinfo -v
run --view ibv_devinfo -v >"$WORK/devinfo" 2>&1 || fail "ibv_devinfo -v exited with $?"
[ "$(grep -c '^hca_id:' "$WORK/devinfo")" = 2 ] || fail "ibv_devinfo -v: not two devices"
[ "$(grep -c 'state:.*PORT_ACTIVE' "$WORK/devinfo")" = 2 ] || fail "ibv_devinfo -v: not two active ports"

# 3. the files against the verbs
run --view "$CHECK" >"$WORK/check" 2>&1 || fail "view_check exited with $?"
sed 's/^/    [view_check] /' "$WORK/check"
run --view sh -c 'c=/dev/infiniband/uverbs0; test -c $c && test -r $c && test -w $c &&
	test "$(cat /sys/class/infiniband/dpv0/ports/1/gid_attrs/types/1)" = "RoCE v2"' ||
	fail "shell: uverbs0 not a R/W character device, or types/1 is not RoCE v2"

# 4. UCX
if command -v ucx_info >/dev/null; then
	run --view ucx_info -d >"$WORK/ucx" 2>&1 || fail "ucx_info -d exited with $?"
	for d in dpv0 dpv1; do
		grep -q "^# Memory domain: $d\$" "$WORK/ucx" || fail "ucx_info: no memory domain $d"
		for t in rc_verbs ud_verbs; do
			grep -A1 "Transport: $t\$" "$WORK/ucx" | grep -q "Device: $d:1\$" ||
				fail "ucx_info: no $t on $d:1"
		done
	done
	grep -B1 '^#         Device: dpv' "$WORK/ucx" | sed 's/^/    [ucx_info] /'
	run ucx_info -d >"$WORK/ucx-noview" 2>&1
	grep -q "Memory domain: dpv" "$WORK/ucx-noview" && fail "ucx_info lists dpverbs devices without --view"
else
	log "SKIP part 4: ucx_info (ucx-utils) not installed"
fi
if command -v ucx_perftest >/dev/null; then
	ucx_pair
else
	log "SKIP part 4b: ucx_perftest (ucx-utils) not installed"
fi

# 5. unprivileged: a user namespace
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	setpriv --reuid=65534 --regid=65534 --clear-groups timeout -k 5 "$TMO" sh "$RUN" --view \
		sh -c 'test -c /dev/infiniband/uverbs1 && test -w /dev/infiniband/uverbs1 &&
		cat /sys/class/infiniband/dpv1/ports/1/gids/1 && { ! command -v ibstat >/dev/null || ibstat -l; }' \
		>"$WORK/nobody" 2>&1
	rc=$?
	sed 's/^/    [nobody] /' "$WORK/nobody"
	if grep -q 'cannot create a private mount namespace' "$WORK/nobody"; then
		log "SKIP part 5: no unprivileged user namespaces here"
	elif [ "$rc" != 0 ] || ! grep -q '^0000:0000:0000:0000:0000:ffff:c000:0202$' "$WORK/nobody"; then
		fail "unprivileged --view (exit $rc)"
	fi
else
	log "SKIP part 5: not root or no setpriv"
fi

# 6. nothing left here
grep -q dpverbs-view /proc/self/mounts && fail "a dpverbs-view mount is visible outside the view"
[ "$had_sys" = 0 ] && [ -e /sys/class/infiniband ] && fail "/sys/class/infiniband appeared outside the view"
[ "$had_dev" = 0 ] && [ -e /dev/infiniband ] && fail "/dev/infiniband appeared outside the view"

# 7. --netns-iface
out=$(run --netns-iface true 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q 'initial network namespace' ||
	fail "--netns-iface in the initial network namespace: exit $rc, not refused ($out)"
if ip netns add "$NS" 2>"$WORK/netns.err"; then
	NS_UP=1
	ip -n "$NS" link set lo up
	ip netns exec "$NS" timeout -k 5 "$TMO" sh "$RUN" --netns-iface --view sh -c \
		"'$CHECK' -i && ls /sys/class/infiniband/dpv0/device/net/ && ip -j addr show dpv0 &&
		 ip -6 -o addr show dev dpv0 scope link" >"$WORK/netns" 2>&1 || fail "--netns-iface: exit $?"
	sed 's/^/    [netns] /' "$WORK/netns"
	grep -q '"local":"192.0.2.1"' "$WORK/netns" || fail "--netns-iface: dpv0 does not hold 192.0.2.1"
	grep -q '"address":"02:64:70:76:00:01"' "$WORK/netns" || fail "--netns-iface: dpv0 has not the port's MAC"
	grep -q 'fe80::64:70ff:fe76:1/64' "$WORK/netns" || fail "--netns-iface: link-local is not GID 0"
	# a second run in the same namespace reuses the interfaces
	ip netns exec "$NS" timeout -k 5 "$TMO" sh "$RUN" --netns-iface true || fail "--netns-iface twice: exit $?"
	ip link show dpv0 >/dev/null 2>&1 && [ "$(ip -o link show dpv0 | grep -c dummy)" != 0 ] &&
		fail "a dummy dpv0 appeared in this network namespace"
else
	log "SKIP part 7 (namespace): cannot create network namespaces ($(cat "$WORK/netns.err"))"
fi

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
