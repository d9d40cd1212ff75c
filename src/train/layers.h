// The row-wise math of GPT-2's layers, forward and backward, for T = float
// (training) or double (the gradient checks): layer norm, GELU (tanh form),
// softmax cross-entropy, and causal attention for one (sequence, head) in
// plain loops. The trainer (trainer.h) runs these over rows in parallel;
// its float path does the matmuls and the float attention with
// cpu::Matmul instead (the double path uses the plain loops here).
//
// Every function is a fixed sequence of scalar operations: libm's exp /
// log / sqrt of T, sums in a fixed order (no reassociation, no SIMD
// approximations), so a result depends only on the inputs, never on the
// thread or the machine (given the same libm; see trainer.h).
//
// Threading: pure functions of their arguments. Allocation: none.
#pragma once

#include <cmath>
#include <limits>

namespace tw::train::layers {

// Long reductions keep eight interleaved partial results (a chain of
// dependent additions is what bounds a long sum), combined in a fixed
// order: element i goes to lane i % 8 of its block, the tail's to lanes 0,
// 1, ... (as in SumFixed).
constexpr int kLanes = 8;

template <typename T>
T CombineLanes(const T* s) {
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// sum of x[0..n) in kLanes lanes.
template <typename T>
T SumFixed(const T* x, int n) {
  T s[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) s[j] += x[i + j];
  for (int j = 0; i < n; ++i, ++j) s[j] += x[i];
  return CombineLanes(s);
}

// out (C) = (x - mean) * rstd * w + b, rstd = 1 / sqrt(var + eps); the
// row's mean and rstd are kept for the backward pass.
template <typename T>
void LayerNormRow(const T* x, int C, const T* w, const T* b, T eps, T* out, T* mean_out, T* rstd_out) {
  T sum = 0;
  for (int i = 0; i < C; ++i) sum += x[i];
  const T mean = sum / static_cast<T>(C);
  T sq = 0;
  for (int i = 0; i < C; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const T rstd = T(1) / std::sqrt(sq / static_cast<T>(C) + eps);
  for (int i = 0; i < C; ++i) out[i] = (x[i] - mean) * rstd * w[i] + b[i];
  *mean_out = mean;
  *rstd_out = rstd;
}

// dx (C) += the layer norm's input gradient for output gradient dout.
template <typename T>
void LayerNormBackwardRow(const T* dout, const T* x, T mean, T rstd, const T* w, int C, T* dx) {
  T dnorm_mean = 0, dnorm_norm_mean = 0;
  for (int i = 0; i < C; ++i) {
    const T dnorm = dout[i] * w[i];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * ((x[i] - mean) * rstd);
  }
  dnorm_mean /= static_cast<T>(C);
  dnorm_norm_mean /= static_cast<T>(C);
  for (int i = 0; i < C; ++i) {
    const T norm = (x[i] - mean) * rstd;
    dx[i] += (dout[i] * w[i] - dnorm_mean - norm * dnorm_norm_mean) * rstd;
  }
}

// The layer norm's parameter gradients over `rows` rows, columns [c0, c1):
// dw[c] += sum_r dout[r][c] * norm[r][c], db[c] += sum_r dout[r][c], each
// column summed in row order (so any split into column ranges gives the
// same bits).
template <typename T>
void LayerNormParamGrads(const T* dout, const T* x, const T* mean, const T* rstd, int rows, int C, int c0, int c1,
                         T* dw, T* db) {
  for (int r = 0; r < rows; ++r) {
    const T* d = dout + static_cast<size_t>(r) * C;
    const T* xr = x + static_cast<size_t>(r) * C;
    for (int c = c0; c < c1; ++c) {
      dw[c] += d[c] * ((xr[c] - mean[r]) * rstd[r]);
      db[c] += d[c];
    }
  }
}

// db[c] += sum_r dy[r][c] for columns [c0, c1), in row order (a bias's
// gradient).
template <typename T>
void ColumnSums(const T* dy, int rows, int cols, int c0, int c1, T* db) {
  for (int r = 0; r < rows; ++r) {
    const T* d = dy + static_cast<size_t>(r) * cols;
    for (int c = c0; c < c1; ++c) db[c] += d[c];
  }
}

// GELU, tanh form (Hugging Face's "gelu_new", GPT-2's activation):
// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as the
// forward pass's kernel does, x * sigmoid(2u) = x / (1 + exp(-2u)) (the
// same function; exp is several times cheaper than tanh in libm).
constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

template <typename T>
T Gelu(T x) {
  const T u = static_cast<T>(kGeluScale) * (x + static_cast<T>(kGeluCubic) * x * x * x);
  return x / (T(1) + std::exp(T(-2) * u));
}

// d Gelu(x) / dx = s + x s (1 - s) 2 u'(x), s = sigmoid(2u).
template <typename T>
T GeluGrad(T x) {
  const T u = static_cast<T>(kGeluScale) * (x + static_cast<T>(kGeluCubic) * x * x * x);
  const T s = T(1) / (T(1) + std::exp(T(-2) * u));
  const T du = static_cast<T>(kGeluScale) * (T(1) + T(3) * static_cast<T>(kGeluCubic) * x * x);
  return s + x * s * (T(1) - s) * T(2) * du;
}

// Softmax cross-entropy of one row of V logits against `target`: returns
// log(sum exp(l - max)) - (l[target] - max). The logits are overwritten:
// with `grad`, by their gradient times dscale (dscale (softmax(l) -
// onehot(target)), dscale being d(mean loss)/d(this row's loss)); without,
// by exp(l - max). Three passes: the maximum (in lanes: a maximum is exact
// in any order), exp and its sum (SumFixed's lanes), the scaling.
template <typename T>
T CrossEntropyRow(T* logits, int V, int target, T dscale, bool grad) {
  T m[kLanes];
  for (T& v : m) v = -std::numeric_limits<T>::infinity();
  int i = 0;
  for (; i + kLanes <= V; i += kLanes)
    for (int j = 0; j < kLanes; ++j) m[j] = logits[i + j] > m[j] ? logits[i + j] : m[j];
  for (int j = 0; i < V; ++i, ++j) m[j] = logits[i] > m[j] ? logits[i] : m[j];
  T mx = m[0];
  for (int j = 1; j < kLanes; ++j) mx = m[j] > mx ? m[j] : mx;
  const T at_target = logits[target] - mx;
  T s[kLanes] = {};
  i = 0;
  for (; i + kLanes <= V; i += kLanes)
    for (int j = 0; j < kLanes; ++j) s[j] += logits[i + j] = std::exp(logits[i + j] - mx);
  for (int j = 0; i < V; ++i, ++j) s[j] += logits[i] = std::exp(logits[i] - mx);
  const T sum = CombineLanes(s);
  if (grad) {
    const T scale = dscale / sum;
    for (i = 0; i < V; ++i) logits[i] *= scale;
    logits[target] -= dscale;
  }
  return std::log(sum) - at_target;
}

// Row t of causal attention's softmax: a[0..t] holds the raw scores q.k;
// becomes softmax(scale * a[0..t]), and a[t+1..seq) zero.
template <typename T>
void CausalSoftmaxRow(T* a, int t, int seq, T scale) {
  T mx = -std::numeric_limits<T>::infinity();
  for (int j = 0; j <= t; ++j) {
    a[j] *= scale;
    mx = a[j] > mx ? a[j] : mx;
  }
  T sum = 0;
  for (int j = 0; j <= t; ++j) {
    a[j] = std::exp(a[j] - mx);
    sum += a[j];
  }
  const T inv = T(1) / sum;
  for (int j = 0; j < seq; ++j) a[j] = j <= t ? a[j] * inv : T(0);
}

// Its backward: a (the row's probabilities), d[0..t] the gradient of the
// probabilities; d becomes the gradient of the raw scores (scale included),
// zero past t.
template <typename T>
void CausalSoftmaxBackwardRow(const T* a, T* d, int t, int seq, T scale) {
  T s = 0;
  for (int j = 0; j <= t; ++j) s += a[j] * d[j];
  for (int j = 0; j < seq; ++j) d[j] = j <= t ? a[j] * (d[j] - s) * scale : T(0);
}

// Causal self-attention of one (sequence, head) in plain loops (llm.c's
// attention_forward). qkv: the sequence's rows (T, 3C), q | k | v with
// heads side by side; this head's slice starts at column h * hd of each.
// att (T, T): the softmax probabilities, row t zero past column t.
// out: row t at out + t * C (the head's hd columns).
template <typename T>
void AttentionForwardHead(const T* qkv, int seq, int C, int hd, int h, T scale, T* att, T* out) {
  const size_t row = 3 * static_cast<size_t>(C);
  for (int t = 0; t < seq; ++t) {
    const T* q = qkv + t * row + h * hd;
    T* a = att + static_cast<size_t>(t) * seq;
    for (int t2 = 0; t2 <= t; ++t2) {
      const T* k = qkv + t2 * row + C + h * hd;
      T dot = 0;
      for (int i = 0; i < hd; ++i) dot += q[i] * k[i];
      a[t2] = dot;
    }
    CausalSoftmaxRow(a, t, seq, scale);
    T* o = out + static_cast<size_t>(t) * C + h * hd;
    for (int i = 0; i < hd; ++i) o[i] = 0;
    for (int t2 = 0; t2 <= t; ++t2) {
      const T* v = qkv + t2 * row + 2 * C + h * hd;
      for (int i = 0; i < hd; ++i) o[i] += a[t2] * v[i];
    }
  }
}

// Its backward (llm.c's attention_backward): dout rows at dout + t * C;
// adds the head's gradients into dqkv (T, 3C), whose q, k and v slices of
// this head the caller has zeroed. datt: scratch of seq values.
template <typename T>
void AttentionBackwardHead(const T* qkv, const T* att, const T* dout, int seq, int C, int hd, int h, T scale,
                           T* datt, T* dqkv) {
  const size_t row = 3 * static_cast<size_t>(C);
  for (int t = 0; t < seq; ++t) {
    const T* a = att + static_cast<size_t>(t) * seq;
    const T* d = dout + static_cast<size_t>(t) * C + h * hd;
    const T* q = qkv + t * row + h * hd;
    T* dq = dqkv + t * row + h * hd;
    for (int t2 = 0; t2 <= t; ++t2) {
      const T* v = qkv + t2 * row + 2 * C + h * hd;
      T* dv = dqkv + t2 * row + 2 * C + h * hd;
      T dot = 0;
      for (int i = 0; i < hd; ++i) {
        dot += v[i] * d[i];
        dv[i] += a[t2] * d[i];
      }
      datt[t2] = dot;
    }
    CausalSoftmaxBackwardRow(a, datt, t, seq, scale);
    for (int t2 = 0; t2 <= t; ++t2) {
      const T* k = qkv + t2 * row + C + h * hd;
      T* dk = dqkv + t2 * row + C + h * hd;
      for (int i = 0; i < hd; ++i) {
        dq[i] += datt[t2] * k[i];
        dk[i] += datt[t2] * q[i];
      }
    }
  }
}

}  // namespace tw::train::layers
