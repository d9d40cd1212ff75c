#!/usr/bin/env bash
# The streaming scenarios (resume storm, cancellation latency, abandonment,
# 1,000-stream concurrency, idle soak, backpressure, throughput), run by our load generator
# (build/bench/loadgen) against build/tokenwire --backend mock, each with its
# own server process on an ephemeral loopback port; and chaos, a mixed
# workload against --backend cpu (the random tiny GPT-2) for 60 s (--full:
# 10 minutes) that exits 1 if one of its checks fails.
#
#   bash bench/streams/run.sh [--full] [--out DIR] [SCENARIO...]   (default: all, quick sizes)
#   bash bench/streams/run.sh --full chaos                          (the 10-minute soak alone)
#
# Output: DIR/<scenario>.json (bench/loadgen/report.h convention) and
# DIR/*.svg, where DIR is --out, else $BENCH_OUT, else a new
# bench/runs/<date>/ (bench/lib/common.sh; never bench/results/). Each
# scenario prints its verdicts as it ends (PASS / MISS against its targets,
# or not judged on a loaded machine); build/bench/render --results DIR
# --verdicts prints them all again. The descriptor limit is raised here for
# the 10,000-connection part of idle_soak; the loadgen raises its soft limit
# to the hard one as well and records the limit it had.
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/common.sh

FULL=""
OUT_FLAG=""
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --full) FULL="--full"; shift ;;
    --out) OUT_FLAG="$2"; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[ ${#ARGS[@]} -eq 0 ] && ARGS=(all)
OUT=$(bench_run_dir "$OUT_FLAG")

make -s -j2 build/tokenwire build/bench/loadgen build/bench/floor_writer
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "descriptor limit: $(ulimit -n) (10,000 streams need about 10,050 in each process)" >&2
status=0
build/bench/loadgen --server build/tokenwire --out "$OUT" $FULL "${ARGS[@]}" || status=$?
echo "results: $OUT/" >&2
exit $status
