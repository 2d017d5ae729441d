#!/usr/bin/env bash
# Runs every meson test suite in build/ and the unit+func suites again in
# build-asan/ (ASan+UBSan), then prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
pass=0; fail=0; skip=0
run_suite() {
  local dir=$1; shift
  local log
  log=$(mktemp)
  meson test -C "$dir" --print-errorlogs --no-rebuild "$@" 2>&1 | tee "$log" | grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass):'
  local ok f s t
  ok=$(awk '/^Ok:/ {print $2}' "$log"); f=$(awk '/^Fail:/ {print $2}' "$log")
  s=$(awk '/^Skipped:/ {print $2}' "$log"); t=$(awk '/^Timeout:/ {print $2}' "$log")
  pass=$((pass + ${ok:-0})); fail=$((fail + ${f:-0} + ${t:-0})); skip=$((skip + ${s:-0}))
  if [ -z "$ok" ]; then fail=$((fail + 1)); echo "run_tests: meson test in $dir did not run"; fi
  # the last lines each failed test printed (the whole of it is in
  # $dir/meson-logs/testlog.txt)
  if [ "${f:-0}${t:-0}" != "00" ] && [ -f "$dir/meson-logs/testlog.json" ]; then
    python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t.get('result') not in ('OK', 'SKIP', 'EXPECTEDFAIL'):
        out = ((t.get('stdout') or '') + (t.get('stderr') or '')).splitlines()
        print('---- %s (%s): last %d lines' % (t['name'], t['result'], min(25, len(out))))
        print('\n'.join(out[-25:]))
PY
  fi
  rm -f "$log"
}
echo "== build/ (all suites)"
run_suite build
if [ -d build-asan ]; then
  echo "== build-asan/ (clang ASan+UBSan: unit, func; libFuzzer: fuzz)"
  # detect_odr_violation=0: DPDK loads its mlx5 PMD plugin, which links
  # libibverbs.so.1; with LD_LIBRARY_PATH=build-asan/compat that is our own
  # drop-in, next to libdpverbs in the same process (same globals twice).
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_odr_violation=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    run_suite build-asan --suite unit --suite func --suite fuzz
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
