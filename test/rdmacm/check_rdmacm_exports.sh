#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# check_rdmacm_exports.sh <librdmacm.map> <built librdmacm.so.1> <reference-list> [debian-librdmacm.so.1]
#
# The dynamic ABI of the drop-in librdmacm.so.1 against rdma-core 44's
# (Debian 12), in the manner of test/abi/check_exports.sh:
#  1. the version script names exactly the reference symbols, each in its
#     reference node (RDMACM_1.0 .. RDMACM_1.3);
#  2. the built library: SONAME librdmacm.so.1; version definitions
#     RDMACM_1.0 <- 1.1 <- 1.2 <- 1.3 and no other; its default-version
#     exports (objdump -T) are the reference list, nothing missing, nothing
#     extra, no non-default alias; it needs libibverbs.so.1 and not libnl
#     (rdma-core's talks to the kernel over netlink, ours does not);
#  3. Debian's librdmacm.so.1, when installed (default path below, or the
#     4th argument): objdump -T of both compared, every Debian export (name
#     and version node) is exported by ours and the other way round; the
#     reference list is Debian's list, so it cannot drift.
# Exit 0 = pass, 1 = differences (on stderr), 77 = skipped (no objdump or
# readelf), 2 = usage.
set -uo pipefail

map=${1:-}
lib=${2:-}
ref=${3:-}
deb=${4:-/usr/lib/x86_64-linux-gnu/librdmacm.so.1}
if [[ -z $map || -z $lib || -z $ref ]]; then
	echo "usage: $0 <librdmacm.map> <librdmacm.so.1> <reference-list> [debian-librdmacm.so.1]" >&2
	exit 2
fi
for tool in objdump readelf; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool not found" >&2; exit 77; }
done
for f in "$map" "$lib" "$ref"; do
	[[ -r $f ]] || { echo "FAIL: cannot read $f" >&2; exit 1; }
done

fail=0
err() {
	echo "FAIL: $*" >&2
	fail=1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -v '^[[:space:]]*\(#\|$\)' "$ref" | LC_ALL=C sort -u >"$tmp/ref"
nref=$(wc -l <"$tmp/ref")

# name@@NODE of the explicitly named globals of the RDMACM_* nodes of a version script
map_list() {
	sed -e 's:/\*.*\*/::g' -e '/\/\*/,/\*\//d' "$1" | awk '
		/^[ \t]*[A-Za-z_][A-Za-z0-9_.]*[ \t]*\{/ { node = $1; sub(/\{.*/, "", node); scope = "global"; next }
		/^[ \t]*\}/ { node = ""; next }
		/^[ \t]*global:/ { scope = "global"; next }
		/^[ \t]*local:/ { scope = "local"; next }
		node ~ /^RDMACM_/ && scope == "global" {
			for (i = 1; i <= NF; i++) {
				s = $i; sub(/;$/, "", s)
				if (s != "" && s !~ /[*?\[]/) print s "@@" node
			}
		}' | LC_ALL=C sort -u
}

# name@@VERSION of the defined default-version exports of a library; the
# non-default (name@VERSION) ones go to $2. The *ABS* node markers are skipped.
lib_list() {
	objdump -T "$1" | awk -v hidden="$2" '
		/^[0-9a-f]+ / && !/\*UND\*/ {
			name = $NF; ver = $(NF - 1)
			if ($0 ~ /\*ABS\*/ && name == ver) next
			if (ver ~ /^\(.*\)$/) { gsub(/[()]/, "", ver); print name "@" ver > hidden; next }
			print name "@@" ver
		}' | LC_ALL=C sort -u
}

compare() { # what, expected file, actual file
	if ! diff -u "$2" "$3" >"$tmp/diff"; then
		err "$1 (- expected, + actual):"
		sed -n '3,$p' "$tmp/diff" | grep '^[-+]' >&2
	fi
}

# --- 1. version script --------------------------------------------------------
map_list "$map" >"$tmp/map"
compare "$map: symbols per node differ from $ref" "$tmp/ref" "$tmp/map"

# --- 2. the built library -------------------------------------------------------
soname=$(readelf -dW "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[[ $soname == librdmacm.so.1 ]] || err "SONAME is '${soname:-<none>}', expected librdmacm.so.1"
needed=$(readelf -dW "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' | tr '\n' ' ')
[[ " $needed" == *" libibverbs.so.1 "* ]] || err "does not need libibverbs.so.1 (NEEDED: $needed)"
[[ $needed == *libnl* ]] && err "needs libnl (NEEDED: $needed)"

readelf -VW "$lib" | awk '
	/^Version definition section/ { in_d = 1; next }
	/^Version (needs|symbols) section/ { in_d = 0 }
	in_d && /Flags: BASE/ { next }
	in_d && /Name:/ { name = $NF; parent[name] = "-"; next }
	in_d && /Parent [0-9]+:/ { parent[name] = $NF }
	END { for (n in parent) print n, parent[n] }' | LC_ALL=C sort >"$tmp/verdef"
printf '%s\n' "RDMACM_1.0 -" "RDMACM_1.1 RDMACM_1.0" "RDMACM_1.2 RDMACM_1.1" "RDMACM_1.3 RDMACM_1.2" |
	LC_ALL=C sort >"$tmp/verdef.want"
compare "$lib: version definitions (node parent)" "$tmp/verdef.want" "$tmp/verdef"

lib_list "$lib" "$tmp/hidden" >"$tmp/ours"
compare "$lib: default-version exports differ from $ref" "$tmp/ref" "$tmp/ours"
if [[ -s $tmp/hidden ]]; then
	err "$lib: non-default exports: $(tr '\n' ' ' <"$tmp/hidden")"
fi
nours=$(wc -l <"$tmp/ours")

# --- 3. Debian's library ----------------------------------------------------------
if [[ -r $deb ]]; then
	lib_list "$deb" "$tmp/deb.hidden" >"$tmp/deb"
	compare "$deb (Debian) differs from the reference $ref" "$tmp/ref" "$tmp/deb"
	LC_ALL=C comm -23 "$tmp/deb" "$tmp/ours" >"$tmp/missing"
	if [[ -s $tmp/missing ]]; then
		err "exported by $deb but not by $lib: $(tr '\n' ' ' <"$tmp/missing")"
	fi
	LC_ALL=C comm -13 "$tmp/deb" "$tmp/ours" >"$tmp/extra"
	if [[ -s $tmp/extra ]]; then
		err "exported by $lib but not by $deb: $(tr '\n' ' ' <"$tmp/extra")"
	fi
	echo "compared with $deb: $(wc -l <"$tmp/deb") exports"
else
	echo "note: $deb not installed, compared with the reference list only"
fi

echo "$lib: SONAME=${soname:-?}, NEEDED: $needed; $nours exports ($nref reference), $(wc -l <"$tmp/verdef") version nodes"
if ((fail)); then
	echo "check_rdmacm_exports: FAILED" >&2
	exit 1
fi
echo "check_rdmacm_exports: OK"
exit 0
