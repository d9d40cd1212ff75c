#!/usr/bin/env bash
# Engine benchmarks: overlap, joiners, slow readers, disconnects, prefix,
# scheduler; then
# build/bench/render rewrites RESULTS.md from bench/results/.
#
#   bash bench/engine/run.sh                 quick: the random tiny model
#   BENCH=full bash bench/engine/run.sh      full: a GPT-2-small-shaped model
#   bash bench/engine/run.sh --full          (the same)
#   EXPS="overlap joiners" bash bench/engine/run.sh    (a subset)
#   ... --threads N                          compute threads (default: nproc)
#   ... --weights F                          the CPU runner's weights: f32 (default),
#                                            bf16 or q8; results engine-<experiment>-F.json
#
# Quick is the default (also under `make bench`, whose BENCH=full selects full
# mode here too). Full mode writes a GPT-2-small-shaped random checkpoint
# (weights_tool random --shape gpt2, ~500 MB, a few seconds) into a temp dir
# and runs on it; quick mode runs on the random tiny model (2 layers, 64
# wide). Each result states its mode and model shape.
# Results: bench/results/engine-<experiment>.json (the bench convention:
# bench, title, command, machine, date, mode, loadavg_start/end, columns,
# rows, notes, charts) and its charts bench/results/engine-<experiment>-*.svg.
# The exact command is recorded in each result file. The charts are drawn from
# the JSON alone; to redraw them without measuring (after a change to the
# charts): build/bench/engine_bench --render-only bench/results
set -euo pipefail
cd "$(dirname "$0")/../.."

FULL=""
[[ ",${BENCH:-}," == *",full,"* ]] && FULL=1
THREADS="$(nproc)"
WEIGHTS=f32
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) FULL=""; shift ;;
    --full) FULL=1; shift ;;
    --threads) THREADS="$2"; shift 2 ;;
    --weights) WEIGHTS="$2"; shift 2 ;;
    *) echo "usage: $0 [--quick|--full] [--threads N] [--weights f32|bf16|q8]   (or BENCH=full; EXPS=\"overlap ...\")" >&2; exit 2 ;;
  esac
done

BIN=build/bench/engine_bench
if grep -q 'bench/\*/bench.mk' Makefile; then
  make -s -j2 "$BIN" build/bench/render
else
  make -s -j2 -f Makefile -f bench/engine/bench.mk "$BIN" build/bench/render
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
mkdir -p bench/results
for EXP in ${EXPS:-overlap joiners slow_readers disconnects prefix scheduler}; do
  echo "== engine $EXP ($LABEL)"
  "$BIN" --exp "$EXP" "${MODEL_ARGS[@]}" --threads "$THREADS" --weights "$WEIGHTS" $QUICK_ARG \
    --command "$CMD" --out "bench/results/engine-$EXP$SUFFIX.json" > /dev/null
done
build/bench/render --results bench/results --out RESULTS.md
