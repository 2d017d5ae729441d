#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# with_daemon.sh BUILD [--config BASE.json] [--lcore] -- COMMAND [ARGS...]
#
# Runs COMMAND in shared mode: makes a configuration from BASE.json (the
# built-in default's two ports dpv0/dpv1 when not given) with "mode":
# "shared", a socket and an EAL file prefix of its own, starts
# BUILD/apps/dpverbsd/dpverbsd on it, runs COMMAND with DPVERBS_CONFIG pointing at it
# (and, for unmodified binaries, LD_LIBRARY_PATH=BUILD/compat), then stops
# the daemon with SIGTERM and checks that it exited with status 0 and left
# nothing behind (socket, EAL runtime directory).
#
# Exit status: COMMAND's (77 stays a skip); 1 when the daemon did not start,
# did not stop cleanly or left files behind.
#
# Only PIDs started here are signalled. SHARED_KEEP=1 keeps the temporary
# directory (daemon log: $TMP/dpverbsd.log).
set -u
BUILD=$(cd "$1" && pwd); shift
BASE=""
LCORE=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	case "$1" in
	--config) BASE=$2; shift 2 ;;
	--lcore) LCORE=1; shift ;;
	*) echo "with_daemon.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: with_daemon.sh BUILD [--config F] -- COMMAND..." >&2; exit 2; }

TMP=$(mktemp -d /tmp/dpv-shared.XXXXXX)
SOCK=$TMP/dpverbsd.sock
PREFIX=dpvsh-$$
CONF=$TMP/shared.json
python3 - "$BASE" "$CONF" "$SOCK" "$PREFIX" "$LCORE" <<'EOF' || exit 1
import json, sys
base, out, sock, prefix, lcore = sys.argv[1:6]
if base:
    d = json.load(open(base))
else:
    d = {"ports": [
        {"name": "dpv0", "device": {"type": "ring", "peer": "dpv1"}, "mac": "02:64:70:76:00:01",
         "ipv4": "192.0.2.1/24"},
        {"name": "dpv1", "device": {"type": "ring", "peer": "dpv0"}, "mac": "02:64:70:76:00:02",
         "ipv4": "192.0.2.2/24"}]}
d["mode"] = "shared"
d.setdefault("shared", {})["socket"] = sock
d.setdefault("eal", {})["file_prefix"] = prefix
if lcore == "1":
    d["progress"] = "lcore"
    for p in d["ports"]:
        p["lcores"] = [1]
json.dump(d, open(out, "w"), indent=1)
EOF

DPID=""
cleanup() {
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		kill -KILL "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	rm -rf "/var/run/dpdk/$PREFIX" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$PREFIX" 2>/dev/null
	[ "${SHARED_KEEP:-0}" = 1 ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$BUILD/apps/dpverbsd/dpverbsd" "$CONF" > "$TMP/dpverbsd.log" 2>&1 < /dev/null &
DPID=$!
for _ in $(seq 100); do
	[ -S "$SOCK" ] && break
	kill -0 "$DPID" 2>/dev/null || break
	sleep 0.1
done
if [ ! -S "$SOCK" ]; then
	echo "with_daemon.sh: dpverbsd did not start:" >&2
	cat "$TMP/dpverbsd.log" >&2
	exit 1
fi

export DPVERBS_CONFIG=$CONF DPV_SHARED_SOCK=$SOCK DPV_DAEMON_PID=$DPID DPV_SHARED_TMP=$TMP
export LD_LIBRARY_PATH=$BUILD/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$@"
RC=$?

# the daemon may have been stopped or restarted by the command itself (a
# restarted one is not our child: its exit status is not ours to see)
OWN=1
if [ -f "$TMP/daemon.pid" ]; then
	wait "$DPID" 2>/dev/null # the first one, killed by the command
	DPID=$(cat "$TMP/daemon.pid")
	OWN=0
fi
# running: alive and not a zombie (an exited child of ours stays one until waited for)
running() {
	# (ps, not kill -0 alone: a zombie reaped between two probes is gone,
	# and an empty state means gone too)
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ]
}
if running "$DPID"; then
	kill -TERM "$DPID" 2>/dev/null
	for _ in $(seq 100); do
		running "$DPID" || break
		sleep 0.1
	done
fi
if running "$DPID"; then
	echo "with_daemon.sh: dpverbsd did not stop within 10 s of SIGTERM" >&2
	RC=1
elif [ "$OWN" = 1 ]; then
	wait "$DPID"
	DRC=$?
	if [ "$DRC" != 0 ]; then
		echo "with_daemon.sh: dpverbsd exited with status $DRC:" >&2
		tail -20 "$TMP/dpverbsd.log" >&2
		[ "$RC" = 0 ] && RC=1
	fi
fi
DPID=""
if [ -e "$SOCK" ]; then
	echo "with_daemon.sh: dpverbsd left its socket behind" >&2
	[ "$RC" = 0 ] && RC=1
fi
if [ "$RC" != 0 ] && [ "$RC" != 77 ]; then
	echo "--- dpverbsd log ($TMP/dpverbsd.log):" >&2
	tail -30 "$TMP/dpverbsd.log" >&2
fi
exit "$RC"
