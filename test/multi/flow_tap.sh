#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# rte_flow steering on a PMD that has rte_flow: net_tap. Two dpverbs
# processes, each on its own tap device, inside one network namespace
# created (and removed) here:
#
#   netns dpvF<pid>
#   process A  net_tap0,iface=dpvtapA  --tc u32 mirred-->  dpvtapB  net_tap0  process B
#   198.51.100.1, 2 queues, flow "auto"   <--tc u32 mirred--  198.51.100.2, 1 queue, flow "off"
#
# The taps are made persistent (multi_queue) before the processes start, and
# each one's ingress (what its process sends) is redirected out of the other
# (tc u32 + mirred): a wire between the two processes that the kernel's own
# stack never sees. Debian's ibv_*_pingpong exchange QPNs over TCP on the
# namespace's loopback.
#
# Asserts:
#   1. A's /dpverbs/flow,dpv0 (dpdk-telemetry.py) lists the RoCEv2 rules
#      (ipv6 link-local, ipv4, ipv6 GIDs) and what net_tap answered: every
#      rte_flow_validate passes; if a rte_flow_create was refused (this
#      kernel has no multiq qdisc: "Disabling rte flow support") the port
#      falls back to steering "software" with a NOTICE naming net_tap and the
#      reason, and no rule is left; else steering is "rte_flow";
#   2. B ("off") asks nothing: steering "software", no rule;
#   3. traffic still flows: ibv_ud_pingpong -g 1 and ibv_rc_pingpong -g 1
#      complete; /dpverbs/port,dpv0 reports flow, steering and rx_other_ctx
#      (frames of a QP bound to context 1 received on context 0 or the
#      other way round: the kernel picks the tap queue);
#      and no frame was dropped as link_down: bring-up waits until the
#      kernel reports the tap it just set up RUNNING (else the RC client,
#      started as soon as the server listens, sent into a link still down
#      and ran out of retries: half of the runs on a loaded machine);
#   4. "isolate" on net_tap: isolation is accepted but the rules are not, so
#      the process must refuse to start with a message naming the field,
#      the PMD and the reason.
# Skips (77) without network namespaces, ip tuntap, tc u32/mirred,
# ibv_rc_pingpong or dpdk-telemetry.py.
#
# usage: flow_tap.sh [BUILD_DIR]
# env:   DPV_TIMEOUT per process (default 60 s), DPV_ITERS (2000)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
command -v ip >/dev/null || skip "iproute2 (ip) not installed"
command -v tc >/dev/null || skip "tc (iproute2) not installed"
RCPP=$(command -v ibv_rc_pingpong || true)
[ -n "$RCPP" ] || skip "ibv_rc_pingpong (Debian ibverbs-utils) not installed"
TEL=$(command -v dpdk-telemetry.py || true)
[ -n "$TEL" ] || skip "dpdk-telemetry.py (Debian dpdk) not installed"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

TMO=${DPV_TIMEOUT:-60}
ITERS=${DPV_ITERS:-2000}
NS=dpvF$$
PFX_A=dpv-flowtap-a PFX_B=dpv-flowtap-b
RUNDIRS="/var/run/dpdk/$PFX_A /var/run/dpdk/$PFX_B"
WORK=$(mktemp -d /tmp/dpv-multi-flowtap.XXXXXX)
NS_UP=0

cleanup() {
	kill_own
	if [ "$NS_UP" = 1 ]; then
		ip netns del "$NS" 2>/dev/null  # the taps go with it
		ip netns list | grep -Eq "^$NS( |$)" && log "WARN: namespace $NS still listed"
	fi
	local d
	for d in $RUNDIRS; do rm -rf "$d"; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

exec 9>/tmp/dpverbs-flowtap.lock
flock -w 300 9 || { log "could not get /tmp/dpverbs-flowtap.lock within 300 s"; exit 1; }
for d in $RUNDIRS; do
	if [ -e "$d" ]; then
		ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q "/dpdk/${d##*/}/" &&
			{ log "$d is in use by another process"; exit 1; }
		log "WARN: removing stale $d"
		rm -rf "$d"
	fi
done

ns_setup() {
	ip netns add "$NS" 2>"$WORK/netns.err" ||
		skip "cannot create network namespaces ($(cat "$WORK/netns.err"))"
	NS_UP=1
	ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 || return 1
	ip -n "$NS" link set lo up || return 1
	local t
	for t in dpvtapA dpvtapB; do
		ip -n "$NS" tuntap add dev "$t" mode tap multi_queue 2>"$WORK/tuntap.err" ||
			skip "ip tuntap add failed: $(cat "$WORK/tuntap.err")"
		ip -n "$NS" link set "$t" up || return 1
		ip netns exec "$NS" tc qdisc add dev "$t" ingress 2>"$WORK/tc.err" ||
			skip "no ingress qdisc: $(cat "$WORK/tc.err")"
	done
	# what a process sends comes in on its tap's ingress: out of the other tap
	for t in "dpvtapA dpvtapB" "dpvtapB dpvtapA"; do
		set -- $t
		ip netns exec "$NS" tc filter add dev "$1" parent ffff: protocol all u32 match u32 0 0 \
			action mirred egress redirect dev "$2" 2>"$WORK/tc.err" ||
			skip "tc u32/mirred not available: $(cat "$WORK/tc.err")"
	done
}

# config NAME IFACE MAC IPV4 IPV6 QUEUES FLOW PREFIX
config() {
	cat >"$WORK/$1.json" <<EOF
{
  "eal": { "file_prefix": "$8", "log_level": 6 },
  "log": { "lib.dpv.port": 6 },
  "ports": [ { "name": "dpv0", "device": { "type": "vdev", "args": "net_tap0,iface=$2" },
    "mac": "$3", "ipv4": "$4", "ipv6": ["$5"], "queues": $6, "flow": "$7" } ]
}
EOF
}

# run_pair NAME PROGRAM ITERS ARGS...: server A, client B (bounded run).
run_pair() {
	local name=$1 prog=$2 iters=$3; shift 3
	local port srv cli
	port=$(pick_port "$NS")
	log "=== $name: ${prog##*/} -d dpv0 $* -n $iters (A server, B client)"
	timeout -k 5 "$TMO" ip netns exec "$NS" env DPVERBS_CONFIG="$WORK/a.json" \
		LD_LIBRARY_PATH="$COMPAT" "$prog" -d dpv0 "$@" -n "$iters" -p "$port" \
		>"$WORK/$name.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$MULTI_PIDS $srv"
	if ! wait_listen "$srv" "$port" "$NS"; then
		fail "$name: server did not listen on tcp port $port"
		kill_own
		sed "s/^/    [server] /" "$WORK/$name.server"
		return 1
	fi
	# the server's runtime is up once it listens: its steering as set up
	telemetry "$WORK/$name.tel_a" "$PFX_A" /dpverbs/flow,dpv0 /dpverbs/port,dpv0
	timeout -k 5 "$TMO" ip netns exec "$NS" env DPVERBS_CONFIG="$WORK/b.json" \
		LD_LIBRARY_PATH="$COMPAT" "$prog" -d dpv0 "$@" -n "$iters" -p "$port" 127.0.0.1 \
		>"$WORK/$name.client" 2>&1 &
	cli=$!
	MULTI_PIDS="$MULTI_PIDS $cli"
	wait "$cli"; RC_C=$?
	wait "$srv"; RC_S=$?
	MULTI_PIDS=""
	check_output server "$WORK/$name.server" "$RC_S" "$iters"
	check_output client "$WORK/$name.client" "$RC_C" "$iters"
}

# telemetry OUT PREFIX CMD...
telemetry() {
	local out=$1 pfx=$2; shift 2
	printf '%s\n' "$@" | timeout -k 5 30 "$PY" "$TEL" -f "$pfx" >"$out" 2>&1
}

# check_flow FILE SERVER_LOG: what net_tap answered, and the fallback.
check_flow() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
text, log = open(sys.argv[1]).read(), open(sys.argv[2], errors="replace").read()
dec, pos, rep = json.JSONDecoder(), 0, {}
while (start := text.find("{", pos)) >= 0:
    try:
        obj, pos = dec.raw_decode(text, start)
        rep.update(obj)
    except json.JSONDecodeError:
        pos = start + 1
fails = []
f, p = rep.get("/dpverbs/flow"), rep.get("/dpverbs/port")
if not isinstance(f, dict) or not isinstance(p, dict):
    sys.exit(f"FAIL: no telemetry replies: {text[:300]}")
print(f"    A: pmd {f['pmd']}, flow {f['flow']}, queues {f['queues']}, steering {f['steering']}, "
      f"isolated {f['isolated']}, {f['rules']} rules, {f['flows']} flows")
if f["reason"]:
    print(f"    A: reason: {f['reason']}")
rules = [f[f"rule_{i}"] for i in range(f["rules"])]
for i, r in enumerate(rules):
    print(f"    A: rule_{i}: {r['match']}: validate {r['validate']}; create {r['create']}")
want = ["eth / ipv6 dst fe80::64:70ff:fe76:f01 / udp dst 4791 -> queue 0",
        "eth / ipv4 dst 198.51.100.1 / udp dst 4791 -> queue 0",
        "eth / ipv6 dst fd00:6470:7600::1 / udp dst 4791 -> queue 0"]
if [r["match"] for r in rules] != want:
    fails.append(f"rules {[r['match'] for r in rules]}")
if f["pmd"] != "net_tap" or f["flow"] != "auto" or f["isolated"] != 0 or f["queues"] != 2:
    fails.append(f"identity {f}")
if any(r["validate"] != "ok" for r in rules):
    fails.append("net_tap refused to validate a RoCEv2 rule")
if f["steering"] == "software":
    if not any(r["create"] not in ("ok", "not asked") for r in rules):
        fails.append("software steering, but no refusal recorded")
    if f["flows"] != 0:
        fails.append(f"{f['flows']} rules left after the fallback")
    if "net_tap refused" not in f["reason"]:
        fails.append(f"reason {f['reason']!r}")
    if 'flow "auto": PMD net_tap refused' not in log or "falls back to software dispatch" not in log:
        fails.append("no NOTICE about the fallback in the server's output")
elif f["steering"] == "rte_flow":
    if any(r["create"] != "ok" for r in rules) or f["flows"] != len(rules):
        fails.append("steering rte_flow, but not every rule was created")
else:
    fails.append(f"steering {f['steering']!r}")
for k in ("flow", "flow_isolated", "steering", "rx_other_ctx", "pmd", "queues"):
    if k not in p:
        fails.append(f"/dpverbs/port has no {k}")
if p.get("steering") != f["steering"]:
    fails.append("/dpverbs/port and /dpverbs/flow disagree on steering")
for m in fails:
    print(f"FAIL: {m}")
sys.exit(1 if fails else 0)
EOF
}

# check_port FILE WHO FLOW: steering software, counters after traffic.
check_port() {
	"$PY" - "$@" <<'EOF'
import json, sys
text, who, flow = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
dec, pos, rep = json.JSONDecoder(), 0, {}
while (start := text.find("{", pos)) >= 0:
    try:
        obj, pos = dec.raw_decode(text, start)
        rep.update(obj)
    except json.JSONDecodeError:
        pos = start + 1
p, f = rep.get("/dpverbs/port"), rep.get("/dpverbs/flow")
if not isinstance(p, dict) or not isinstance(f, dict):
    sys.exit(f"FAIL: {who}: no telemetry replies: {text[:300]}")
print(f"    {who}: flow {p['flow']}, steering {p['steering']}, queues {p['queues']}, "
      f"rx_roce {p['rx_roce']}, rx_other_ctx {p['rx_other_ctx']}, rules {f['rules']}, "
      f"drop_link_down {p['drop_link_down']}")
bad = p["flow"] != flow or p["rx_roce"] == 0 or p["rx_other_ctx"] > p["rx_roce"]
# bring-up waits for the tap's link: nothing sent into a link still down
bad = bad or p["drop_link_down"] != 0
if flow == "off":
    bad = bad or p["steering"] != "software" or f["rules"] != 0 or f["flows"] != 0
if p["queues"] == 1:
    bad = bad or p["rx_other_ctx"] != 0
sys.exit(1 if bad else 0)
EOF
}

ns_setup || { log "namespace/tap setup failed"; exit 1; }
log "namespace $NS: dpvtapA <-> dpvtapB (tc u32 mirred)"
config a dpvtapA 02:64:70:76:0f:01 198.51.100.1/24 fd00:6470:7600::1/64 2 auto "$PFX_A"
config b dpvtapB 02:64:70:76:0f:02 198.51.100.2/24 fd00:6470:7600::2/64 1 off "$PFX_B"

# 1-3: UD, then RC; A's steering while the server waits for its client
run_pair ud "$PINGPONG" "$ITERS" -g 1
check_flow "$WORK/ud.tel_a" "$WORK/ud.server" || fail "A's rte_flow state"
check_rundirs_gone $RUNDIRS

# RC with telemetry of both sides while the traffic runs
PORT=$(pick_port "$NS")
log "=== rc: ibv_rc_pingpong -g 1 (stopped after the telemetry)"
timeout -k 5 "$TMO" ip netns exec "$NS" env DPVERBS_CONFIG="$WORK/a.json" LD_LIBRARY_PATH="$COMPAT" \
	"$RCPP" -d dpv0 -g 1 -n 100000000 -p "$PORT" >"$WORK/rc.server" 2>&1 &
SRV=$!
MULTI_PIDS="$SRV"
if wait_listen "$SRV" "$PORT" "$NS"; then
	timeout -k 5 "$TMO" ip netns exec "$NS" env DPVERBS_CONFIG="$WORK/b.json" \
		LD_LIBRARY_PATH="$COMPAT" "$RCPP" -d dpv0 -g 1 -n 100000000 -p "$PORT" 127.0.0.1 \
		>"$WORK/rc.client" 2>&1 &
	MULTI_PIDS="$MULTI_PIDS $!"
	sleep 2
	telemetry "$WORK/rc.tel_a" "$PFX_A" /dpverbs/port,dpv0 /dpverbs/flow,dpv0
	telemetry "$WORK/rc.tel_b" "$PFX_B" /dpverbs/port,dpv0 /dpverbs/flow,dpv0
	check_port "$WORK/rc.tel_a" A auto || { fail "A's port telemetry"; cat "$WORK/rc.tel_a"; }
	check_port "$WORK/rc.tel_b" B off || { fail "B's port telemetry"; cat "$WORK/rc.tel_b"; }
	if [ "$MULTI_FAIL" != 0 ]; then
		sed "s/^/    [rc server] /" "$WORK/rc.server"
		sed "s/^/    [rc client] /" "$WORK/rc.client"
	fi
else
	fail "rc: server did not listen"
fi
kill_own
for d in $RUNDIRS; do rm -rf "$d"; done  # killed processes leave them

# 4: "isolate" on net_tap must refuse to start, naming field, PMD and reason
log "=== isolate on net_tap (isolation accepted, rules refused): must not start"
config i dpvtapA 02:64:70:76:0f:01 198.51.100.1/24 fd00:6470:7600::1/64 2 isolate "$PFX_A"
timeout -k 5 "$TMO" ip netns exec "$NS" env DPVERBS_CONFIG="$WORK/i.json" LD_LIBRARY_PATH="$COMPAT" \
	ibv_devinfo >"$WORK/isolate.out" 2>&1
rc=$?
grep '^dpverbs\|ibv\|Failed' "$WORK/isolate.out" | sed 's/^/    [isolate] /'
if grep -q 'hca_id' "$WORK/isolate.out"; then
	# a kernel with the multiq qdisc: net_tap creates the rules, isolation works
	log "net_tap accepted the isolated port's rules on this kernel: nothing to refuse"
elif ! grep -q 'port dpv0: flow "isolate": PMD net_tap refused .*an isolated port would receive no RoCEv2' \
	"$WORK/isolate.out"; then
	fail "isolate: no clear message (ibv_devinfo exit $rc)"
fi
rm -rf "/var/run/dpdk/$PFX_A"  # a runtime that failed after EAL leaves its directory

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
