// The arithmetic of the sampling controls that change a row's logits before
// it is sampled (vLLM's logits processors; docs/openai.md has the table), in
// one place for the CPU runner and the CUDA kernels, so that given the same
// logits both runners compute the same bits.
//
// First, a row with a grammar (structured output) has its token mask applied:
// every id the grammar does not allow gets -inf (ApplyTokenMask; vLLM and
// XGrammar mask before the logits processors too), so what follows sees the
// masked distribution.
//
// The engine turns a request's logit_bias, min_tokens and penalties into at
// most one LogitEdit per token id (engine/logit_editor.h); a runner applies
// each edit to its id's logit, in this order (vLLM's):
//   1. + bias              logit_bias, or -inf for an id min_tokens holds back;
//   2. repetition penalty  x > 0 ? x / rep : x * rep (rep = 1: none), for an id
//                          in the prompt or generated so far;
//   3. - sub               frequency_penalty * count + presence_penalty
//                          (count > 0), over the generated ids.
// Then temperature, min_p, top-k and top-p (model/sampling.h).
//
// min_p keeps the ids whose probability is at least min_p times the largest:
// (x - max) / T >= log(min_p), i.e. x >= max + T * log(min_p). log(min_p) is
// taken once on the host (MinPLog) and the threshold is one multiply and one
// add, each rounded (no fused multiply-add: the device code says so, and the
// host builds in ISO mode, where GCC does not contract), so both runners cut
// at the same float.
//
// Threads: pure functions. Usable from host C++ and CUDA device code.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/host_device.h"

namespace tw {

// One id's change: 16 bytes, copied to the device byte for byte.
struct LogitEdit {
  int32_t id = 0;
  float bias = 0.0f;  // added first; -inf holds the id back
  float rep = 1.0f;   // repetition penalty for this id (1: none)
  float sub = 0.0f;   // subtracted last (frequency and presence penalties)
};
static_assert(sizeof(LogitEdit) == 16 && std::is_standard_layout_v<LogitEdit> &&
                  std::is_trivially_copyable_v<LogitEdit>,
              "LogitEdit is copied to the device byte for byte");

TW_HOST_DEVICE float ApplyLogitEdit(float x, const LogitEdit& e) {
#if defined(__CUDA_ARCH__)
  float l = __fadd_rn(x, e.bias);
  if (e.rep != 1.0f) l = l > 0.0f ? __fdiv_rn(l, e.rep) : __fmul_rn(l, e.rep);
  return __fsub_rn(l, e.sub);
#else
  float l = x + e.bias;
  if (e.rep != 1.0f) l = l > 0.0f ? l / e.rep : l * e.rep;
  return l - e.sub;
#endif
}

// Whether `mask` (bit id % 64 of word id / 64) allows `id`.
TW_HOST_DEVICE bool TokenAllowed(const uint64_t* mask, int id) { return (mask[id >> 6] >> (id & 63)) & 1; }

// -inf for every id of logits[0, vocab) that `mask` does not allow.
inline void ApplyTokenMask(float* logits, int vocab, const uint64_t* mask) {
  for (int w = 0; w * 64 < vocab; ++w) {
    const uint64_t bits = mask[w];
    if (bits == ~uint64_t{0}) continue;
    const int end = vocab < (w + 1) * 64 ? vocab : (w + 1) * 64;
    for (int id = w * 64; id < end; ++id) {
      if (!TokenAllowed(mask, id)) logits[id] = -std::numeric_limits<float>::infinity();
    }
  }
}

// log(min_p) as the samplers take it: 0 (or NaN) for min_p <= 0 or NaN,
// meaning off; a negative value otherwise (min_p >= 1: the smallest
// negative float, so that only the ids at the maximum are kept).
inline float MinPLog(float min_p) {
  if (!(min_p > 0.0f)) return 0.0f;
  const float lg = std::log(min_p);
  return lg < 0.0f ? lg : -std::numeric_limits<float>::denorm_min();
}

// The smallest logit min_p keeps: max + T * log(min_p), two roundings.
TW_HOST_DEVICE float MinPThreshold(float mx, float temperature, float min_p_log) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(mx, __fmul_rn(temperature, min_p_log));
#else
  const float scaled = temperature * min_p_log;
  return mx + scaled;
#endif
}

}  // namespace tw
