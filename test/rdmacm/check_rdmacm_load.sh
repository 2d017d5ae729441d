#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# check_rdmacm_load.sh <dir-containing-librdmacm.so.1-and-libibverbs.so.1>
#
# Debian's programs linked with librdmacm (rdmacm-utils: rping, ucmatose,
# udaddy, rdma_server, rdma_client, rdma_xserver, rdma_xclient, riostream,
# rstream, rcopy, mckey, cmtime, udpong; perftest's ib_send_lat) are built
# with BIND_NOW: the loader resolves every import and version node at start.
# For each one installed, with LD_LIBRARY_PATH=<dir> LD_BIND_NOW=1:
#   1. ldd -r reports no undefined symbol, no missing version and no missing
#      library, and resolves librdmacm.so.1 and libibverbs.so.1 to <dir>;
#   2. "PROGRAM -h" runs (10 s timeout) without a loader error ("symbol
#      lookup error", "error while loading shared libraries", exit 127), a
#      signal (exit 129..192) or a time-out (124); its exit status is
#      otherwise its own (usage: 1, 22, 255), and
#      LD_DEBUG=files shows that <dir>/librdmacm.so.1 was the one initialised.
# Debian's librdmacm.so.1 itself (ldd -r of the file) must still resolve
# against <dir>/libibverbs.so.1. Then, if rping is installed, "rping -s -a 203.0.113.7 -C 1" must end within
# 10 s with "rdma_bind_addr: Cannot assign requested address": 203.0.113.7 is
# no dpverbs port's address (the drop-in looks at dpverbs' GID tables, never
# the kernel's interfaces), so the bind fails cleanly with EADDRNOTAVAIL.
# Missing programs are skipped; none installed = skipped (77).
set -uo pipefail

dir=${1:-}
if [[ -z $dir ]]; then
	echo "usage: $0 <dir-containing-librdmacm.so.1>" >&2
	exit 2
fi
for l in librdmacm.so.1 libibverbs.so.1; do
	[[ -e $dir/$l ]] || { echo "FAIL: $dir/$l does not exist" >&2; exit 1; }
done
command -v ldd >/dev/null || { echo "SKIP: ldd not found" >&2; exit 77; }
dir_real=$(realpath "$dir")
cm_real=$(realpath "$dir/librdmacm.so.1")
verbs_real=$(realpath "$dir/libibverbs.so.1")

programs=(rping ucmatose udaddy rdma_server rdma_client rdma_xserver rdma_xclient riostream rstream
	rcopy mckey cmtime udpong ib_send_lat)

fail=0
checked=0
skipped=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT

with_dropin() {
	env -u DPVERBS_CONFIG LD_LIBRARY_PATH="$dir_real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_BIND_NOW=1 "$@"
}

resolves_to() { # library, expected real path: from the ldd output in $out
	local r
	r=$(awk -v l="$1" '$1 == l && $2 == "=>" { print $3 }' "$out" | head -n1)
	[[ -n $r && $(realpath "$r") == "$2" ]] || { echo "$b: $1 resolves to '${r:-nothing}', not $2" >&2; return 1; }
}

for b in "${programs[@]}"; do
	path=$(PATH="$PATH:/usr/bin:/usr/sbin" command -v "$b" 2>/dev/null)
	if [[ -z $path ]]; then
		skipped+=("$b")
		continue
	fi
	checked=$((checked + 1))
	bad=0
	with_dropin ldd -r "$path" >"$out" 2>&1
	if grep -E "undefined symbol|version .* not found|=> not found|symbol lookup error" "$out" >&2; then
		bad=1
	fi
	resolves_to librdmacm.so.1 "$cm_real" || bad=1
	resolves_to libibverbs.so.1 "$verbs_real" || bad=1

	LD_DEBUG=files with_dropin timeout -k 5 10 "$path" -h >"$out" 2>&1 </dev/null
	rc=$?
	if ((rc == 127 || rc == 124 || (rc > 128 && rc <= 192))) ||
		grep -qE "symbol lookup error|error while loading shared libraries" "$out"; then
		echo "$b -h: exit $rc:" >&2
		grep -v "^ *[0-9]*:" "$out" | head -5 >&2
		bad=1
	fi
	if ! grep -qE "calling init: $cm_real\$" "$out"; then
		echo "$b -h: LD_DEBUG shows no initialisation of $cm_real" >&2
		bad=1
	fi
	if ((bad)); then
		echo "FAIL: $b ($path)" >&2
		fail=1
	else
		echo "ok: $b loads $cm_real (-h: exit $rc)"
	fi
done

# Debian's own librdmacm on the drop-in libibverbs (for whoever prefers it):
# ldd -r of the library file resolves its imports against <dir>.
deb=/usr/lib/x86_64-linux-gnu/librdmacm.so.1
if [[ -r $deb ]]; then
	with_dropin ldd -r "$deb" >"$out" 2>&1
	b="Debian's librdmacm"
	if grep -E "undefined symbol|version .* not found|=> not found" "$out" >&2 ||
		! resolves_to libibverbs.so.1 "$verbs_real"; then
		echo "FAIL: $deb does not resolve against $dir_real/libibverbs.so.1" >&2
		fail=1
	else
		echo "ok: $deb resolves against the drop-in libibverbs.so.1"
	fi
fi

if path=$(command -v rping 2>/dev/null); then
	with_dropin timeout -k 5 10 "$path" -s -a 203.0.113.7 -C 1 >"$out" 2>&1 </dev/null
	rc=$?
	if ((rc == 124 || (rc > 128 && rc <= 192))) || ! grep -q "rdma_bind_addr: Cannot assign requested address" "$out"; then
		echo "FAIL: rping -s -a 203.0.113.7 -C 1 (exit $rc) did not fail with EADDRNOTAVAIL from rdma_bind_addr:" >&2
		head -5 "$out" >&2
		fail=1
	else
		echo "ok: rping -s fails cleanly (exit $rc): $(head -n1 "$out")"
	fi
fi

((${#skipped[@]})) && echo "skipped (not installed): ${skipped[*]}"
if ((checked == 0)); then
	echo "SKIP: none of the programs is installed" >&2
	exit 77
fi
if ((fail)); then
	echo "check_rdmacm_load: FAILED" >&2
	exit 1
fi
echo "check_rdmacm_load: OK ($checked programs)"
exit 0
