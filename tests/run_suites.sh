#!/usr/bin/env bash
# make test's runner: each GoogleTest suite in turn, split into JOBS shards
# that run side by side (GoogleTest's GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX:
# shard i runs the tests whose index is i modulo JOBS). Most suites wait on
# sockets, timers or one thread, so two shards on two cores take little
# more than half the time of one run; JOBS=1 runs each suite whole.
#
#   bash tests/run_suites.sh LOG_DIR JOBS SUITE...
#
# Each suite's output goes to LOG_DIR/<suite>.log (its shards' outputs one
# after another) and to standard output; GTEST_FILTER and the rest of the
# environment reach every shard. The last line is "N passed, M failed";
# the exit code is non-zero if a suite failed, whose failures are repeated
# at the end.
set -uo pipefail
logs=${1:?usage: bash tests/run_suites.sh LOG_DIR JOBS SUITE...}
jobs=${2:?usage: bash tests/run_suites.sh LOG_DIR JOBS SUITE...}
shift 2
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "JOBS must be a positive integer, not '$jobs'"; exit 2; }
mkdir -p "$logs"
pass=0
fail=0
failed=()
for t in "$@"; do
  log="$logs/$(basename "$t").log"
  t0=$(date +%s)
  echo "== $t"
  pids=()
  for ((i = 0; i < jobs; i++)); do
    GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$i "$t" --gtest_brief=1 >"$log.$i" 2>&1 &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  for ((i = 0; i < jobs; i++)); do cat "$log.$i"; rm -f "$log.$i"; done >"$log"
  cat "$log"
  echo "== $t: $(($(date +%s) - t0)) s"
  if [ "$rc" = 0 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    failed+=("$t")
  fi
done
for t in "${failed[@]}"; do
  echo "== FAILED: $t"
  grep -E -A12 '^\[  FAILED  \]|Failure$|: Failure|^==[0-9]+==|WARNING: ThreadSanitizer|runtime error' \
    "$logs/$(basename "$t").log" | head -80
done
summary="$pass passed, $fail failed"
[ "$fail" -gt 0 ] && summary+=" (${failed[*]})"
echo "$summary"
[ "$fail" -eq 0 ]
