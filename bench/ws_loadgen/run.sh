#!/usr/bin/env bash
# The resume storm and 1,000-stream scenarios over WebSocket (GET /v1/ws), run by our
# WebSocket load generator (build/bench/ws_loadgen) against
# build/tokenwire --backend mock, each with its own server process on an
# ephemeral loopback port, with the same parameters as the SSE twins in
# bench/loadgen/scenarios.cc.
#
#   bash bench/ws_loadgen/run.sh [--full] [--out DIR] [ws_resume_storm|ws_concurrency...]   (default: both, quick sizes)
#   BENCH=full bash bench/ws_loadgen/run.sh                                              (the same as --full)
#
# Output: DIR/ws_resume_storm.json, DIR/ws_concurrency.json
# (bench/loadgen/report.h convention, picked up by build/bench/render) and
# DIR/ws_*.svg, where DIR is --out, else $BENCH_OUT, else a new
# bench/runs/<date>/ (bench/lib/common.sh; never bench/results/). Each
# scenario prints its verdicts as it ends. The "vs SSE" columns are read
# from DIR/resume_storm.json and DIR/concurrency.json, the same run's SSE
# scenarios (make bench runs them first, into the same folder; alone, run
# bash bench/streams/run.sh --out DIR resume_storm concurrency first).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/common.sh

FULL=""
[[ ",${BENCH:-}," == *",full,"* ]] && FULL="--full"
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

make -s -j2 build/tokenwire build/bench/ws_loadgen
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
status=0
build/bench/ws_loadgen --server build/tokenwire --out "$OUT" $FULL "${ARGS[@]}" || status=$?
echo "results: $OUT/" >&2
exit $status
