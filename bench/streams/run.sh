#!/usr/bin/env bash
# The streaming scenarios (resume storm, cancellation latency, abandonment,
# 1,000-stream concurrency, idle soak, backpressure, throughput), run by our load generator
# (build/bench/loadgen) against build/tokenwire --backend mock, each with its
# own server process on an ephemeral loopback port; and chaos, a mixed
# workload against --backend cpu (the random tiny GPT-2) for 60 s (--full:
# 10 minutes) that exits 1 if one of its checks fails.
#
#   bash bench/streams/run.sh [--full] [SCENARIO...]     (default: all, quick sizes)
#   bash bench/streams/run.sh --full chaos                (the 10-minute soak alone)
#
# Output: bench/results/<scenario>.json (bench/loadgen/report.h convention)
# and bench/results/*.svg. The descriptor limit is raised here for the
# 10,000-connection part of idle_soak; the loadgen raises its soft limit to
# the hard one as well and records the limit it had.
set -euo pipefail
cd "$(dirname "$0")/../.."

FULL=""
ARGS=()
for a in "$@"; do
  case "$a" in
    --full) FULL="--full" ;;
    *) ARGS+=("$a") ;;
  esac
done
[ ${#ARGS[@]} -eq 0 ] && ARGS=(all)

make -s -j2 build/tokenwire build/bench/loadgen build/bench/floor_writer
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "descriptor limit: $(ulimit -n) (10,000 streams need about 10,050 in each process)" >&2
mkdir -p bench/results
build/bench/loadgen --server build/tokenwire --out bench/results $FULL "${ARGS[@]}"
