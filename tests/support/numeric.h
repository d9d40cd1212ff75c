// Small numeric helpers the test suites share: reproducible random inputs
// that are never zero (zeros hide unwritten outputs and wrong indexing), and
// the k largest logits with ties toward the lower id (the samplers' order).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace tw::testing {

inline std::vector<float> RandomNonZero(size_t n, std::mt19937* gen, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) {
    do x = d(*gen);
    while (x == 0.0f);
  }
  return v;
}

// The k largest logits' ids, larger first, ties toward the lower id.
inline std::vector<int32_t> TopIds(const float* logits, int V, int k) {
  std::vector<int32_t> ids(V);
  for (int i = 0; i < V; ++i) ids[i] = i;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  ids.resize(k);
  return ids;
}

}  // namespace tw::testing
