#!/usr/bin/env bash
# make fuzz's runner: each libFuzzer target for SECONDS, JOBS targets at a
# time (each target is one process on one core), its corpus in
# build/fuzz/corpus/<name>, seeded from tests/fuzz/seeds/<name>, its log in
# build/fuzz/<name>.log, a crash's input in build/fuzz/<name>-crash-*.
#
#   bash tests/fuzz/run.sh SECONDS JOBS TARGET...
#
# Prints each target's executions when all are done; on a failure, the
# failing targets' log tails, and the exit code is non-zero.
set -uo pipefail
seconds=${1:?usage: bash tests/fuzz/run.sh SECONDS JOBS TARGET...}
jobs=${2:?usage: bash tests/fuzz/run.sh SECONDS JOBS TARGET...}
shift 2
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "JOBS must be a positive integer, not '$jobs'"; exit 2; }
declare -A pid_of
failed=()
run_one() {
  local f=$1 name
  name=$(basename "$f")
  mkdir -p "build/fuzz/corpus/$name"
  local seeds=()
  [ -d "tests/fuzz/seeds/$name" ] && seeds=("tests/fuzz/seeds/$name")
  "$f" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="build/fuzz/$name-" \
    "build/fuzz/corpus/$name" "${seeds[@]}" >"build/fuzz/$name.log" 2>&1
}
for f in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "== $(basename "$f") for ${seconds}s"
  run_one "$f" &
  pid_of[$f]=$!
done
for f in "$@"; do
  if ! wait "${pid_of[$f]}"; then failed+=("$f"); fi
done
for f in "$@"; do
  name=$(basename "$f")
  echo "== $name: $(grep -E '^stat::number_of_executed_units' "build/fuzz/$name.log" | tail -n 1)"
done
for f in "${failed[@]}"; do
  name=$(basename "$f")
  echo "== FAILED: $name"
  tail -n 40 "build/fuzz/$name.log"
done
[ ${#failed[@]} -eq 0 ]
