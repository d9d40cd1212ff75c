#!/usr/bin/env bash
# The engine experiments on an earlier commit and on this tree, side by side
# in one run: for each experiment, REV's engine_bench, then this tree's, on
# the same GPT-2-small-shaped random model and threads (full mode).
#
#   bash bench/engine/before_after.sh REV [EXP ...]
#       (default experiments: overlap joiners slow_readers disconnects)
#
# REV's binary is built in a temporary git worktree. Results, in DIR
# ($BENCH_OUT, else a new bench/runs/<date>/: bench/lib/common.sh):
#   DIR/engine-<exp>.json        this tree (and its charts), as
#                                bench/engine/run.sh --full writes it
#   DIR/engine-<exp>-before.json REV's, renamed "engine-<exp>-before"
#                                and titled with REV, without charts
# Each file records the command. bash bench/promote.sh DIR makes them the
# committed reference results (bench/results/) and re-renders RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/common.sh
[ $# -ge 1 ] || { echo "usage: $0 REV [overlap|joiners|slow_readers|disconnects ...]" >&2; exit 2; }
REV="$(git rev-parse --short "$1")"
shift
EXPS=("$@")
[ ${#EXPS[@]} -gt 0 ] || EXPS=(overlap joiners slow_readers disconnects)
THREADS="$(nproc)"
OUT=$(bench_run_dir "")

TMP="$(mktemp -d)"
OLD="$TMP/tree"
cleanup() { git worktree remove --force "$OLD" >/dev/null 2>&1 || true; rm -rf "$TMP"; }
trap cleanup EXIT
git worktree add --detach "$OLD" "$REV" >/dev/null
echo "== building $REV's engine_bench (in $OLD)"
env -u MAKEFLAGS -u MFLAGS make -s -C "$OLD" -j"$THREADS" build/bench/engine_bench
echo "== building this tree's engine_bench"
env -u MAKEFLAGS -u MFLAGS make -s -j"$THREADS" build/bench/engine_bench build/weights_tool
build/weights_tool random --shape gpt2 --out "$TMP/gpt2" >/dev/null
MODEL=(--model "$TMP/gpt2" --model-note "random weights: weights_tool random --shape gpt2")
CMD="bash bench/engine/before_after.sh $REV ${EXPS[*]}"
mkdir -p "$TMP/before"
for EXP in "${EXPS[@]}"; do
  echo "== engine $EXP: $REV"
  "$OLD/build/bench/engine_bench" --exp "$EXP" "${MODEL[@]}" --threads "$THREADS" \
    --command "$CMD (the $REV side)" --out "$TMP/before/engine-$EXP.json" > /dev/null
  echo "== engine $EXP: this tree"
  build/bench/engine_bench --exp "$EXP" "${MODEL[@]}" --threads "$THREADS" \
    --command "$CMD (this tree's side)" --out "$OUT/engine-$EXP.json" > /dev/null
  /usr/bin/python3 - "$TMP/before/engine-$EXP.json" "$OUT/engine-$EXP-before.json" "$REV" "$EXP" <<'EOF'
import json, sys
src, dst, rev, exp = sys.argv[1:]
d = json.load(open(src))
d["bench"] = "engine-" + exp + "-before"
d["title"] = "Before (" + rev + "): " + d["title"]
d.pop("charts", None)
json.dump(d, open(dst, "w"), indent=1)
open(dst, "a").write("\n")
EOF
done
echo "results: $OUT/ (bash bench/promote.sh $OUT to make them the reference)" >&2
