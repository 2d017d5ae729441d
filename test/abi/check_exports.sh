#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# check_exports.sh <path/to/libibverbs.so.1> [reference-list]
#
# Checks that a built drop-in libibverbs.so.1 has the dynamic ABI of
# rdma-core 44 (Debian 12):
#  1. SONAME is libibverbs.so.1.
#  2. Version definitions (readelf -V): IBVERBS_1.0 <- 1.1 <- 1.5 <- 1.6 <- ...
#     <- 1.14 chained exactly like rdma-core, a standalone IBVERBS_PRIVATE_34,
#     and, if present, DPVERBS_0.1 with parent IBVERBS_1.14. No other nodes.
#  3. Default-version exports (objdump -T, defined symbols, name@@VERSION)
#     equal the reference list (default: rdma-core-44-exports.txt next to this
#     script, 146 entries) - nothing missing, nothing in the wrong node.
#     Extra exports are allowed only in DPVERBS_0.1, and there only names
#     starting with dpv_ plus ibv_alloc_shpd / ibv_share_pd.
#     Non-default (name@VERSION, hidden) compat aliases are reported, not
#     failed, if they are IBVERBS_1.0/IBVERBS_1.1 aliases as in rdma-core.
#  4. verbs_allow_disassociate_destroy is a data object (type O), as in
#     rdma-core (libmlx5/libefa import it as data).
# Exit status 0 = pass, 1 = differences (listed on stderr), 77 = skipped
# (tools missing), 2 = usage.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${1:-}
ref=${2:-$here/rdma-core-44-exports.txt}

if [[ -z $lib ]]; then
	echo "usage: $0 <libibverbs.so.1> [reference-list]" >&2
	exit 2
fi
for tool in objdump readelf; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool not found" >&2
		exit 77
	fi
done
if [[ ! -r $lib ]]; then
	echo "FAIL: cannot read $lib" >&2
	exit 1
fi
if [[ ! -r $ref ]]; then
	echo "FAIL: cannot read reference list $ref" >&2
	exit 1
fi

fail=0
err() {
	echo "FAIL: $*" >&2
	fail=1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- 1. SONAME ----------------------------------------------------------------
soname=$(readelf -dW "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [[ $soname != libibverbs.so.1 ]]; then
	err "SONAME is '${soname:-<none>}', expected libibverbs.so.1"
fi

# --- 2. version definitions -----------------------------------------------------
# readelf -V prints, per definition, "Name: X" and then "Parent 1: Y" lines.
readelf -VW "$lib" | awk '
	/^Version definition section/ { in_d = 1; next }
	/^Version (needs|symbols) section/ { in_d = 0 }
	in_d && /Flags: BASE/ { next }
	in_d && /Name:/ { name = $NF; print name " -"; next }
	in_d && /Parent [0-9]+:/ { print name " " $NF }
' | awk '{ if ($2 == "-") { if (!(($1) in p)) p[$1] = "-" } else p[$1] = $2 }
	END { for (n in p) print n, p[n] }' | LC_ALL=C sort >"$tmp/verdef"

cat >"$tmp/verdef.want" <<'EOF'
IBVERBS_1.0 -
IBVERBS_1.1 IBVERBS_1.0
IBVERBS_1.5 IBVERBS_1.1
IBVERBS_1.6 IBVERBS_1.5
IBVERBS_1.7 IBVERBS_1.6
IBVERBS_1.8 IBVERBS_1.7
IBVERBS_1.9 IBVERBS_1.8
IBVERBS_1.10 IBVERBS_1.9
IBVERBS_1.11 IBVERBS_1.10
IBVERBS_1.12 IBVERBS_1.11
IBVERBS_1.13 IBVERBS_1.12
IBVERBS_1.14 IBVERBS_1.13
IBVERBS_PRIVATE_34 -
EOF
if grep -q '^DPVERBS_0.1 ' "$tmp/verdef"; then
	echo "DPVERBS_0.1 IBVERBS_1.14" >>"$tmp/verdef.want"
fi
LC_ALL=C sort -o "$tmp/verdef.want" "$tmp/verdef.want"
if ! diff -u "$tmp/verdef.want" "$tmp/verdef" >"$tmp/verdef.diff"; then
	err "version definitions (node parent) differ (- expected, + actual):"
	sed -n '3,$p' "$tmp/verdef.diff" | grep '^[-+]' >&2
fi

# --- 3. exported symbols --------------------------------------------------------
# objdump -T line: ADDR FLAGS... SECTION SIZE [VERSION|(VERSION)] NAME
# Defined symbols only; the *ABS* entries named like their version node are
# the node markers that ld emits, not symbols.
objdump -T "$lib" | awk '
	/^[0-9a-f]+ / && !/\*UND\*/ {
		name = $NF; ver = $(NF - 1); abs = ($0 ~ /\*ABS\*/)
		if (abs && name == ver) next
		if (ver ~ /^\(.*\)$/) { gsub(/[()]/, "", ver); print name "@" ver > "/dev/stderr"; next }
		print name "@@" ver
	}' 2>"$tmp/hidden" | LC_ALL=C sort -u >"$tmp/actual"
grep -v '^[[:space:]]*\(#\|$\)' "$ref" | LC_ALL=C sort -u >"$tmp/ref"

nref=$(wc -l <"$tmp/ref")
nact=$(wc -l <"$tmp/actual")

LC_ALL=C comm -23 "$tmp/ref" "$tmp/actual" >"$tmp/missing"
LC_ALL=C comm -13 "$tmp/ref" "$tmp/actual" >"$tmp/extra"

if [[ -s $tmp/missing ]]; then
	err "$(wc -l <"$tmp/missing") reference export(s) missing or in another version node:"
	while read -r s; do
		name=${s%%@@*}
		other=$(grep -E "^${name}@@" "$tmp/actual" | tr '\n' ' ')
		echo "  - $s${other:+   (found as: $other)}" >&2
	done <"$tmp/missing"
fi

nown=0
while read -r s; do
	[[ -z $s ]] && continue
	name=${s%%@@*}
	ver=${s##*@@}
	if [[ $ver == DPVERBS_0.1 ]] && [[ $name == dpv_* || $name == ibv_alloc_shpd || $name == ibv_share_pd ]]; then
		nown=$((nown + 1))
		continue
	fi
	# a reference name under the wrong node was already reported above
	if grep -qE "^${name}@@" "$tmp/ref"; then
		continue
	fi
	err "unexpected export: $s"
done <"$tmp/extra"

while read -r s; do
	[[ -z $s ]] && continue
	case $s in
	ibv_*@IBVERBS_1.0 | ibv_register_driver@IBVERBS_1.1)
		echo "note: non-default compat alias $s" ;;
	*)
		err "unexpected non-default export $s" ;;
	esac
done <"$tmp/hidden"

# --- 4. data object ----------------------------------------------------------------
if grep -q '^verbs_allow_disassociate_destroy@@' "$tmp/actual"; then
	line=$(objdump -T "$lib" | awk '$NF == "verbs_allow_disassociate_destroy" && !/\*UND\*/')
	if ! grep -q ' DO ' <<<"$line"; then
		err "verbs_allow_disassociate_destroy is not a data object: $line"
	fi
fi

echo "$lib: SONAME=${soname:-?}, $nact default-version exports ($nref reference, $nown DPVERBS_0.1 extensions)," \
	"$(wc -l <"$tmp/hidden") non-default aliases, $(wc -l <"$tmp/verdef") version nodes"
if ((fail)); then
	echo "check_exports: FAILED" >&2
	exit 1
fi
echo "check_exports: OK"
exit 0
