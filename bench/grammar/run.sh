#!/usr/bin/env bash
# Structured output's bench: build/bench/grammar_bench over the real-world
# schemas of tests/data/grammar/schemas, then the decode cost of a grammar.
#
#   bash bench/grammar/run.sh            quick: the decode part on the random tiny model
#   bash bench/grammar/run.sh --full     the decode part on a GPT-2-small-shaped random model
#
# Result: bench/results/grammar.json (full: grammar-full.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
FULL=""
[[ ",${BENCH:-}," == *",full,"* ]] && FULL=1
[ "${1:-}" = "--full" ] && FULL=1
make -s -j2 build/bench/grammar_bench
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
if [ -n "$FULL" ]; then
  make -s -j2 build/weights_tool
  build/weights_tool random --shape gpt2 --out "$TMP/gpt2" >/dev/null
  build/bench/grammar_bench --model "$TMP/gpt2" --threads "$(nproc)" --rounds 7 --mode full --out bench/results/grammar-full.json \
    --command "bash bench/grammar/run.sh --full"
else
  build/bench/grammar_bench --threads "$(nproc)" --mode quick --out bench/results/grammar.json --command "bash bench/grammar/run.sh"
fi
