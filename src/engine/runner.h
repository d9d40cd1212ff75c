// ModelRunner: the seam between the engine's scheduling and a model's
// compute (DESIGN.md §2: one engine, a runner per backend).
//
// The engine keeps everything that is scheduling: the sequences, admission,
// the block allocator and every block table, the step's token budget, text
// assembly, stop strings, events. A runner keeps everything that is
// compute: the weights, the KV pool's memory (num_kv_blocks blocks of
// block_size tokens, the block ids the engine hands out), the forward pass,
// its threads or device, the logits and the samplers. One step crosses the
// seam as ONE call, Step, over a list of SeqViews — each sequence's block
// table (owned by the engine), how many of its tokens are already cached,
// the tokens to compute now (one for a decoding sequence, a chunk of its
// prompt for one being prefilled), and what sampling needs for the row —
// and comes back as one SampledToken per row that samples: the token id
// and, only for a row that asks (SamplingRow::logprobs >= 0), its
// log-probability and the top-k alternatives (k <= kMaxTopLogprobs, in a
// fixed-size array). Decode rows and prompt chunks run side by side through
// one forward pass (one read of the weights for the whole step). Logits
// never cross the seam (a GPU's batch-32 logits are 6.4 MB a step).
//
// Sampling's randomness is counter-based (common/counter_rng.h): the row's
// draw uses CounterUniform(seed, counter), with counter = the index of the
// token in its completion, so a row's draw does not depend on the batch, the
// thread or the device.
//
// Determinism a runner promises: a sequence's K/V and logits (hence its
// greedy tokens, and its seeded draws) are bitwise independent of which
// other sequences share a step and of how its prompt is split into chunks
// over steps (the engine's isolation, chunked-prefill and preemption tests
// check this for every runner).
//
// Shared blocks (the engine's prefix cache): a block wholly below a
// SeqView's `cached` may be in several sequences' tables at once, and is
// only read; a row may start at any position (`cached` > 0, the prefix
// written earlier, possibly by another sequence). The blocks a call
// writes — those holding positions [cached, cached + n) — are in one table
// of that call only, and no other table of the call reads them.
//
// Threads: one thread (the engine's) calls Step, one call at a time.
// Memory: a runner allocates everything in its factory; Step allocates
// nothing. Never: reads or writes a KV block that is not in a SeqView's
// table, or keeps a SeqView's pointers after returning.
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
  int max_batch = 32;            // sequences in one Step (and rows sampled)
  int num_kv_blocks = 0;         // blocks in the KV pool
  int block_size_tokens = 16;    // tokens per KV block
  // Tokens one Step of several sequences computes (the engine's budget,
  // --max-num-batched-tokens): the runner's activations hold this many rows.
  int max_step_tokens = 512;
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
  // Structured output: the ids the row's grammar allows (bit id % 64 of
  // word id / 64, ModelShape::vocab_size bits); every other id's logit is
  // -inf before anything else (common/logit_edit.h, ApplyTokenMask), so the
  // edits, the cuts, the draw and the log-probabilities all see the masked
  // distribution. Null: every id. Built by the engine (grammar/matcher.h);
  // valid during the call only; never all zero.
  const uint64_t* mask = nullptr;
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
  int n = 0;                             // >= 1: 1 for a decode, a prompt chunk's length
  // Whether the row draws the token after its last one (into its out[]
  // entry). False for a prompt chunk that does not end its prompt: nobody
  // reads a draw there, and the runner computes no logits for it.
  bool sample = true;
  SamplingRow sampling;                  // how the row draws (when it samples)
  // Prompt log-probabilities of the chunk's positions. When prompt_logprobs
  // >= 0 (0..kMaxTopLogprobs), prompt_out[j] gets, for the token after
  // position cached + j, its log-probability under that position's logits
  // and that many most likely alternatives: SampledToken's semantics at
  // temperature 1 over the raw logits (no logit edits), with its rank. The
  // token after position cached + j is tokens[j + 1] inside the chunk and
  // next_token after its last position. A row that samples (its chunk ends
  // the prompt) has n - 1 entries, the last position's token being the one
  // it draws; a row that does not has n, and next_token >= 0. The runner sets
  // each entry's id; prompt_out is owned by the engine.
  int prompt_logprobs = -1;
  SampledToken* prompt_out = nullptr;
  int32_t next_token = -1;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  virtual const char* kind() const = 0;  // "cpu", "cuda"
  virtual ModelShape shape() const = 0;
  // What the factory provisioned (num_kv_blocks is the admission bound).
  virtual RunnerLimits limits() const = 0;

  // One step: appends each row's n tokens to its sequence's KV blocks and,
  // for each row that samples, draws the token after its last one into
  // out[i] (with its log-probabilities when the row asks), out[i] of the
  // other rows left as they are. 1 <= count <= limits().max_batch distinct
  // sequences, their n together <= limits().max_step_tokens; a lone row
  // (count == 1) may be longer, up to the context (the runner splits it
  // into passes). Each row's results are what they would be alone.
  // CheckStepRows is the contract's check, which every runner runs first.
  // On error nothing was appended (the engine may retry the rows one by
  // one).
  virtual Status Step(const SeqView* seqs, int count, SampledToken* out) = 0;
};

// What every runner's Step checks first (`who` names the runner): the
// count, the budget, and each row asking for prompt log-probabilities
// (its output, at most kMaxTopLogprobs alternatives, the token after a
// chunk that does not sample).
inline Status CheckStepRows(const SeqView* seqs, int count, const RunnerLimits& limits, const char* who) {
  if (seqs == nullptr || count < 1 || count > limits.max_batch) {
    return Status::Error(std::string(who) + ": " + std::to_string(count) + " sequences in one step (1.." +
                         std::to_string(limits.max_batch) + ")");
  }
  long long total = 0;
  for (int i = 0; i < count; i++) {
    const SeqView& v = seqs[i];
    if (v.n < 1 || v.tokens == nullptr) {
      return Status::Error(std::string(who) + ": row " + std::to_string(i) + " has " + std::to_string(v.n) +
                           " tokens (need >= 1)");
    }
    total += v.n;
    if (v.prompt_logprobs < 0) continue;
    const bool needs_out = v.n > 1 || !v.sample;
    if ((needs_out && v.prompt_out == nullptr) || v.prompt_logprobs > kMaxTopLogprobs ||
        (!v.sample && v.next_token < 0)) {
      return Status::Error(std::string(who) + ": row " + std::to_string(i) + " asks for " +
                           std::to_string(v.prompt_logprobs) + " prompt log-probabilities without its output (0.." +
                           std::to_string(kMaxTopLogprobs) + " alternatives; a chunk that does not sample names " +
                           "the token after it)");
    }
  }
  if (count > 1 && total > limits.max_step_tokens) {
    return Status::Error(std::string(who) + ": " + std::to_string(total) + " tokens in one step of " +
                         std::to_string(count) + " sequences (at most " + std::to_string(limits.max_step_tokens) +
                         ")");
  }
  return Status::Ok();
}

// Blocks needed to hold `tokens` tokens.
inline int BlocksFor(int tokens, int block_size) { return (tokens + block_size - 1) / block_size; }

}  // namespace tw::engine
