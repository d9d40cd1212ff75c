// The weight formats of cpu/kernels.h (WeightFormat): bfloat16 rounding and
// Q8 block quantization against their definitions, and the bf16 / q8 matmul
// kernels at every level, bit for bit, against their definitions: bf16 as
// the float32 kernel run over the widened weights (DequantizedWeight), q8
// as a scalar loop over the packed int8 values and scales (a partial FMA
// chain per block of 32, then total = fma(partial, scale, total)).
#include "cpu/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/aligned.h"
#include "cpu/thread_pool.h"
#include "support/levels.h"
#include "support/numeric.h"

namespace tw::cpu {
namespace {

float Bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

TEST(WeightFormatTest, NamesParseAndABadNameIsAnErrorListingTheChoices) {
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kBf16, WeightFormat::kQ8}) {
    WeightFormat got = WeightFormat::kF32;
    ASSERT_TRUE(ParseWeightFormat(WeightFormatName(f), &got).ok());
    EXPECT_EQ(got, f);
  }
  WeightFormat got = WeightFormat::kBf16;
  Status s = ParseWeightFormat("fp16", &got);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'fp16'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("f32, bf16 or q8"), std::string::npos) << s.message();
  EXPECT_EQ(got, WeightFormat::kBf16);  // untouched
  EXPECT_FALSE(ParseWeightFormat(nullptr, &got).ok());
}

TEST(WeightFormatTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(Bf16FromFloat(1.0f), 0x3f80);
  EXPECT_EQ(FloatFromBf16(0x3f80), 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even (1).
  EXPECT_EQ(Bf16FromFloat(Bits(0x3f808000u)), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  EXPECT_EQ(Bf16FromFloat(Bits(0x3f818000u)), 0x3f82);
  // Just above halfway rounds up; just below rounds down.
  EXPECT_EQ(Bf16FromFloat(Bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(Bf16FromFloat(Bits(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(Bf16FromFloat(-2.5f), 0xc020);
  EXPECT_TRUE(std::isnan(FloatFromBf16(Bf16FromFloat(std::nanf("")))));
  EXPECT_TRUE(std::isinf(FloatFromBf16(Bf16FromFloat(INFINITY))));
  // Relative error at most 2^-8 (half of an 8-bit significand's unit) for normal values.
  std::mt19937 gen(5);
  for (float v : testing::RandomNonZero(10000, &gen, -100.0f, 100.0f)) {
    ASSERT_LE(std::fabs(FloatFromBf16(Bf16FromFloat(v)) - v), std::ldexp(std::fabs(v), -8)) << v;
  }
}

TEST(WeightFormatTest, Q8BlocksHoldTheirMaxExactlyAndEveryWeightWithinHalfAScale) {
  // One column (out = 1), in = 70: blocks of 32, 32 and a ragged 6.
  const int in = 70, out = 3;
  std::mt19937 gen(9);
  std::vector<float> w = testing::RandomNonZero(static_cast<size_t>(in) * out, &gen, -0.3f, 0.3f);
  for (int k = 32; k < 64; ++k) w[static_cast<size_t>(k) * out + 1] = 0.0f;  // an all-zero block
  std::vector<float> d(w.size());
  DequantizedWeight(WeightFormat::kQ8, w.data(), in, out, d.data());
  for (int col = 0; col < out; ++col) {
    for (int k0 = 0; k0 < in; k0 += kQ8Block) {
      const int n = std::min(kQ8Block, in - k0);
      float amax = 0;
      for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(w[static_cast<size_t>(k0 + i) * out + col]));
      const float scale = amax / 127.0f;
      for (int i = 0; i < n; ++i) {
        const size_t at = static_cast<size_t>(k0 + i) * out + col;
        const float q = scale > 0 ? d[at] / scale : 0.0f;
        EXPECT_LE(std::fabs(d[at] - w[at]), 0.5f * scale * (1 + 1e-6f)) << "k " << k0 + i << " col " << col;
        EXPECT_NEAR(q, std::nearbyint(q), 1e-4) << "not a multiple of the block's scale";
        if (std::fabs(w[at]) == amax) {
          EXPECT_FLOAT_EQ(std::fabs(d[at]), amax);
        }
      }
    }
  }
  for (int k = 32; k < 64; ++k) EXPECT_EQ(d[static_cast<size_t>(k) * out + 1], 0.0f);
}

TEST(WeightFormatTest, PackedBytesShrinkByTheElementSize) {
  const int in = 768, out = 2304;
  const size_t f32 = PackedWeightBytes(WeightFormat::kF32, in, out);
  EXPECT_EQ(f32, PackedWeightFloats(in, out) * sizeof(float));
  EXPECT_EQ(PackedWeightBytes(WeightFormat::kBf16, in, out), f32 / 2);
  // q8: one byte per weight, plus a float32 per 32 weights (1.125 bytes).
  EXPECT_EQ(PackedWeightBytes(WeightFormat::kQ8, in, out), f32 / 4 + f32 / 4 / 32 * 4);
}

class WeightFormatKernelTest : public ::testing::TestWithParam<std::tuple<Isa, WeightFormat>> {
 protected:
  void SetUp() override { ASSERT_TRUE(ForceIsa(std::get<0>(GetParam())).ok()); }
  void TearDown() override { ResetIsa(); }
  WeightFormat format() const { return std::get<1>(GetParam()); }
  std::mt19937 gen_{4321};
};

struct Packed {
  AlignedFloats buf;
  PackedWeight w;
};

Packed PackAs(WeightFormat f, const float* w, int in, int out, bool transposed) {
  Packed p;
  p.buf = AllocAligned(PackedWeightBytes(f, in, out) / sizeof(float) + 16);
  p.w = PackWeightAs(f, w, in, out, transposed, p.buf.get());
  return p;
}

// kQ8's definition, in scalar code over the packed values (layout: kernels.h
// PackedWeight): y[r][n] starts at the bias and/or y (y + bias), then each
// block of kQ8Block k rows adds fma(partial, scale, .), partial being the
// FMA chain x[r][k] * float(q[k][n]) over the block from zero. `fused`:
// the level's multiply-add rounds once (AVX2, AVX-512), else twice (the
// scalar level, compiled without FMA).
float MulAdd(bool fused, float a, float b, float c) {
  if (fused) return std::fmaf(a, b, c);
  volatile float product = a * b;  // rounded on its own, never contracted
  return product + c;
}

void ReferenceQ8Matmul(bool fused, const float* x, int rows, const PackedWeight& w, const float* bias, float* y,
                       bool accumulate) {
  const int blocks = (w.in + kQ8Block - 1) / kQ8Block;
  for (int r = 0; r < rows; ++r) {
    for (int n = 0; n < w.out; ++n) {
      const int p = n / kPanelWidth, j = n % kPanelWidth;
      const int8_t* q = w.q8 + static_cast<size_t>(p) * w.in * kPanelWidth + j;
      const float* sc = w.q8_scales + static_cast<size_t>(p) * blocks * kPanelWidth + j;
      float& out = y[static_cast<size_t>(r) * w.out + n];
      float total = accumulate ? (bias ? out + bias[n] : out) : (bias ? bias[n] : 0.0f);
      for (int b = 0; b < blocks; ++b) {
        float partial = 0.0f;
        for (int k = b * kQ8Block; k < std::min(w.in, (b + 1) * kQ8Block); ++k) {
          partial = MulAdd(fused, x[static_cast<size_t>(r) * w.in + k],
                           static_cast<float>(q[static_cast<size_t>(k) * kPanelWidth]), partial);
        }
        total = MulAdd(fused, partial, sc[static_cast<size_t>(b) * kPanelWidth], total);
      }
      out = total;
    }
  }
}

// y from the format's kernel equals its definition bit for bit (bf16: the
// float32 kernel over the widened weights; q8: ReferenceQ8Matmul), for
// shapes that cover both register tiles, ragged panels and q8 blocks, K in
// chunks (> 1024, not a multiple of 32), and the transposed packing (the LM
// head's).
TEST_P(WeightFormatKernelTest, MatmulEqualsItsFormatsDefinition) {
  ThreadPool pool3(3);
  // Widening scratch for 3 threads; each call runs without it and with it
  // (both must give the definition's bits), the scratch first filled with a
  // pattern that shows whether the call used it.
  AlignedFloats scratch = AllocAligned(3 * kMatmulScratchFloats);
  ASSERT_TRUE(scratch);
  const size_t scratch_floats = 3 * kMatmulScratchFloats;
  struct Case {
    int rows, in, out;
    bool bias, accumulate, transposed;
  };
  const Case cases[] = {
      {1, 7, 5, true, false, false},      {2, 64, 192, true, false, true},  {5, 300, 50, false, false, false},
      {13, 33, 47, true, true, true},     {32, 96, 200, true, true, false}, {24, 40, 70, true, false, false},
      {36, 50, 70, false, false, true},   {3, 64, 2000, true, false, false}, {20, 2100, 100, true, true, false},
      {32, 3072, 48, true, false, true},  {8, 1500, 33, false, true, false},
      // More than 32 rows with K in chunks: the widened (prefill) path,
      // ragged in rows and columns.
      {45, 2100, 100, true, true, false}, {33, 1100, 50, false, false, true}, {64, 3072, 40, true, false, false},
  };
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool3}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.in) + "x" + std::to_string(c.out) +
                   (c.transposed ? " transposed" : "") + (pool ? " pool" : " inline"));
      const size_t wn = static_cast<size_t>(c.in) * c.out;
      std::vector<float> x = testing::RandomNonZero(static_cast<size_t>(c.rows) * c.in, &gen_, -1.0f, 1.0f);
      std::vector<float> w = testing::RandomNonZero(wn, &gen_, -1.0f, 1.0f);
      std::vector<float> b = testing::RandomNonZero(c.out, &gen_, -1.0f, 1.0f);
      std::vector<float> y0 = testing::RandomNonZero(static_cast<size_t>(c.rows) * c.out, &gen_, -1.0f, 1.0f);
      // The (in, out) matrix the packing sees, and its widened values.
      std::vector<float> logical(wn);
      for (int k = 0; k < c.in; ++k)
        for (int n = 0; n < c.out; ++n)
          logical[static_cast<size_t>(k) * c.out + n] = c.transposed ? w[static_cast<size_t>(n) * c.in + k]
                                                                     : w[static_cast<size_t>(k) * c.out + n];
      std::vector<float> widened(wn);
      DequantizedWeight(format(), logical.data(), c.in, c.out, widened.data());
      Packed ref = PackAs(WeightFormat::kF32, widened.data(), c.in, c.out, false);
      Packed got = PackAs(format(), w.data(), c.in, c.out, c.transposed);
      ASSERT_EQ(got.w.format, format());
      std::vector<float> y_ref = y0, y_got = y0;
      if (format() == WeightFormat::kQ8) {
        // The packed values are the logical matrix's (transposed or not):
        // float(q) * scale is the widened weight at every (k, n).
        const int blocks = (c.in + kQ8Block - 1) / kQ8Block;
        for (int k = 0; k < c.in; ++k) {
          for (int n = 0; n < c.out; ++n) {
            const int p = n / kPanelWidth, j = n % kPanelWidth;
            const float q = got.w.q8[(static_cast<size_t>(p) * c.in + k) * kPanelWidth + j];
            const float scale = got.w.q8_scales[(static_cast<size_t>(p) * blocks + k / kQ8Block) * kPanelWidth + j];
            ASSERT_EQ(q * scale, widened[static_cast<size_t>(k) * c.out + n]) << "k " << k << " n " << n;
          }
        }
        ReferenceQ8Matmul(std::get<0>(GetParam()) != Isa::kScalar, x.data(), c.rows, got.w, c.bias ? b.data() : nullptr, y_ref.data(), c.accumulate);
      } else {
        Matmul(pool, x.data(), c.rows, ref.w, c.bias ? b.data() : nullptr, y_ref.data(), c.accumulate);
      }
      for (float* s : {static_cast<float*>(nullptr), scratch.get()}) {
        SCOPED_TRACE(s ? "with scratch" : "without scratch");
        std::vector<float> y = y_got;
        std::fill(scratch.get(), scratch.get() + scratch_floats, -7.0f);
        Matmul(pool, x.data(), c.rows, got.w, c.bias ? b.data() : nullptr, y.data(), c.accumulate, s);
        ASSERT_EQ(0, std::memcmp(y_ref.data(), y.data(), y_ref.size() * sizeof(float)));
        // Only a narrow format over more than 32 rows widens, and only into
        // the scratch it is given.
        const bool used = std::any_of(scratch.get(), scratch.get() + scratch_floats, [](float v) { return v != -7.0f; });
        EXPECT_EQ(used, s != nullptr && format() != WeightFormat::kF32 && c.rows > 32);
      }
      // And the widening really changed something (the test would pass
      // vacuously if the format were float32).
      if (format() != WeightFormat::kF32) {
        ASSERT_NE(0, std::memcmp(widened.data(), logical.data(), wn * sizeof(float)));
      }
    }
  }
}

// Row independence holds in every format: a row of a 1-row matmul equals
// the same row in 8-, 12-, 24-, 32- and 37-row ones.
TEST_P(WeightFormatKernelTest, MatmulRowsAreBitwiseIndependentOfTheRowCount) {
  ThreadPool pool2(2);
  const int K = 96, N = 200;
  std::vector<float> x = testing::RandomNonZero(static_cast<size_t>(37) * K, &gen_, -1.0f, 1.0f);
  std::vector<float> w = testing::RandomNonZero(static_cast<size_t>(K) * N, &gen_, -1.0f, 1.0f);
  std::vector<float> b = testing::RandomNonZero(N, &gen_, -1.0f, 1.0f);
  Packed p = PackAs(format(), w.data(), K, N, false);
  std::vector<float> one(static_cast<size_t>(37) * N);
  for (int r = 0; r < 37; ++r) {
    Matmul(nullptr, x.data() + static_cast<size_t>(r) * K, 1, p.w, b.data(), one.data() + static_cast<size_t>(r) * N,
           false);
  }
  AlignedFloats scratch = AllocAligned(2 * kMatmulScratchFloats);
  ASSERT_TRUE(scratch);
  for (int rows : {8, 12, 24, 32, 37}) {
    std::vector<float> y(static_cast<size_t>(rows) * N);
    Matmul(&pool2, x.data(), rows, p.w, b.data(), y.data(), false, scratch.get());
    EXPECT_EQ(0, std::memcmp(y.data(), one.data(), y.size() * sizeof(float))) << rows << " rows";
  }
}

std::vector<std::tuple<Isa, WeightFormat>> Params() {
  std::vector<std::tuple<Isa, WeightFormat>> out;
  for (Isa i : testing::SupportedLevels())
    for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kBf16, WeightFormat::kQ8}) out.emplace_back(i, f);
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllLevels, WeightFormatKernelTest, ::testing::ValuesIn(Params()),
                         [](const ::testing::TestParamInfo<std::tuple<Isa, WeightFormat>>& info) {
                           return std::string(IsaName(std::get<0>(info.param))) + "_" +
                                  WeightFormatName(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace tw::cpu
