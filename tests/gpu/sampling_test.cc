// GPU tests of sampling on the device (kernels/sampling.h) against the CPU
// sampler (model::Sampler::Sample(logits, params, uniform)) and a
// double-precision reference of the same rules, written here.
//
// Exactness: greedy must match the CPU exactly, always. A sampled draw
// cannot always match: the GPU's weights (expf, fixed-point sums: within
// ~3e-7 of the exact total) and the CPU's (a polynomial exp, float sums:
// its top-p target measured up to ~5e-6 off) differ in their last bits. So
//   - every GPU draw must be one the reference allows with margin kGpuMargin
//     (2e-6 of the kept total): its interval of the inverse CDF must lie
//     within that distance of u * total;
//   - where the GPU and the CPU differ, the CPU's draw must be allowed with
//     margin kCpuMargin (1e-5): the difference is a boundary case;
//   - a row whose top-p prefix weight lies within the margin of its target
//     may keep one id more or less: there a draw need only be a kept id or
//     the next in order;
//   - mismatches with the CPU in rows whose cut is clear of kCpuMargin must
//     stay below 1 % of the draws + 2 (measured on these inputs: none).
//
// Inputs are random (never all zeros); ids are poisoned (-1) first; vocab
// sizes include 1, the tile (128) and block (1024) sizes and their
// neighbours, and GPT-2's 50257. CI shapes (TW_GPU_TEST_SHAPES=ci) draw 16
// times per setting and distribution instead of 64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/counter_rng.h"
#include "common/logit_edit.h"
#include "gpu/gpu_test_util.h"
#include "model/sampling.h"
#include "kernels/sampling.h"
#include "kernels/dev/cpu_reference.h"

namespace tw {
namespace {

using kernels::SampleParams;
using testing::DeviceVector;
using testing::RandomVector;

constexpr double kGpuMargin = 2e-6;  // of the kept total
constexpr double kCpuMargin = 1e-5;

using dev::RefSampler;  // the CPU sampler's rules in double (kernels/dev/cpu_reference.h)

SampleParams MakeParams(float temperature, int top_k, float top_p, uint64_t seed, uint64_t counter) {
  SampleParams p{};
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p_log = 0.0f;  // off
  p.seed = seed;
  p.counter = counter;
  return p;
}

float Uniform(const SampleParams& p) { return CounterUniform(p.seed, p.counter); }

model::SamplingParams CpuParams(const SampleParams& p) {
  model::SamplingParams s;
  s.temperature = p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  return s;
}

// ids (rows) for logits (rows, V) packed, or with row_stride floats a row.
std::vector<int32_t> GpuSample(const std::vector<float>& logits, int rows, int V, size_t row_stride,
                               const std::vector<SampleParams>& params) {
  DeviceVector<float> dl(logits);
  DeviceVector<SampleParams> dp(params);
  DeviceVector<int32_t> ids(static_cast<size_t>(rows));  // poisoned: -1
  const Status s = kernels::SampleTokens(dl.get(), rows, V, row_stride, dp.get(), ids.get(), nullptr);
  EXPECT_TRUE(s.ok()) << s.message();
  return ids.ToHost();
}

enum class Dist { kUniform, kGpt2Like, kPeaked, kFlat, kTies, kNanInf };

std::vector<float> MakeRow(Dist d, int V, uint64_t seed) {
  std::vector<float> x;
  switch (d) {
    case Dist::kUniform: x = RandomVector(V, seed, -8.0f, 8.0f); break;
    case Dist::kGpt2Like: {
      x = RandomVector(V, seed, -75.0f, -60.0f);
      const std::vector<float> hi = RandomVector(64, seed + 1, -62.0f, -50.0f);
      for (int j = 0; j < 64 && j < V; ++j) x[(j * 7919 + 13) % V] = hi[j];
      break;
    }
    case Dist::kPeaked:
      x = RandomVector(V, seed, -1.0f, 1.0f);
      x[(seed * 31) % V] = 20.0f;
      break;
    case Dist::kFlat: x.assign(V, 0.5f); break;
    case Dist::kTies:
      x = RandomVector(V, seed, 0.0f, 5.0f);
      for (float& v : x) v = std::floor(v) - 2.0f;  // {-2, -1, 0, 1, 2}
      break;
    case Dist::kNanInf:
      x = RandomVector(V, seed, -3.0f, 3.0f);
      for (int i = 0; i < V; ++i) {
        if (i % 7 == 3) x[i] = NAN;
        else if (i % 5 == 1) x[i] = -INFINITY;
        else if (i % 11 == 2) x[i] = (i % 2) ? -0.0f : 0.0f;  // -0 and +0 tie
      }
      break;
  }
  return x;
}

// `draws` rows holding the same logits, counters 0..draws-1: GPU ids vs
// the CPU sampler and the reference (see the file comment).
struct Tally {
  int draws = 0, mismatches = 0;
};
void CheckDraws(const std::vector<float>& row, int V, float temperature, int top_k, float top_p, int draws,
                uint64_t seed, Tally* tally) {
  std::vector<float> logits;
  std::vector<SampleParams> params;
  for (int r = 0; r < draws; ++r) {
    logits.insert(logits.end(), row.begin(), row.end());
    params.push_back(MakeParams(temperature, top_k, top_p, seed, static_cast<uint64_t>(r)));
  }
  const std::vector<int32_t> ids = GpuSample(logits, draws, V, V, params);
  const RefSampler ref(row.data(), V, params[0]);
  model::Sampler cpu(V);
  for (int r = 0; r < draws; ++r) {
    const float u = Uniform(params[r]);
    const int32_t want = cpu.Sample(row.data(), CpuParams(params[r]), u);
    EXPECT_TRUE(ref.Allows(ids[r], u, kGpuMargin))
        << "V " << V << " T " << temperature << " k " << top_k << " p " << top_p << " counter " << r << " u " << u
        << ": GPU drew " << ids[r] << ", CPU " << want;
    if (ids[r] == want) continue;
    EXPECT_TRUE(ref.Allows(want, u, kCpuMargin)) << "GPU " << ids[r] << " and CPU " << want
                                                 << " differ away from a boundary (V " << V << " T " << temperature
                                                 << " k " << top_k << " p " << top_p << " u " << u << ")";
    if (!ref.Ambiguous(kCpuMargin)) ++tally->mismatches;
  }
  tally->draws += draws;
}

void ExpectRareMismatches(const Tally& t) {
  EXPECT_LE(t.mismatches, t.draws / 100 + 2)
      << t.mismatches << " of " << t.draws << " draws differ from the CPU in rows whose cut is clear";
}

struct Setting {
  float temperature;
  int top_k;
  float top_p;
};

TEST(SamplingGpu, GreedyMatchesTheCpuExactlyWhateverTheLogits) {
  TW_REQUIRE_GPU();
  // Greedy by temperature (0, negative, NaN), or forced: a +inf logit, or a
  // temperature whose inverse overflows.
  const Setting greedy[] = {{0.0f, 0, 1.0f}, {-1.0f, 40, 0.9f}, {NAN, 0, 1.0f}, {1e-40f, 0, 1.0f}};
  for (int V : {1, 7, 129, 1025, 50257}) {
    std::vector<std::vector<float>> rows;
    for (Dist d : {Dist::kUniform, Dist::kGpt2Like, Dist::kPeaked, Dist::kFlat, Dist::kTies, Dist::kNanInf}) {
      rows.push_back(MakeRow(d, V, 3 + V));
    }
    rows.push_back(std::vector<float>(V, NAN));        // every logit NaN: 0
    rows.push_back(std::vector<float>(V, -INFINITY));  // every logit -inf: the first
    std::vector<float> late = std::vector<float>(V, NAN);
    late[V - 1] = -INFINITY;  // NaN everywhere but the last: the last
    rows.push_back(late);
    std::vector<float> inf = RandomVector(V, 9, -1.0f, 1.0f);
    inf[V / 2] = INFINITY;
    rows.push_back(inf);
    for (const Setting& s : greedy) {
      std::vector<float> logits;
      std::vector<SampleParams> params;
      for (const std::vector<float>& row : rows) {
        logits.insert(logits.end(), row.begin(), row.end());
        params.push_back(MakeParams(s.temperature, s.top_k, s.top_p, 1, params.size()));
      }
      const int n = static_cast<int>(rows.size());
      const std::vector<int32_t> ids = GpuSample(logits, n, V, V, params);
      model::Sampler cpu(V);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(ids[r], cpu.Sample(rows[r].data(), CpuParams(params[r]), Uniform(params[r])))
            << "V " << V << " row " << r << " T " << s.temperature;
      }
    }
    // A +inf logit forces greedy even at T = 1.
    std::vector<SampleParams> one = {MakeParams(1.0f, 0, 1.0f, 1, 0)};
    EXPECT_EQ(GpuSample(inf, 1, V, V, one)[0], V / 2);
  }
}

TEST(SamplingGpu, SampledIdsMatchTheCpuSamplerExceptAtCdfBoundaries) {
  TW_REQUIRE_GPU();
  const int V = 50257;
  const Setting settings[] = {{1.0f, 0, 1.0f},  {0.7f, 40, 1.0f},  {1.0f, 0, 0.9f},    {1.3f, 40, 0.9f},
                              {0.5f, 0, 0.5f},  {1.0f, 1000, 0.99f}, {2.0f, V - 1, 1.0f}, {1e-30f, 0, 1.0f}};
  Tally tally;
  for (Dist d : {Dist::kUniform, Dist::kGpt2Like, Dist::kPeaked, Dist::kNanInf}) {
    const std::vector<float> row = MakeRow(d, V, 11 + static_cast<int>(d));
    for (const Setting& s : settings) {
      CheckDraws(row, V, s.temperature, s.top_k, s.top_p, testing::CiShapes() ? 16 : 64, 1234, &tally);
    }
  }
  ExpectRareMismatches(tally);
}

TEST(SamplingGpu, TopKAndTopPOnAFlatDistributionKeepTheLowestIds) {
  TW_REQUIRE_GPU();
  // Equal weights: the draws are exact on both sides (floor(u * kept)).
  const int V = 1000;
  const std::vector<float> flat(V, 0.5f);
  struct Case {
    int top_k;
    float top_p;
    int kept;
  };
  for (const Case& c : {Case{40, 1.0f, 40}, Case{0, 0.5f, 500}, Case{100, 0.25f, 25}, Case{0, 0.0f, 1}}) {
    std::vector<float> logits;
    std::vector<SampleParams> params;
    const int draws = 256;
    for (int r = 0; r < draws; ++r) {
      logits.insert(logits.end(), flat.begin(), flat.end());
      params.push_back(MakeParams(1.0f, c.top_k, c.top_p, 77, r));
    }
    const std::vector<int32_t> ids = GpuSample(logits, draws, V, V, params);
    model::Sampler cpu(V);
    int highest = 0;
    for (int r = 0; r < draws; ++r) {
      EXPECT_LT(ids[r], c.kept) << "k " << c.top_k << " p " << c.top_p;
      EXPECT_GE(ids[r], 0);
      EXPECT_EQ(ids[r], cpu.Sample(flat.data(), CpuParams(params[r]), Uniform(params[r])));
      EXPECT_EQ(ids[r], static_cast<int>(static_cast<double>(Uniform(params[r])) * c.kept));
      highest = std::max(highest, ids[r]);
    }
    if (c.kept > 1) {
      EXPECT_GT(highest, c.kept / 2) << "the draws never reach the upper half of the kept ids";
    }
  }
}

TEST(SamplingGpu, TiesAtTheTopKCutKeepTheLowestIds) {
  TW_REQUIRE_GPU();
  const int V = 3000;
  std::vector<float> row = RandomVector(V, 5, -4.0f, 0.0f);
  const int tied[] = {2999, 17, 1500, 640, 2048, 129, 128, 1024, 5, 2500};  // ten ids at 3.0
  for (int id : tied) row[id] = 3.0f;
  row[700] = 3.5f;  // one above them
  // top_k = 5: 700 and the four lowest tied ids (5, 17, 128, 129).
  std::vector<float> logits;
  std::vector<SampleParams> params;
  const int draws = 256;
  for (int r = 0; r < draws; ++r) {
    logits.insert(logits.end(), row.begin(), row.end());
    params.push_back(MakeParams(1.0f, 5, 1.0f, 9, r));
  }
  const std::vector<int32_t> ids = GpuSample(logits, draws, V, V, params);
  std::vector<int> seen(V, 0);
  for (int32_t id : ids) {
    ASSERT_TRUE(id == 700 || id == 5 || id == 17 || id == 128 || id == 129) << "drew " << id;
    seen[id]++;
  }
  for (int id : {700, 5, 17, 128, 129}) EXPECT_GT(seen[id], 0) << id << " never drawn in " << draws;
  Tally tally;
  CheckDraws(row, V, 1.0f, 5, 1.0f, 64, 9, &tally);
  CheckDraws(row, V, 1.0f, 0, 0.12f, 64, 9, &tally);  // top-p whose cut falls among the ties (~4.1 of 10)
  CheckDraws(row, V, 0.8f, 11, 0.95f, 64, 9, &tally);
  ExpectRareMismatches(tally);
}

TEST(SamplingGpu, PeakedDistributionWithTopPKeepsOnlyThePeak) {
  TW_REQUIRE_GPU();
  const int V = 50257;
  const std::vector<float> row = MakeRow(Dist::kPeaked, V, 21);  // 20.0 at one id, others in [-1, 1]
  const int peak = static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
  std::vector<float> logits;
  std::vector<SampleParams> params;
  for (int r = 0; r < 32; ++r) {
    logits.insert(logits.end(), row.begin(), row.end());
    params.push_back(MakeParams(1.0f, 0, 0.9f, 4, r));
  }
  for (int32_t id : GpuSample(logits, 32, V, V, params)) EXPECT_EQ(id, peak);
  Tally tally;
  CheckDraws(row, V, 3.0f, 0, 0.9f, 64, 4, &tally);  // hotter: the tail matters
  CheckDraws(row, V, 1.0f, 0, 1.0f, 64, 4, &tally);
  ExpectRareMismatches(tally);
}

TEST(SamplingGpu, NanAndInfiniteLogitsAreNeverDrawn) {
  TW_REQUIRE_GPU();
  for (int V : {7, 1000, 50257}) {
    const std::vector<float> row = MakeRow(Dist::kNanInf, V, 31);
    const int draws = 128;
    std::vector<float> logits;
    std::vector<SampleParams> params;
    for (int r = 0; r < draws; ++r) {
      logits.insert(logits.end(), row.begin(), row.end());
      params.push_back(MakeParams(4.0f, 0, 1.0f, 6, r));  // hot: every finite id has weight
    }
    for (int32_t id : GpuSample(logits, draws, V, V, params)) {
      ASSERT_TRUE(id >= 0 && id < V) << id;
      EXPECT_TRUE(std::isfinite(row[id])) << "drew id " << id << " with logit " << row[id];
    }
    Tally tally;
    CheckDraws(row, V, 1.0f, 0, 1.0f, 64, 6, &tally);
    CheckDraws(row, V, 1.0f, 20, 0.8f, 64, 6, &tally);
    ExpectRareMismatches(tally);
  }
}

TEST(SamplingGpu, VocabSizesAroundTheTileAndBlockSizes) {
  TW_REQUIRE_GPU();
  Tally tally;
  for (int V : {1, 2, 7, 31, 32, 33, 127, 128, 129, 1023, 1024, 1025, 4097, 50257}) {
    for (Dist d : {Dist::kUniform, Dist::kTies}) {
      const std::vector<float> row = MakeRow(d, V, 41 + V);
      CheckDraws(row, V, 1.0f, 5, 0.8f, 32, 8, &tally);
      CheckDraws(row, V, 1.0f, 0, 1.0f, 32, 8, &tally);
      CheckDraws(row, V, 0.9f, 0, 0.6f, 32, 8, &tally);
    }
  }
  ExpectRareMismatches(tally);
}

// 32 different rows with different parameters: each row alone, in a batch
// of 7 and in the batch of 32 draws the same id.
TEST(SamplingGpu, EachRowsIdIsIndependentOfItsBatch) {
  TW_REQUIRE_GPU();
  const int V = 50257, B = 32;
  const Setting settings[] = {{0.0f, 0, 1.0f}, {1.0f, 0, 1.0f}, {0.7f, 40, 1.0f}, {1.0f, 0, 0.9f}, {1.3f, 40, 0.9f}};
  std::vector<float> logits;
  std::vector<SampleParams> params;
  for (int r = 0; r < B; ++r) {
    const std::vector<float> row = MakeRow(static_cast<Dist>(r % 6), V, 100 + r);
    logits.insert(logits.end(), row.begin(), row.end());
    const Setting& s = settings[r % 5];
    params.push_back(MakeParams(s.temperature, s.top_k, s.top_p, 55, r));
  }
  const std::vector<int32_t> all = GpuSample(logits, B, V, V, params);
  for (int r = 0; r < B; ++r) {
    const std::vector<float> row(logits.begin() + static_cast<size_t>(r) * V, logits.begin() + static_cast<size_t>(r + 1) * V);
    EXPECT_EQ(GpuSample(row, 1, V, V, {params[r]})[0], all[r]) << "row " << r << " alone";
  }
  for (int first : {0, 3, 25}) {
    const std::vector<float> seven(logits.begin() + static_cast<size_t>(first) * V,
                                   logits.begin() + static_cast<size_t>(first + 7) * V);
    const std::vector<SampleParams> p7(params.begin() + first, params.begin() + first + 7);
    const std::vector<int32_t> ids = GpuSample(seven, 7, V, V, p7);
    for (int r = 0; r < 7; ++r) EXPECT_EQ(ids[r], all[first + r]) << "row " << first + r << " in a batch of 7";
  }
  // And again: the same launch gives the same ids.
  EXPECT_EQ(GpuSample(logits, B, V, V, params), all);
}

TEST(SamplingGpu, PaddedRowsAreReadOnlyUpToTheVocabulary) {
  TW_REQUIRE_GPU();
  const int V = 1025, B = 7;
  const size_t stride = V + 7;
  std::vector<float> packed, padded(stride * B, 100.0f);  // padding larger than any logit
  std::vector<SampleParams> params;
  for (int r = 0; r < B; ++r) {
    const std::vector<float> row = MakeRow(Dist::kUniform, V, 200 + r);
    packed.insert(packed.end(), row.begin(), row.end());
    std::copy(row.begin(), row.end(), padded.begin() + stride * r);
    params.push_back(MakeParams(r % 2 ? 1.0f : 0.0f, 10, 0.9f, 3, r));
  }
  EXPECT_EQ(GpuSample(padded, B, V, stride, params), GpuSample(packed, B, V, V, params));
}

bool Mentions(const Status& s, const std::string& text) {
  return !s.ok() && s.message().find(text) != std::string::npos;
}

TEST(SamplingGpu, LauncherRefusesBadArgumentsNamingThem) {
  TW_REQUIRE_GPU();
  DeviceVector<float> logits(64);
  DeviceVector<SampleParams> params(2);
  DeviceVector<int32_t> ids(2);
  EXPECT_TRUE(Mentions(kernels::SampleTokens(logits.get(), 2, 0, 32, params.get(), ids.get(), nullptr), "vocab = 0"));
  EXPECT_TRUE(Mentions(kernels::SampleTokens(logits.get(), 2, kernels::kSampleMaxVocab + 1, kernels::kSampleMaxVocab + 1,
                                             params.get(), ids.get(), nullptr),
                       "vocab = 262145"));
  EXPECT_TRUE(Mentions(kernels::SampleTokens(logits.get(), 2, 32, 31, params.get(), ids.get(), nullptr), "row_stride = 31"));
  EXPECT_TRUE(Mentions(kernels::SampleTokens(logits.get(), -1, 32, 32, params.get(), ids.get(), nullptr), "rows = -1"));
  EXPECT_TRUE(Mentions(kernels::SampleTokens(nullptr, 2, 32, 32, params.get(), ids.get(), nullptr), "logits is null"));
  EXPECT_TRUE(Mentions(kernels::SampleTokens(logits.get(), 2, 32, 32, nullptr, ids.get(), nullptr), "params is null"));
  EXPECT_TRUE(Mentions(kernels::SampleTokens(logits.get(), 2, 32, 32, params.get(), nullptr, nullptr), "ids is null"));
  const SampleParams* odd = reinterpret_cast<const SampleParams*>(reinterpret_cast<const char*>(params.get()) + 4);
  EXPECT_TRUE(Mentions(kernels::SampleTokens(logits.get(), 1, 32, 32, odd, ids.get(), nullptr), "8-byte aligned"));
  TW_ASSERT_OK(kernels::SampleTokens(logits.get(), 0, 32, 32, params.get(), ids.get(), nullptr));
  TW_ASSERT_OK(kernels::DeviceSync());
}

// The logit edits (kernels::ApplyLogitEdits) give the host's bits
// (common/logit_edit.h, the CPU runner's arithmetic), on padded rows, with
// rows of no edits, -inf biases and both signs under the repetition penalty.
TEST(SamplingGpu, LogitEditsEqualTheHostsBitForBit) {
  TW_REQUIRE_GPU();
  constexpr int B = 5, V = 1000;
  constexpr size_t stride = V + 3;
  std::vector<float> logits = RandomVector(stride * B, 41, -6.0f, 6.0f);
  std::vector<int32_t> rows = {0};
  std::vector<LogitEdit> edits;
  std::vector<float> want = logits;
  for (int r = 0; r < B; ++r) {
    const int n = r == 2 ? 0 : 17 * (r + 1);  // row 2: none
    const std::vector<float> rnd = RandomVector(static_cast<size_t>(3 * n) + 1, 100 + static_cast<uint64_t>(r), -3.0f, 3.0f);
    for (int j = 0; j < n; ++j) {
      LogitEdit e;
      e.id = (j * 53 + r) % V;  // distinct within the row (53 and 1000 coprime, n < 1000)
      e.bias = j % 9 == 4 ? -INFINITY : rnd[static_cast<size_t>(3 * j)];
      e.rep = j % 3 == 0 ? 1.0f : (j % 3 == 1 ? 1.3f : 0.7f);
      e.sub = j % 2 ? rnd[static_cast<size_t>(3 * j + 1)] : 0.0f;
      edits.push_back(e);
      float& x = want[static_cast<size_t>(r) * stride + static_cast<size_t>(e.id)];
      x = ApplyLogitEdit(x, e);
    }
    rows.push_back(static_cast<int32_t>(edits.size()));
  }
  DeviceVector<float> dl(logits);
  DeviceVector<int32_t> dr(rows);
  DeviceVector<LogitEdit> de(edits);
  const Status st = kernels::ApplyLogitEdits(dl.get(), B, V, stride, dr.get(), de.get(), nullptr);
  ASSERT_TRUE(st.ok()) << st.message();
  const std::vector<float> got = dl.ToHost();
  int differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0);
  EXPECT_FALSE(kernels::ApplyLogitEdits(dl.get(), B, V, V - 1, dr.get(), de.get(), nullptr).ok());
}

// min_p on the device keeps the ids at or above MinPThreshold (computed on
// the host here): every draw equals the draw with top_k = their count, and
// lies in that set.
TEST(SamplingGpu, MinPDrawsAreTheTopKOfItsCount) {
  TW_REQUIRE_GPU();
  constexpr int V = 2000, kDraws = 16;
  for (Dist d : {Dist::kUniform, Dist::kGpt2Like, Dist::kPeaked, Dist::kTies}) {
    const std::vector<float> row = MakeRow(d, V, 7);
    for (float min_p : {0.01f, 0.2f, 1.0f}) {
      const float t = 0.8f;
      const float mx = *std::max_element(row.begin(), row.end());
      const float floor = MinPThreshold(mx, t, MinPLog(min_p));
      const int k = static_cast<int>(std::count_if(row.begin(), row.end(), [&](float v) { return v >= floor; }));
      std::vector<float> logits;
      std::vector<SampleParams> with_min_p, with_k;
      for (int i = 0; i < kDraws; ++i) {
        logits.insert(logits.end(), row.begin(), row.end());
        SampleParams p = MakeParams(t, 0, 1.0f, 5, static_cast<uint64_t>(i));
        p.min_p_log = MinPLog(min_p);
        with_min_p.push_back(p);
        with_k.push_back(MakeParams(t, k, 1.0f, 5, static_cast<uint64_t>(i)));
      }
      const std::vector<int32_t> a = GpuSample(logits, kDraws, V, V, with_min_p);
      EXPECT_EQ(a, GpuSample(logits, kDraws, V, V, with_k)) << "min_p " << min_p << " k " << k;
      for (int32_t id : a) {
        ASSERT_GE(id, 0);
        EXPECT_GE(row[static_cast<size_t>(id)], floor) << "min_p " << min_p;
      }
    }
  }
}

}  // namespace
}  // namespace tw
