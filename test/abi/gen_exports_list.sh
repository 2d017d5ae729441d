#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# gen_exports_list.sh <version-script>
#     Print "name@@VERSION" for every explicitly named global symbol of the
#     IBVERBS_* nodes of a version script (wildcards and the DPVERBS_* node are
#     skipped), sorted with LC_ALL=C. rdma-core-44-exports.txt was produced with
#         gen_exports_list.sh libibverbs.map
#     from the rdma-core 44 reference material given to the project (the map
#     of rdma-core's libibverbs/libibverbs.map.in, versions filled in) and equals the default-version exports of Debian's libibverbs.so.1 44.0-2.
# gen_exports_list.sh --check <version-script> <reference-list>
#     Exit 1 (with a diff) if the version script does not list exactly the
#     reference symbols in the reference nodes.
set -euo pipefail

list() {
	sed -e 's:/\*.*\*/::g' -e '/\/\*/,/\*\//d' "$1" | awk '
		/^[ \t]*[A-Za-z_][A-Za-z0-9_.]*[ \t]*\{/ { node = $1; sub(/\{.*/, "", node); scope = "global"; next }
		/^[ \t]*\}/ { node = ""; next }
		/^[ \t]*global:/ { scope = "global"; next }
		/^[ \t]*local:/ { scope = "local"; next }
		node ~ /^IBVERBS_/ && scope == "global" {
			for (i = 1; i <= NF; i++) {
				s = $i; sub(/;$/, "", s)
				if (s != "" && s !~ /[*?\[]/) print s "@@" node
			}
		}' | LC_ALL=C sort -u
}

if [[ ${1:-} == --check ]]; then
	map=${2:?usage: $0 --check <version-script> <reference-list>}
	ref=${3:?usage: $0 --check <version-script> <reference-list>}
	if diff -u <(grep -v '^[[:space:]]*\(#\|$\)' "$ref" | LC_ALL=C sort -u) <(list "$map"); then
		echo "$map: $(list "$map" | wc -l) IBVERBS exports, identical to $ref"
		exit 0
	fi
	echo "FAIL: $map differs from $ref (- reference, + version script)" >&2
	exit 1
fi
list "${1:?usage: $0 <version-script> | --check <version-script> <reference-list>}"
