#include "model/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/logit_edit.h"
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

// Floats ordered as integers: Key(a) < Key(b) iff a < b (NaN excluded;
// -0 sorts just below +0), and consecutive keys are adjacent floats.
int32_t Key(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i >= 0 ? i : static_cast<int32_t>(i ^ 0x7fffffff);
}

float FromKey(int32_t k) {
  const int32_t i = k >= 0 ? k : static_cast<int32_t>(k ^ 0x7fffffff);
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

// The largest float t in [lo, hi] with ok(t), given ok(lo) (ok must hold
// for every value up to some point and fail above it): a bisection on keys,
// at most 32 probes.
template <typename Ok>
float LargestWith(float lo, float hi, const Ok& ok) {
  int64_t a = Key(lo), b = Key(hi);
  while (a < b) {
    const int64_t mid = a + (b - a + 1) / 2;
    if (ok(FromKey(static_cast<int32_t>(mid)))) a = mid;
    else b = mid - 1;
  }
  return FromKey(static_cast<int32_t>(a));
}

// The next float above t (t finite or -inf).
float Above(float t) { return FromKey(Key(t) + 1); }

// The order every cut is taken in, over ids: larger logit first, then lower id.
auto RankBefore(const float* logits) {
  return [logits](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
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

void ComputeLogprobs(const float* logits, int vocab, float temperature, int k, engine::SampledToken* out) {
  const double inv_t = temperature > 0.0f ? 1.0 / static_cast<double>(temperature) : 1.0;
  k = std::clamp(k, 0, std::min(engine::kMaxTopLogprobs, vocab));
  // The scaled logits z = logit / T; log P(i) = z_i - (max z + log sum exp(z - max z)).
  double mx = -INFINITY;
  for (int i = 0; i < vocab; ++i) {
    if (logits[i] > mx) mx = logits[i];  // NaN compares false: skipped
  }
  mx *= inv_t;
  // The rank counts the ids above the chosen one (a NaN chosen logit counts
  // as -inf; NaN logits are never above).
  const bool valid = out->id >= 0 && out->id < vocab;
  const float chosen = valid && !std::isnan(logits[out->id]) ? logits[out->id] : -INFINITY;
  double sum = 0;
  int32_t above = 0;
  for (int i = 0; i < vocab; ++i) {
    const double z = static_cast<double>(logits[i]) * inv_t;
    if (z > -INFINITY) sum += std::exp(z - mx);  // NaN and -inf weigh 0
    above += logits[i] > chosen;
  }
  const double log_z = std::isfinite(mx) && sum > 0 ? mx + std::log(sum) : INFINITY;
  auto logprob = [&](int32_t id) {
    const double z = static_cast<double>(logits[id]) * inv_t;
    const double lp = z - log_z;
    return lp > engine::kMinLogprob ? lp : engine::kMinLogprob;  // also NaN and -inf
  };
  out->has_logprobs = true;
  out->logprob = valid ? logprob(out->id) : engine::kMinLogprob;
  out->rank = above + 1;
  // Top k by logit (the order every cut uses: larger first, then lower id),
  // kept sorted in the fixed array by insertion: ~vocab comparisons with the
  // k-th value, k * k moves at most per insertion.
  int n = 0;
  int32_t* ids = out->top_ids;
  auto before = RankBefore(logits);
  for (int32_t i = 0; i < vocab && k > 0; ++i) {
    if (std::isnan(logits[i])) continue;
    if (n == k && !before(i, ids[n - 1])) continue;
    int j = n < k ? n++ : k - 1;
    while (j > 0 && before(i, ids[j - 1])) {
      ids[j] = ids[j - 1];
      --j;
    }
    ids[j] = i;
  }
  out->top_count = n;
  for (int j = 0; j < n; ++j) out->top_logprobs[j] = logprob(ids[j]);
}

Sampler::Sampler(int vocab_size)
    : vocab_size_(vocab_size < 1 ? 1 : vocab_size),
      prob_(vocab_size_),
      block_sums_((vocab_size_ + cpu::kWeightBlock - 1) / cpu::kWeightBlock),
      block_max_(block_sums_.size()),
      candidates_(std::min(vocab_size_, kMaxCandidates)) {}

int32_t Sampler::Sample(const float* logits, const SamplingParams& params, Rng* rng) {
  if (!(params.temperature > 0.0f)) return Argmax(logits, vocab_size_);
  return Sample(logits, params, rng->Uniform());
}

int32_t Sampler::Sample(const float* logits, const SamplingParams& params, float uniform) {
  if (!(params.temperature > 0.0f)) return Argmax(logits, vocab_size_);
  const int V = vocab_size_;
  const float mx = cpu::MaxValue(logits, V);
  const float inv_t = 1.0f / params.temperature;
  // No finite maximum (all NaN or -inf, or a +inf) or a temperature so small
  // that 1/T overflows: the distribution is (or is indistinguishable from)
  // the greedy choice.
  if (!std::isfinite(mx) || !std::isfinite(inv_t)) return Argmax(logits, V);
  // Every id's weight exp((logit - max) / T); NaN ids weigh 0.
  cpu::ExpWeights(logits, V, mx, inv_t, prob_.data(), block_sums_.data());

  // The kept ids are those "at or above the cut" in the order larger logit
  // first, then lower id: logit > t, or logit == t and id <= last_tie.
  float t = -INFINITY;
  int32_t last_tie = V;  // every id at t
  // min_p keeps the ids at or above a threshold: a prefix of the order that
  // holds all its ties, so it is the top-k of its own count.
  int top_k = params.top_k;
  if (const float lg = MinPLog(params.min_p); lg < 0.0f) {
    const float floor = MinPThreshold(mx, params.temperature, lg);
    const int kept = static_cast<int>(cpu::SumAtLeast(logits, nullptr, V, floor));
    top_k = top_k > 0 ? std::min(top_k, kept) : kept;
  }
  if (top_k > 0 && top_k < static_cast<int>(cpu::SumAtLeast(logits, nullptr, V, -INFINITY))) {
    // t = the k-th largest logit; of the ids at t, the lowest ones fill the k.
    if (!TopKFromCandidates(logits, top_k, &t, &last_tie)) {
      const float k = static_cast<float>(top_k);
      t = LargestWith(-INFINITY, mx, [&](float x) { return cpu::SumAtLeast(logits, nullptr, V, x) >= k; });
      const int at_or_above = static_cast<int>(cpu::SumAtLeast(logits, nullptr, V, t));
      const int above = static_cast<int>(cpu::SumAtLeast(logits, nullptr, V, Above(t)));
      if (at_or_above > top_k) last_tie = NthIdAt(logits, t, top_k - above);
    }
  }
  if (params.top_p < 1.0f) {
    // Mass of what is kept so far, then the smallest prefix (in the same
    // order) holding top_p of it.
    const double target = static_cast<double>(params.top_p) * KeptMass(logits, t, last_tie);
    if (TopPFromCandidates(logits, inv_t, mx, target, &t, &last_tie)) {
      Cut(logits, t, last_tie);
      return Draw(uniform);
    }
    // Above the current cut every id is kept, so the mass at or above x is a
    // plain sum there; if even the ids above t fall short, the cut stays at t.
    const float lo = t;
    t = LargestWith(lo, mx, [&](float x) {
      return x == lo || static_cast<double>(cpu::SumAtLeast(logits, prob_.data(), V, x)) >= target;
    });
    // The ids at t, in id order (within the cut already made), until the
    // mass reaches the target: at least one. (A single id at t: it is the one.)
    const int limit = t == lo ? last_tie : V;
    if (t != lo) last_tie = V;
    if (cpu::SumAtLeast(logits, nullptr, V, t) - cpu::SumAtLeast(logits, nullptr, V, Above(t)) > 1) {
      double acc = cpu::SumAtLeast(logits, prob_.data(), V, Above(t));
      int32_t last = -1;
      for (int i = 0; i < V && i <= limit && (last < 0 || acc < target); ++i) {
        if (logits[i] == t) acc += prob_[i], last = i;
      }
      if (last >= 0) last_tie = last;
    }
  }
  if (t != -INFINITY || last_tie < V) Cut(logits, t, last_tie);
  return Draw(uniform);
}

bool Sampler::TopKFromCandidates(const float* logits, int k, float* t, int32_t* last_tie) {
  const int V = vocab_size_;
  const int blocks = static_cast<int>(block_max_.size());
  if (k > blocks) return false;
  // The k largest block maxima are k distinct ids, so the k-th largest logit
  // is at least the k-th largest block maximum: every id of the top k is
  // among the ids at or above it, usually not many more than k.
  for (int b = 0; b < blocks; ++b) {
    const int begin = b * cpu::kWeightBlock;
    block_max_[b] = cpu::MaxValue(logits + begin, std::min(V, begin + cpu::kWeightBlock) - begin);
  }
  std::nth_element(block_max_.begin(), block_max_.begin() + (k - 1), block_max_.end(), std::greater<float>());
  const float floor = block_max_[k - 1];
  if (floor == -INFINITY) return false;
  const int n = cpu::CollectAtLeast(logits, V, floor, candidates_.data(), static_cast<int>(candidates_.size()));
  if (n > static_cast<int>(candidates_.size())) return false;
  // The k-th of the order "larger logit first, then lower id".
  std::nth_element(candidates_.begin(), candidates_.begin() + (k - 1), candidates_.begin() + n, RankBefore(logits));
  const int32_t kth = candidates_[k - 1];
  *t = logits[kth];
  // Every id at t is a candidate; only if one comes after the k-th must the
  // ties be cut at it.
  *last_tie = V;
  for (int i = k; i < n; ++i) {
    if (logits[candidates_[i]] == *t) *last_tie = kth;
  }
  return true;
}

bool Sampler::TopPFromCandidates(const float* logits, float inv_t, float mx, double target, float* t,
                                 int32_t* last_tie) {
  const int V = vocab_size_;
  const int cap = std::min(static_cast<int>(candidates_.size()), kMaxTopPCandidates);
  // Floors at weights e^-4 ... e^-32 of the largest, kept above the current
  // cut: the first floor whose ids (all of them, a prefix of the order)
  // weigh at least the target holds the whole cut. Two vector passes count
  // and weigh the ids at or above a floor; only the chosen one's are collected.
  for (float z : {4.0f, 6.0f, 8.0f, 12.0f, 16.0f, 32.0f}) {
    float lowest = mx - z / inv_t;
    const bool at_cut = !(lowest > *t);
    if (at_cut) lowest = Above(*t);
    if (cpu::SumAtLeast(logits, nullptr, V, lowest) > static_cast<float>(cap)) return false;
    if (static_cast<double>(cpu::SumAtLeast(logits, prob_.data(), V, lowest)) < target) {
      if (at_cut) return false;  // the cut falls among the ties at *t
      continue;
    }
    const int n = cpu::CollectAtLeast(logits, V, lowest, candidates_.data(), cap);
    // The prefix in the order "larger logit first, then lower id", summed
    // with the weights the draw uses, up to the first id reaching the target.
    std::sort(candidates_.begin(), candidates_.begin() + n, RankBefore(logits));
    double acc = 0;
    for (int j = 0; j < n; ++j) {
      acc += prob_[candidates_[j]];
      if (acc < target) continue;
      *t = logits[candidates_[j]];
      // Ids at t after this one (all are candidates) fall outside the cut.
      *last_tie = j + 1 < n && logits[candidates_[j + 1]] == *t ? candidates_[j] : V;
      return true;
    }
    if (at_cut) return false;  // the float sum reached the target, the exact one not quite
  }
  return false;
}

int32_t Sampler::NthIdAt(const float* logits, float t, int n) const {
  for (int i = 0; i < vocab_size_; ++i) {
    if (logits[i] == t && --n == 0) return i;
  }
  return vocab_size_;
}

double Sampler::KeptMass(const float* logits, float t, int32_t last_tie) const {
  const int V = vocab_size_;
  if (last_tie >= V) return cpu::SumAtLeast(logits, prob_.data(), V, t);
  double m = cpu::SumAtLeast(logits, prob_.data(), V, Above(t));
  for (int i = 0; i <= last_tie; ++i) {
    if (logits[i] == t) m += prob_[i];
  }
  return m;
}

void Sampler::Cut(const float* logits, float t, int32_t last_tie) {
  const int V = vocab_size_;
  // Ties past the last kept one first, then everything below t (which also
  // sums the blocks again).
  for (int i = last_tie + 1; i < V; ++i) {
    if (logits[i] == t) prob_[i] = 0.0f;
  }
  cpu::KeepAtLeast(logits, V, t, prob_.data(), block_sums_.data());
}

int32_t Sampler::Draw(float uniform) const {
  const int V = vocab_size_;
  double total = 0;
  for (float b : block_sums_) total += b;
  // Inverse-CDF draw in id order: find the block holding u, then the id. The
  // block's own sum may differ from its ids' running sum in the last bits;
  // if u falls in that sliver, the block's last id with weight is taken.
  const double u = static_cast<double>(uniform) * total;
  double acc = 0;
  int32_t last = 0;
  for (int k = 0; k < static_cast<int>(block_sums_.size()); ++k) {
    if (acc + block_sums_[k] <= u) {
      acc += block_sums_[k];
      continue;
    }
    const int begin = k * cpu::kWeightBlock, end = std::min(V, begin + cpu::kWeightBlock);
    last = begin;
    for (int i = begin; i < end; ++i) {
      if (prob_[i] == 0.0f) continue;
      acc += prob_[i];
      last = i;
      if (u < acc) return i;
    }
    return last;
  }
  // Not reached while u < total; a last resort, the last id with weight.
  for (int i = V - 1; i >= 0; --i) {
    if (prob_[i] != 0.0f) return i;
  }
  return last;
}

}  // namespace tw::model
