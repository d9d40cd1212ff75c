#!/usr/bin/env bash
# make bench: build, run the benchmarks, and rewrite RESULTS.md's generated
# section from the raw results in bench/results/ (build/bench/render).
#
#   make bench                 quick streams scenarios + the HTTP bench
#   make bench BENCH=full      full-size streams scenarios + HTTP + CPU model + engine
#   make bench BENCH=cpu       only the CPU model bench (quick), then render
#   make bench BENCH=engine    only the engine bench (quick), then render
#   make bench BENCH=grammar   only structured output's bench (bench/grammar: the
#                              matcher on 50 real-world schemas, the decode cost)
#   make bench BENCH=streams,http,cpu,engine,grammar,full   any comma-separated selection
#                              (naming any of streams/http/cpu/engine/grammar runs only those)
# The CPU model, engine and grammar benches take minutes, so the default leaves
# them out.
# The streams scenarios end with chaos, a soak of mixed clients against the
# CPU backend: 60 s quick, 10 minutes with full.
#
# A bench that cannot run here (wrk or nginx missing for the HTTP bench) is
# reported and skipped; the renderer then shows that bench's newest committed
# result, which carries its own date and command.
set -euo pipefail
cd "$(dirname "$0")/.."

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
START=$(date +%s)
status=0
if [ -n "$RUN_STREAMS" ]; then
  MODE=quick; [ -n "$FULL" ] && MODE=full
  echo "== streams scenarios ($MODE)"
  bash bench/streams/run.sh ${FULL:+--full} || status=1
  echo "== the same resume storm and 1,000-stream scenarios over WebSocket"
  bash bench/ws_loadgen/run.sh ${FULL:+--full} || status=1
fi
if [ -n "$RUN_HTTP" ]; then
  echo "== HTTP bench (bench/http/run.sh)"
  if command -v wrk >/dev/null && command -v nginx >/dev/null; then
    bash bench/http/run.sh || status=1
  else
    echo "skipped: wrk and nginx are needed (apt-get install -y wrk nginx)"
  fi
fi
if [ -n "$RUN_CPU" ]; then
  echo "== CPU model bench (bench/cpu_model/run.sh)"
  if [ -n "$FULL" ]; then bash bench/cpu_model/run.sh || status=1; else bash bench/cpu_model/run.sh --quick || status=1; fi
fi
if [ -n "$RUN_ENGINE" ]; then
  echo "== engine bench (bench/engine/run.sh)"
  if [ -f bench/engine/run.sh ]; then
    if [ -n "$FULL" ]; then bash bench/engine/run.sh || status=1; else bash bench/engine/run.sh --quick || status=1; fi
  else
    echo "skipped: bench/engine/run.sh is not in this checkout"
  fi
fi
if [ -n "$RUN_GRAMMAR" ]; then
  echo "== structured output bench (bench/grammar/run.sh)"
  bash bench/grammar/run.sh ${FULL:+--full} || status=1
fi
build/bench/render --results bench/results --out RESULTS.md || status=1
echo "make bench: $(( $(date +%s) - START )) s; RESULTS.md rewritten from bench/results/"
exit $status
