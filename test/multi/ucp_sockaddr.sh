#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# UCP client/server connections through rdma_cm: Debian's unmodified UCX
# 1.13 io_demo (ucx-utils; ucp_listener_create / ucp_ep_create with a
# socket address) on the drop-in libibverbs.so.1 + librdmacm.so.1, two
# processes, both under "dpverbs-run --view":
#   memif: config/pair-a.json (server, 192.0.2.1) and pair-b.json over
#          net_memif;
#   veth:  config/veth-a.json (server, 198.51.100.1) and veth-b.json
#          (net_af_packet) on the veth pair of lib.sh's veth_setup, each in
#          its namespace (no kernel interface holds the ports' addresses:
#          rdma_cm resolves them from dpverbs' GID tables and ARP).
# UCX's rdmacm connection manager (libuct_rdmacm) resolves the server's
# address with rdma_resolve_addr/route, connects
# with a QP-less id (the QPN of a dummy UD QP in the REQ), reads the peer's
# address with rdma_init_qp_attr, finishes with rdma_establish, and carries
# UCP's wire-up in the private data; the data lanes are then rc_verbs
# (UCX_TLS=rc_v,self) or ud_verbs (UCX_TLS=ud_v,self) on dpv0:1.
# The rc_verbs run sets UCX_SOCKADDR_TLS_PRIORITY=rdmacm (that connection
# manager alone: no fallback to UCX's TCP one); the ud_verbs run keeps UCX's
# default order (rdmacm,tcp,sockcm) and checks in its debug log that the
# client's endpoint was made on the rdmacm one ("on cm rdmacm").
# For each transport: the server (io_demo -p PORT -d 1024:65536 -q; its
# sizes bound what it accepts) listens on 0.0.0.0; the
# client (io_demo -p PORT -i 200 -o read,write -d 1024:65536 -q -c 1 -n 40
# SERVER) must exit 0 with "Client exit with status 'OK'" after 200
# reads/writes with data checks (-q), having logged "Connected to server";
# both sides log (UCX_LOG_LEVEL=info) an endpoint whose tag lane is
# <tl>/dpv0:1; the server logged the connection from the client's port
# address and, stopped with SIGINT (it serves forever), exits 0.
#
# usage: ucp_sockaddr.sh memif|veth [BUILD_DIR]
# env:   DPV_TIMEOUT for the client (60 s)
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
MODE=${1:-}
case "$MODE" in memif|veth) ;; *) echo "usage: $0 memif|veth [BUILD_DIR]" >&2; exit 2 ;; esac
resolve_build "${2:-}"
command -v io_demo >/dev/null || skip "io_demo (Debian ucx-utils) not installed"
[ -e "$COMPAT/librdmacm.so.1" ] || skip "$COMPAT/librdmacm.so.1 not built"
[ -x "$BUILD/apps/dpv_sysfs/dpv_sysfs" ] || skip "$BUILD/apps/dpv_sysfs/dpv_sysfs not built"
RUN="$BUILD/apps/dpverbs-run"
export DPVERBS_DROPIN=$COMPAT
unset DPVERBS_CONFIG UCX_TLS UCX_NET_DEVICES
TMO=${DPV_TIMEOUT:-60}
WORK=$(mktemp -d /tmp/dpv-multi-ucp.XXXXXX)
pair_mode_vars "$MODE"
if [ "$MODE" = memif ]; then ADDR_S=192.0.2.1 ADDR_C=192.0.2.2; else ADDR_S=198.51.100.1 ADDR_C=198.51.100.2; fi
on_exit pair_cleanup
pair_prepare
timeout -k 5 "$TMO" sh "$RUN" --view true 2>"$WORK/probe" ||
	skip "dpverbs-run --view: no private mount namespace here ($(cat "$WORK/probe"))"

# one_run TLS [default]: server, client, checks ("default": UCX's own CM
# order, debug log)
one_run() {
	local tls=$1 tl=${1%%_v}_verbs port srv rc_c i
	local envs=(UCX_LOG_LEVEL=info UCX_SOCKADDR_TLS_PRIORITY=rdmacm "UCX_TLS=$tls,self")
	[ "${2:-}" = default ] && envs=(UCX_LOG_LEVEL=debug "UCX_TLS=$tls,self")
	port=$(pick_port)
	# shellcheck disable=SC2086
	env "${envs[@]}" timeout -k 5 $((TMO + 30)) "${NSX_S[@]}" sh "$RUN" -c "$CONF_S" --view \
		io_demo -p "$port" -d 1024:65536 -q >"$WORK/$tls.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$srv"
	# the listener is an rdma_cm one: no TCP port to watch; its log line
	for i in $(seq 1 300); do
		grep -q 'started listener' "$WORK/$tls.server" && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q 'started listener' "$WORK/$tls.server"; then
		fail "$tls: the io_demo server did not start its listener"
		kill_own
		grep -Ev '^EAL' "$WORK/$tls.server" | tail -n 20 | sed "s/^/    [$tls server] /"
		return
	fi
	# shellcheck disable=SC2086
	env "${envs[@]}" timeout -k 5 "$TMO" "${NSX_C[@]}" sh "$RUN" -c "$CONF_C" --view \
		io_demo -p "$port" -i 200 -o read,write -d 1024:65536 -q -c 1 -n 40 "$ADDR_S" \
		>"$WORK/$tls.client" 2>&1
	rc_c=$?
	# the server serves forever: SIGINT ends its loop (io_demo's handler)
	# and it exits as usual (dpverbs' EAL files removed)
	kill -INT "$srv" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$srv" 2>/dev/null; then
		fail "$tls: the server did not end within 10 s of SIGINT"
		kill_own
	else
		wait "$srv" || fail "$tls: the server exited with $? after SIGINT"
		MULTI_PIDS=""
	fi
	[ "$rc_c" = 0 ] || fail "$tls: client exit $rc_c"
	grep -q "Client exit with status 'OK'" "$WORK/$tls.client" || fail "$tls: no \"Client exit with status 'OK'\""
	grep -Fq "Connected to server [0] $ADDR_S" "$WORK/$tls.client" || fail "$tls: the client did not connect"
	for f in client server; do
		grep -Eq "ep_cfg\[[0-9]+\]: tag\($tl/dpv0:1" "$WORK/$tls.$f" ||
			fail "$tls: $f: no endpoint with its tag lane on $tl/dpv0:1"
	done
	if [ "${2:-}" = default ]; then
		grep -Eq 'client created ep .* on device dpv0:1, .* on cm rdmacm' "$WORK/$tls.client" ||
			fail "$tls: the client's endpoint was not made on the rdmacm connection manager"
	fi
	grep -Fq "from client $ADDR_C:" "$WORK/$tls.server" ||
		fail "$tls: the server logged no connection request from $ADDR_C"
	grep -Eq "local address $ADDR_S:[0-9]+ remote address $ADDR_C:" "$WORK/$tls.server" ||
		fail "$tls: the server's endpoint is not $ADDR_S <- $ADDR_C"
	grep -E 'Connected to server|DEMO\] total|Client exit' "$WORK/$tls.client" |
		sed 's/^\[[0-9.]*\] //' | sed "s/^/    [$tls client] /"
	if [ "$MULTI_FAIL" != 0 ]; then
		grep -Ev '^EAL|active: 0/0' "$WORK/$tls.server" | tail -n 25 | sed "s/^/    [$tls server] /"
		grep -Ev '^EAL' "$WORK/$tls.client" | tail -n 25 | sed "s/^/    [$tls client] /"
	fi
}

one_run rc_v
one_run ud_v default

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "OK: UCP sockaddr connections (io_demo) through rdma_cm, rc_verbs and ud_verbs, over $MODE"
exit 0
