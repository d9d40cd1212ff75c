#!/usr/bin/env bash
# The mutation check of the CPU emulator (run by hand, once; its output is
# committed as tests/cudaemu/results/mutations.txt): deliberate bugs, one at
# a time, in a copy of the working tree, each followed by make test-gpu-emu,
# to show which ones the emulated runs catch.
#
#   bash tests/cudaemu/mutations.sh [OUT]     (OUT: default tests/cudaemu/results/mutations.txt)
#
# The copy is made once in a temporary folder (the committed tree, plus
# build/ so that a mutation recompiles only what it touches) and removed at
# the end. Each mutation is a literal replacement that must match exactly
# once (the script stops if the code it targets has moved). For each: the
# step results of make test-gpu-emu, the tests that failed, and the verdict
# "caught" (make test-gpu-emu failed) or "NOT caught".
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-tests/cudaemu/results/mutations.txt}
WORK=$(mktemp -d /tmp/tw-mutations.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
git archive HEAD | tar -x -C "$WORK"
[ -d build ] && cp -a build "$WORK/"

# name | file | text to replace | replacement (Python string literals' escapes)
MUTATIONS=(
  "swapped mma fragments (B's two registers, in the PTX statement: every product)|kernels/ptx.cuh|{%8, %9}, |{%9, %8}, "
  "a dropped cp.async.wait_group (prefill attention's K/V staging)|kernels/attention.cu|  CopyAsyncCommit();\n  CopyAsyncWaitAllGroups();|  CopyAsyncCommit();"
  "a dropped __syncthreads (the gemm's x tile staged, then read)|kernels/gemm.cu|    StageX<kTf32>(a, smem, row0, nrows, split);\n    __syncthreads();|    StageX<kTf32>(a, smem, row0, nrows, split);"
  "an off-by-one in the block-table index (decode attention)|kernels/attention.cu|      const int blk = __ldg(table + j / bs);|      const int blk = __ldg(table + (j + 1) / bs);"
  "the fence before the split-K ticket removed|kernels/gemm.cu|    __threadfence();\n    __syncthreads();\n    if (tid == 0) s_last|    __syncthreads();\n    if (tid == 0) s_last"
  "the host sync before re-packing the step buffer removed (chunked prefill)|src/cuda/cuda_runner_cuda.cc|    if (done > 0) TW_TRY(kernels::StreamSync(stream_));\n|"
)

{
  echo "# make test-gpu-emu against deliberate bugs (tests/cudaemu/mutations.sh)"
  echo "# commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo
} > "$OUT"

# The unmutated tree first: the check is only meaningful if it passes.
run() {
  local log=$1
  (cd "$WORK" && make test-gpu-emu > "$log" 2>&1)
}
echo "== the unmutated tree"
if run "$WORK/base.log"; then base="passes"; else base="FAILS"; fi
# What a run's log says: each step's result, the tests and checks that
# failed (the shards' output carries a "[shard i] " prefix), the first
# emulator aborts, and the closing count.
summary() {
  grep -E '^== .*: (ok|FAILED) in' "$1"
  grep -oE '\[  FAILED  \] [A-Za-z][^ ]*' "$1" | sort -u | head -20
  grep -hE '^\[[a-z]+\] SOME VALIDATIONS FAILED' "$1"
  grep -m3 -oE 'cudaemu: .*' "$1"
  grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1
}
{
  echo "## the unmutated tree: make test-gpu-emu $base"
  summary "$WORK/base.log"
  echo
} >> "$OUT"

for m in "${MUTATIONS[@]}"; do
  IFS='|' read -r name file from to <<< "$m"
  echo "== $name"
  if ! python3 - "$WORK/$file" "$from" "$to" <<'PY'
import sys
path, old, new = sys.argv[1], sys.argv[2].encode().decode('unicode_escape'), sys.argv[3].encode().decode('unicode_escape')
text = open(path).read()
if text.count(old) != 1:
    sys.exit(f"{path}: the text to mutate occurs {text.count(old)} times, not once")
open(path, 'w').write(text.replace(old, new))
PY
  then
    echo "## $name: the mutation no longer applies ($file changed)" >> "$OUT"
    exit 1
  fi
  log="$WORK/mutation.log"
  if run "$log"; then verdict="NOT caught"; else verdict="caught"; fi
  {
    echo "## $name ($file): $verdict"
    summary "$log"
    echo
  } >> "$OUT"
  (cd "$WORK" && git -C "$OLDPWD" show "HEAD:$file" > "$file")  # restore
done
echo "wrote $OUT"
