#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Applications on dpverbs, small sizes, their data checked: Debian's fio
# (ioengine=rdma, through the drop-in librdmacm) and Open MPI over UCX
# (apps/dpv_mpi_pingpong), two processes:
#   embedded: server / rank 0 on config/pair-a.json (memif server, 192.0.2.1),
#             client / rank 1 on config/pair-b.json;
#   shared:   (under test/shared/with_daemon.sh) both applications of one
#             dpverbsd, server / rank 0 on dpv0, client / rank 1 on dpv1.
#
# fio:
#   send    verb=send, 64 KiB blocks: the client writes fio's verify blocks
#           (verify=crc32c, do_verify=0: header with offset and CRC of the
#           block), the server (rw=read) checks every block it receives
#           (verify_fatal). The client is paced (thinktime 2 ms) because fio's
#           rdma engine connects with rnr_retry_count 0: a receive the server
#           has not reposted yet would end the job, on any RDMA stack.
#   control the same with the server expecting md5 blocks: it must fail (the
#           check above checks something).
#   write   verb=write, 64 KiB, iodepth 16;  read: verb=read, 4 KiB.
#   Each: both sides exit 0 with err=0 and every block issued (size / bs).
# MPI: mpirun with two application contexts (one per configuration or
#   device), --mca pml ucx, UCX_TLS=self,rc_verbs,ud_verbs (no shared memory,
#   no TCP): ping-pong 8 B..1 MiB and allreduce, every byte and element
#   checked by the program ("all messages checked", exit 0), and UCX's log
#   names rc_verbs on the dpverbs device as the tag lane to the peer.
#
# usage: apps.sh embedded|shared [BUILD_DIR]
# env:   DPV_TIMEOUT per process (90 s), DPV_ONLY=fio|mpi
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
AMODE=${1:-}
case "$AMODE" in embedded|shared) ;; *) echo "usage: $0 embedded|shared [BUILD_DIR]" >&2; exit 2 ;; esac
resolve_build "${2:-}"
RUN="$BUILD/apps/dpverbs-run"
TMO=${DPV_TIMEOUT:-90}
ONLY=${DPV_ONLY:-}
export DPVERBS_DROPIN=$COMPAT
unset UCX_TLS UCX_NET_DEVICES
WORK=$(mktemp -d /tmp/dpv-apps.XXXXXX)

# Every process started here carries DPV_APPS_TAG=$WORK/<run> in its
# environment: fio runs each job in a process group of its own and a job
# blocked in a verb outlives its killed parent, so the processes of a run
# are found by that mark (ours only: $WORK is this script's) and stopped.
tagged() { # PREFIX: PIDs whose DPV_APPS_TAG starts with PREFIX
	local e p
	for e in /proc/[0-9]*/environ; do
		p=${e#/proc/}; p=${p%/environ}
		[ "$p" = $$ ] && continue
		grep -qz "^DPV_APPS_TAG=$1" "$e" 2>/dev/null && echo "$p"
	done
}
end_tag() { # PREFIX: TERM, then KILL, what carries it, until nothing does
	local i p sig=TERM
	for i in $(seq 1 40); do
		p=$(tagged "$1")
		[ -z "$p" ] && return 0
		[ "$i" -gt 10 ] && sig=KILL
		# shellcheck disable=SC2086
		kill -$sig $p 2>/dev/null
		sleep 0.1
	done
	log "WARN: processes of $1 still there: $(tagged "$1" | tr '\n' ' ')"
}
apps_cleanup() {
	end_tag "$WORK/"
	kill_own
	if [ "$AMODE" = embedded ]; then rm -f "$SOCK"; fi
	rm -rf "$WORK"
}
on_exit apps_cleanup

if [ "$AMODE" = embedded ]; then
	pair_mode_vars memif
	MODE=memif
	pair_prepare
	SRV=(sh "$RUN" -c "$CONF_S") CLI=(sh "$RUN" -c "$CONF_C")
	DEV_S=dpv0 DEV_C=dpv0
else
	[ -n "${DPV_SHARED_SOCK:-}" ] || { log "shared mode needs test/shared/with_daemon.sh"; exit 2; }
	SRV=(sh "$RUN") CLI=(sh "$RUN")
	DEV_S=dpv0 DEV_C=dpv1
fi

# spawn NAME CMD...: CMD marked DPV_APPS_TAG=$WORK/NAME, output in
# $WORK/NAME; sets SPAWNED (its PID) and SPAWNED_TAG
spawn() {
	local name=$1; shift
	DPV_APPS_TAG="$WORK/$name" timeout -k 5 "$TMO" "$@" >"$WORK/$name" 2>&1 &
	SPAWNED=$!
	SPAWNED_TAG="$WORK/$name"
	MULTI_PIDS="$MULTI_PIDS $SPAWNED"
}

# wait_text FILE TEXT PID: until FILE holds TEXT (30 s), or PID ended
wait_text() {
	local i
	for i in $(seq 1 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

show() { grep -Ev '^EAL|^\s*$' "$WORK/$1" | tail -n "${2:-15}" | sed "s/^/    [$1] /"; }

# fio_pair NAME EXPECT SERVER_OPTS -- CLIENT_OPTS: EXPECT ok|fail
# fio's verb=send has no flow control: the server keeps iodepth receives
# posted and posts one again only after its thread has reaped and checked a
# block; the client sends its next block as soon as the last one is
# acknowledged, and with fio's rnr_retry_count 0 the first RNR NAK (the
# server's thread descheduled for iodepth blocks' time) ends the job. Its
# rate_iops does not pace the client: the client sleeps 500 ms after the
# handshake (engines/rdma.c) and its rate then catches up in one burst; a
# thinktime between blocks does pace it (with 2 ms the server may be 32 ms
# late; with rate_iops=500 this failed in half the runs, the server's RQ
# and CQ found in order after the fact). A run that still ends so (client
# "RNR retry counter exceeded") is run again, at most twice, with a WARN line.
fio_pair() {
	local try
	for try in 1 2 3; do
		fio_pair_once "$@"
		[ "$FIO_RACE" = 1 ] || return
		log "WARN: $1: RNR NAK (the fio server had no receive posted; fio's rnr_retry 0), run $try; again"
	done
	fail "$1: RNR NAK ended fio's job three times"
}
fio_pair_once() {
	local name=$1 expect=$2; shift 2
	local sopts=() copts=() port s c rc_s rc_c n
	FIO_RACE=0
	while [ "$1" != -- ]; do sopts+=("$1"); shift; done
	shift
	copts=("$@")
	port=$(pick_port)
	spawn "$name.srv" "${SRV[@]}" fio --name=srv --ioengine=rdma --port="$port" --rw=read "${sopts[@]}"
	s=$SPAWNED
	if ! wait_text "$WORK/$name.srv" "waiting for connection" "$s"; then
		fail "$name: the fio server did not listen"
		show "$name.srv"
		end_tag "$WORK/$name."
		return
	fi
	spawn "$name.cli" "${CLI[@]}" fio --name=cli --ioengine=rdma --hostname=192.0.2.1 --port="$port" \
		--rw=write "${copts[@]}"
	c=$SPAWNED
	# the server ends when the client has finished (or, the control, when
	# a block fails its check), the client when the server has answered
	# its last block (or its job failed); once one has ended the other has
	# 10 s, then what is left of the run is stopped
	# fio's client does not end after a failed completion: its getevents
	# goes back to ibv_get_cq_event, which no completion wakes again (fio's
	# engines/rdma.c, on any RDMA stack), so an RNR NAK left both
	# processes waiting until the test's timeout: seeing the message is
	# seeing the end
	local rnr=0
	while kill -0 "$s" 2>/dev/null && kill -0 "$c" 2>/dev/null; do
		if grep -q "RNR retry counter exceeded" "$WORK/$name.cli" 2>/dev/null; then
			rnr=1
			break
		fi
		sleep 0.1
	done
	for n in $(seq 1 100); do
		[ $rnr = 1 ] && break
		kill -0 "$s" 2>/dev/null || kill -0 "$c" 2>/dev/null || break
		sleep 0.1
	done
	end_tag "$WORK/$name."
	wait "$s"; rc_s=$?
	wait "$c"; rc_c=$?
	if [ "$expect" = fail ]; then
		if [ "$rc_s" != 0 ] && grep -Eq "verify: bad|bad magic|verify type mismatch|md5: verify failed|crc32c: verify failed|err= *84" "$WORK/$name.srv"; then
			log "$name: the server refused the blocks, as it must: $(grep -Eo 'verify type mismatch[^;]*|bad magic[^;]*|verify failed[^;]*' "$WORK/$name.srv" | head -1)"
		else
			fail "$name: the server with another verify type did not fail on the blocks (exit $rc_s)"
			show "$name.srv"
		fi
		return
	fi
	if [ "$rc_c" != 0 ] && grep -q "RNR retry counter exceeded" "$WORK/$name.cli"; then
		FIO_RACE=1
		return
	fi
	[ "$rc_s" = 0 ] || fail "$name: fio server exit $rc_s"
	[ "$rc_c" = 0 ] || fail "$name: fio client exit $rc_c"
	# verb=send: the server receives every block; write/read: the server's
	# job completes once, when the client says it has finished
	n=$(grep -Eo 'issued rwts: total=[0-9]+' "$WORK/$name.srv" | grep -Eo '[0-9]+$')
	[ "${n:-0}" = "$FIO_SRV_N" ] || fail "$name: the server completed ${n:-no} I/Os, $FIO_SRV_N expected"
	n=$(grep -Eo 'issued rwts: total=0,[0-9]+' "$WORK/$name.cli" | grep -Eo '[0-9]+$')
	[ "${n:-0}" = "$FIO_N" ] || fail "$name: the client completed ${n:-no} blocks, $FIO_N expected"
	grep -q "err= 0" "$WORK/$name.srv" && grep -q "err= 0" "$WORK/$name.cli" || fail "$name: err != 0"
	if [ "$MULTI_FAIL" != 0 ]; then show "$name.srv"; show "$name.cli"; return; fi
	log "$name: $(grep -E '^ *(READ|WRITE):' "$WORK/$name.srv" "$WORK/$name.cli" | sed 's/.*: *//; s/,.*//' | paste -sd ' ')"
}

if [ -z "$ONLY" ] || [ "$ONLY" = fio ]; then
	if ! command -v fio >/dev/null; then
		fail "fio (Debian fio) not installed"
	else
		FIO_N=64 FIO_SRV_N=64
		fio_pair fio-send ok --bs=64k --size=4m --iodepth=16 --verify=crc32c --verify_fatal=1 -- \
			--verb=send --bs=64k --size=4m --iodepth=1 --thinktime=2000 --verify=crc32c --do_verify=0 --verify_state_save=0
		fio_pair fio-send-control fail --bs=64k --size=4m --iodepth=16 --verify=md5 --verify_fatal=1 -- \
			--verb=send --bs=64k --size=4m --iodepth=1 --thinktime=2000 --verify=crc32c --do_verify=0 --verify_state_save=0
		FIO_N=256 FIO_SRV_N=1
		fio_pair fio-write ok --bs=64k --size=16m --iodepth=16 -- --verb=write --bs=64k --size=16m --iodepth=16
		FIO_N=1024 FIO_SRV_N=1
		fio_pair fio-read ok --bs=4k --size=4m --iodepth=16 -- --verb=read --bs=4k --size=4m --iodepth=16
	fi
fi

if [ -z "$ONLY" ] || [ "$ONLY" = mpi ]; then
	MPIPP=$BUILD/apps/dpv_mpi_pingpong/dpv_mpi_pingpong
	if ! command -v mpirun >/dev/null || [ ! -x "$MPIPP" ]; then
		fail "Open MPI (Debian openmpi-bin, libopenmpi-dev) not installed or $MPIPP not built"
	else
		ARGS=(--max 1m --iters 200 --big-iters 20 --warmup 10 --startup 200)
		spawn mpi mpirun --allow-run-as-root --oversubscribe --bind-to none \
			--mca pml ucx --mca pml_ucx_devices any --mca btl self --mca osc ^ucx \
			-x UCX_TLS=self,rc_verbs,ud_verbs -x UCX_LOG_LEVEL=info -x DPVERBS_DROPIN \
			-np 1 env UCX_NET_DEVICES="$DEV_S:1" "${SRV[@]}" --view "$MPIPP" "${ARGS[@]}" : \
			-np 1 env UCX_NET_DEVICES="$DEV_C:1" "${CLI[@]}" --view "$MPIPP" "${ARGS[@]}"
		wait "$SPAWNED"; rc=$?
		end_tag "$SPAWNED_TAG"
		[ "$rc" = 0 ] || fail "mpi: mpirun exit $rc"
		grep -qx "all messages checked" "$WORK/mpi" || fail "mpi: the program did not check every message"
		n=$(grep -c '^pingpong ' "$WORK/mpi"); [ "$n" = 18 ] || fail "mpi: $n ping-pong sizes, 18 expected (8 B..1 MiB)"
		n=$(grep -c '^allreduce ' "$WORK/mpi"); [ "$n" = 18 ] || fail "mpi: $n allreduce sizes, 18 expected"
		# (UCX_TLS leaves no other way between the ranks: no shared memory, no TCP)
		grep -Eq "ep_cfg\[[0-9]+\]: tag\(rc_verbs/dpv[01]:1\)" "$WORK/mpi" ||
			fail "mpi: UCX's log shows no endpoint whose tag lane is rc_verbs on a dpverbs device"
		if [ "$MULTI_FAIL" != 0 ]; then
			show mpi 40
		else
			log "mpi: $(grep -E '^pingpong (8|4096|1048576) |^allreduce 8 ' "$WORK/mpi" | paste -sd ';')"
		fi
	fi
fi

[ "$MULTI_FAIL" = 0 ] || { log "FAILED"; exit 1; }
log "OK: fio (send with every block verified, write, read) and MPI over UCX ($AMODE mode)"
