// The CPU emulation of the attention kernels' arithmetic (see
// attention_plan.h for the order of operations).
//
// fp-contract off: the emulation must round a multiply and the add after it
// separately, as the kernels' __fmul_rn/__fadd_rn do; GCC would otherwise
// fuse them into an fma on a machine built with -mfma.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include "kernels/attention_plan.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace tw::kernels {

void EmulateAttnChunk(const float* q, const float* k, const float* v, int n, int head_dim, float scale,
                      float* m, float* l, float* o) {
  using namespace attn_math;
  const int hd = head_dim, G = hd / 4, S = kAttnThreads / G;
  // Scores: per key, G lane partials of 4 dims, then the xor tree.
  std::vector<float> score(n);
  for (int t = 0; t < n; ++t) {
    float a[16] = {}, b[16];
    for (int g = 0; g < G; ++g) {
      float acc = 0.0f;
      for (int i = 0; i < 4; ++i) acc = Fma(q[4 * g + i], k[static_cast<size_t>(t) * hd + 4 * g + i], acc);
      a[g] = acc;
    }
    for (int off = G / 2; off >= 1; off >>= 1) {
      for (int g = 0; g < G; ++g) b[g] = Add(a[g], a[g ^ off]);
      std::copy(b, b + G, a);
    }
    score[t] = Mul(scale, a[0]);
  }
  float mx = -std::numeric_limits<float>::infinity();
  for (int t = 0; t < n; ++t) mx = Max(mx, score[t]);
  // Groups: group s takes keys s, s+S, ... in order.
  std::vector<float> og(static_cast<size_t>(S) * hd, 0.0f), lg(S, 0.0f);
  for (int s = 0; s < S; ++s) {
    for (int t = s; t < n; t += S) {
      const float p = Exp(Sub(score[t], mx));
      for (int d = 0; d < hd; ++d) {
        og[static_cast<size_t>(s) * hd + d] = Fma(p, v[static_cast<size_t>(t) * hd + d], og[static_cast<size_t>(s) * hd + d]);
      }
      lg[s] = Add(lg[s], p);
    }
  }
  // The groups' tree: strides 1, 2, .., S/2.
  std::vector<float> og2(og.size()), lg2(S);
  for (int st = 1; st < S; st <<= 1) {
    for (int s = 0; s < S; ++s) {
      lg2[s] = Add(lg[s], lg[s ^ st]);
      for (int d = 0; d < hd; ++d) {
        og2[static_cast<size_t>(s) * hd + d] = Add(og[static_cast<size_t>(s) * hd + d], og[static_cast<size_t>(s ^ st) * hd + d]);
      }
    }
    og.swap(og2);
    lg.swap(lg2);
  }
  *m = mx;
  *l = lg[0];
  std::copy(og.begin(), og.begin() + hd, o);
}

void EmulateAttnMerge(const float* m, const float* l, const float* o, int nc, int head_dim, float* out) {
  using namespace attn_math;
  float mx = m[0];
  for (int c = 1; c < nc; ++c) mx = Max(mx, m[c]);
  for (int d = 0; d < head_dim; ++d) {
    const float w0 = Exp(Sub(m[0], mx));
    float L = Mul(l[0], w0), O = Mul(o[d], w0);
    for (int c = 1; c < nc; ++c) {
      const float w = Exp(Sub(m[c], mx));
      L = Fma(l[c], w, L);
      O = Fma(o[static_cast<size_t>(c) * head_dim + d], w, O);
    }
    out[d] = Div(O, L);
  }
}

Status EmulateAttentionRow(const float* q, const float* k, const float* v, int len, int head_dim, float scale,
                           int max_chunks, float* out) {
  if (!AttnHeadDimSupported(head_dim)) {
    return Status::Error("EmulateAttentionRow: head_dim = " + std::to_string(head_dim) + ", want 16 or 64");
  }
  const int nc = AttnChunkCount(len);
  if (len < 1 || nc > max_chunks) {
    return Status::Error("EmulateAttentionRow: len = " + std::to_string(len) + " needs " + std::to_string(nc) +
                         " chunks of " + std::to_string(kAttnChunkTokens) + " with max_chunks = " +
                         std::to_string(max_chunks) + " (want len >= 1)");
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The padded workspace: every slot poisoned, only the row's chunks filled.
  std::vector<float> m(max_chunks, nan), l(max_chunks, nan), o(static_cast<size_t>(max_chunks) * head_dim, nan);
  for (int c = 0; c < nc; ++c) {
    const int first = c * kAttnChunkTokens;
    const int n = std::min(kAttnChunkTokens, len - first);
    const size_t at = static_cast<size_t>(first) * head_dim;
    EmulateAttnChunk(q, k + at, v + at, n, head_dim, scale, &m[c], &l[c], &o[static_cast<size_t>(c) * head_dim]);
  }
  EmulateAttnMerge(m.data(), l.data(), o.data(), nc, head_dim, out);
  return Status::Ok();
}

}  // namespace tw::kernels
