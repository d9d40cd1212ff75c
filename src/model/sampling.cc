#include "model/sampling.h"

#include <algorithm>
#include <cmath>

#include "cpu/kernels.h"

namespace tw::model {

namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Candidate order: larger logit first, then lower id.
template <typename C>
bool Before(const C& a, const C& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t st = seed;
  for (uint64_t& s : s_) s = SplitMix64(&st);
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

float Rng::Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }

int32_t Argmax(const float* logits, int n) {
  // The largest value with the vector kernel, then, block by block, the first
  // block holding it and its first index there (the earliest index wins ties;
  // a NaN is never chosen: MaxValue skips NaNs and NaN == x is false).
  const float mx = cpu::MaxValue(logits, n);
  constexpr int kBlock = 256;
  for (int begin = 0; begin < n; begin += kBlock) {
    const int end = std::min(n, begin + kBlock);
    if (cpu::MaxValue(logits + begin, end - begin) != mx) continue;
    for (int i = begin; i < end; ++i) {
      if (logits[i] == mx) return i;
    }
  }
  return 0;  // every value NaN
}

Sampler::Sampler(int vocab_size)
    : vocab_size_(vocab_size < 1 ? 1 : vocab_size),
      cand_(vocab_size_),
      prob_(vocab_size_),
      block_sums_((vocab_size_ + cpu::kWeightBlock - 1) / cpu::kWeightBlock) {}

int32_t Sampler::SampleFullVocab(const float* logits, float temperature, Rng* rng) {
  const int V = vocab_size_;
  const float mx = cpu::MaxValue(logits, V);
  const float inv_t = 1.0f / temperature;
  // No finite maximum (all NaN or -inf, or a +inf) or a temperature so small
  // that 1/T overflows: the distribution is (or is indistinguishable from)
  // the greedy choice.
  if (!std::isfinite(mx) || !std::isfinite(inv_t)) return Argmax(logits, V);
  cpu::ExpWeights(logits, V, mx, inv_t, prob_.data(), block_sums_.data());
  double total = 0;
  for (float b : block_sums_) total += b;
  // Inverse-CDF draw in id order: find the block holding u, then the id. The
  // block's own sum may differ from its ids' running sum in the last bits;
  // if u falls in that sliver, the block's last id with weight is taken.
  const double u = static_cast<double>(rng->Uniform()) * total;
  double acc = 0;
  for (int k = 0; k < static_cast<int>(block_sums_.size()); ++k) {
    if (acc + block_sums_[k] <= u) {
      acc += block_sums_[k];
      continue;
    }
    const int begin = k * cpu::kWeightBlock, end = std::min(V, begin + cpu::kWeightBlock);
    int last = begin;
    for (int i = begin; i < end; ++i) {
      if (prob_[i] == 0.0f) continue;
      acc += prob_[i];
      last = i;
      if (u < acc) return i;
    }
    return last;
  }
  return Argmax(logits, V);  // not reached: u < total
}

int32_t Sampler::Sample(const float* logits, const SamplingParams& params, Rng* rng) {
  if (!(params.temperature > 0.0f)) return Argmax(logits, vocab_size_);
  const int V = vocab_size_;
  if ((params.top_k <= 0 || params.top_k >= V) && params.top_p >= 1.0f) {
    return SampleFullVocab(logits, params.temperature, rng);
  }
  int n = 0;
  for (int i = 0; i < V; ++i) {
    if (!std::isnan(logits[i])) cand_[n++] = Candidate{logits[i], i};
  }
  if (n == 0) return 0;
  auto before = [](const Candidate& a, const Candidate& b) { return Before(a, b); };

  // top-k: the k best, in order.
  int keep = n;
  if (params.top_k > 0 && params.top_k < n) {
    keep = params.top_k;
    std::partial_sort(cand_.begin(), cand_.begin() + keep, cand_.begin() + n, before);
  }
  const bool sorted = keep < n;
  // Probabilities over the kept candidates (max-subtracted softmax).
  float mx = cand_[0].logit;
  for (int i = 0; i < keep; ++i) mx = std::max(mx, cand_[i].logit);
  double total = 0;
  for (int i = 0; i < keep; ++i) {
    prob_[i] = std::exp((cand_[i].logit - mx) / params.temperature);
    total += prob_[i];
  }

  if (params.top_p < 1.0f) {
    // Sort the kept candidates best-first (if top-k has not), growing the
    // sorted prefix until it holds top_p of the mass.
    const double target = static_cast<double>(params.top_p) * total;
    if (!sorted) {
      // prob_ must follow the candidate order: sort pairs by logit, recompute.
      int prefix = std::min(keep, 64);
      for (;;) {
        std::partial_sort(cand_.begin(), cand_.begin() + prefix, cand_.begin() + keep, before);
        double acc = 0;
        for (int i = 0; i < prefix; ++i) acc += std::exp((cand_[i].logit - mx) / params.temperature);
        if (acc >= target || prefix == keep) break;
        prefix = std::min(keep, prefix * 4);
      }
      for (int i = 0; i < keep; ++i) prob_[i] = std::exp((cand_[i].logit - mx) / params.temperature);
    }
    double acc = 0;
    int cut = keep;
    for (int i = 0; i < keep; ++i) {
      acc += prob_[i];
      if (acc >= target) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    total = 0;
    for (int i = 0; i < keep; ++i) total += prob_[i];
  }

  // Inverse-CDF draw over the kept candidates.
  const double u = static_cast<double>(rng->Uniform()) * total;
  double acc = 0;
  for (int i = 0; i < keep; ++i) {
    acc += prob_[i];
    if (u < acc) return cand_[i].id;
  }
  return cand_[keep - 1].id;
}

}  // namespace tw::model
