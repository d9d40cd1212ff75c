// Token sampling on the GPU: one token id per row of logits, so that only
// the ids (4 bytes a row) come back to the host instead of the logits
// (201 KB a row for GPT-2).
//
// Semantics: those of the CPU sampler, model::Sampler::Sample(logits,
// params, uniform) (src/model/sampling.{h,cc}), with the draw's uniform
// u = tw::CounterUniform(seed, counter) (src/common/counter_rng.h):
//   - temperature <= 0 or NaN, or 1/temperature not finite, or no finite
//     maximum (every logit NaN or -inf, or a +inf): greedy, the largest
//     logit, ties to the lowest id; NaN never chosen unless every logit is
//     NaN (then id 0);
//   - otherwise weights exp((logit - max) / T) (0 for NaN, and for an
//     exponent <= -87, as the CPU's);
//   - min_p_log < 0 (tw::MinPLog(min_p), common/logit_edit.h) keeps the ids
//     at or above MinPThreshold(max, T, min_p_log), which is the top-k of
//     their count: top_k becomes min(top_k, that count) (or the count when
//     top_k is off);
//   - top_k > 0 (and below the number of non-NaN logits) keeps the k first
//     ids in the order "larger logit first, then lower id" (ties at the cut
//     keep the lowest ids);
//   - top_p < 1 then keeps the smallest prefix of that order (within what
//     top-k kept) whose weight reaches top_p times the kept weight (top_p
//     <= 0 keeps the first id; NaN is off);
//   - the draw walks the kept ids in id order to the first whose running
//     weight exceeds u times the kept total.
// How: one 1024-thread block per row, several passes over the row (the
// first from memory, the others mostly from L2). The k-th value and the
// top-p cut are found by a radix select on the logits' order-preserving
// 32-bit keys (8 bits a pass, 256-bin histograms in shared memory); the
// cut among ties and the draw by a search in id order over 128-id tiles.
// Every sum is an integer: weights are fixed point (round(w * 2^40), w in
// (0, 1]), counts and weights are added with integer atomics and integer
// adds, which are exact in any order. So a row's id is bitwise independent
// of the other rows (and of the launch configuration), with no float
// atomics. The draw point is floor(u * 2^24 * total / 2^24), exact.
//
// Agreement with the CPU: identical for greedy. For sampling the weights
// differ in their last bits (expf vs the CPU's polynomial; exact fixed-point
// sums here, float sums there), so a draw can differ only when u * total
// lies near a CDF boundary, or a top-p prefix's weight near its target:
// within ~3e-7 of the kept total for this kernel against exact arithmetic,
// ~1e-5 for the CPU sampler (its float sums). A weight below 2^-40 of the
// largest counts as 0 here (the CPU keeps it: such an id is drawn with
// probability < 1e-12, or at u = 0).
//
// Limits: vocab in [1, kSampleMaxVocab]; rows >= 0 (0 does nothing).
//
// Threads: any host thread; one kernel enqueued on `stream` (a
// cudaStream_t; nullptr: the default stream), no waiting. Memory: none
// allocated (about 19 KB of static shared memory per block). Never:
// synchronizes, allocates, reads params or logits on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/logit_edit.h"
#include "common/status.h"

namespace tw::kernels {

// One row's sampling parameters, filled by the host and copied to the
// device as an array (rows): 32 bytes, standard layout, no padding bytes
// the compiler adds (pad is ours: set it to 0).
struct SampleParams {
  float temperature;  // <= 0 or NaN: greedy
  int32_t top_k;      // <= 0: off
  float top_p;        // >= 1 or NaN: off
  float min_p_log;    // tw::MinPLog(min_p): >= 0 or NaN off (0 as zero-initialised)
  uint64_t seed;      // the request's seed ...
  uint64_t counter;   // ... and this token's index: u = CounterUniform(seed, counter)
};
static_assert(sizeof(SampleParams) == 32, "SampleParams is 32 bytes");
static_assert(std::is_standard_layout_v<SampleParams> && std::is_trivially_copyable_v<SampleParams>,
              "SampleParams is copied to the device byte for byte");

constexpr int kSampleMaxVocab = 1 << 18;  // 262144: the 2^40 fixed-point sums stay below 2^58

// Applies each row's logit edits in place (common/logit_edit.h: bias, then
// repetition penalty, then the frequency and presence subtraction), before
// SampleTokens and any log-probabilities:
//   logits (rows, vocab) as SampleTokens' (row_stride >= vocab floats)
//   edit_rows (rows + 1): device int32, row r's edits are
//          edits[edit_rows[r], edit_rows[r + 1]) (non-decreasing, from 0)
//   edits: device tw::LogitEdit, ids distinct within a row and in [0, vocab)
//          (an id outside is skipped)
// One block per row; no two threads touch one logit, so the result does not
// depend on the launch. rows >= 0 (0 does nothing).
Status ApplyLogitEdits(float* logits, int rows, int vocab, size_t row_stride, const int32_t* edit_rows,
                       const LogitEdit* edits, void* stream);

// Structured output: -inf for every id a row's grammar mask does not allow
// (common/logit_edit.h, TokenAllowed), before ApplyLogitEdits, so that the
// edits, the cuts, the draw and the log-probabilities see the masked
// distribution:
//   logits (rows, vocab) as SampleTokens' (row_stride >= vocab floats)
//   mask_rows (rows): device int32, row r's mask is masks[mask_rows[r] *
//          mask_words ...], or none when mask_rows[r] < 0 (the row is left
//          as it is: a decode graph always runs this kernel)
//   masks: device uint64 (mask_words per mask, >= (vocab + 63) / 64): bit
//          id % 64 of word id / 64 allows id
// One block per row; no two threads touch one logit. rows >= 0.
Status ApplyTokenMasks(float* logits, int rows, int vocab, size_t row_stride, const int32_t* mask_rows,
                       const uint64_t* masks, int mask_words, void* stream);

// ids (rows) = one token per row of logits.
//   logits (rows, vocab): device floats, row r at logits + r * row_stride
//          (row_stride >= vocab floats: a padded LM-head output is fine;
//          4-byte alignment)
//   params (rows): device SampleParams, 8-byte aligned
//   ids (rows): device int32, each in [0, vocab); -1 only if an internal
//          invariant of the kernel failed (a bug: the caller should treat
//          it as an error, never as a token)
Status SampleTokens(const float* logits, int rows, int vocab, size_t row_stride, const SampleParams* params,
                    int32_t* ids, void* stream);

}  // namespace tw::kernels
