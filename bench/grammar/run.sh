#!/usr/bin/env bash
# Structured output's bench: build/bench/grammar_bench over the real-world
# schemas of tests/data/grammar/schemas, then the decode cost of a grammar.
#
#   bash bench/grammar/run.sh [--out DIR]           quick: the decode part on the random tiny model
#   bash bench/grammar/run.sh --full [--out DIR]    the decode part on a GPT-2-small-shaped random model
#
# Result: DIR/grammar.json (full: DIR/grammar-full.json), where DIR is --out,
# else $BENCH_OUT, else a new bench/runs/<date>/ (bench/lib/common.sh; never
# bench/results/); its verdicts against issue 34's targets are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/common.sh
FULL=""
[[ ",${BENCH:-}," == *",full,"* ]] && FULL=1
OUT_FLAG=""
while [ $# -gt 0 ]; do
  case "$1" in
    --full) FULL=1; shift ;;
    --out) OUT_FLAG="$2"; shift 2 ;;
    *) echo "usage: $0 [--full] [--out DIR]" >&2; exit 2 ;;
  esac
done
OUT=$(bench_run_dir "$OUT_FLAG")
make -s -j2 build/bench/grammar_bench
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
if [ -n "$FULL" ]; then
  make -s -j2 build/weights_tool
  build/weights_tool random --shape gpt2 --out "$TMP/gpt2" >/dev/null
  build/bench/grammar_bench --model "$TMP/gpt2" --threads "$(nproc)" --rounds 7 --mode full --out "$OUT/grammar-full.json" \
    --command "bash bench/grammar/run.sh --full"
else
  build/bench/grammar_bench --threads "$(nproc)" --mode quick --out "$OUT/grammar.json" --command "bash bench/grammar/run.sh"
fi
echo "results: $OUT/" >&2
