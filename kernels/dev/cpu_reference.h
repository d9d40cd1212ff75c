// CPU references that the kernel checkers (kernels/dev/*.cu) and the GPU
// suites (tests/gpu/*_test.cc) share: what a kernel's output is compared
// with, in double, written once. Host C++ only (nvcc, the CPU emulator's
// clang build and g++ all compile it); nothing here is used by the server.
//
//   ParallelFor(n, fn)       fn(i) for i in [0, n) over the host's cores
//   GeluTanhRef(v)           GPT-2's tanh GELU in double
//   AttentionRowRef(...)     softmax(q . K^T / sqrt(hd)) V for one row and head
//
// Thread: ParallelFor's fn runs on several threads at once; the rest are
// plain functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

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

}  // namespace tw::dev
