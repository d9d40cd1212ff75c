// Sampling: argmax ties, seeded determinism, the top-k and top-p candidate
// sets, the drawn frequencies against the renormalised softmax, temperature
// -> 0 equal to greedy, and a seeded stream unchanged by batch company.
#include "model/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "cpu/kernels.h"
#include "random_gpt2.h"
#include "engine/block_allocator.h"
#include "model/forward.h"
#include "support/seq_state.h"
#include "support/levels.h"

namespace tw::model {
namespace {

std::vector<float> RandomLogits(int n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-5.0f, 5.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

TEST(RngTest, SeededAndDeterministic) {
  Rng a(7), b(7), c(8), z(0);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    if (x != c.Next()) differs = true;
    EXPECT_NE(z.Next(), 0u);  // seed 0 is fine
  }
  EXPECT_TRUE(differs);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    float u = a.Uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(ArgmaxTest, TiesBreakTowardLowerIdAndNaNIsSkipped) {
  std::vector<float> v = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  EXPECT_EQ(Argmax(v.data(), 5), 1);
  v[0] = NAN;
  v[4] = 4.0f;
  EXPECT_EQ(Argmax(v.data(), 5), 4);
  std::vector<float> nan(3, NAN);
  EXPECT_EQ(Argmax(nan.data(), 3), 0);
}

// The blocked vector Argmax against a plain scan (first non-NaN value, then
// only a strictly larger one replaces it), at every kernel level: lengths
// around the block and vector widths, ties placed in different blocks and
// lanes, NaNs (also where the maximum would be), infinities, all -inf, all NaN.
int32_t PlainArgmax(const std::vector<float>& v) {
  int32_t best = -1;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) continue;
    if (best < 0 || v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best < 0 ? 0 : best;
}

TEST(ArgmaxTest, EqualsPlainScanAtEveryKernelLevel) {
  std::mt19937 gen(11);
  int checked = 0;
  for (cpu::Isa isa : tw::testing::SupportedLevels()) {
    ASSERT_TRUE(cpu::ForceIsa(isa).ok());
    for (int n : {1, 2, 15, 16, 17, 255, 256, 257, 511, 513, 1000, 50257}) {
      for (int trial = 0; trial < 12; ++trial) {
        std::vector<float> v = RandomLogits(n, static_cast<uint32_t>(n * 100 + trial));
        std::uniform_int_distribution<int> at(0, n - 1);
        switch (trial % 6) {
          case 0: break;
          case 1: {  // the same maximum at two places, the later one first in value order
            const int a = at(gen), b = at(gen);
            v[a] = v[b] = 9.0f;
            break;
          }
          case 2: {  // NaNs, one of them where the maximum is
            const int m = PlainArgmax(v);
            v[m] = NAN;
            for (int k = 0; k < n / 7; ++k) v[at(gen)] = NAN;
            break;
          }
          case 3:  // small integers: many ties
            for (float& x : v) x = std::floor(x);
            break;
          case 4:
            v[at(gen)] = INFINITY;
            v[at(gen)] = -INFINITY;
            break;
          case 5:  // all -inf but some NaN: the first -inf
            for (float& x : v) x = -INFINITY;
            for (int k = 0; k < n / 3; ++k) v[at(gen)] = NAN;
            break;
        }
        ASSERT_EQ(Argmax(v.data(), n), PlainArgmax(v)) << cpu::IsaName(isa) << " n=" << n << " trial " << trial;
        checked++;
      }
    }
    std::vector<float> nan(300, NAN);
    EXPECT_EQ(Argmax(nan.data(), 300), 0);
  }
  cpu::ResetIsa();
  EXPECT_GE(checked, 12 * 12);
}

TEST(SamplerTest, TemperatureZeroAndNearZeroEqualGreedy) {
  const int V = 1000;
  Sampler s(V);
  Rng rng(1);
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::vector<float> l = RandomLogits(V, seed);
    const int32_t greedy = Argmax(l.data(), V);
    EXPECT_EQ(s.Sample(l.data(), SamplingParams{0.0f, 0, 1.0f}, &rng), greedy);
    EXPECT_EQ(s.Sample(l.data(), SamplingParams{-1.0f, 5, 0.5f}, &rng), greedy);
    EXPECT_EQ(s.Sample(l.data(), SamplingParams{1e-6f, 0, 1.0f}, &rng), greedy);
    EXPECT_EQ(s.Sample(l.data(), SamplingParams{1e-6f, 40, 0.9f}, &rng), greedy);
  }
  // Greedy does not consume randomness.
  Rng r1(5), r2(5);
  std::vector<float> l = RandomLogits(V, 1);
  s.Sample(l.data(), SamplingParams{0.0f, 0, 1.0f}, &r1);
  EXPECT_EQ(r1.Next(), r2.Next());
}

TEST(SamplerTest, SameSeedSameDrawsRegardlessOfOtherRequests) {
  const int V = 500;
  std::vector<float> l = RandomLogits(V, 3);
  const SamplingParams p{1.0f, 0, 1.0f};
  Sampler sa(V);
  Rng ra(1234);
  std::vector<int32_t> alone;
  for (int i = 0; i < 200; ++i) alone.push_back(sa.Sample(l.data(), p, &ra));
  Sampler sb(V);
  Rng ra2(1234), rb(99);
  std::vector<int32_t> interleaved;
  for (int i = 0; i < 200; ++i) {
    interleaved.push_back(sb.Sample(l.data(), p, &ra2));
    sb.Sample(l.data(), SamplingParams{0.7f, 10, 0.9f}, &rb);  // another request, same sampler
  }
  EXPECT_EQ(alone, interleaved);
  std::set<int32_t> distinct(alone.begin(), alone.end());
  EXPECT_GT(distinct.size(), 20u);  // temperature 1 over 500 tokens really samples
}

// Draws n tokens and returns their counts.
std::map<int32_t, int> Draw(const std::vector<float>& l, const SamplingParams& p, int n, uint64_t seed) {
  Sampler s(static_cast<int>(l.size()));
  Rng rng(seed);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) counts[s.Sample(l.data(), p, &rng)]++;
  return counts;
}

TEST(SamplerTest, TopKKeepsExactlyTheKBestWithSoftmaxFrequencies) {
  // Logits chosen so the 3 best are ids 7, 2, 9 (2 and 9 tie: both kept).
  std::vector<float> l(20, -1.0f);
  l[7] = 2.0f;
  l[2] = 1.5f;
  l[9] = 1.5f;
  l[4] = 1.4f;
  const int n = 20000;
  std::map<int32_t, int> c = Draw(l, SamplingParams{1.0f, 3, 1.0f}, n, 11);
  EXPECT_EQ(c.size(), 3u);
  const double z = std::exp(2.0) + 2 * std::exp(1.5);
  EXPECT_NEAR(c[7] / double(n), std::exp(2.0) / z, 0.015);
  EXPECT_NEAR(c[2] / double(n), std::exp(1.5) / z, 0.015);
  EXPECT_NEAR(c[9] / double(n), std::exp(1.5) / z, 0.015);
  // k = 2 with a tie at the boundary: the lower id (2) wins the last place.
  c = Draw(l, SamplingParams{1.0f, 2, 1.0f}, 2000, 12);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_GT(c[7], 0);
  EXPECT_GT(c[2], 0);
  // Temperature sharpens: at T = 0.25 the best token dominates more.
  c = Draw(l, SamplingParams{0.25f, 3, 1.0f}, n, 13);
  const double zt = std::exp(8.0) + 2 * std::exp(6.0);
  EXPECT_NEAR(c[7] / double(n), std::exp(8.0) / zt, 0.015);
}

// Temperature alone samples the whole vocabulary (the vector weights and
// the block-by-block draw): frequencies follow the softmax over ids spread
// across several 256-id blocks, at two temperatures; NaN and -inf ids are
// never drawn, and neither are ids whose weight underflows.
TEST(SamplerTest, TemperatureOnlyFollowsTheSoftmaxOverTheWholeVocabulary) {
  const int V = 1000;
  std::vector<float> l(V, -200.0f);  // weight e^-202 and less: exactly 0
  l[3] = 2.0f;
  l[300] = 1.5f;
  l[511] = 1.0f;
  l[512] = 1.0f;
  l[999] = 0.5f;
  for (int i : {0, 4, 256, 513, 998}) l[i] = NAN;
  for (int i : {1, 257, 700}) l[i] = -INFINITY;
  const int n = 20000;
  for (float t : {1.0f, 0.5f}) {
    std::map<int32_t, int> c = Draw(l, SamplingParams{t, 0, 1.0f}, n, 31);
    double z = 0;
    for (int i : {3, 300, 511, 512, 999}) z += std::exp(l[i] / t);
    for (int i : {3, 300, 511, 512, 999}) {
      EXPECT_NEAR(c[i] / double(n), std::exp(l[i] / t) / z, 0.015) << "T=" << t << " id " << i;
    }
    int others = 0;
    for (auto& [id, count] : c) {
      if (id != 3 && id != 300 && id != 511 && id != 512 && id != 999) others += count;
    }
    EXPECT_EQ(others, 0) << "T=" << t;
  }
  // Every id NaN: id 0, as greedy; one +inf: that id.
  std::vector<float> nan(V, NAN);
  Sampler s(V);
  Rng rng(4);
  EXPECT_EQ(s.Sample(nan.data(), SamplingParams{1.0f, 0, 1.0f}, &rng), 0);
  l[640] = INFINITY;
  EXPECT_EQ(s.Sample(l.data(), SamplingParams{1.0f, 0, 1.0f}, &rng), 640);
}

TEST(SamplerTest, TopPKeepsTheSmallestPrefixReachingP) {
  // Probabilities 0.5, 0.3, 0.1, 0.05, 0.05 (ids 3, 0, 4, 1, 2).
  std::vector<float> l = {std::log(0.3f), std::log(0.05f), std::log(0.05f), std::log(0.5f), std::log(0.1f)};
  const int n = 20000;
  std::map<int32_t, int> c = Draw(l, SamplingParams{1.0f, 0, 0.75f}, n, 21);
  EXPECT_EQ(c.size(), 2u);  // 0.5 < 0.75 <= 0.8
  EXPECT_NEAR(c[3] / double(n), 0.5 / 0.8, 0.015);
  EXPECT_NEAR(c[0] / double(n), 0.3 / 0.8, 0.015);
  c = Draw(l, SamplingParams{1.0f, 0, 0.85f}, n, 22);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_NEAR(c[4] / double(n), 0.1 / 0.9, 0.015);
  c = Draw(l, SamplingParams{1.0f, 0, 0.4f}, 500, 23);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.begin()->first, 3);
  // top-k first, then top-p over what top-k kept (renormalised): k=2 keeps
  // {3, 0} = 0.625 / 0.375, so p = 0.6 keeps only id 3.
  c = Draw(l, SamplingParams{1.0f, 2, 0.6f}, 500, 24);
  EXPECT_EQ(c.size(), 1u);
  // Many tokens (the partial sort has to grow past its first 64): uniform
  // logits, p = 0.5 keeps exactly half of 400 tokens, the lower ids (ties).
  std::vector<float> flat(400, 0.25f);
  c = Draw(flat, SamplingParams{1.0f, 0, 0.5f}, 1500, 25);
  EXPECT_GT(c.size(), 180u);  // ~199 expected
  EXPECT_LT(c.rbegin()->first, 200);
}

// top-k and top-p over GPT-2's vocabulary size (many weight blocks): ties
// at the cut broken toward lower ids across blocks, top-p on a flat
// distribution (the cut falls inside one run of tied logits), top-k then
// top-p inside the ties, and NaN ids never drawn.
TEST(SamplerTest, TopKAndTopPCutsOverAFullVocabulary) {
  const int V = 50257;
  std::vector<float> l(V, -10.0f);
  l[7] = 4.0f;
  for (int i : {100, 5000, 20000, 40000, 50000}) l[i] = 3.0f;
  for (int i = 1; i < V; i += 997) l[i] = NAN;
  const int n = 1500;
  std::map<int32_t, int> c = Draw(l, SamplingParams{1.0f, 3, 1.0f}, n, 41);
  EXPECT_EQ(c.size(), 3u);
  const double z = std::exp(4.0) + 2 * std::exp(3.0);
  EXPECT_NEAR(c[7] / double(n), std::exp(4.0) / z, 0.04);
  EXPECT_NEAR(c[100] / double(n), std::exp(3.0) / z, 0.04);
  EXPECT_NEAR(c[5000] / double(n), std::exp(3.0) / z, 0.04);
  // top-p 0.7 of {4, 3 x5, -10 x the rest}: e^4 is 0.35 of the mass, each 3.0
  // id 0.13: the cut needs id 7 and three of the ties, the lowest ids.
  double total = std::exp(4.0) + 5 * std::exp(3.0), rest = 0;
  for (int i = 0; i < V; ++i) {
    if (l[i] == -10.0f) rest += std::exp(-10.0);
  }
  total += rest;
  ASSERT_LT(std::exp(4.0) + 2 * std::exp(3.0), 0.7 * total);
  ASSERT_GE(std::exp(4.0) + 3 * std::exp(3.0), 0.7 * total);
  c = Draw(l, SamplingParams{1.0f, 0, 0.7f}, n, 42);
  std::set<int32_t> ids;
  for (auto& [id, count] : c) ids.insert(id);
  EXPECT_EQ(ids, (std::set<int32_t>{7, 100, 5000, 20000}));
  // Flat logits: p = 0.5 keeps the lower 25129 ids (25128 hold just under half).
  std::vector<float> flat(V, 0.5f);
  c = Draw(flat, SamplingParams{1.0f, 0, 0.5f}, 600, 43);
  EXPECT_GT(c.size(), 550u);
  EXPECT_EQ(c.rbegin()->first <= 25128, true) << c.rbegin()->first;
  EXPECT_GT(c.rbegin()->first, 20000);
  // top-k 40 of flat logits: every id is at or above the 40th block maximum,
  // more candidates than the sampler collects, so the cut comes from the
  // bisection; it keeps ids 0..39.
  c = Draw(flat, SamplingParams{1.0f, 40, 1.0f}, 600, 46);
  EXPECT_LE(c.rbegin()->first, 39);
  EXPECT_GT(c.size(), 30u);
  // top-k 1000 of flat logits keeps ids 0..999; then top-p 0.25 keeps 0..249.
  c = Draw(flat, SamplingParams{1.0f, 1000, 1.0f}, 600, 44);
  EXPECT_LE(c.rbegin()->first, 999);
  EXPECT_GT(c.rbegin()->first, 900);
  c = Draw(flat, SamplingParams{1.0f, 1000, 0.25f}, 600, 45);
  EXPECT_LE(c.rbegin()->first, 249);
  EXPECT_GT(c.rbegin()->first, 200);
}

// Random logits (ties, NaN, +-inf, runs of one value; small vocabularies and
// GPT-2-sized ones) and random settings:
// the draw is always a valid id, never a NaN one while another exists, inside
// the top k (larger logit first, then lower id), and inside the smallest
// prefix reaching top_p (computed here in double; one id of slack for
// rounding at the boundary).
TEST(SamplerTest, RandomLogitsAndSettingsStayInsideTheirCuts) {
  std::mt19937 gen(77);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  for (int trial = 0; trial < 300; ++trial) {
    // Every fifth trial a vocabulary of 10k-50k ids with whole-number logits
    // (long runs of ties at the top k).
    const bool large = trial % 5 == 1;
    const int V = large ? 10000 + static_cast<int>(gen() % 40258) : 1 + static_cast<int>(gen() % 1500);
    std::vector<float> l(V);
    for (float& x : l) {
      const float r = u01(gen);
      x = r < 0.05f ? NAN : r < 0.08f ? -INFINITY : r < 0.3f ? 1.25f : (u01(gen) - 0.5f) * 20.0f;
      if (large && std::isfinite(x)) x = std::round(x);
    }
    if (trial % 10 == 0) l[gen() % V] = INFINITY;
    const SamplingParams p{trial % 7 == 0 ? 0.02f : 0.3f + 2 * u01(gen),
                           trial % 3 == 0 ? 0 : 1 + static_cast<int>(gen() % 60),
                           trial % 4 == 0 ? 1.0f : 0.05f + u01(gen)};
    // Reference order and cuts.
    std::vector<int> order;
    for (int i = 0; i < V; ++i) {
      if (!std::isnan(l[i])) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
    Sampler s(V);
    Rng rng(trial);
    // The reference top-p cut (ranks [0, cut)).
    int cut = static_cast<int>(order.size());
    if (p.top_p < 1.0f && !order.empty() && std::isfinite(l[order[0]])) {
      const int kept = p.top_k > 0 ? std::min<int>(p.top_k, static_cast<int>(order.size())) : static_cast<int>(order.size());
      double total = 0;
      for (int r = 0; r < kept; ++r) total += std::exp((static_cast<double>(l[order[r]]) - l[order[0]]) / p.temperature);
      double acc = 0;
      cut = kept;
      for (int r = 0; r < kept; ++r) {
        acc += std::exp((static_cast<double>(l[order[r]]) - l[order[0]]) / p.temperature);
        if (acc >= p.top_p * total) {
          cut = r + 1;
          break;
        }
      }
    }
    for (int draw = 0; draw < 20; ++draw) {
      const int32_t id = s.Sample(l.data(), p, &rng);
      ASSERT_GE(id, 0);
      ASSERT_LT(id, V);
      if (order.empty()) continue;
      ASSERT_FALSE(std::isnan(l[id])) << "trial " << trial;
      const int rank = static_cast<int>(std::find(order.begin(), order.end(), id) - order.begin());
      if (p.top_k > 0) {
        ASSERT_LT(rank, p.top_k) << "trial " << trial;
      }
      ASSERT_LT(rank, cut + 1) << "trial " << trial << " V=" << V << " k=" << p.top_k << " p=" << p.top_p;
    }
  }
}

// Peaked distributions over GPT-2's vocabulary, the shape a trained model's
// next-token logits have (a nucleus of a few ids, the rest far below): the
// top-p cut is found from the ids at or above a bound taken from the block
// maxima. The nucleus ids sit at random places (several in one block, ties
// across blocks), top_p puts the cut inside a run of tied logits with a
// margin of at least 1 % of the mass either side, and the ids drawn must be
// exactly the reference prefix (larger logit first, then lower id).
TEST(SamplerTest, TopPOnPeakedVocabulariesDrawsExactlyTheReferencePrefix) {
  const int V = 50257;
  std::mt19937 gen(123);
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<float> l(V);
    std::uniform_real_distribution<float> noise(-30.0f, -14.0f);
    for (float& x : l) x = noise(gen);
    // Nucleus: relative weights 8, 6, 6, 5, 4, 4, 4, 3 (log-weights as
    // logits); trial % 3 == 0 puts the first three in one block.
    const float weights[] = {8, 6, 6, 5, 4, 4, 4, 3};
    std::vector<int> ids;
    while (ids.size() < 8) {
      const int id = trial % 3 == 0 && ids.size() < 3 ? 512 + static_cast<int>(ids.size()) * 37
                                                      : static_cast<int>(gen() % V);
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    for (int i = 0; i < 8; ++i) l[ids[i]] = std::log(weights[i]);
    const float temperature = trial % 2 == 0 ? 1.0f : 0.8f;
    // Reference: order, masses in double.
    std::vector<int> order(V);
    for (int i = 0; i < V; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
    std::vector<double> w(V);
    double total = 0;
    for (int i = 0; i < V; ++i) total += w[i] = std::exp((static_cast<double>(l[i]) - l[order[0]]) / temperature);
    // Cut after rank 4 (inside the run of three 4s) or rank 1 (between the 6s).
    const int cut = trial % 2 == 0 ? 5 : 2;
    double below = 0;
    for (int r = 0; r < cut - 1; ++r) below += w[order[r]];
    const double at = below + w[order[cut - 1]];
    const float top_p = static_cast<float>((below + at) / 2 / total);
    ASSERT_LT(below, (top_p - 0.01) * total);
    ASSERT_GT(at, (top_p + 0.01) * total);
    std::set<int32_t> want(order.begin(), order.begin() + cut), got;
    Sampler s(V);
    Rng rng(trial);
    for (int d = 0; d < 600; ++d) got.insert(s.Sample(l.data(), SamplingParams{temperature, 0, top_p}, &rng));
    EXPECT_EQ(got, want) << "trial " << trial;
    // The same cut after a top-k that keeps the whole nucleus and more.
    got.clear();
    for (int d = 0; d < 600; ++d) got.insert(s.Sample(l.data(), SamplingParams{temperature, 20, top_p}, &rng));
    EXPECT_EQ(got, want) << "trial " << trial << " with top-k 20";
  }
}

TEST(SamplerTest, SeededStreamThroughTheModelIgnoresBatchCompany) {
  // Sampling from a real forward pass: sequence A sampled alone and while
  // batched with B gives the same tokens (logits are bitwise equal).
  testing::RandomGpt2Model model(testing::SmallConfig(), 9);
  const int V = model.config().vocab_size;
  auto generate = [&](bool with_company) {
    std::unique_ptr<KvPool> kv;
    EXPECT_TRUE(KvPool::Create(model.config(), KvCacheConfig{64, 4}, &kv).ok());
    std::unique_ptr<Gpt2Forward> fwd;
    EXPECT_TRUE(Gpt2Forward::Create(model, kv.get(), nullptr, ForwardLimits{2, 16}, &fwd).ok());
    engine::BlockAllocator alloc(64);
    SeqState a, b;
    EXPECT_TRUE(alloc.Alloc(10, &a.block_table));
    EXPECT_TRUE(alloc.Alloc(10, &b.block_table));
    std::vector<int32_t> pa = {1, 2, 3}, pb = {9, 8, 7, 6, 5, 4, 3};
    std::vector<float> logits(2 * static_cast<size_t>(V));
    EXPECT_TRUE(model::Prefill(*fwd, &a, pa.data(), 3, logits.data()).ok());
    if (with_company) {
      EXPECT_TRUE(model::Prefill(*fwd, &b, pb.data(), 7, logits.data() + V).ok());
    }
    Sampler sa(V), sb(V);
    Rng ra(77), rb(78);
    const SamplingParams p{0.9f, 50, 0.95f};
    std::vector<int32_t> out;
    for (int step = 0; step < 20; ++step) {
      int32_t next[2] = {sa.Sample(logits.data(), p, &ra), 0};
      out.push_back(next[0]);
      SeqState* seqs[2] = {&a, &b};
      if (with_company) next[1] = sb.Sample(logits.data() + V, p, &rb);
      EXPECT_TRUE(model::DecodeBatch(*fwd, seqs, next, with_company ? 2 : 1, logits.data()).ok());
    }
    return out;
  };
  std::vector<int32_t> alone = generate(false);
  EXPECT_EQ(alone, generate(true));
  EXPECT_GT(std::set<int32_t>(alone.begin(), alone.end()).size(), 5u);
}

}  // namespace
}  // namespace tw::model
