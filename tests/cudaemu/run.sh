#!/usr/bin/env bash
# make test-gpu-emu's runs, on the CPU emulator's build (build/emu): the CUDA
# kernels and the CUDA runner executed without a GPU, at CI shapes
# (TW_GPU_TEST_SHAPES=ci, tests/gpu/gpu_test_util.h).
#
#   bash tests/cudaemu/run.sh BUILD_DIR      (make test-gpu-emu passes build/emu)
#
# Steps, each timed:
#   1. the emulator's own suite (tests/cudaemu/emu_test.cu), plainly and
#      under AddressSanitizer and UndefinedBehaviorSanitizer;
#   2. tests/gpu: every kernel against its CPU reference, the CUDA runner
#      end to end on the golden tiny GPT-2, the server over HTTP;
#   3. the kernels/dev checkers, validation only (--no-timing);
#   4. the engine suites on the CUDA runner (TW_TEST_RUNNER=cuda), the
#      subset named in ENGINE_FILTER below.
# The emulator runs one block at a time on one core, so each GoogleTest
# binary runs as JOBS shards side by side (GTEST_SHARD_INDEX), and the dev
# checkers JOBS at a time. Every step runs even if one before it failed; the
# last line is "N passed, M failed" over the steps, and the exit code is
# non-zero if any failed. TWEMU_SEED (default 1) seeds the emulator's block
# and thread order.
set -uo pipefail
B=${1:?usage: bash tests/cudaemu/run.sh BUILD_DIR}
cd "$(dirname "$0")/../.."
export TW_GPU_TEST_SHAPES=ci
export TWEMU_SEED=${TWEMU_SEED:-1}
JOBS=${JOBS:-$(nproc)}
LOGS=$(mktemp -d /tmp/tw-gpu-emu.XXXXXX)
trap 'rm -rf "$LOGS"' EXIT

# The engine suites on the CUDA runner: a step of the tiny model takes about
# 0.2 s here (the LM head alone is 1,571 blocks of 256 threads), so a subset
# that goes through every part of the runner seam: prefill and decode of
# single and batched sequences, EOS and stop strings over the runner's
# tokens, an empty prompt, a request cancelled while waiting, prompts
# admitted together sharing steps within the token budget (mixed steps of
# decodes and prompt chunks, chunks that do not draw), and a fully cached prefix
# with seeded sampling (the prefix cache's shared blocks on the device),
# and the logit edits through the step buffer (logit_bias forcing an id,
# greedy and sampled; min_tokens masking end-of-text and stop ids), and a
# prompt's log-probabilities (the head over every prompt row, chunk by
# chunk, equal to the cut prompts' next-token log-probabilities), and a
# stream preempted and recomputed with the prefix cache off (the runner's
# prefill of all it decoded must give the same tokens), and a prompt
# prefilled in chunks that end
# mid-block, beside a decode.
ENGINE_FILTER='Engine.SingleTokenRequests:Engine.EmptyPromptStartsFromEndOfText:Engine.EosEndsTheStreamAndIsReported'
ENGINE_FILTER+=':Engine.StopStringEndsTheStreamWithoutEmittingIt:Engine.CancelWaitingRequestNeverReachesTheModel'
ENGINE_FILTER+=':Engine.LogitBiasOfPlus100ForcesItsIdGreedyAndSampled:Engine.MinTokensHoldsBackEndOfTextAndStopIdsUntilReached'
ENGINE_FILTER+=':Engine.PromptsAdmittedTogetherShareTheStepsTokenBudget'
ENGINE_FILTER+=':Engine.PromptLogprobsComeWithTheFirstTokenAndReadNoCachedPrefix'
ENGINE_FILTER+=':*PreemptionOnTheRunner.APreemptedStreamEqualsItsSoloRun/0'
ENGINE_FILTER+=':*ChunkedPrefill.ALongPromptIsSpreadOverStepsWhileAnotherDecodesAtEach/3'
ENGINE_FILTER+=':*PrefixCacheEngine.AFullyCachedPromptRecomputesItsLastBlock/Seeded'
# Structured output: grammar masks through the step buffer and the mask
# kernel, in a pass (the first token) and in the decode graph, with the
# log-probabilities of the masked distribution.
ENGINE_FILTER+=':StructuredOutput.AChoiceGrammarGivesOneOfTheChoicesAndEndsThere'
ENGINE_FILTER+=':StructuredOutput.LogprobsAreThoseOfTheMaskedDistribution'

start=$(date +%s)
pass=0
fail=0
failed=()
step() {
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  echo "== $name (at $((t0 - start)) s)"
  if "$@"; then
    pass=$((pass + 1))
    echo "== $name: ok in $(($(date +%s) - t0)) s"
  else
    fail=$((fail + 1))
    failed+=("$name")
    echo "== $name: FAILED in $(($(date +%s) - t0)) s"
  fi
}

# Runs a GoogleTest binary as JOBS shards side by side; fails if any shard
# does. Each shard's output is printed when all are done.
sharded() {
  local name=$1
  shift
  local pids=() rc=0 i
  for ((i = 0; i < JOBS; i++)); do
    GTEST_TOTAL_SHARDS=$JOBS GTEST_SHARD_INDEX=$i "$@" > "$LOGS/$name.$i" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < JOBS; i++)); do
    wait "${pids[$i]}" || rc=1
    sed "s/^/[shard $i] /" "$LOGS/$name.$i"
  done
  return $rc
}

# The dev checkers, JOBS at a time; each one's last lines (all of its
# output if it failed).
report() {
  if wait "$1"; then
    tail -n 2 "$LOGS/dev.$2" | sed "s|^|[$2] |"
  else
    sed "s|^|[$2] |" "$LOGS/dev.$2"
    return 1
  fi
}
checkers() {
  local pids=() names=() rc=0 d i
  for d in gemm attention rownorm sampling; do
    "$B/dev/$d" --no-timing > "$LOGS/dev.$d" 2>&1 &
    pids+=($!)
    names+=("$d")
    if [ ${#pids[@]} -ge "$JOBS" ]; then
      report "${pids[0]}" "${names[0]}" || rc=1
      pids=("${pids[@]:1}")
      names=("${names[@]:1}")
    fi
  done
  for i in "${!pids[@]}"; do
    report "${pids[$i]}" "${names[$i]}" || rc=1
  done
  return $rc
}

step "the emulator's own suite" "$B/tests/cudaemu_tests" --gtest_brief=1
step "the emulator's own suite under ASan and UBSan" "$B/tests/cudaemu_tests_asan" --gtest_brief=1
step "tests/gpu (kernels, the CUDA runner, the server over HTTP)" sharded gpu "$B/tests/gpu_tests" --gtest_brief=1
step "the kernels/dev checkers (--no-timing)" checkers
step "the engine suites on the CUDA runner" sharded engine env TW_TEST_RUNNER=cuda TW_TEST_TIMEOUT_SCALE=30 \
  "$B/tests/engine_tests" --gtest_brief=1 --gtest_filter="$ENGINE_FILTER"

echo "== make test-gpu-emu took $(($(date +%s) - start)) s (TWEMU_SEED=$TWEMU_SEED)"
for f in "${failed[@]}"; do echo "== FAILED: $f"; done
echo "$pass passed, $fail failed"
test "$fail" -eq 0
