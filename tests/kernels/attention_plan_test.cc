// The CUDA attention plan on the CPU (no GPU needed): the pool's 64-bit
// offsets, the workspace sizes, AttnExp's accuracy, and the emulation of the
// kernels' chunked online softmax + merge against a double-precision
// reference at the chunk edges (1, chunk-1, chunk, chunk+1, 2*chunk, 1000,
// 1024 keys), including padded (empty) chunk slots that must never be merged.
#include "kernels/attention_plan.h"
#include "support/numeric.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace tw::kernels {
namespace {

constexpr int kChunk = kAttnChunkTokens;

std::vector<float> Random(size_t n, std::mt19937* gen, float lo, float hi) {
  return testing::RandomNonZero(n, gen, lo, hi);
}

// softmax(scale * q . K^T) V in double: out (hd).
std::vector<double> ReferenceRow(const float* q, const float* k, const float* v, int len, int hd, double scale) {
  std::vector<double> s(len);
  double mx = -1e300;
  for (int t = 0; t < len; ++t) {
    double dot = 0;
    for (int d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * k[static_cast<size_t>(t) * hd + d];
    s[t] = scale * dot;
    mx = std::max(mx, s[t]);
  }
  double sum = 0;
  for (int t = 0; t < len; ++t) sum += (s[t] = std::exp(s[t] - mx));
  std::vector<double> out(hd, 0.0);
  for (int t = 0; t < len; ++t) {
    for (int d = 0; d < hd; ++d) out[d] += s[t] * v[static_cast<size_t>(t) * hd + d];
  }
  for (double& x : out) x /= sum;
  return out;
}

TEST(AttentionPlanTest, KvOffsetsFollowTheKvPoolLayoutIn64Bits) {
  // GPT-2 small, 16-token blocks: 12 * 2 * 12 * 16 * 64 floats per block.
  const KvShape kv{12, 12, 64, 16, 10000};
  ASSERT_EQ(kv.FloatsPerBlock(), 294912);
  for (int64_t b : {0, 1, 7281, 7282, 9999}) {
    for (int l : {0, 5, 11}) {
      for (int h : {0, 11}) {
        const int64_t want = b * 294912 + ((l * 2 + 1) * 12 + h) * 16 * 64 + 15 * 64 + 63;
        EXPECT_EQ(kv.Offset(b, l, 1, h, 15, 63), want) << "block " << b << " layer " << l << " head " << h;
        EXPECT_EQ(kv.Offset(b, l, 0, h, 0, 0), b * 294912 + (l * 2 * 12 + h) * 16 * 64);
      }
    }
  }
  // Past block 7281 the offsets leave int32.
  EXPECT_LT(kv.Offset(7281, 0, 0, 0, 0, 0), static_cast<int64_t>(INT_MAX));
  EXPECT_GT(kv.Offset(7282, 0, 0, 0, 0, 0), static_cast<int64_t>(INT_MAX));
  EXPECT_EQ(kv.TotalFloats(), int64_t{10000} * 294912);
}

TEST(AttentionPlanTest, KvShapeChecksNameTheBadField) {
  EXPECT_TRUE(CheckKvShape({12, 12, 64, 16, 100}).ok());
  EXPECT_TRUE(CheckKvShape({2, 4, 16, 1, 1}).ok());
  EXPECT_TRUE(CheckKvShape({2, 4, 16, 256, 1}).ok());
  Status s = CheckKvShape({12, 12, 32, 16, 100});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("head_dim = 32"), std::string::npos) << s.message();
  s = CheckKvShape({12, 12, 64, 257, 100});
  EXPECT_NE(s.message().find("block_size = 257"), std::string::npos) << s.message();
  s = CheckKvShape({12, 12, 64, 0, 100});
  EXPECT_NE(s.message().find("block_size = 0"), std::string::npos) << s.message();
  EXPECT_FALSE(CheckKvShape({0, 12, 64, 16, 100}).ok());
  EXPECT_FALSE(CheckKvShape({12, 0, 64, 16, 100}).ok());
  EXPECT_FALSE(CheckKvShape({12, 12, 64, 16, 0}).ok());
}

TEST(AttentionPlanTest, PlanSizesTheWorkspaceForGpt2Small) {
  AttentionPlan p;
  ASSERT_TRUE(MakeAttentionPlan(32, 1024, 12, 64, &p).ok());
  EXPECT_EQ(p.chunk_tokens, kChunk);
  EXPECT_EQ(p.max_chunks, 1024 / kChunk);
  EXPECT_EQ(p.partial_o_floats, size_t{32} * 12 * p.max_chunks * 64);
  EXPECT_EQ(p.partial_ml_floats, size_t{32} * 12 * p.max_chunks * 2);
  EXPECT_EQ(p.tickets, size_t{32} * 12);
  EXPECT_EQ(p.partial_o_offset % 256, 0u);
  EXPECT_EQ(p.partial_ml_offset % 256, 0u);
  EXPECT_EQ(p.tickets_offset % 256, 0u);
  EXPECT_GE(p.partial_ml_offset, p.partial_o_offset + p.partial_o_floats * 4);
  EXPECT_GE(p.tickets_offset, p.partial_ml_offset + p.partial_ml_floats * 4);
  EXPECT_GE(p.workspace_bytes, p.tickets_offset + p.tickets * 4);
  const AttentionPlan::Grid d = p.DecodeGrid(7);
  EXPECT_EQ(d.x, p.max_chunks);
  EXPECT_EQ(d.y, 12);
  EXPECT_EQ(d.z, 7);
  const AttentionPlan::Grid f = p.PrefillGrid(17);
  EXPECT_EQ(f.z, 2);  // 16 rows per tile
  EXPECT_EQ(p.MergeGrid(3).x, (3 * 12 + 1) / 2);
  // Chunk counts at the edges; the tiny golden model (n_ctx 128) has one.
  EXPECT_EQ(AttnChunkCount(1), 1);
  EXPECT_EQ(AttnChunkCount(kChunk), 1);
  EXPECT_EQ(AttnChunkCount(kChunk + 1), 2);
  ASSERT_TRUE(MakeAttentionPlan(256, 128, 4, 16, &p).ok());
  EXPECT_EQ(p.max_chunks, 1);
  EXPECT_EQ(p.MergeGrid(256).x, 256 * 4 / 8);
}

TEST(AttentionPlanTest, PlanRefusesShapesTheKernelsDoNotSupport) {
  AttentionPlan p;
  Status s = MakeAttentionPlan(32, 1024, 12, 32, &p);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("head_dim = 32"), std::string::npos) << s.message();
  EXPECT_FALSE(MakeAttentionPlan(0, 1024, 12, 64, &p).ok());
  EXPECT_FALSE(MakeAttentionPlan(32, 0, 12, 64, &p).ok());
  EXPECT_FALSE(MakeAttentionPlan(32, 1024, 0, 64, &p).ok());
  EXPECT_FALSE(MakeAttentionPlan(70000, 1024, 12, 64, &p).ok());
  EXPECT_FALSE(MakeAttentionPlan(32, 1024, 12, 64, nullptr).ok());
}

// AttnExp is the one transcendental in the kernels; the tolerance of every
// attention comparison rests on it.
// 1 ulp is 6e-8..1.2e-7 relative.
TEST(AttentionPlanTest, ExpIsWithinAboutOneUlpOfExpOverTheSoftmaxRange) {
  double worst = 0;
  float worst_x = 0;
  for (int i = 0; i <= 2000000; ++i) {
    const float x = -87.0f * static_cast<float>(i) / 2000000.0f;
    const double want = std::exp(static_cast<double>(x));
    const double rel = std::fabs(attn_math::Exp(x) - want) / want;
    if (rel > worst) {
      worst = rel;
      worst_x = x;
    }
  }
  EXPECT_LT(worst, 1.5e-7) << "at x = " << worst_x;  // measured 8.3e-8
  EXPECT_EQ(attn_math::Exp(0.0f), 1.0f);
  EXPECT_EQ(attn_math::Exp(-0.0f), 1.0f);
  EXPECT_EQ(attn_math::Exp(-87.5f), 0.0f);
  EXPECT_EQ(attn_math::Exp(-1e30f), 0.0f);
  EXPECT_EQ(attn_math::Exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isinf(attn_math::Exp(100.0f)));
  EXPECT_TRUE(std::isnan(attn_math::Exp(std::numeric_limits<float>::quiet_NaN())));
}

// fp32 emulation vs double: with |q|, |k|, |v| <= 1 (scores within a few
// units) the error is a few float ulps of the output (measured <= 2e-8):
// tolerance 2e-7 absolute + 1e-6 relative. With |q| up to 40 (scores up to
// ~150: exp would overflow without subtracting the max) each score carries
// ~1e-5 absolute rounding, i.e. ~1e-5 relative in its weight (measured
// <= 6e-7 on outputs ~1): 2e-6 + 1e-5 relative there.
TEST(AttentionPlanTest, EmulationMatchesDoubleReferenceAtEveryChunkEdge) {
  std::mt19937 gen(1234);
  for (int hd : {64, 16}) {
    for (float q_range : {1.0f, 40.0f}) {
      for (int len : {1, 2, kChunk - 1, kChunk, kChunk + 1, 2 * kChunk, 2 * kChunk + 1, 1000, 1024}) {
        const std::vector<float> q = Random(hd, &gen, -q_range, q_range);
        const std::vector<float> k = Random(static_cast<size_t>(len) * hd, &gen, -1.0f, 1.0f);
        const std::vector<float> v = Random(static_cast<size_t>(len) * hd, &gen, -1.0f, 1.0f);
        std::vector<float> out(hd, std::numeric_limits<float>::quiet_NaN());
        ASSERT_TRUE(EmulateAttentionRow(q.data(), k.data(), v.data(), len, hd, AttnScale(hd), 8, out.data()).ok());
        const std::vector<double> want = ReferenceRow(q.data(), k.data(), v.data(), len, hd, 1.0 / std::sqrt(hd));
        const double atol = q_range > 1 ? 2e-6 : 2e-7, rtol = q_range > 1 ? 1e-5 : 1e-6;
        for (int d = 0; d < hd; ++d) {
          ASSERT_FALSE(std::isnan(out[d])) << "hd " << hd << " len " << len << " d " << d;
          ASSERT_NEAR(out[d], want[d], atol + rtol * std::fabs(want[d]))
              << "hd " << hd << " len " << len << " q_range " << q_range << " d " << d;
        }
      }
    }
  }
}

// The GPU's chunk axis is padded to max_chunks; the slots past a row's
// chunks hold stale data (NaN here) and must not be merged.
TEST(AttentionPlanTest, PaddedChunkSlotsAreNeverMerged) {
  std::mt19937 gen(99);
  const int hd = 64;
  for (int len : {1, kChunk, kChunk + 1, 3 * kChunk - 1}) {
    const std::vector<float> q = Random(hd, &gen, -1.0f, 1.0f);
    const std::vector<float> k = Random(static_cast<size_t>(len) * hd, &gen, -1.0f, 1.0f);
    const std::vector<float> v = Random(static_cast<size_t>(len) * hd, &gen, -1.0f, 1.0f);
    std::vector<float> exact(hd), padded(hd);
    ASSERT_TRUE(EmulateAttentionRow(q.data(), k.data(), v.data(), len, hd, AttnScale(hd), AttnChunkCount(len),
                                    exact.data()).ok());
    ASSERT_TRUE(EmulateAttentionRow(q.data(), k.data(), v.data(), len, hd, AttnScale(hd), 8, padded.data()).ok());
    for (int d = 0; d < hd; ++d) {
      ASSERT_FALSE(std::isnan(padded[d])) << "len " << len;
      ASSERT_EQ(exact[d], padded[d]) << "len " << len << " d " << d;
    }
  }
  // A row longer than the padded axis is refused, not truncated.
  std::vector<float> q(hd, 0.5f), kv(static_cast<size_t>(kChunk + 1) * hd, 0.5f), out(hd);
  EXPECT_FALSE(EmulateAttentionRow(q.data(), kv.data(), kv.data(), kChunk + 1, hd, 0.125f, 1, out.data()).ok());
  EXPECT_FALSE(EmulateAttentionRow(q.data(), kv.data(), kv.data(), 0, hd, 0.125f, 1, out.data()).ok());
  EXPECT_FALSE(EmulateAttentionRow(q.data(), kv.data(), kv.data(), 1, 32, 0.125f, 1, out.data()).ok());
}

// A lone chunk's merge is o / l exactly (its weight exp(0) is exactly 1), so
// a row of one chunk gets the same bits from the decode kernel's own merge
// as from the separate merge kernel.
TEST(AttentionPlanTest, MergeOfOneChunkIsItsOutputOverItsSum) {
  std::mt19937 gen(7);
  for (int hd : {64, 16}) {
    for (int n : {1, 5, kChunk}) {
      const std::vector<float> q = Random(hd, &gen, -1.0f, 1.0f);
      const std::vector<float> k = Random(static_cast<size_t>(n) * hd, &gen, -1.0f, 1.0f);
      const std::vector<float> v = Random(static_cast<size_t>(n) * hd, &gen, -1.0f, 1.0f);
      float m = 0, l = 0;
      std::vector<float> o(hd), out(hd);
      EmulateAttnChunk(q.data(), k.data(), v.data(), n, hd, AttnScale(hd), &m, &l, o.data());
      EXPECT_GE(l, 1.0f);  // the max key's weight is exp(0) = 1
      EmulateAttnMerge(&m, &l, o.data(), 1, hd, out.data());
      for (int d = 0; d < hd; ++d) ASSERT_EQ(out[d], o[d] / l) << "hd " << hd << " n " << n;
    }
  }
}

// Splitting the keys into chunks changes the rounding, not the value: the
// merge of the chunks of a row is within tolerance of the same keys in
// one long softmax (the double reference), also when one chunk's max is
// far below another's (its weight underflows towards 0).
TEST(AttentionPlanTest, MergeWeighsChunksWithFarApartMaxima) {
  std::mt19937 gen(5);
  const int hd = 64, len = 3 * kChunk;
  std::vector<float> q = Random(hd, &gen, -1.0f, 1.0f);
  std::vector<float> k = Random(static_cast<size_t>(len) * hd, &gen, -1.0f, 1.0f);
  const std::vector<float> v = Random(static_cast<size_t>(len) * hd, &gen, -1.0f, 1.0f);
  // Chunk 1's keys aligned with q: its scores are ~60 above the others'.
  for (int t = kChunk; t < 2 * kChunk; ++t) {
    for (int d = 0; d < hd; ++d) k[static_cast<size_t>(t) * hd + d] = q[d] > 0 ? 20.0f : -20.0f;
  }
  std::vector<float> out(hd);
  ASSERT_TRUE(EmulateAttentionRow(q.data(), k.data(), v.data(), len, hd, AttnScale(hd), 8, out.data()).ok());
  const std::vector<double> want = ReferenceRow(q.data(), k.data(), v.data(), len, hd, 0.125);
  for (int d = 0; d < hd; ++d) ASSERT_NEAR(out[d], want[d], 2e-6 + 1e-5 * std::fabs(want[d])) << d;  // as |q| 40 above
}

}  // namespace
}  // namespace tw::kernels
