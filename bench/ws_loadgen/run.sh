#!/usr/bin/env bash
# The resume storm and 1,000-stream scenarios over WebSocket (GET /v1/ws), run by our
# WebSocket load generator (build/bench/ws_loadgen) against
# build/tokenwire --backend mock, each with its own server process on an
# ephemeral loopback port, with the same parameters as the SSE twins in
# bench/loadgen/scenarios.cc.
#
#   bash bench/ws_loadgen/run.sh [--full] [ws_resume_storm|ws_concurrency...]   (default: both, quick sizes)
#   BENCH=full bash bench/ws_loadgen/run.sh                                    (the same as --full)
#
# Output: bench/results/ws_resume_storm.json, bench/results/ws_concurrency.json
# (bench/loadgen/report.h convention, picked up by build/bench/render) and
# bench/results/ws_*.svg. The "vs SSE" columns are read from
# bench/results/resume_storm.json and concurrency.json as they are (run
# bash bench/streams/run.sh resume_storm concurrency first to refresh them
# under the same machine load).
set -euo pipefail
cd "$(dirname "$0")/../.."

FULL=""
[ "${BENCH:-}" = "full" ] && FULL="--full"
ARGS=()
for a in "$@"; do
  case "$a" in
    --full) FULL="--full" ;;
    *) ARGS+=("$a") ;;
  esac
done
[ ${#ARGS[@]} -eq 0 ] && ARGS=(all)

make -s -j2 build/tokenwire build/bench/ws_loadgen
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
mkdir -p bench/results
build/bench/ws_loadgen --server build/tokenwire --out bench/results $FULL "${ARGS[@]}"
