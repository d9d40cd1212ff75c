#!/usr/bin/env bash
# make bench: build, run the benchmarks into a new folder of their own, print
# every scenario's verdict against its target, and re-render RESULTS.md's
# generated section from the committed reference results in bench/results/
# (build/bench/render). A run never writes into bench/results/.
#
#   make bench                 quick streams scenarios + their WebSocket twins + the HTTP bench (~5 min)
#   make bench BENCH=full      full-size streams scenarios + HTTP + CPU model + engine + grammar (25 min or more)
#   make bench BENCH=cpu       only the CPU model bench (quick)
#   make bench BENCH=engine    only the engine bench (quick)
#   make bench BENCH=grammar   only structured output's bench (bench/grammar: the
#                              matcher on 50 real-world schemas, the decode cost)
#   make bench BENCH=streams   only the streams scenarios and their WebSocket twins (quick, ~4 min)
#   make bench BENCH=http      only the HTTP bench (~1 min)
#   make bench BENCH=streams,http,cpu,engine,grammar,full   any comma-separated selection
#                              (naming any of streams/http/cpu/engine/grammar runs only those)
#   make bench BENCH=streams SCENARIOS="resume_storm ws_resume_storm"
#                              only these streams scenarios (ws_*: the WebSocket twins)
# The CPU model, engine and grammar benches take minutes, so the default leaves
# them out.
# The streams scenarios end with chaos, a soak of mixed clients against the
# CPU backend: 60 s quick, 10 minutes with full.
#
# Where the results go, and what is rendered:
#   BENCH_OUT=DIR   the run's folder (default: a new bench/runs/<UTC YYYY-MM-DD-HHMMSS>/,
#                   ignored by git); its verdicts are kept in DIR/verdicts.txt
#   RENDER=run      also render the run itself into DIR/RESULTS.md (RESULTS.md at the
#                   root is always rendered from bench/results/)
#   PROMOTE=1       then make the run the committed reference: bash bench/promote.sh DIR
#                   (copies its results into bench/results/ and re-renders RESULTS.md;
#                   a quick result never replaces a full one unless FORCE=1)
#
# Verdicts: each result states its targets (bench/lib/verdict.h); at the end
# build/bench/render --results DIR --verdicts prints, for each, PASS or MISS
# with the measured value and the target, or "not judged" with the reason
# (a machine too loaded, by the rule printed with them; a mode the target is
# not set for), with the load average and the core count. Before each bench
# the machine may settle (bench_settle in bench/lib/common.sh: up to
# BENCH_SETTLE_S seconds, default 60, while the last bench's own load fades).
#
# A bench that cannot run here (wrk or nginx missing for the HTTP bench) is
# reported, naming what is missing, and skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/common.sh

BENCH=${BENCH:-quick}
has() { [[ ",$BENCH," == *",$1,"* ]]; }
FULL=""; has full && FULL=1
if has streams || has http || has cpu || has engine || has grammar; then
  RUN_STREAMS=$(has streams && echo 1 || true); RUN_HTTP=$(has http && echo 1 || true)
  RUN_CPU=$(has cpu && echo 1 || true); RUN_ENGINE=$(has engine && echo 1 || true)
  RUN_GRAMMAR=$(has grammar && echo 1 || true)
else
  RUN_STREAMS=1; RUN_HTTP=1; RUN_CPU=""; RUN_ENGINE=""; RUN_GRAMMAR=""
  [ -n "$FULL" ] && RUN_CPU=1 && RUN_ENGINE=1 && RUN_GRAMMAR=1
fi

make -s -j2 build/tokenwire build/bench/loadgen build/bench/ws_loadgen build/bench/render
OUT=$(bench_run_dir "${BENCH_OUT:-}")
export BENCH_OUT=$OUT  # every script below writes into the same folder
echo "== results go to $OUT/ (bench/results/ is left as it is)"
START=$(date +%s)
status=0
if [ -n "$RUN_STREAMS" ]; then
  MODE=quick; [ -n "$FULL" ] && MODE=full
  SSE=(all); WS=(all)
  if [ -n "${SCENARIOS:-}" ]; then
    SSE=(); WS=()
    for s in $SCENARIOS; do case "$s" in ws_*) WS+=("$s") ;; *) SSE+=("$s") ;; esac; done
  fi
  if [ ${#SSE[@]} -gt 0 ]; then
    echo "== streams scenarios ($MODE)"
    bash bench/streams/run.sh ${FULL:+--full} "${SSE[@]}" || status=1
  fi
  if [ ${#WS[@]} -gt 0 ]; then
    echo "== the same resume storm and 1,000-stream scenarios over WebSocket"
    [ ${#SSE[@]} -eq 0 ] || bench_settle
    bash bench/ws_loadgen/run.sh ${FULL:+--full} "${WS[@]}" || status=1
  fi
fi
if [ -n "$RUN_HTTP" ]; then
  echo "== HTTP bench (bench/http/run.sh)"
  MISSING=""
  for tool in wrk nginx; do command -v "$tool" >/dev/null || MISSING="$MISSING $tool"; done
  if [ -z "$MISSING" ]; then
    bench_settle
    bash bench/http/run.sh || status=1
  else
    echo "skipped: missing$MISSING (apt-get install -y$MISSING)"
  fi
fi
if [ -n "$RUN_CPU" ]; then
  echo "== CPU model bench (bench/cpu_model/run.sh)"
  bench_settle
  if [ -n "$FULL" ]; then bash bench/cpu_model/run.sh || status=1; else bash bench/cpu_model/run.sh --quick || status=1; fi
fi
if [ -n "$RUN_ENGINE" ]; then
  echo "== engine bench (bench/engine/run.sh)"
  bench_settle
  if [ -n "$FULL" ]; then bash bench/engine/run.sh --full || status=1; else bash bench/engine/run.sh --quick || status=1; fi
fi
if [ -n "$RUN_GRAMMAR" ]; then
  echo "== structured output bench (bench/grammar/run.sh)"
  bench_settle
  bash bench/grammar/run.sh ${FULL:+--full} || status=1
fi
echo
build/bench/render --results "$OUT" --verdicts | tee "$OUT/verdicts.txt" || status=1
if [ "${RENDER:-}" = run ]; then
  build/bench/render --results "$OUT" --out "$OUT/RESULTS.md" || status=1
fi
if [ "${PROMOTE:-}" = 1 ]; then
  bash bench/promote.sh "$OUT" || status=1
else
  build/bench/render --results bench/results --out RESULTS.md || status=1
fi
echo "make bench: $(( $(date +%s) - START )) s; results in $OUT/; RESULTS.md rendered from bench/results/" \
  "(to make this run the reference: bash bench/promote.sh $OUT)"
exit $status
