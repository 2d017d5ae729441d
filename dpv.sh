#!/usr/bin/env bash
# dpverbs: the two commands of the README.
#   ./dpv.sh run    install what is missing, build, run the main job: the
#                   benchmark suite, quick, in one process on the built-in
#                   default configuration (no hardware needed)
#   ./dpv.sh bench  install what is missing, build, run the benchmark suite
#                   (apps/bench/dpv_bench.sh; options are passed on, e.g. --two-process)
#   ./dpv.sh test   install what is missing, build (plain and ASan+UBSan), run every test
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

need_pkgs=(build-essential pkg-config meson ninja-build dpdk-dev libdpdk-dev libibverbs-dev
  ibverbs-utils ibverbs-providers perftest python3-pyverbs libjansson-dev iproute2 tshark groff-base man-db
  librdmacm-dev libfabric-bin ucx-utils infiniband-diags
  clang libclang-rt-14-dev rdmacm-utils gnuplot-nox
  libbpf-dev bpftool qperf iputils-ping libcap2-bin fio openmpi-bin libopenmpi-dev)

install_missing() {
  local missing=()
  for p in "${need_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  echo "dpv.sh: installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections 2>/dev/null || true
  $sudo apt-get update -qq </dev/null
  $sudo apt-get install -y -qq "${missing[@]}" </dev/null
}

reserve_hugepages() {
  local want=${DPV_HUGEPAGES:-512}
  local have
  have=$(awk '/HugePages_Total/ {print $2}' /proc/meminfo)
  if [ "${have:-0}" -lt "$want" ]; then
    if ! echo "$want" > /proc/sys/vm/nr_hugepages 2>/dev/null; then
      echo "dpv.sh: cannot reserve $want hugepages (not root?): falling back to DPVERBS_HUGEPAGES=0 (--no-huge; net_memif tests are skipped)"
      export DPVERBS_HUGEPAGES=0
      return 0
    fi
  fi
  if ! grep -qs hugetlbfs /proc/mounts; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || {
      echo "dpv.sh: cannot mount hugetlbfs: falling back to DPVERBS_HUGEPAGES=0"
      export DPVERBS_HUGEPAGES=0
    }
  fi
  have=$(awk '/HugePages_Total/ {print $2}' /proc/meminfo)
  echo "dpv.sh: hugepages: $have x 2 MiB"
}

build() {
  local dir=$1; shift
  # a build tree from before apps/ had a folder per program holds each
  # program where its build folder goes now (build/apps/dpv_perf is
  # build/apps/dpv_perf/ now): remove those files, or meson cannot
  # regenerate the tree
  local d
  for d in apps/*/; do
    d=${d%/}
    if [ -f "$dir/$d" ]; then rm -f "$dir/$d"; fi
  done
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >/dev/null || { echo "dpv.sh: meson setup $dir failed" >&2; exit 1; }
  fi
  ninja -C "$dir" >/dev/null || { echo "dpv.sh: build in $dir failed" >&2; ninja -C "$dir" | tail -30 >&2; exit 1; }
}

cmd=${1:-}
case "$cmd" in
run)
  install_missing
  reserve_hugepages
  build build
  shift
  # the main job: the benchmark suite, quick, in one process on the built-in
  # default configuration (two net_ring ports), every figure beside its
  # baseline from the same run (build/bench/<timestamp>/)
  exec apps/bench/dpv_bench.sh -b build --quick "$@"
  ;;
bench)
  install_missing
  reserve_hugepages
  build build
  shift
  exec apps/bench/dpv_bench.sh -b build "$@"
  ;;
test)
  install_missing
  reserve_hugepages
  build build
  # clang: ASan+UBSan for the unit and functional suites, and libFuzzer
  CC=clang build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
  shift || true
  exec ./scripts/run_tests.sh "$@"
  ;;
*)
  echo "usage: $0 run [dpv_bench.sh options] | bench [dpv_bench.sh options] | test" >&2
  exit 2
  ;;
esac
