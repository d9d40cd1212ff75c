// CPU references that the kernel checkers (kernels/dev/*.cu) and the GPU
// suites (tests/gpu/*_test.cc) share: what a kernel's output is compared
// with, in double, written once. Host C++ only (nvcc, the CPU emulator's
// clang build and g++ all compile it); nothing here is used by the server.
//
//   ParallelFor(n, fn)       fn(i) for i in [0, n) over the host's cores
//   GeluTanhRef(v)           GPT-2's tanh GELU in double
//   AttentionRowRef(...)     softmax(q . K^T / sqrt(hd)) V for one row and head
//   RefSampler               the CPU sampler's rules in double: which draws are right
//
// Thread: ParallelFor's fn runs on several threads at once; the rest are
// plain functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "kernels/sampling.h"

namespace tw::dev {

// fn(i) for i in [0, n), spread over the machine's cores.
inline void ParallelFor(int n, const std::function<void(int)>& fn) {
  const int threads = std::max(1, std::min<int>(n, static_cast<int>(std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w) {
    pool.emplace_back([&, w] {
      for (int i = w; i < n; i += threads) fn(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

// 0.5 v (1 + tanh(u)) written as v / (1 + exp(-2u)), u = sqrt(2/pi) (v + 0.044715 v^3).
inline double GeluTanhRef(double v) {
  const double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
  return v / (1.0 + std::exp(-2.0 * u));
}

// out (hd) = softmax(q . K^T / sqrt(hd)) V over keys [0, len), in double,
// rounded to float. k(t, d) and v(t, d) give element d of key and value t.
template <typename KeyAt, typename ValueAt>
void AttentionRowRef(const float* q /*(hd)*/, int len, int hd, const KeyAt& k, const ValueAt& v, float* out /*(hd)*/) {
  std::vector<double> s(len);
  double mx = -1e300;
  for (int t = 0; t < len; ++t) {
    double dot = 0;
    for (int d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * k(t, d);
    s[t] = dot / std::sqrt(static_cast<double>(hd));
    mx = std::max(mx, s[t]);
  }
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  for (int d = 0; d < hd; ++d) {
    double acc = 0;
    for (int t = 0; t < len; ++t) acc += s[t] * v(t, d);
    out[d] = static_cast<float>(acc / sum);
  }
}

// The CPU sampler's rules in double: weights exp((x - max) * inv_t) with the
// exponent in float as the CPU computes it, cuts in the order "larger logit
// first, then lower id", the draw in id order. A margin is a fraction of the
// kept total: how far a draw may land from its interval of the inverse CDF,
// and how near the top-p cut may come to keeping one id more or less.
class RefSampler {
 public:
  RefSampler(const float* x, int V, const kernels::SampleParams& p) : V_(V) {
    int arg = -1, count = 0;
    float mx = -INFINITY;
    for (int i = 0; i < V; ++i) {
      if (std::isnan(x[i])) continue;
      ++count;
      if (arg < 0 || x[i] > mx) mx = x[i], arg = i;
    }
    greedy_id_ = arg < 0 ? 0 : arg;
    const float inv_t = 1.0f / p.temperature;
    greedy_ = !(p.temperature > 0.0f) || !std::isfinite(mx) || !std::isfinite(inv_t);
    if (greedy_) return;
    w_.assign(V, 0.0);
    for (int i = 0; i < V; ++i) {
      if (std::isnan(x[i])) continue;
      const float z = (x[i] - mx) * inv_t;  // as the CPU: float
      w_[i] = z > -87.0f ? std::exp(static_cast<double>(z)) : 0.0;
      order_.push_back(i);
    }
    std::sort(order_.begin(), order_.end(), [x](int a, int b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
    keep_ = count;
    if (p.top_k > 0 && p.top_k < count) keep_ = p.top_k;
    if (p.top_p < 1.0f) {
      double mass = 0;
      for (int j = 0; j < keep_; ++j) mass += w_[order_[j]];
      const double target = static_cast<double>(p.top_p) * mass;
      double acc = 0;
      for (int j = 0; j < keep_; ++j) {
        const double prev = acc;
        acc += w_[order_[j]];
        if (acc < target) continue;
        // How close the cut came to keeping one id less or one more.
        cut_mass_ = mass;
        cut_gap_ = std::fabs(acc - target);
        if (j > 0) cut_gap_ = std::min(cut_gap_, std::fabs(prev - target));
        keep_ = j + 1;
        break;
      }
    }
    kept_.assign(V, false);
    for (int j = 0; j < keep_; ++j) kept_[order_[j]] = true;
    lo_.assign(V, 0.0);
    for (int i = 0; i < V; ++i) {
      lo_[i] = total_;
      if (kept_[i]) total_ += w_[i];
    }
  }

  // The exact draw at u.
  int Draw(float u) const {
    if (greedy_) return greedy_id_;
    const double point = u * total_;
    int last = -1;
    for (int i = 0; i < V_; ++i) {
      if (!kept_[i] || w_[i] == 0.0) continue;
      last = i;
      if (point < lo_[i] + w_[i]) return i;
    }
    return last;
  }

  // Whether drawing `id` at u is right up to `margin`; greedy: exactly.
  bool Allows(int id, float u, double margin) const {
    if (greedy_) return id == greedy_id_;
    if (id < 0 || id >= V_) return false;
    if (Ambiguous(margin)) return kept_[id] || (keep_ < static_cast<int>(order_.size()) && id == order_[keep_]);
    if (!kept_[id]) return false;
    const double point = u * total_, m = margin * total_;
    return lo_[id] - m <= point && point < lo_[id] + w_[id] + m;
  }
  // The top-p cut lies within `margin` of keeping one id more or less:
  // there a draw need only be a kept id or the next in order.
  bool Ambiguous(double margin) const { return cut_gap_ <= margin * cut_mass_; }

 private:
  int V_;
  bool greedy_ = false;
  int greedy_id_ = 0, keep_ = 0;
  double cut_gap_ = INFINITY;  // no top-p: no cut to be near
  double cut_mass_ = 0;
  std::vector<double> w_, lo_;
  std::vector<int> order_;
  std::vector<bool> kept_;
  double total_ = 0;
};

}  // namespace tw::dev
