#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What dpverbs SENDS on a real wire is valid RoCEv2: the veth topology of
# ud_pingpong_veth.sh (see lib.sh), tshark capturing in namespace A on
# dpv-veth-a with capture filter 'udp port 4791' while Debian's
# ibv_ud_pingpong runs between the namespaces, then
#   * test/tools/icrc_check.py --expect 0x64 <pcap>  must pass (every
#     ICRC recomputed independently; UD SEND only present);
#   * check_capture.py: every RoCE frame decodes in tshark as "UD Send Only"
#     with the right QPs/Q_Key, no malformed/expert warning or error, good
#     IPv4 checksum, >= ITERS frames each way, consecutive PSNs.
# A second capture ('arp or icmp') shows who answers ARP for the dpverbs
# addresses and that the kernel sends no ICMP about the RoCE traffic.
#
# usage: wire_capture.sh [BUILD_DIR] [ICRC_CHECK_PY]
#   ICRC_CHECK_PY defaults to <project>/test/tools/icrc_check.py; skip (77)
#   if tshark or network namespaces are missing.
# env:   DPV_ITERS (default 2000), DPV_TIMEOUT (60), DPV_KEEP_PCAP=DIR to keep
#        the captures
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
resolve_build "${1:-}"
VERIFY=${2:-$SRC/test/tools/icrc_check.py}
[ -f "$VERIFY" ] || { log "FAIL: $VERIFY not found"; exit 1; }
TSHARK=$(command -v tshark || true)
[ -n "$TSHARK" ] || skip "tshark not installed"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

ITERS=${DPV_ITERS:-2000}
TMO=${DPV_TIMEOUT:-60}
RUNDIRS="/var/run/dpdk/dpv-veth-a /var/run/dpdk/dpv-veth-b"
WORK=$(mktemp -d /tmp/dpv-multi-wire.XXXXXX)
CAP_PIDS=""

cleanup() {
	local p
	kill_own
	for p in $CAP_PIDS; do
		kill -0 "$p" 2>/dev/null && kill -INT "$p" 2>/dev/null
	done
	for p in $CAP_PIDS; do
		{ wait "$p"; } 2>/dev/null
	done
	veth_teardown
	if [ -n "${DPV_KEEP_PCAP:-}" ]; then
		mkdir -p "$DPV_KEEP_PCAP" && cp "$WORK"/*.pcap "$DPV_KEEP_PCAP"/ 2>/dev/null
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

veth_prepare

# start_capture NAME FILTER: lib.sh veth_capture, bounded by TMO * 2 + 30 s
start_capture() {
	veth_capture "$1" "$2" $((TMO * 2 + 30))
	local r=$?
	CAP_PIDS="$CAP_PIDS $CAP_PID"
	return $r
}

stop_captures() {
	local p
	sleep 0.5  # let the last frames reach the capture
	for p in $CAP_PIDS; do
		kill -INT "$p" 2>/dev/null
	done
	for p in $CAP_PIDS; do
		wait "$p"
	done
	CAP_PIDS=""
}

t0=$(date +%s.%N)
start_capture roce 'udp port 4791' || exit 1
start_capture arp 'arp or icmp' || exit 1
if veth_pingpong capture "$TMO" "$ITERS" -g 1; then
	check_output server "$WORK/capture.server" "$RC_S" "$ITERS"
	check_output client "$WORK/capture.client" "$RC_C" "$ITERS"
fi
stop_captures
check_rundirs_gone $RUNDIRS
sed 's/^/    [tshark roce] /' "$WORK/roce.tshark"

log "=== icrc_check.py --expect 0x64"
if ! "$PY" "$VERIFY" --expect 0x64 "$WORK/roce.pcap"; then
	fail "icrc_check.py rejected the capture"
fi
log "=== check_capture.py"
"$PY" "$SRC/test/multi/check_capture.py" "$WORK/roce.pcap" "$ITERS" \
	"$WORK/capture.server" "$WORK/capture.client" "$WORK/arp.pcap"
rc=$?
[ "$rc" = 77 ] && skip "check_capture.py skipped"
[ "$rc" = 0 ] || fail "check_capture.py failed"
log "--- $(echo "$(date +%s.%N) - $t0" | bc) s"

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
