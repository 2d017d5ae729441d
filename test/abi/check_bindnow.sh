#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# check_bindnow.sh [--run] <dir-containing-libibverbs.so.1>
#
# Debian's rdma binaries and libraries are linked with BIND_NOW, so the loader
# resolves every imported symbol (and every required version node) at start-up.
# For each installed binary of ibverbs-utils / perftest below, this runs
#     LD_LIBRARY_PATH=<dir> LD_BIND_NOW=1 ldd -r <binary>
# (ldd -r = LD_TRACE_LOADED_OBJECTS + LD_WARN + LD_BIND_NOW: all relocations of
# the binary and of every library it loads, including libmlx5, libefa and
# librdmacm on top of the drop-in: dpverbs' librdmacm.so.1 when <dir> has
# it, as build/compat does; Debian's on the drop-in is checked by
# test/rdmacm/check_rdmacm_load.sh) and fails on:
#   - any "undefined symbol" line,
#   - any "version `...' not found" line,
#   - "not found" libraries,
#   - libibverbs.so.1 resolving anywhere but <dir>.
# Missing binaries are skipped; if none is installed the test is skipped (77).
#
# --run (or DPV_ABI_RUN=1): additionally start ibv_devices and ibv_devinfo
# with the library (10 s timeout) and fail if the dynamic loader rejects them
# ("symbol lookup error", "error while loading shared libraries", exit 127).
# Their own exit status is ignored: without devices they fail by design.
set -uo pipefail

run=${DPV_ABI_RUN:-0}
if [[ ${1:-} == --run ]]; then
	run=1
	shift
fi
dir=${1:-}
if [[ -z $dir ]]; then
	echo "usage: $0 [--run] <dir-containing-libibverbs.so.1>" >&2
	exit 2
fi
if [[ ! -e $dir/libibverbs.so.1 ]]; then
	echo "FAIL: $dir/libibverbs.so.1 does not exist" >&2
	exit 1
fi
if ! command -v ldd >/dev/null; then
	echo "SKIP: ldd not found" >&2
	exit 77
fi
dir_real=$(realpath "$dir")
lib_real=$(realpath "$dir/libibverbs.so.1")

binaries=(ibv_devinfo ibv_devices ibv_rc_pingpong ibv_ud_pingpong ibv_uc_pingpong
	ibv_srq_pingpong ibv_xsrq_pingpong ib_send_lat ib_write_bw ib_read_lat ib_atomic_bw)

fail=0
checked=0
skipped=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for b in "${binaries[@]}"; do
	path=$(PATH="$PATH:/usr/bin:/usr/sbin" command -v "$b" 2>/dev/null)
	if [[ -z $path ]]; then
		skipped+=("$b")
		continue
	fi
	checked=$((checked + 1))
	LD_LIBRARY_PATH="$dir_real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_BIND_NOW=1 \
		ldd -r "$path" >"$out" 2>&1
	rc=$?
	bad=0
	if grep -E "undefined symbol|version .* not found|=> not found|symbol lookup error" "$out" >&2; then
		bad=1
	fi
	resolved=$(awk '$1 == "libibverbs.so.1" && $2 == "=>" { print $3 }' "$out" | head -n1)
	if [[ -z $resolved ]]; then
		echo "$b: libibverbs.so.1 is not among its libraries" >&2
		bad=1
	elif [[ $(realpath "$resolved") != "$lib_real" ]]; then
		echo "$b: libibverbs.so.1 resolves to $resolved, not $dir_real" >&2
		bad=1
	fi
	if ((rc != 0 && bad == 0)); then
		echo "$b: ldd -r exited with $rc:" >&2
		cat "$out" >&2
		bad=1
	fi
	if ((bad)); then
		echo "FAIL: $b ($path)" >&2
		fail=1
	else
		echo "ok: $b -> $resolved"
	fi
done

if ((run)); then
	for b in ibv_devices ibv_devinfo; do
		path=$(command -v "$b" 2>/dev/null) || continue
		LD_LIBRARY_PATH="$dir_real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_BIND_NOW=1 \
			timeout 10 "$path" >"$out" 2>&1 </dev/null
		rc=$?
		if ((rc == 127)) || grep -qE "symbol lookup error|error while loading shared libraries" "$out"; then
			echo "FAIL: $b does not start (exit $rc):" >&2
			cat "$out" >&2
			fail=1
		elif ((rc == 124)); then
			echo "FAIL: $b timed out" >&2
			fail=1
		else
			echo "ok: $b runs (exit $rc: $(head -n1 "$out"))"
		fi
	done
fi

((${#skipped[@]})) && echo "skipped (not installed): ${skipped[*]}"
if ((checked == 0)); then
	echo "SKIP: none of the binaries is installed" >&2
	exit 77
fi
if ((fail)); then
	echo "check_bindnow: FAILED" >&2
	exit 1
fi
echo "check_bindnow: OK ($checked binaries)"
exit 0
