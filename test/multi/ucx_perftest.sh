#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's unmodified UCX 1.13 (ucx-utils' ucx_perftest) on the drop-in
# libibverbs.so.1, two processes, both under "dpverbs-run --view" (the sysfs
# and /dev/infiniband view UCX needs to see the devices):
#   memif: config/pair-a.json (server) and pair-b.json (client) over
#          net_memif; ucx_perftest's own exchange is TCP over 127.0.0.1;
#   veth:  config/veth-a.json / veth-b.json (net_af_packet) on a veth pair
#          between two network namespaces made here (lib.sh veth_setup);
#          the exchange is TCP over the kernel's 198.51.100.11/.12 on the
#          same veth.
# The only UCX settings are the transport selection a user makes on any
# host:
#   UCP (protocol layer), UCX_TLS=rc_v,self (rc_verbs; ud_verbs only as the
#   auxiliary wire-up transport) and UCX_TLS=ud_v,self (ud_verbs):
#     tag_lat 8 B -n 2000, tag_bw 64 KiB -n 500, tag_bw 1 MiB -n 50
#     (rendezvous: RDMA READ on rc_verbs, fragments on ud_verbs)
#   UCT (transport layer), -x rc_verbs / -x ud_verbs -d dpv0:1:
#     am_lat 64 B -n 2000
#   memif only: UCP tag_lat over RoCEv2/IPv6 (UCX_IB_GID_INDEX=2, the
#     pair's fd00:6470:7600::/64; debug log: the address handle's dgid)
# Asserts for each: both sides exit 0, the client printed "Final: <iters>",
# and (UCP) both sides logged at UCX_LOG_LEVEL=info that the endpoint's tag
# lane is <tl>/dpv0:1.
#
# usage: ucx_perftest.sh memif|veth [BUILD_DIR]
# env:   DPV_TIMEOUT per process (60 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
MODE=${1:-}
case "$MODE" in memif|veth) ;; *) echo "usage: $0 memif|veth [BUILD_DIR]" >&2; exit 2 ;; esac
resolve_build "${2:-}"
command -v ucx_perftest >/dev/null || skip "ucx_perftest (Debian ucx-utils) not installed"
RUN="$BUILD/apps/dpverbs-run"
[ -x "$BUILD/apps/dpv_sysfs/dpv_sysfs" ] || skip "$BUILD/apps/dpv_sysfs/dpv_sysfs not built"
export DPVERBS_DROPIN=$COMPAT
unset DPVERBS_CONFIG UCX_TLS UCX_NET_DEVICES
TMO=${DPV_TIMEOUT:-60}
WORK=$(mktemp -d /tmp/dpv-multi-ucx.XXXXXX)
pair_mode_vars "$MODE"
if [ "$MODE" = memif ]; then HOST=127.0.0.1; else HOST=198.51.100.11; fi
on_exit pair_cleanup
pair_prepare
timeout -k 5 "$TMO" sh "$RUN" --view true 2>"$WORK/probe" ||
	skip "dpverbs-run --view: no private mount namespace here ($(cat "$WORK/probe"))"

# one_run NAME TLS ITERS ARGS...: server (CONF_S) and client (CONF_C);
# TLS is UCX_TLS for UCP tests, "-" for UCT tests (ARGS carry -x/-d).
one_run() {
	local name=$1 tls=$2 iters=$3; shift 3
	local port srv rc_c rc_s envs=(UCX_LOG_LEVEL=info)
	[ -n "${GID6:-}" ] && envs=(UCX_LOG_LEVEL=debug UCX_IB_GID_INDEX=2)
	[ "$tls" != - ] && envs+=("UCX_TLS=$tls")
	port=$(pick_port "${NSX_S[0]:+$NS_A}")
	# shellcheck disable=SC2086
	env "${envs[@]}" timeout -k 5 "$TMO" "${NSX_S[@]}" sh "$RUN" -c "$CONF_S" --view \
		ucx_perftest "$@" -n "$iters" -p "$port" >"$WORK/$name.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	if ! wait_listen "$srv" "$port" "${NSX_S[0]:+$NS_A}"; then
		fail "$name: server did not listen on tcp port $port"
		kill_own
		sed "s/^/    [$name server] /" "$WORK/$name.server" | grep -v EAL
		return
	fi
	# shellcheck disable=SC2086
	env "${envs[@]}" timeout -k 5 "$TMO" "${NSX_C[@]}" sh "$RUN" -c "$CONF_C" --view \
		ucx_perftest "$@" -n "$iters" -p "$port" "$HOST" >"$WORK/$name.client" 2>&1
	rc_c=$?
	wait "$srv"; rc_s=$?
	MULTI_PIDS=""
	[ "$rc_c" = 0 ] || fail "$name: client exit $rc_c"
	[ "$rc_s" = 0 ] || fail "$name: server exit $rc_s"
	grep -Eq "^Final: +$iters " "$WORK/$name.client" || fail "$name: no 'Final: $iters' line"
	if [ "$tls" != - ]; then
		local tl=${tls%%_v,*}_verbs f
		for f in "$WORK/$name.client" "$WORK/$name.server"; do
			grep -Eq "ep_cfg\[[0-9]+\]: tag\($tl/dpv0:1" "$f" ||
				fail "$name: ${f##*.}: the tag lane is not $tl/dpv0:1"
		done
	fi
	if [ -n "${GID6:-}" ]; then
		grep -Eq 'ah_attr .* dgid=fd00:6470:7600::1 sgid_index=2' "$WORK/$name.client" ||
			fail "$name: the client's address handle is not to fd00:6470:7600::1 from GID 2"
	fi
	log "$name: $(grep -E '^Final:|ep_cfg' "$WORK/$name.client" | sed 's/.*UCX  INFO  *//' | tr -s ' ' | paste -sd ';')"
	if [ "$MULTI_FAIL" != 0 ]; then
		grep -Ev '^EAL|^\||^\+' "$WORK/$name.server" | tail -n 15 | sed "s/^/    [$name server] /"
		grep -Ev '^EAL|^\||^\+' "$WORK/$name.client" | tail -n 15 | sed "s/^/    [$name client] /"
	fi
}

for tls in rc_v ud_v; do
	one_run "ucp-$tls-tag_lat" "$tls,self" 2000 -t tag_lat -s 8
	one_run "ucp-$tls-tag_bw-64k" "$tls,self" 500 -t tag_bw -s 65536
	one_run "ucp-$tls-tag_bw-1m" "$tls,self" 50 -t tag_bw -s 1048576
done
for tl in rc_verbs ud_verbs; do
	one_run "uct-$tl-am_lat" - 2000 -t am_lat -x "$tl" -d dpv0:1 -s 64
done
# RoCEv2 over IPv6 (memif: the pair's fd00:6470:7600::/64): UCX_IB_GID_INDEX=2;
# ud_verbs takes the IP version of each packet from wc.sl (1 for IPv6)
if [ "$MODE" = memif ]; then
	for tls in rc_v ud_v; do
		GID6=1 one_run "ucp-$tls-tag_lat-ipv6" "$tls,self" 500 -t tag_lat -s 8
	done
fi

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "OK: ucx_perftest tag_lat/tag_bw over rc_verbs and ud_verbs, am_lat over both (UCT), $MODE"
exit 0
