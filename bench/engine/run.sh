#!/usr/bin/env bash
# Engine benchmarks: overlap, joiners, slow readers, disconnects, prefix,
# scheduler, each printing its verdicts against its targets as it ends.
#
#   bash bench/engine/run.sh                 quick: the random tiny model
#   BENCH=full bash bench/engine/run.sh      full: a GPT-2-small-shaped model
#   bash bench/engine/run.sh --full          (the same)
#   EXPS="overlap joiners" bash bench/engine/run.sh    (a subset)
#   ... --threads N                          compute threads (default: nproc)
#   ... --weights F                          the CPU runner's weights: f32 (default),
#                                            bf16 or q8; results engine-<experiment>-F.json
#   ... --out DIR                            the results' folder (default: $BENCH_OUT, else
#                                            a new bench/runs/<date>/; never bench/results/)
#
# Quick is the default (also under `make bench`, whose BENCH=full selects full
# mode here too). Full mode writes a GPT-2-small-shaped random checkpoint
# (weights_tool random --shape gpt2, ~500 MB, a few seconds) into a temp dir
# and runs on it; quick mode runs on the random tiny model (2 layers, 64
# wide). Each result states its mode and model shape. Between experiments the
# last one's own load may fade first (bench_settle, bench/lib/common.sh).
# Results: DIR/engine-<experiment>.json (the bench convention: bench, title,
# command, machine, date, mode, loadavg_start/end, columns, rows, notes,
# charts, verdicts) and its charts DIR/engine-<experiment>-*.svg. The targets
# are set for the GPT-2-small shape: a quick run prints them as not judged.
# The exact command is recorded in each result file. The charts are drawn from
# the JSON alone; to redraw them without measuring (after a change to the
# charts): build/bench/engine_bench --render-only DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/common.sh

FULL=""
[[ ",${BENCH:-}," == *",full,"* ]] && FULL=1
THREADS="$(nproc)"
WEIGHTS=f32
OUT_FLAG=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) FULL=""; shift ;;
    --full) FULL=1; shift ;;
    --threads) THREADS="$2"; shift 2 ;;
    --weights) WEIGHTS="$2"; shift 2 ;;
    --out) OUT_FLAG="$2"; shift 2 ;;
    *) echo "usage: $0 [--quick|--full] [--threads N] [--weights f32|bf16|q8] [--out DIR]   (or BENCH=full; EXPS=\"overlap ...\")" >&2; exit 2 ;;
  esac
done
OUT=$(bench_run_dir "$OUT_FLAG")

BIN=build/bench/engine_bench
if grep -q 'bench/\*/bench.mk' Makefile; then
  make -s -j2 "$BIN"
else
  make -s -j2 -f Makefile -f bench/engine/bench.mk "$BIN"
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
MODEL_ARGS=()
QUICK_ARG="--quick"
CMD="bash bench/engine/run.sh"
[ -n "${EXPS:-}" ] && CMD="EXPS=\"$EXPS\" $CMD"
if [ -n "$FULL" ]; then
  QUICK_ARG=""
  CMD="$CMD --full"
  make -s -j2 build/weights_tool
  build/weights_tool random --shape gpt2 --out "$TMP/gpt2"
  MODEL_ARGS=(--model "$TMP/gpt2" --model-note "random weights: weights_tool random --shape gpt2")
fi
CMD="$CMD --threads $THREADS"
SUFFIX=""
if [ "$WEIGHTS" != f32 ]; then CMD="$CMD --weights $WEIGHTS"; SUFFIX="-$WEIGHTS"; fi
LABEL="quick: tiny model"
[ -n "$FULL" ] && LABEL="full: GPT-2-small shape"
FIRST=1
for EXP in ${EXPS:-overlap joiners slow_readers disconnects prefix scheduler}; do
  echo "== engine $EXP ($LABEL)"
  [ -n "$FIRST" ] || bench_settle  # the last experiment's own load fades first
  FIRST=""
  "$BIN" --exp "$EXP" "${MODEL_ARGS[@]}" --threads "$THREADS" --weights "$WEIGHTS" $QUICK_ARG \
    --command "$CMD" --out "$OUT/engine-$EXP$SUFFIX.json" > /dev/null
done
echo "results: $OUT/" >&2
