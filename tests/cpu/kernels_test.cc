// Each CPU kernel against a naive double-precision reference, on random
// inputs (never zeros), with outputs poisoned with NaN before each run, at
// every instruction-set level this machine supports.
#include "cpu/kernels.h"
#include "support/numeric.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/thread_pool.h"
#include "support/levels.h"

namespace tw::cpu {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> Random(size_t n, std::mt19937* gen, float lo = -1.0f, float hi = 1.0f) {
  return testing::RandomNonZero(n, gen, lo, hi);
}

std::vector<Isa> Levels() { return tw::testing::SupportedLevels(); }

// One head's K/V for `len` tokens in a paged pool of random floats: blocks
// of `bs` tokens laid out (2 {K,V}, 2 heads, bs, hd), the sequence's blocks
// scattered among spares in a shuffled order; kv describes head 1.
struct PagedHead {
  std::vector<float> pool;
  std::vector<int32_t> table;
  PagedKvHead kv;
  size_t block_floats = 0;
  // `heads` heads in the pool's layout; kv describes head `head`.
  PagedHead(int len, int hd, int bs, std::mt19937* gen, int heads = 2, int head = 1) {
    const int used = (len + bs - 1) / bs, blocks = used + 3;
    block_floats = static_cast<size_t>(2) * heads * bs * hd;
    pool = Random(block_floats * blocks, gen, -2.0f, 2.0f);
    table.resize(blocks);
    for (int i = 0; i < blocks; ++i) table[i] = i;
    std::shuffle(table.begin(), table.end(), *gen);
    table.resize(used);
    kv.pool = pool.data();
    kv.block_table = table.data();
    kv.block_size = bs;
    kv.block_stride = block_floats;
    kv.k_offset = (0 * heads + head) * static_cast<size_t>(bs) * hd;
    kv.v_offset = (1 * heads + head) * static_cast<size_t>(bs) * hd;
    kv.head_dim = hd;
  }
  // Token j's key / value in the pool.
  float* Key(int j) { return Slot(j) + kv.k_offset; }
  float* Value(int j) { return Slot(j) + kv.v_offset; }

 private:
  float* Slot(int j) {
    return pool.data() + table[j / kv.block_size] * block_floats + static_cast<size_t>(j % kv.block_size) * kv.head_dim;
  }
};

class KernelsTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { ASSERT_TRUE(ForceIsa(GetParam()).ok()); }
  void TearDown() override { ResetIsa(); }
  std::mt19937 gen_{1234};
};

TEST(IsaTest, ScalarAlwaysSupportedAndBestIsDefault) {
  EXPECT_TRUE(IsaSupported(Isa::kScalar));
  ResetIsa();
  EXPECT_EQ(ActiveIsa(), BestIsa());
  EXPECT_TRUE(IsaSupported(BestIsa()));
  for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    Status s = ForceIsa(i);
    EXPECT_EQ(s.ok(), IsaSupported(i)) << IsaName(i);
    if (!s.ok()) { EXPECT_NE(s.message().find(IsaName(i)), std::string::npos); }
  }
  ResetIsa();
}

TEST(PackTest, TransposedPackingEqualsPlainPacking) {
  std::mt19937 gen(7);
  const int in = 37, out = 53;
  std::vector<float> w = Random(static_cast<size_t>(in) * out, &gen);  // (in, out)
  std::vector<float> wt(w.size());                                       // (out, in)
  for (int k = 0; k < in; ++k)
    for (int n = 0; n < out; ++n) wt[static_cast<size_t>(n) * in + k] = w[static_cast<size_t>(k) * out + n];
  std::vector<float> a(PackedWeightFloats(in, out), kNaN), b(PackedWeightFloats(in, out), kNaN);
  EXPECT_EQ(a.size(), static_cast<size_t>(4 * in * 16));
  PackWeight(w.data(), in, out, a.data());
  PackWeightTransposed(wt.data(), in, out, b.data());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;  // also: no NaN left
  // Column 50 = panel 3, lane 2; the padding lanes of panel 3 are zero.
  EXPECT_EQ(a[(3 * in + 5) * 16 + 2], w[5 * out + 50]);
  EXPECT_EQ(a[(3 * in + 5) * 16 + 15], 0.0f);
}

TEST(PackTest, PanelRangesThatTileTheMatrixWriteTheWholePack) {
  std::mt19937 gen(8);
  const int in = 21, out = 83;  // 6 panels, the last one 3 columns wide
  std::vector<float> w = Random(static_cast<size_t>(in) * out, &gen);
  for (bool transposed : {false, true}) {
    std::vector<float> whole(PackedWeightFloats(in, out), kNaN), parts(whole.size(), kNaN);
    if (transposed) PackWeightTransposed(w.data(), in, out, whole.data());
    else PackWeight(w.data(), in, out, whole.data());
    for (int p0 : {4, 0, 1}) PackWeightPanels(w.data(), in, out, transposed, p0, p0 == 1 ? 4 : p0 == 4 ? 6 : 1, parts.data());
    for (size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], parts[i]) << i << (transposed ? " transposed" : "");
  }
}

struct MatmulCase {
  int rows, in, out;
  bool bias, accumulate;
};

// Random x (rows, in), w (in, out) packed, bias (out) and a prior y (rows,
// out) for a MatmulCase.
struct MatmulInputs {
  std::vector<float> x, w, b, y0, packed;
  MatmulInputs(const MatmulCase& c, std::mt19937* gen)
      : x(Random(static_cast<size_t>(c.rows) * c.in, gen)),
        w(Random(static_cast<size_t>(c.in) * c.out, gen)),
        b(Random(c.out, gen)),
        y0(Random(static_cast<size_t>(c.rows) * c.out, gen)),
        packed(PackedWeightFloats(c.in, c.out)) {
    PackWeight(w.data(), c.in, c.out, packed.data());
  }
  PackedWeight View(const MatmulCase& c) const { return PackedWeight{packed.data(), c.in, c.out}; }
};

TEST_P(KernelsTest, MatmulMatchesNaive) {
  ThreadPool pool3(3);
  const MatmulCase cases[] = {
      {1, 7, 5, true, false},     {2, 64, 192, true, false}, {5, 300, 50, false, false},
      {13, 33, 47, true, true},   {31, 64, 64, true, true},  {1, 520, 1000, false, false},
      {25, 256, 96, true, false}, {12, 17, 32, false, true},  {30, 600, 40, true, true},
      // Both register-tile shapes (AVX-512: 12x2 for 12, 24, 36 rows; 8x3 for
      // 32), column ranges that end inside a group of panels (70 = 5 panels,
      // 200 = 13), and a ragged last panel.
      {24, 40, 70, true, false},  {32, 96, 200, true, true}, {36, 50, 70, false, false},
      {32, 64, 1000, true, false},
      // Enough panels for the guided column split (big ranges + small tail).
      {3, 64, 2000, true, false}, {9, 32, 4100, false, true},
      // K longer than one pass's chunk (1024): 3 uneven chunks, and 3072.
      {20, 2100, 100, true, true}, {32, 3072, 48, true, false},
  };
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool3}) {
    for (const MatmulCase& c : cases) {
      SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.in) + "x" + std::to_string(c.out) +
                   (pool ? " pool" : " inline"));
      const MatmulInputs in(c, &gen_);
      const std::vector<float>&x = in.x, &w = in.w, &b = in.b, &y0 = in.y0;
      std::vector<float> y = c.accumulate ? y0 : std::vector<float>(y0.size(), kNaN);
      Matmul(pool, x.data(), c.rows, in.View(c), c.bias ? b.data() : nullptr, y.data(), c.accumulate);
      for (int r = 0; r < c.rows; ++r) {
        for (int n = 0; n < c.out; ++n) {
          double ref = c.accumulate ? y0[static_cast<size_t>(r) * c.out + n] : 0.0;
          double mag = std::fabs(ref);
          if (c.bias) ref += b[n], mag += std::fabs(b[n]);
          for (int k = 0; k < c.in; ++k) {
            double t = static_cast<double>(x[static_cast<size_t>(r) * c.in + k]) * w[static_cast<size_t>(k) * c.out + n];
            ref += t;
            mag += std::fabs(t);
          }
          float got = y[static_cast<size_t>(r) * c.out + n];
          ASSERT_NEAR(got, ref, 1e-6 * mag + 1e-7) << "row " << r << " col " << n;
        }
      }
    }
  }
}

// Each output row is the same FMA chain whatever the number of rows, so the
// register-tile shape chosen for a row count never changes a bit: rows of a
// 1-row matmul equal the same rows in 8-, 12-, 24-, 32- and 37-row ones.
TEST_P(KernelsTest, MatmulRowsAreBitwiseIndependentOfTheRowCount) {
  ThreadPool pool2(2);
  const int K = 96, N = 200;
  std::vector<float> x = Random(static_cast<size_t>(37) * K, &gen_);
  std::vector<float> w = Random(static_cast<size_t>(K) * N, &gen_);
  std::vector<float> b = Random(N, &gen_);
  std::vector<float> packed(PackedWeightFloats(K, N));
  PackWeight(w.data(), K, N, packed.data());
  const PackedWeight pw{packed.data(), K, N};
  std::vector<float> one(static_cast<size_t>(37) * N);
  for (int r = 0; r < 37; ++r) {
    Matmul(nullptr, x.data() + static_cast<size_t>(r) * K, 1, pw, b.data(), one.data() + static_cast<size_t>(r) * N,
           false);
  }
  for (int rows : {8, 12, 24, 32, 37}) {
    std::vector<float> y(static_cast<size_t>(rows) * N);
    Matmul(&pool2, x.data(), rows, pw, b.data(), y.data(), false);
    EXPECT_EQ(0, std::memcmp(y.data(), one.data(), y.size() * sizeof(float))) << rows << " rows";
  }
}

// The float32 Matmul gives the same bits at avx2 and avx512 (each output is
// one FMA chain over k in k order, from the same start, at both levels; only
// the register tiles differ): a contract the trainer's reproducibility
// across machines rests on (src/train/trainer.h). Shapes of its steps: the
// layers' forward and dX (K = C, 3C, 4C), dW = X^T dY (rows = C, K = B*T >
// 1024: chunked K), the LM head (N = 50257: a ragged last panel), with and
// without bias, accumulating and not. The scalar level rounds differently
// (no FMA) and is not part of it.
TEST(MatmulIsaContract, Avx2AndAvx512GiveTheSameBits) {
  if (!IsaSupported(Isa::kAvx2) || !IsaSupported(Isa::kAvx512)) {
    GTEST_SKIP() << "needs both avx2 and avx512 (this CPU's best: " << IsaName(BestIsa()) << ")";
  }
  std::mt19937 gen(21);
  ThreadPool pool(2);
  const MatmulCase cases[] = {
      {256, 128, 384, true, false}, {256, 512, 128, true, true}, {128, 2048, 384, false, false},
      {40, 4096, 200, false, true}, {24, 128, 50257, false, false}, {7, 19, 53, true, false},
  };
  for (const MatmulCase& c : cases) {
    const MatmulInputs in(c, &gen);
    std::vector<float> y[2] = {in.y0, in.y0};
    for (int level = 0; level < 2; ++level) {
      ASSERT_TRUE(ForceIsa(level == 0 ? Isa::kAvx2 : Isa::kAvx512).ok());
      Matmul(&pool, in.x.data(), c.rows, in.View(c), c.bias ? in.b.data() : nullptr, y[level].data(), c.accumulate);
    }
    ResetIsa();
    EXPECT_EQ(0, std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)))
        << c.rows << " x " << c.in << " x " << c.out;
  }
}

TEST_P(KernelsTest, LayerNormMatchesNaive) {
  ThreadPool pool(2);
  for (int C : {1, 7, 16, 64, 100, 768}) {
    const int rows = 3;
    std::vector<float> x = Random(static_cast<size_t>(rows) * C, &gen_, -3.0f, 5.0f);
    std::vector<float> w = Random(C, &gen_, 0.5f, 1.5f), b = Random(C, &gen_);
    std::vector<float> out(x.size(), kNaN);
    LayerNorm(&pool, x.data(), rows, C, w.data(), b.data(), 1e-5f, out.data());
    for (int r = 0; r < rows; ++r) {
      const float* xr = x.data() + static_cast<size_t>(r) * C;
      double mean = 0, var = 0;
      for (int i = 0; i < C; ++i) mean += xr[i];
      mean /= C;
      for (int i = 0; i < C; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      var /= C;
      for (int i = 0; i < C; ++i) {
        double ref = (xr[i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i];
        ASSERT_NEAR(out[static_cast<size_t>(r) * C + i], ref, 2e-5 * (1 + std::fabs(ref))) << "C=" << C << " i=" << i;
      }
    }
  }
}

TEST_P(KernelsTest, GeluMatchesNaive) {
  ThreadPool pool(2);
  std::vector<float> x = Random(40000 + 13, &gen_, -12.0f, 12.0f);  // several tasks and a tail
  x[0] = -100.0f;  // far tails: exp clamping
  x[1] = 100.0f;
  x[2] = 1e-4f;
  std::vector<float> y = x;
  GeluTanh(&pool, y.data(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    double ref = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    ASSERT_NEAR(y[i], ref, 1e-6 * (1 + std::fabs(ref))) << "x=" << v;
  }
}

TEST_P(KernelsTest, AddAndSoftmaxMatchNaive) {
  for (int n : {1, 5, 16, 17, 100, 1025}) {
    std::vector<float> a = Random(n, &gen_, -20.0f, 20.0f), b = Random(n, &gen_);
    std::vector<float> out(n, kNaN);
    Add(a.data(), b.data(), out.data(), n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]);
    std::vector<float> s = a;
    Softmax(s.data(), n);
    double mx = a[0], sum = 0;
    for (float v : a) mx = std::max<double>(mx, v);
    for (float v : a) sum += std::exp(v - mx);
    for (int i = 0; i < n; ++i) {
      double ref = std::exp(a[i] - mx) / sum;
      ASSERT_NEAR(s[i], ref, 1e-6 * ref + 1e-9) << "n=" << n << " i=" << i;
    }
  }
}

// Sampling weights against float64: exp((x - mx) / T) within 2e-6 relative,
// exactly 0 for NaN inputs and for exponents at or below -87 (but not just
// above it), and each block's sum within 1e-5 of the float64 sum of its
// weights; sizes with and without a partial last block and vector tail.
TEST_P(KernelsTest, ExpWeightsMatchFloat64AndZeroNaNAndUnderflow) {
  for (int n : {1, 15, 256, 257, 1000, 50257}) {
    for (float t : {1.0f, 0.7f, 0.05f}) {
      std::vector<float> x = Random(n, &gen_, -30.0f, 10.0f);
      x[0] = 10.0f;  // the maximum
      if (n > 3) x[n / 2] = NAN;
      if (n > 5) x[n / 3] = -INFINITY;
      if (n > 7) {
        x[n - 1] = 10.0f - 87.5f * t;  // exponent -87.5: cut
        x[n - 2] = 10.0f - 86.0f * t;  // exponent -86: kept
      }
      const float mx = 10.0f, inv_t = 1.0f / t;
      const int blocks = (n + kWeightBlock - 1) / kWeightBlock;
      std::vector<float> out(n, kNaN), sums(blocks, kNaN);
      ExpWeights(x.data(), n, mx, inv_t, out.data(), sums.data());
      std::vector<double> ref_sums(blocks, 0.0);
      for (int i = 0; i < n; ++i) {
        const float z = (x[i] - mx) * inv_t;
        if (std::isnan(x[i]) || !(z > -87.0f)) {
          ASSERT_EQ(out[i], 0.0f) << "n=" << n << " t=" << t << " i=" << i << " x=" << x[i];
          continue;
        }
        const double ref = std::exp(static_cast<double>(z));
        ASSERT_NEAR(out[i], ref, 2e-6 * ref) << "n=" << n << " t=" << t << " i=" << i << " x=" << x[i];
        ASSERT_GT(out[i], 0.0f) << "n=" << n << " i=" << i;
        ref_sums[i / kWeightBlock] += out[i];
      }
      for (int k = 0; k < blocks; ++k) {
        ASSERT_NEAR(sums[k], ref_sums[k], 1e-5 * ref_sums[k] + 1e-30) << "n=" << n << " t=" << t << " block " << k;
      }
      EXPECT_EQ(out[0], 1.0f);
    }
  }
}

// The threshold kernels behind top-k / top-p: counts and collected ids exact
// (also when the ids do not all fit), sums within
// float rounding, NaN never at or above anything, -inf at or above -inf,
// thresholds on a value (ties count), between values, and past the ends.
TEST_P(KernelsTest, SumAtLeastAndKeepAtLeastMatchPlainLoops) {
  for (int n : {1, 15, 256, 300, 5000}) {
    std::vector<float> x = Random(n, &gen_, -4.0f, 4.0f);
    for (int i = 0; i < n; i += 7) x[i] = 1.5f;  // ties
    if (n > 3) x[3] = NAN, x[n - 1] = -INFINITY;
    const std::vector<float> w = Random(n, &gen_, 0.0f, 1.0f);
    for (float t : {-INFINITY, -4.5f, -1.0f, 0.0f, 1.5f, 1.5000001f, 3.9f, 5.0f, INFINITY}) {
      double count = 0, mass = 0;
      for (int i = 0; i < n; ++i) {
        if (x[i] >= t) count += 1, mass += w[i];
      }
      ASSERT_EQ(SumAtLeast(x.data(), nullptr, n, t), count) << "n=" << n << " t=" << t;
      std::vector<int32_t> want, got(n + 1, -1);
      for (int i = 0; i < n; ++i) {
        if (x[i] >= t) want.push_back(i);
      }
      for (int cap : {n, static_cast<int>(want.size()) / 2}) {
        std::fill(got.begin(), got.end(), -1);
        ASSERT_EQ(CollectAtLeast(x.data(), n, t, got.data(), cap), static_cast<int>(want.size())) << "n=" << n << " t=" << t;
        const size_t kept = std::min(want.size(), static_cast<size_t>(cap));
        ASSERT_TRUE(std::equal(want.begin(), want.begin() + kept, got.begin())) << "n=" << n << " t=" << t << " cap=" << cap;
        ASSERT_EQ(got[kept], -1) << "wrote past cap " << cap;
      }
      ASSERT_NEAR(SumAtLeast(x.data(), w.data(), n, t), mass, 1e-5 * (mass + 1)) << "n=" << n << " t=" << t;
      std::vector<float> kept = w;
      const int blocks = (n + kWeightBlock - 1) / kWeightBlock;
      std::vector<float> sums(blocks, kNaN);
      KeepAtLeast(x.data(), n, t, kept.data(), sums.data());
      std::vector<double> ref(blocks, 0.0);
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(kept[i], x[i] >= t ? w[i] : 0.0f) << "n=" << n << " t=" << t << " i=" << i;
        ref[i / kWeightBlock] += kept[i];
      }
      for (int k = 0; k < blocks; ++k) ASSERT_NEAR(sums[k], ref[k], 1e-5 * (ref[k] + 1)) << "block " << k;
    }
  }
}

// Attention over one logical K/V sequence laid out in the paged pool with
// several block sizes (blocks in a scrambled order): each result is within
// 2e-6 of a float64 reference, and all block sizes give the same bits (the
// SIMD levels sum W keys at a time where a block allows it, one key at a time
// elsewhere; both must be the same float operations).
TEST_P(KernelsTest, AttendOverPagedBlocksMatchesNaive) {
  for (int hd : {64, 20, 16, 128}) {
    for (int len : {1, 4, 10, 23, 70}) {
      const std::vector<float> keys = Random(static_cast<size_t>(len) * hd, &gen_, -2.0f, 2.0f);
      const std::vector<float> values = Random(static_cast<size_t>(len) * hd, &gen_, -2.0f, 2.0f);
      const std::vector<float> q = Random(hd, &gen_);
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      std::vector<double> s(len);
      double mx = -1e300, sum = 0;
      for (int j = 0; j < len; ++j) {
        double d = 0;
        for (int i = 0; i < hd; ++i) d += static_cast<double>(q[i]) * keys[static_cast<size_t>(j) * hd + i];
        s[j] = d * scale;
        mx = std::max(mx, s[j]);
      }
      for (int j = 0; j < len; ++j) sum += std::exp(s[j] - mx);
      std::vector<float> first_out;
      for (int bs : {1, 3, 16, 32}) {
        PagedHead paged(len, hd, bs, &gen_);
        PagedKvHead& kv = paged.kv;
        for (int j = 0; j < len; ++j) {
          std::copy_n(keys.data() + static_cast<size_t>(j) * hd, hd, paged.Key(j));
          std::copy_n(values.data() + static_cast<size_t>(j) * hd, hd, paged.Value(j));
        }
        std::vector<float> scores(len, kNaN), out(hd, kNaN);
        Attend(q.data(), kv, len, scale, scores.data(), out.data());
        // Without the software prefetches (K/V already in cache): the same bits.
        kv.prefetch = false;
        std::vector<float> unprefetched(hd, kNaN);
        Attend(q.data(), kv, len, scale, scores.data(), unprefetched.data());
        ASSERT_EQ(0, std::memcmp(out.data(), unprefetched.data(), hd * sizeof(float)))
            << "hd=" << hd << " len=" << len << " bs=" << bs << ": prefetch off differs";
        for (int i = 0; i < hd; ++i) {
          double ref = 0;
          for (int j = 0; j < len; ++j) ref += std::exp(s[j] - mx) / sum * values[static_cast<size_t>(j) * hd + i];
          ASSERT_NEAR(out[i], ref, 2e-6) << "hd=" << hd << " len=" << len << " bs=" << bs << " i=" << i;
        }
        if (first_out.empty()) {
          first_out = out;
        } else {
          ASSERT_EQ(0, std::memcmp(first_out.data(), out.data(), hd * sizeof(float)))
              << "hd=" << hd << " len=" << len << " bs=" << bs << ": differs from bs=1";
        }
      }
    }
  }
}

// m queries of one sequence at consecutive positions in one call: every
// output is bit for bit the one-query kernel's (head dims with and without a
// register-resident path, block sizes smaller and larger than a vector, the
// group sizes the levels use and the leftovers, prefetch on and off).
TEST_P(KernelsTest, AttendRowsEqualsOneQueryAtATime) {
  for (int hd : {64, 128, 20}) {
    for (int bs : {1, 5, 16, 32}) {
      for (int len0 : {1, 3, 16, 29, 70}) {
        for (int m : {1, 2, 3, 4, 7, 9}) {
          const int len = len0 + m - 1;
          PagedHead paged(len, hd, bs, &gen_);
          PagedKvHead& kv = paged.kv;
          kv.prefetch = m % 2 == 0;
          // Queries q_stride floats apart in a wider buffer, outputs out_stride apart (as a pass's qkv / att rows).
          const size_t q_stride = 3 * static_cast<size_t>(hd) + 8, out_stride = static_cast<size_t>(hd) + 4;
          const std::vector<float> q = Random(q_stride * m, &gen_);
          const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
          std::vector<float> scores(static_cast<size_t>(m) * len, kNaN), out(out_stride * m, kNaN);
          AttendRows(q.data(), q_stride, m, kv, len0, scale, scores.data(), out.data(), out_stride);
          for (int i = 0; i < m; ++i) {
            std::vector<float> one_scores(len, kNaN), one(hd, kNaN);
            Attend(q.data() + i * q_stride, kv, len0 + i, scale, one_scores.data(), one.data());
            ASSERT_EQ(0, std::memcmp(one.data(), out.data() + i * out_stride, hd * sizeof(float)))
                << "hd=" << hd << " bs=" << bs << " len0=" << len0 << " m=" << m << " query " << i;
          }
        }
      }
    }
  }
}

// One query of several adjacent heads in one call (a decode row): every
// head's output is bit for bit the one-head kernel's (head dims with and
// without a register-resident path, block sizes smaller and larger than a
// vector, one head to all of a layer's, contexts whose values make the
// kernel split the heads into groups, prefetch on and off).
TEST_P(KernelsTest, AttendHeadsEqualsOneHeadAtATime) {
  for (int hd : {64, 128, 16, 20, 8}) {
    for (int bs : {1, 5, 16, 32}) {
      for (int len : {1, 3, 16, 29, 70, 900}) {
        for (int heads : {1, 3, 12}) {
          // Heads [1, 1 + heads) of heads + 2 in the layout.
          PagedHead paged(len, hd, bs, &gen_, heads + 2, 1);
          PagedKvHead& kv = paged.kv;
          kv.prefetch = (len + heads) % 2 == 0;
          const size_t head_stride = static_cast<size_t>(bs) * hd;
          const std::vector<float> q = Random(static_cast<size_t>(heads) * hd, &gen_);
          const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
          std::vector<float> scores(static_cast<size_t>(heads) * len, kNaN), out(static_cast<size_t>(heads) * hd, kNaN);
          AttendHeads(q.data(), heads, kv, head_stride, len, scale, scores.data(), out.data());
          for (int h = 0; h < heads; ++h) {
            PagedKvHead one_kv = kv;
            one_kv.k_offset += h * head_stride;
            one_kv.v_offset += h * head_stride;
            std::vector<float> one_scores(len, kNaN), one(hd, kNaN);
            Attend(q.data() + h * hd, one_kv, len, scale, one_scores.data(), one.data());
            ASSERT_EQ(0, std::memcmp(one.data(), out.data() + h * hd, hd * sizeof(float)))
                << "hd=" << hd << " bs=" << bs << " len=" << len << " heads=" << heads << " head " << h;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllLevels, KernelsTest, ::testing::ValuesIn(Levels()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(IsaName(info.param)); });

TEST(ThreadPoolTest, EveryTaskRunsExactlyOnceOnAValidWorker) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int round = 0; round < 200; ++round) {
      const int n = 1 + (round * 7) % 50;
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> bad_worker{0};
      pool.ParallelFor(n, [&](int task, int worker) {
        hits[task].fetch_add(1);
        if (worker < 0 || worker >= threads) bad_worker.fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " task " << i;
      ASSERT_EQ(bad_worker.load(), 0);
    }
  }
}

}  // namespace
}  // namespace tw::cpu
