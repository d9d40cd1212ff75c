// Token sampling: greedy, temperature, top-k and top-p (nucleus), driven by a
// per-request seeded generator so that a seeded request's stream never
// depends on what else shares its batch.
//
// Rules (in this order; the runner has already applied the row's logit
// edits, common/logit_edit.h): temperature <= 0 means greedy (argmax).
// Otherwise the logits are divided by the temperature; min_p > 0 keeps the
// tokens whose probability is at least min_p times the largest (a logit at
// or above MinPThreshold); top_k > 0 keeps the k most likely of those; top_p
// < 1 then keeps the smallest set of the most likely tokens whose
// probability sums to at least top_p of what is kept; one token is drawn
// from what is left, renormalised. Ties in value always break toward the lower
// token id (argmax, and the order used by top-k/top-p), so results are
// deterministic.
//
// Threading: a Sampler and an Rng belong to one request (or one thread).
// Allocation: Sampler allocates its candidate buffer (vocab entries) once at
// construction; Sample() never allocates. Never throws.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/runner.h"

namespace tw::model {

// xoshiro256** (Blackman & Vigna's algorithm, our implementation), seeded
// through splitmix64 so that any 64-bit seed, including 0, is fine.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  uint64_t Next();
  // Uniform in [0, 1), 24 random bits.
  float Uniform();

 private:
  uint64_t s_[4];
};

struct SamplingParams {
  float temperature = 1.0f;  // <= 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // >= 1: off
  float min_p = 0.0f;        // <= 0: off
};

// Index of the largest value; the lowest index among equal maxima. n >= 1.
// NaN values are never chosen unless every value is NaN (then 0).
int32_t Argmax(const float* logits, int n);

// The log-probabilities a row asks for (engine::SampledToken's semantics):
// log softmax(logits / T) in double over all `vocab` ids, T = temperature,
// or 1 when temperature <= 0 (greedy); NaN logits count as -inf. Fills
// out->logprob and out->rank for out->id (set by the caller) and the k (0..20) most likely
// ids with theirs, most likely first, ties toward the lower id; values are
// floored at engine::kMinLogprob. Allocates nothing; one pass for the
// maximum, one for the sum, one for the top k.
void ComputeLogprobs(const float* logits, int vocab, float temperature, int k, engine::SampledToken* out);

class Sampler {
 public:
  explicit Sampler(int vocab_size);

  // Draws one token from logits (vocab_size) per `params`, using `rng`
  // (untouched for greedy).
  int32_t Sample(const float* logits, const SamplingParams& params, Rng* rng);
  // The same with the draw's uniform in [0, 1) given (ignored for greedy):
  // the engine passes CounterUniform(seed, n) for a request's n-th token
  // (common/counter_rng.h), which the CUDA sampler draws the same way.
  int32_t Sample(const float* logits, const SamplingParams& params, float uniform);

 private:
  // Helpers over prob_ (the ids' weights); "at or above the cut (t,
  // last_tie)" means logit > t, or logit == t and id <= last_tie.
  // The id of the n-th (1-based) id whose logit is t, in id order.
  int32_t NthIdAt(const float* logits, float t, int n) const;
  // The top-k cut from the ids at or above the k-th largest block maximum:
  // *t = the k-th largest logit, *last_tie = the id of the k-th in the
  // order (or vocab_size when no id at t comes after it). False (nothing set) when k exceeds the block count or more than
  // kMaxCandidates ids qualify; the caller then bisects.
  bool TopKFromCandidates(const float* logits, int k, float* t, int32_t* last_tie);
  // The top-p cut from the ids at or above a floor a few e-folds of weight
  // below the largest (tried at e^-4, -6, -8, -12, -16, -32): the smallest
  // prefix (larger logit first, then lower id) of the kept ids whose weights
  // reach `target`, as *t / *last_tie. False (nothing set) when a floor
  // lets in more than kMaxTopPCandidates ids, none reaches the target above
  // the current cut, or rounding leaves the prefix short; the caller then
  // bisects.
  bool TopPFromCandidates(const float* logits, float inv_t, float mx, double target, float* t,
                          int32_t* last_tie);
  // The weight of the ids at or above the cut.
  double KeptMass(const float* logits, float t, int32_t last_tie) const;
  // Zeroes the weight of every id below the cut (and fixes block_sums_).
  void Cut(const float* logits, float t, int32_t last_tie);
  // Inverse-CDF draw over prob_ in id order, through block_sums_, at
  // uniform * total weight.
  int32_t Draw(float uniform) const;

  int vocab_size_;
  std::vector<float> prob_;        // (vocab_size) weights, 0 for ids not kept
  std::vector<float> block_sums_;  // (vocab_size / cpu::kWeightBlock, rounded up)
  static constexpr int kMaxCandidates = 4096;
  static constexpr int kMaxTopPCandidates = 1024;  // sorted whole: ~30 us at the cap
  std::vector<float> block_max_;       // (as block_sums_) scratch for top-k
  std::vector<int32_t> candidates_;    // (min(vocab_size, kMaxCandidates)) scratch for top-k / top-p
};

}  // namespace tw::model
