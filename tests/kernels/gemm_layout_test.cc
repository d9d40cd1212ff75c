// The host side of the CUDA matmuls, on the CPU: the packed layout read back
// element by element (odd shapes, the LM head's 50257 columns, 64-bit
// offsets), the layout against the mma.m16n8k8 A-fragment table of the PTX
// manual, plans (valid, never a function of M, the GPT-2-small tilings),
// workspace sizes, and the 3xTF32 split's error bound against fp64.
#include "kernels/gemm_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

namespace tw::kernels {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) {
    do x = d(gen);
    while (x == 0.0f);
  }
  return v;
}

// Packs w (K, N) and checks every element through the index function, and
// that every slot no element maps to is zero.
void ExpectPackedRoundTrip(int K, int N, uint32_t seed) {
  SCOPED_TRACE("K=" + std::to_string(K) + " N=" + std::to_string(N));
  const std::vector<float> w = Random(static_cast<size_t>(K) * N, seed);
  std::vector<float> packed(PackedGemmFloats(K, N), -1.0f);
  PackMatrix(w.data(), K, N, packed.data());
  std::vector<uint8_t> used(packed.size(), 0);
  size_t bad = 0;
  for (int k = 0; k < K; ++k) {
    for (int n = 0; n < N; ++n) {
      const size_t i = PackedGemmIndex(K, k, n);
      ASSERT_LT(i, packed.size());
      EXPECT_EQ(used[i], 0) << "two elements at packed index " << i;
      used[i] = 1;
      if (UnpackElement(packed.data(), K, k, n) != w[static_cast<size_t>(k) * N + n] && bad++ < 5) {
        ADD_FAILURE() << "W[" << k << "][" << n << "] reads back wrong";
      }
    }
  }
  size_t nonzero_padding = 0;
  for (size_t i = 0; i < packed.size(); ++i) nonzero_padding += !used[i] && packed[i] != 0.0f;
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(nonzero_padding, 0u);
}

TEST(GemmLayout, PackedSizeCountsWholeFragmentsInSixtyFourBits) {
  EXPECT_EQ(PackedGemmFloats(1, 1), 128u);
  EXPECT_EQ(PackedGemmFloats(8, 16), 128u);
  EXPECT_EQ(PackedGemmFloats(9, 17), 4u * 128u);
  EXPECT_EQ(PackedGemmFloats(768, 2304), 768u * 2304u);
  EXPECT_EQ(PackedGemmFloats(768, 50257), 3142u * 96u * 128u);    // the LM head: 16 padded columns
  EXPECT_EQ(PackedGemmFloats(3072, 50257), 3142u * 384u * 128u);
  // Past 2^31 floats: offsets are size_t all the way.
  const size_t big = PackedGemmFloats(40000, 60000);
  EXPECT_EQ(big, size_t{3750} * 5000 * 128);
  EXPECT_GT(big, size_t{1} << 31);
  const size_t last = PackedGemmIndex(40000, 39999, 59999);
  EXPECT_GT(last, size_t{1} << 31);
  EXPECT_LT(last, big);
  EXPECT_EQ(PackedGemmIndex(40000, 39999, 59999), big - 1);  // k%8 = 7, n%16 = 15: lane 31, register 3
}

TEST(GemmLayout, EveryElementReadsBackThroughTheIndexForOddShapes) {
  const int shapes[][2] = {{1, 1}, {3, 5}, {7, 16}, {8, 17}, {9, 15}, {13, 50}, {100, 33},
                           {64, 192}, {256, 64}, {768, 2304}, {3072, 768}};
  uint32_t seed = 1;
  for (const auto& s : shapes) ExpectPackedRoundTrip(s[0], s[1], seed++);
}

TEST(GemmLayout, FragmentSlotsFollowThePtxTableForMmaM16N8K8Tf32) {
  // PTX ISA, "Matrix fragments for mma.m16n8k8" (.tf32), A (16 x 8, row):
  // groupID = lane / 4, threadID_in_group = lane % 4;
  // a0: (row groupID, col threadID_in_group), a1: (row groupID + 8, same col),
  // a2: (row groupID, col threadID_in_group + 4), a3: (row groupID + 8, col + 4).
  // Here the MMA's rows are weight columns n and its columns are k.
  const int K = 24, N = 48;
  std::vector<float> w(static_cast<size_t>(K) * N);
  for (int k = 0; k < K; ++k) {
    for (int n = 0; n < N; ++n) w[static_cast<size_t>(k) * N + n] = static_cast<float>(1000 * k + n + 1);
  }
  std::vector<float> packed(PackedGemmFloats(K, N));
  PackMatrix(w.data(), K, N, packed.data());
  const int row_of[4] = {0, 8, 0, 8}, col_of[4] = {0, 0, 4, 4};
  for (int panel = 0; panel < GemmPanels(N); ++panel) {
    for (int s = 0; s < GemmKSteps(K); ++s) {
      const float* frag = packed.data() + (static_cast<size_t>(panel) * GemmKSteps(K) + s) * 128;
      for (int lane = 0; lane < 32; ++lane) {
        for (int a = 0; a < 4; ++a) {
          const int n = panel * 16 + lane / 4 + row_of[a];
          const int k = s * 8 + lane % 4 + col_of[a];
          ASSERT_EQ(frag[lane * 4 + a], w[static_cast<size_t>(k) * N + n])
              << "panel " << panel << " k-step " << s << " lane " << lane << " a" << a;
        }
      }
    }
  }
}

TEST(GemmLayout, TransposedPackingOfTheLmHeadEqualsPackingItsTranspose) {
  // The tiny golden model's head (C = 64) against an explicit transpose.
  {
    const int V = 50257, C = 64;
    const std::vector<float> wte = Random(static_cast<size_t>(V) * C, 7);  // (V, C)
    std::vector<float> w(static_cast<size_t>(C) * V);                      // (C, V)
    for (int v = 0; v < V; ++v) {
      for (int c = 0; c < C; ++c) w[static_cast<size_t>(c) * V + v] = wte[static_cast<size_t>(v) * C + c];
    }
    std::vector<float> a(PackedGemmFloats(C, V)), b(PackedGemmFloats(C, V));
    PackMatrixTransposed(wte.data(), V, C, a.data());
    PackMatrix(w.data(), C, V, b.data());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  }
  // GPT-2-small's head (C = 768): every element through the index.
  {
    const int V = 50257, C = 768;
    const std::vector<float> wte = Random(static_cast<size_t>(V) * C, 8);
    std::vector<float> packed(PackedGemmFloats(C, V), -1.0f);
    PackMatrixTransposed(wte.data(), V, C, packed.data());
    size_t bad = 0;
    for (int v = 0; v < V; ++v) {
      for (int c = 0; c < C; ++c) bad += UnpackElement(packed.data(), C, c, v) != wte[static_cast<size_t>(v) * C + c];
    }
    EXPECT_EQ(bad, 0u);
    // The 15 padded columns of the last panel are zero at every k.
    for (int c = 0; c < C; ++c) {
      for (int v = V; v < GemmPanels(V) * 16; ++v) ASSERT_EQ(packed[PackedGemmIndex(C, c, v)], 0.0f);
    }
  }
}

TEST(GemmLayout, PlansAreValidAndNeverTakeTheRowCount) {
  // The plan is a function of (K, N, SM count, precision): there is no M to pass.
  static_assert(std::is_same_v<decltype(&MakeGemmPlan), GemmPlan (*)(int, int, int, GemmPrecision)>);
  const int shapes[][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}, {768, 50257},
                           {64, 192},   {64, 64},   {64, 256},   {256, 64},   {64, 50257},
                           {1, 1},      {7, 5},     {100, 33},   {4096, 11008}};
  for (const auto& s : shapes) {
    for (int sms : {1, 16, 108, 132, 1000}) {
      for (GemmPrecision prec : {GemmPrecision::kFp32, GemmPrecision::k3xTf32}) {
        const GemmPlan p = MakeGemmPlan(s[0], s[1], sms, prec);
        SCOPED_TRACE(DescribeGemmPlan(p) + " sms=" + std::to_string(sms));
        const Status st = CheckGemmPlan(p);
        EXPECT_TRUE(st.ok()) << st.message();
        EXPECT_EQ(p.precision, prec);
        // No empty split: the last one starts inside K.
        EXPECT_LT((p.splits - 1) * p.cta_ksteps(), GemmKSteps(p.K));
        // The same inputs, the same plan.
        const GemmPlan q = MakeGemmPlan(s[0], s[1], sms, prec);
        EXPECT_EQ(q.panels_per_cta, p.panels_per_cta);
        EXPECT_EQ(q.ksteps_per_warp, p.ksteps_per_warp);
        EXPECT_EQ(q.splits, p.splits);
      }
    }
  }
}

TEST(GemmLayout, Gpt2SmallPlansFillAnH200) {
  struct Want {
    int K, N, P, KW, S;
  };
  // c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, LM head on 132 SMs.
  const Want want[] = {{768, 2304, 2, 8, 3}, {768, 768, 1, 4, 3}, {768, 3072, 2, 8, 3},
                       {3072, 768, 2, 8, 12}, {768, 50257, 2, 8, 3}};
  for (const Want& w : want) {
    const GemmPlan p = MakeGemmPlan(w.K, w.N, 132, GemmPrecision::k3xTf32);
    SCOPED_TRACE(DescribeGemmPlan(p));
    EXPECT_EQ(p.panels_per_cta, w.P);
    EXPECT_EQ(p.ksteps_per_warp, w.KW);
    EXPECT_EQ(p.splits, w.S);
    EXPECT_GE(p.ctas(), 132);
  }
  // The tiny golden model (C = 64): K = 64 is one k-range, no warp idles.
  const GemmPlan tiny = MakeGemmPlan(64, 192, 132, GemmPrecision::kFp32);
  EXPECT_EQ(tiny.splits, 1);
  EXPECT_EQ(tiny.cta_ksteps(), 8);
}

TEST(GemmLayout, CheckGemmPlanNamesWhatIsWrong) {
  auto msg = [](const GemmPlan& p) { return CheckGemmPlan(p).message(); };
  EXPECT_TRUE(CheckGemmPlan(MakeGemmPlanWith(768, 768, GemmPrecision::kFp32, 2, 8)).ok());
  EXPECT_NE(msg(MakeGemmPlanWith(768, 768, GemmPrecision::kFp32, 3, 8)).find("panels_per_cta = 3"), std::string::npos);
  EXPECT_NE(msg(MakeGemmPlanWith(768, 768, GemmPrecision::kFp32, 2, 16)).find("ksteps_per_warp = 16"), std::string::npos);
  EXPECT_NE(msg(MakeGemmPlanWith(768, 768, GemmPrecision::kFp32, 1, 8)).find("<= 32"), std::string::npos);
  EXPECT_NE(msg(MakeGemmPlanWith(0, 768, GemmPrecision::kFp32, 2, 8)).find("K = 0"), std::string::npos);
  EXPECT_NE(msg(MakeGemmPlanWith(768, -1, GemmPrecision::kFp32, 2, 8)).find("N = -1"), std::string::npos);
  GemmPlan p = MakeGemmPlanWith(768, 768, GemmPrecision::kFp32, 2, 8);
  p.splits = 2;
  EXPECT_NE(msg(p).find("splits = 2"), std::string::npos);
  p = MakeGemmPlanWith(768, 768, static_cast<GemmPrecision>(7), 2, 8);
  EXPECT_NE(msg(p).find("precision = 7"), std::string::npos);
  // Every valid tiling of the 15 is accepted.
  int valid = 0;
  for (int P : {1, 2, 4, 8}) {
    for (int KW : {1, 2, 4, 8}) valid += CheckGemmPlan(MakeGemmPlanWith(100, 33, GemmPrecision::kFp32, P, KW)).ok();
  }
  EXPECT_EQ(valid, 15);
}

TEST(GemmLayout, WorkspaceHoldsTheCountersAndEverySplitsPartials) {
  const GemmPlan one = MakeGemmPlanWith(64, 192, GemmPrecision::kFp32, 2, 2);  // K = 64: one split
  ASSERT_EQ(one.splits, 1);
  EXPECT_EQ(GemmWorkspaceBytes(one, 1), kGemmCounterBytes);
  EXPECT_EQ(GemmWorkspaceBytes(one, 1024), kGemmCounterBytes);
  const GemmPlan proj = MakeGemmPlanWith(3072, 768, GemmPrecision::k3xTf32, 2, 8);  // 12 splits
  ASSERT_EQ(proj.splits, 12);
  EXPECT_EQ(proj.padded_cols(), 768u);
  EXPECT_EQ(GemmWorkspaceBytes(proj, 32), kGemmCounterBytes + 12u * 32u * 768u * 4u);
  EXPECT_EQ(GemmWorkspaceBytes(proj, 256) - kGemmCounterBytes, 8 * (GemmWorkspaceBytes(proj, 32) - kGemmCounterBytes));
  const GemmPlan head = MakeGemmPlanWith(768, 50257, GemmPrecision::k3xTf32, 2, 8);
  EXPECT_EQ(head.panel_groups(), 1571);
  EXPECT_EQ(head.padded_cols(), 50272u);
  EXPECT_EQ(GemmWorkspaceBytes(head, 1024), kGemmCounterBytes + size_t{3} * 1024 * 50272 * 4);
  // Shared memory: the 3xTF32 x tile at 32 k-steps is the largest.
  EXPECT_EQ(GemmSharedBytes(head), 65536u);
  EXPECT_EQ(GemmSharedBytes(MakeGemmPlanWith(768, 50257, GemmPrecision::kFp32, 2, 8)), 32768u);
  EXPECT_EQ(GemmSharedBytes(MakeGemmPlanWith(768, 50257, GemmPrecision::kFp32, 8, 1)), 20480u);
}

TEST(GemmLayout, Tf32RoundingIsToNearestTiesAwayWithThirteenZeroBits) {
  const float ulp = std::ldexp(1.0f, -10);  // tf32 spacing at 1
  EXPECT_EQ(RoundToTf32(1.0f), 1.0f);
  EXPECT_EQ(RoundToTf32(1.0f + ulp), 1.0f + ulp);
  EXPECT_EQ(RoundToTf32(1.0f + ulp / 2), 1.0f + ulp);     // tie: away from zero
  EXPECT_EQ(RoundToTf32(-1.0f - ulp / 2), -1.0f - ulp);
  EXPECT_EQ(RoundToTf32(1.0f + ulp / 4), 1.0f);
  EXPECT_EQ(RoundToTf32(1.0f + 3 * ulp / 4), 1.0f + ulp);
  EXPECT_EQ(RoundToTf32(2.0f - ulp / 4), 2.0f);            // carries into the exponent
  for (float v : Random(100000, 3, -100.0f, 100.0f)) {
    const float r = RoundToTf32(v);
    ASSERT_EQ(std::bit_cast<uint32_t>(r) & 0x1FFFu, 0u);
    ASSERT_LE(std::fabs(r - v), std::ldexp(std::fabs(v), -11));
    float big = 0, small = 0;
    SplitTf32(v, &big, &small);
    ASSERT_EQ(big, r);
    ASSERT_LE(std::fabs(static_cast<double>(v) - big - small), std::ldexp(std::fabs(v), -22));
  }
}

// A NaN stays a NaN whatever its bits: adding the rounding bit to a NaN
// whose low mantissa bits are set carries into the sign and exponent
// (0x7fffffff, the GPU's canonical NaN, became -0) or, masked, leaves an
// infinity (0x7f800001 became +inf). Infinities stay infinities.
TEST(GemmLayout, Tf32RoundingKeepsNansAndInfinities) {
  for (uint32_t bits : {0x7fffffffu, 0xffffffffu, 0x7f800001u, 0xff800001u, 0x7fc00000u, 0xffc00000u, 0x7f801fffu}) {
    const float nan = std::bit_cast<float>(bits);
    EXPECT_TRUE(std::isnan(RoundToTf32(nan))) << std::hex << bits;
    EXPECT_EQ(std::bit_cast<uint32_t>(RoundToTf32(nan)) & 0x1FFFu, 0u) << std::hex << bits;
    EXPECT_EQ(std::signbit(RoundToTf32(nan)), std::signbit(nan)) << std::hex << bits;
    float big = 0, small = 0;
    SplitTf32(nan, &big, &small);
    EXPECT_TRUE(std::isnan(big)) << std::hex << bits;
    EXPECT_TRUE(std::isnan(small)) << std::hex << bits;
    const float x[2] = {1.0f, nan}, w[2] = {0.5f, 0.25f};
    EXPECT_TRUE(std::isnan(Emulate3xTf32Dot(x, w, 1, 2))) << std::hex << bits;
  }
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(RoundToTf32(inf), inf);
  EXPECT_EQ(RoundToTf32(-inf), -inf);
}

TEST(GemmLayout, ThreeTf32ProductsKeepFp32AccuracyAtGpt2Lengths) {
  // |x.w - 3xTF32(x.w)| <= 2^-20 sum |x w| (three dropped terms of ~2^-22 each
  // per product); a single tf32 product (what plain TF32 would give) is far worse.
  for (int K : {64, 768, 3072}) {
    const std::vector<float> x = Random(K, 11 + K, -1.0f, 1.0f), w = Random(K, 13 + K, -0.1f, 0.1f);
    double exact = 0, abs_sum = 0, one_tf32 = 0;
    for (int k = 0; k < K; ++k) {
      exact += static_cast<double>(x[k]) * w[k];
      abs_sum += std::fabs(static_cast<double>(x[k]) * w[k]);
      one_tf32 += static_cast<double>(RoundToTf32(x[k])) * RoundToTf32(w[k]);
    }
    const double three = Emulate3xTf32Dot(x.data(), w.data(), 1, K);
    EXPECT_LE(std::fabs(three - exact), std::ldexp(abs_sum, -20)) << "K=" << K;
    EXPECT_GT(std::fabs(one_tf32 - exact), 16 * std::fabs(three - exact)) << "K=" << K;
  }
}

}  // namespace
}  // namespace tw::kernels
