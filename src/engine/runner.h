// ModelRunner: the seam between the engine's scheduling and a model's
// compute (DESIGN.md §2: one engine, a runner per backend).
//
// The engine keeps everything that is scheduling: the sequences, admission
// with KV reservation, the block allocator and every block table, text
// assembly, stop strings, events. A runner keeps everything that is
// compute: the weights, the KV pool's memory (num_kv_blocks blocks of
// block_size tokens, the block ids the engine hands out), the forward pass,
// its threads or device, the logits and the samplers. One step crosses the
// seam as a list of SeqViews — each sequence's block table (owned by the
// engine), how many of its tokens are already cached, the tokens to append
// now, and what sampling needs for the row — and comes back as one
// SampledToken per sequence: the token id and, only for a row that asks
// (SamplingRow::logprobs >= 0), its log-probability and the top-k
// alternatives (k <= kMaxTopLogprobs, in a fixed-size array). Logits never
// cross it (a GPU's batch-32 logits are 6.4 MB a step).
//
// Sampling's randomness is counter-based (common/counter_rng.h): the row's
// draw uses CounterUniform(seed, counter), with counter = the index of the
// token in its completion, so a row's draw does not depend on the batch, the
// thread or the device.
//
// Determinism a runner promises: a sequence's logits (hence its greedy
// tokens, and its seeded draws) are bitwise independent of which other
// sequences share a step (the engine's isolation tests check this for every
// runner).
//
// Shared blocks (the engine's prefix cache): a block wholly below a
// SeqView's `cached` may be in several sequences' tables at once, and is
// only read; a Prefill may start at any block boundary (`cached` > 0, the
// prefix written earlier, possibly by another sequence). The blocks a call
// writes — those holding positions [cached, cached + n) — are in one table
// of that call only, and no other table of the call reads them.
//
// Threads: one thread (the engine's) calls Prefill and Decode, one at a time.
// Memory: a runner allocates everything in its factory; Prefill and Decode
// allocate nothing. Never: reads or writes a KV block that is not in a
// SeqView's table, or keeps a SeqView's pointers after returning.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/logit_edit.h"
#include "common/status.h"

namespace tw::engine {

// The model's shape as the engine needs it.
struct ModelShape {
  int n_ctx = 0;          // positions: prompt + generated tokens fit in this
  int vocab_size = 0;
  int eos_token_id = 0;   // the model's end-of-text id
};

// What the engine asks a runner to provision (its factory takes these).
struct RunnerLimits {
  int max_batch = 32;            // sequences in one Decode (and rows sampled)
  int num_kv_blocks = 0;         // blocks in the KV pool
  int block_size_tokens = 16;    // tokens per KV block
  int max_prefill_tokens = 256;  // tokens in one Prefill pass of several sequences
  int threads = 1;               // CPU threads (the engine thread included)
  // Logit edits one row may carry (SamplingRow::edits): the context's ids
  // (penalties) plus logit_bias and the ids min_tokens holds back.
  int max_edits_per_row = 0;
};

// How to draw a row's next token (model/sampling.h has the rules).
struct SamplingRow {
  float temperature = 0.0f;  // <= 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // >= 1: off
  float min_p = 0.0f;        // <= 0: off (common/logit_edit.h)
  // Applied to the row's logits before anything else, greedy rows too (at
  // most one edit per id; common/logit_edit.h has the arithmetic). Built by
  // the engine from logit_bias, min_tokens and the penalties; valid during
  // the call only; num_edits <= RunnerLimits::max_edits_per_row.
  const LogitEdit* edits = nullptr;
  int num_edits = 0;
  uint64_t seed = 0;         // the request's seed
  uint64_t counter = 0;      // which draw: the token's index in the completion
  // -1: no log-probabilities; 0..kMaxTopLogprobs: the sampled token's
  // log-probability and this many most likely alternatives.
  int logprobs = -1;
};

// The most ids a request's logit_bias and stop_token_ids name together (with
// the end-of-text id): with the context's ids, RunnerLimits::max_edits_per_row.
inline constexpr int kMaxNamedIds = 1024;

// The most alternatives a row may ask for (OpenAI's bound on logprobs and
// top_logprobs).
inline constexpr int kMaxTopLogprobs = 20;

// What a runner returns for one row. The log-probabilities are those of the
// distribution the row is sampled from, softmax(logits / T), computed in
// double over the whole vocabulary, before any top-k / top-p cut; a greedy
// row (T <= 0) reports the T = 1 distribution. Values below
// kMinLogprob (and -inf) are reported as kMinLogprob (model/sampling.h,
// ComputeLogprobs, is the one implementation every runner uses).
struct SampledToken {
  int32_t id = 0;
  bool has_logprobs = false;  // the row asked (SamplingRow::logprobs >= 0)
  double logprob = 0.0;       // log P(id)
  // 1 + the number of ids strictly more likely than `id` (vLLM's rank:
  // 1 for the most likely); set with the log-probabilities.
  int32_t rank = 0;
  int top_count = 0;          // 0..kMaxTopLogprobs
  // The top_count most likely ids, most likely first (ties: lower id first).
  int32_t top_ids[kMaxTopLogprobs] = {};
  double top_logprobs[kMaxTopLogprobs] = {};
};

// The floor a log-probability is reported at (OpenAI reports -9999.0 for a
// token of probability 0; JSON has no -inf).
inline constexpr double kMinLogprob = -9999.0;

// One sequence in a step. The pointers are valid during the call only.
struct SeqView {
  const int32_t* block_table = nullptr;  // (num_blocks) the sequence's KV blocks
  int num_blocks = 0;                    // enough blocks for cached + n tokens
  int cached = 0;                        // tokens [0, cached) are in the KV cache
  const int32_t* tokens = nullptr;       // (n) appended at positions [cached, cached + n)
  int n = 0;                             // >= 1
  SamplingRow sampling;                  // draws the token after the last one
  // Prompt log-probabilities (a Prefill row only; such a row is prefilled
  // alone: count == 1). When prompt_logprobs >= 0 (0..kMaxTopLogprobs),
  // prompt_out[j] for j in [0, n - 1) gets, for id = tokens[j + 1], its
  // log-probability under the logits of position cached + j and that many
  // most likely alternatives: SampledToken's semantics at temperature 1 over
  // the raw logits (no logit edits), with its rank. The runner sets each
  // entry's id; prompt_out has n - 1 entries, owned by the engine.
  int prompt_logprobs = -1;
  SampledToken* prompt_out = nullptr;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  virtual const char* kind() const = 0;  // "cpu", "cuda"
  virtual ModelShape shape() const = 0;
  // What the factory provisioned (num_kv_blocks is the admission bound).
  virtual RunnerLimits limits() const = 0;

  // Appends each sequence's tokens to its KV blocks and draws each one's
  // next token into out[i] (with its log-probabilities when the row asks). Several sequences in one pass need a total of n
  // <= limits().max_prefill_tokens; one sequence may be longer (the runner
  // splits it). Each sequence's result is what it would be alone. A row
  // asking for prompt log-probabilities (SeqView::prompt_logprobs) comes
  // alone. On error nothing was appended (the engine may retry the
  // sequences one by one).
  virtual Status Prefill(const SeqView* seqs, int count, SampledToken* out) = 0;
  // One decode step: every sequence has n == 1; count <= limits().max_batch.
  // On error nothing was appended.
  virtual Status Decode(const SeqView* seqs, int count, SampledToken* out) = 0;
};

// What every runner's Prefill checks first (`who` names the runner): a row
// asking for its prompt's log-probabilities comes alone, with its output,
// for at most kMaxTopLogprobs alternatives.
inline Status CheckPromptLogprobsRows(const SeqView* seqs, int count, const char* who) {
  for (int i = 0; i < count; i++) {
    const SeqView& v = seqs[i];
    if (v.prompt_logprobs < 0) continue;
    if (count > 1 || (v.n > 1 && v.prompt_out == nullptr) || v.prompt_logprobs > kMaxTopLogprobs) {
      return Status::Error(std::string(who) + ": a row asking for " + std::to_string(v.prompt_logprobs) +
                           " prompt log-probabilities must come alone, with its output (0.." +
                           std::to_string(kMaxTopLogprobs) + ")");
    }
  }
  return Status::Ok();
}

// Blocks needed to hold `tokens` tokens.
inline int BlocksFor(int tokens, int block_size) { return (tokens + block_size - 1) / block_size; }

}  // namespace tw::engine
