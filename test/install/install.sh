#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed tree works on its own (suite 'install'):
#   1. meson install --destdir into a temporary folder; every expected file is
#      there (libraries, drop-in, header, .pc, programs, configs, docs, a man
#      page per doc/man page and a .so page per other name);
#   2. dpverbs-run ibv_devinfo lists dpv0 and dpv1 from the staged drop-in;
#      dpverbs-run rping loads the staged librdmacm.so.1 (BIND_NOW) and
#      fails cleanly in rdma_bind_addr (EADDRNOTAVAIL: 203.0.113.7 is no
#      port's address);
#      dpverbs-run --view finds the staged dpv_sysfs (a RoCE v2 GID type);
#   3. man finds and renders an alias page (ibv_dealloc_td -> ibv_alloc_td.3);
#   4. test/install/app.c builds with the staged dpverbs.pc and with
#      meson-uninstalled/dpverbs-uninstalled.pc, and runs (verbs calls and
#      the hugepage allocator behind a parent domain);
#   5. Debian's ibv_rc_pingpong between two processes over net_memif, both
#      started with dpverbs-run -c and the staged pair-a.json / pair-b.json.
#
# usage: install.sh BUILD_DIR PREFIX BINDIR LIBDIR INCLUDEDIR DATADIR MANDIR CC
set -u
. "$(dirname "$(readlink -f "$0")")/../multi/lib.sh"
[ $# -eq 8 ] || { echo "usage: ${0##*/} BUILD PREFIX BINDIR LIBDIR INCLUDEDIR DATADIR MANDIR CC" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
PREFIX=$2
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PREFIX/$1" ;; esac; }
BINDIR=$(abs "$3"); LIBDIR=$(abs "$4"); INCDIR=$(abs "$5"); DATADIR=$(abs "$6"); MANDIR=$(abs "$7")
CC=$8
SRC=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
TMO=${DPV_TIMEOUT:-60}
SOCK=/tmp/dpverbs-pair.sock
LOCK=/tmp/dpverbs-pair.lock
RUNDIRS="/var/run/dpdk/dpv-pair-a /var/run/dpdk/dpv-pair-b"
WORK=$(mktemp -d /tmp/dpv-install.XXXXXX)
D=$WORK/stage
HELD_LOCK=0

cleanup() {
	kill_own
	[ "$HELD_LOCK" = 1 ] && rm -f "$SOCK"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. stage and check the file list
log "=== meson install --destdir $D"
if ! meson install -C "$BUILD" --no-rebuild --destdir "$D" >"$WORK/install.log" 2>&1; then
	sed 's/^/    /' "$WORK/install.log"
	log "FAIL: meson install failed"
	exit 1
fi
expect_file() {
	if [ -e "$D$1" ] || [ -L "$D$1" ]; then
		return 0
	fi
	fail "not installed: $1"
}
for f in "$LIBDIR/libdpverbs.so" "$LIBDIR/dpverbs/libibverbs.so.1" "$LIBDIR/dpverbs/librdmacm.so.1" \
	"$INCDIR/dpverbs/dpverbs.h" "$LIBDIR/pkgconfig/dpverbs.pc" \
	"$BINDIR/dpverbs-run" "$BINDIR/dpv_sysfs" "$BINDIR/dpv_perf" "$BINDIR/dpv_stat" "$BINDIR/dpv_td_bench" \
	"$BINDIR/dpv_crc_bench" "$BINDIR/udp_pingpong" "$BINDIR/dpv_baseline" \
	"$DATADIR/dpverbs/config/pair-a.json" "$DATADIR/dpverbs/config/pair-b.json" \
	"$DATADIR/dpverbs/config/default.json" "$DATADIR/dpverbs/config/README.md" \
	"$DATADIR/doc/dpverbs/architecture.md" "$DATADIR/doc/dpverbs/install.md"; do
	expect_file "$f"
done
npages=0
for md in "$SRC"/doc/man/*.md; do
	page=$(basename "$md" .md)
	expect_file "$MANDIR/man${page##*.}/$page"
	npages=$((npages + 1))
done
naliases=0
while read -r alias page; do
	[ -n "$alias" ] || continue
	if ! grep -qx ".so man${page##*.}/$page" "$D$MANDIR/man${alias##*.}/$alias" 2>/dev/null; then
		fail "alias page $alias does not point to $page"
	fi
	naliases=$((naliases + 1))
done < <(python3 "$SRC/scripts/md2man.py" --aliases "$SRC/doc/man")
log "$npages man pages and $naliases alias pages installed"
# the drop-in must be rdma-core's soname and must not be installed over it
soname=$(objdump -p "$D$LIBDIR/dpverbs/libibverbs.so.1" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libibverbs.so.1 ] || fail "drop-in soname is '$soname'"
[ -e "$D$LIBDIR/libibverbs.so.1" ] && fail "libibverbs.so.1 installed directly in $LIBDIR"
# the same for the drop-in librdmacm, which must need the drop-in libibverbs only
soname=$(objdump -p "$D$LIBDIR/dpverbs/librdmacm.so.1" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = librdmacm.so.1 ] || fail "drop-in librdmacm soname is '$soname'"
[ -e "$D$LIBDIR/librdmacm.so.1" ] && fail "librdmacm.so.1 installed directly in $LIBDIR"
objdump -p "$D$LIBDIR/dpverbs/librdmacm.so.1" | grep -q 'NEEDED *libibverbs\.so\.1' ||
	fail "the drop-in librdmacm does not need libibverbs.so.1"
[ "$MULTI_FAIL" = 0 ] || exit 1

# ---- 2. dpverbs-run on the staged drop-in
log "=== dpverbs-run ibv_devinfo"
RUN=$D$BINDIR/dpverbs-run
if ! command -v ibv_devinfo >/dev/null; then
	log "ibv_devinfo not installed: skipping the dpverbs-run checks"
else
	path=$("$RUN" sh -c 'echo "$LD_LIBRARY_PATH"')
	[ "${path%%:*}" = "$D$LIBDIR/dpverbs" ] || fail "dpverbs-run set LD_LIBRARY_PATH=$path"
	timeout -k 5 "$TMO" env -u DPVERBS_CONFIG "$RUN" ibv_devinfo >"$WORK/devinfo" 2>&1
	rc=$?
	sed 's/^/    [ibv_devinfo] /' "$WORK/devinfo" | head -20
	[ "$rc" = 0 ] || fail "dpverbs-run ibv_devinfo exited with $rc"
	grep -q "hca_id:[[:space:]]*dpv0" "$WORK/devinfo" || fail "ibv_devinfo does not list dpv0"
	grep -q "hca_id:[[:space:]]*dpv1" "$WORK/devinfo" || fail "ibv_devinfo does not list dpv1"
	"$RUN" -c /nonexistent.json true 2>"$WORK/badcfg" && fail "dpverbs-run -c accepted a missing file"
	# rdmacm-utils: the staged librdmacm, and through it the staged libibverbs
	if command -v rping >/dev/null; then
		log "=== dpverbs-run rping -s (the staged librdmacm.so.1)"
		"$RUN" ldd "$(command -v rping)" >"$WORK/ldd-rping" 2>&1
		grep -q "librdmacm.so.1 => $D$LIBDIR/dpverbs/librdmacm.so.1" "$WORK/ldd-rping" ||
			fail "dpverbs-run rping does not load the staged librdmacm.so.1"
		grep -q "libibverbs.so.1 => $D$LIBDIR/dpverbs/libibverbs.so.1" "$WORK/ldd-rping" ||
			fail "dpverbs-run rping does not load the staged libibverbs.so.1"
		timeout -k 5 "$TMO" env -u DPVERBS_CONFIG LD_BIND_NOW=1 "$RUN" rping -s -a 203.0.113.7 -C 1 \
			>"$WORK/rping" 2>&1
		grep -q "rdma_bind_addr: Cannot assign requested address" "$WORK/rping" ||
			{ sed 's/^/    [rping] /' "$WORK/rping" | head -5; fail "dpverbs-run rping -s did not fail with EADDRNOTAVAIL"; }
	fi
	grep -q "not readable" "$WORK/badcfg" || fail "dpverbs-run -c: no message for a missing file"
	# --view: the staged script finds the staged dpv_sysfs next to itself
	out=$(timeout -k 5 "$TMO" env -u DPVERBS_CONFIG -u DPVERBS_DROPIN "$RUN" --view \
		cat /sys/class/infiniband/dpv0/ports/1/gid_attrs/types/1 2>&1)
	case "$out" in
	*"cannot create a private mount namespace"*) log "no private mount namespace here: --view not checked" ;;
	"RoCE v2") log "dpverbs-run --view: /sys/class/infiniband/dpv0/ports/1/gid_attrs/types/1 is RoCE v2" ;;
	*) fail "dpverbs-run --view: '$out', not 'RoCE v2'" ;;
	esac
fi

# ---- 3. man pages through man(1)
if command -v man >/dev/null; then
	log "=== man -M $D$MANDIR ibv_dealloc_td"
	MANWIDTH=80 man -M "$D$MANDIR" ibv_dealloc_td >"$WORK/man.txt" 2>&1
	grep -q "ibv_alloc_td, ibv_dealloc_td" "$WORK/man.txt" ||
		{ sed 's/^/    /' "$WORK/man.txt" | head; fail "man did not render ibv_dealloc_td"; }
	grep -q "dpverbs Programmer's Manual" "$WORK/man.txt" || fail "man rendered someone else's page"
fi

# ---- 4. a program built with the staged and with the uninstalled .pc
build_app() {
	local name=$1 pcpath=$2 sysroot=$3 libpath=$4 flags
	flags=$(PKG_CONFIG_SYSROOT_DIR=$sysroot PKG_CONFIG_PATH=$pcpath pkg-config --cflags --libs dpverbs) ||
		{ fail "$name: pkg-config dpverbs failed"; return; }
	log "=== $name: $CC app.c $flags"
	if ! $CC -std=gnu11 -Wall -Wextra -Werror -o "$WORK/app-$name" "$SRC/test/install/app.c" \
		$flags 2>"$WORK/cc-$name.log"; then
		sed 's/^/    /' "$WORK/cc-$name.log"
		fail "$name: app.c does not build"
		return
	fi
	timeout -k 5 "$TMO" env -u DPVERBS_CONFIG LD_LIBRARY_PATH="$libpath" "$WORK/app-$name" \
		>"$WORK/app-$name.out" 2>&1
	local rc=$?
	sed "s/^/    [$name] /" "$WORK/app-$name.out" | grep -v "^    \[$name\] EAL" | head -10
	[ "$rc" = 0 ] || fail "$name: app exited with $rc"
	grep -q "^app: 2 devices, first dpv0, .*ok$" "$WORK/app-$name.out" || fail "$name: app did not print ok"
}
build_app installed "$D$LIBDIR/pkgconfig" "$D" "$D$LIBDIR"
build_app uninstalled "$BUILD/meson-uninstalled" "" "$BUILD/lib/dpverbs"

# ---- 5. ibv_rc_pingpong over memif with the staged configs
PP=$(command -v ibv_rc_pingpong || true)
if [ -z "$PP" ]; then
	log "ibv_rc_pingpong not installed: skipping the memif run"
elif [ "${DPVERBS_HUGEPAGES:-1}" = 0 ]; then
	log "no hugepages (DPVERBS_HUGEPAGES=0): net_memif needs them, skipping the memif run"
else
	exec 9>"$LOCK"
	flock -w 300 9 || { log "FAIL: could not get $LOCK within 300 s"; exit 1; }
	HELD_LOCK=1
	rm -f "$SOCK"
	port=$(pick_port)
	CFG=$D$DATADIR/dpverbs/config
	log "=== ibv_rc_pingpong -d dpv0 -g 1 -n 1000 over memif (dpverbs-run -c pair-a/pair-b, tcp $port)"
	timeout -k 5 "$TMO" "$RUN" -c "$CFG/pair-a.json" "$PP" -d dpv0 -g 1 -n 1000 -p "$port" \
		>"$WORK/pp.server" 2>&1 &
	srv=$!
	MULTI_PIDS="$MULTI_PIDS $srv"
	if wait_listen "$srv" "$port"; then
		timeout -k 5 "$TMO" "$RUN" -c "$CFG/pair-b.json" "$PP" -d dpv0 -g 1 -n 1000 -p "$port" \
			127.0.0.1 >"$WORK/pp.client" 2>&1 &
		cli=$!
		MULTI_PIDS="$MULTI_PIDS $cli"
		wait "$cli"; rc_c=$?
		wait "$srv"; rc_s=$?
		MULTI_PIDS=""
		check_output server "$WORK/pp.server" "$rc_s" 1000
		check_output client "$WORK/pp.client" "$rc_c" 1000
	else
		fail "server did not listen on tcp port $port"
		kill_own
		sed 's/^/    [server] /' "$WORK/pp.server"
	fi
	check_rundirs_gone $RUNDIRS
fi

if [ "$MULTI_FAIL" != 0 ]; then
	log "FAILED"
	exit 1
fi
log "PASSED"
exit 0
