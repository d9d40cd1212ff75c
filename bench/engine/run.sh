#!/usr/bin/env bash
# Engine benchmarks (issue 5): overlap, joiners, slow readers, disconnects.
#
#   bash bench/engine/run.sh [--quick] [--threads N]
#   EXPS="overlap joiners" bash bench/engine/run.sh    (a subset)
#
# Full mode writes a GPT-2-small-shaped random checkpoint (weights_tool random
# --shape gpt2, ~500 MB, a few seconds) into a temp dir and runs on it; quick
# mode runs on the random tiny model (2 layers, 64 wide), labelled as such in
# each result. Results: bench/results/engine-<experiment>.json (fields bench,
# title, command, machine, date, columns, rows, notes).
# The lab policies naive and unbounded of the slow-reader experiment are not
# implemented (see the notes in engine-slow_readers.json).
set -euo pipefail
cd "$(dirname "$0")/../.."

QUICK=""
THREADS="$(nproc)"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK="--quick"; shift ;;
    --threads) THREADS="$2"; shift 2 ;;
    *) echo "usage: $0 [--quick] [--threads N]" >&2; exit 2 ;;
  esac
done

BIN=build/bench/engine_bench
if grep -q 'bench/\*/bench.mk' Makefile; then
  make -s -j2 "$BIN"
else
  make -s -j2 -f Makefile -f bench/engine/bench.mk "$BIN"
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
MODEL_ARGS=()
if [ -z "$QUICK" ]; then
  make -s -j2 build/weights_tool
  build/weights_tool random --shape gpt2 --out "$TMP/gpt2"
  MODEL_ARGS=(--model "$TMP/gpt2" --model-note "random weights: weights_tool random --shape gpt2")
fi
mkdir -p bench/results
for EXP in ${EXPS:-overlap joiners slow_readers disconnects}; do
  echo "== engine $EXP ${QUICK:-(gpt2 shape)}"
  "$BIN" --exp "$EXP" "${MODEL_ARGS[@]}" --threads "$THREADS" $QUICK \
    --command "bash bench/engine/run.sh $QUICK --threads $THREADS" \
    --out "bench/results/engine-$EXP.json" > /dev/null
done
