// The matmul kernels (kernels/gemm.h) on the GPU: every matrix of GPT-2-small
// and of the tiny golden model at every batch size the engine uses, each
// epilogue and precision, against a double-accumulated CPU reference; the
// fp32 path bit for bit against a CPU emulation of its documented operation
// order; rows bitwise independent of the batch around them; every tiling on
// edge shapes (K, N not multiples of the tile, empty warps, empty panels,
// ragged row tiles); split-K counters left at zero, graph replay, refusals.
//
// CI shapes (TW_GPU_TEST_SHAPES=ci, gpu_test_util.h): the tiny model's
// matrices (their LM head at the full vocabulary, with the store epilogue at
// 1, 7 and 33 rows) and a 128-wide model's instead of GPT-2 small's, batch
// sizes up to 65 (three row tiles), the edge
// shapes' widest N 4099 (a partial panel and a group of one panel) instead
// of 50257, and K = 1024 where a test needs many splits. Every plan still
// covers both paths, split-K (up to 16 splits) and the ragged tiles.
//
// Inputs: x in [-1, 1), W and bias in [-0.1, 0.1) (GPT-2's weight scale),
// y0 (the residual, for kAccumulate) in [-1, 1); never zero. Outputs are
// poisoned (NaN) before every call. Tolerances, |got - ref| <= atol + rtol |ref|
// against the double reference:
//   fp32    atol = rtol = 1e-4 (expected error ~1e-6: a few fp32 roundings of
//           partial sums of magnitude ~1);
//   3xTF32  atol = rtol = 2e-4 (three dropped products of ~2^-22 relative each
//           per term, 2^-20 sum|x w| <= 7e-5 at K = 3072, plus the tensor
//           cores' accumulation rounding; expected ~1e-5).
#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gemm_layout.h"
#include "gpu/gpu_test_util.h"
#include "kernels/dev/cpu_reference.h"

namespace tw::kernels {
namespace {

using dev::GeluTanhRef;
using dev::ParallelFor;
using kernels::GemmPlan;
using kernels::GemmPrecision;
using testing::DeviceVector;
using testing::RandomVector;

constexpr int kMaxRows = 257;
constexpr int kBatchSizes[] = {1, 2, 7, 8, 31, 32, 33, 200, 257};
constexpr int kCiBatchSizes[] = {1, 7, 32, 33, 65};

std::vector<int> BatchSizes() {
  if (testing::CiShapes()) return std::vector<int>(std::begin(kCiBatchSizes), std::end(kCiBatchSizes));
  return std::vector<int>(std::begin(kBatchSizes), std::end(kBatchSizes));
}
constexpr GemmPrecision kPrecisions[] = {GemmPrecision::kFp32, GemmPrecision::k3xTf32};
constexpr GemmEpilogue kEpilogues[] = {GemmEpilogue::kStore, GemmEpilogue::kGelu, GemmEpilogue::kAccumulate};

float Atol(GemmPrecision p) { return p == GemmPrecision::kFp32 ? 1e-4f : 2e-4f; }

int Sms() {
  const int n = kernels::MultiprocessorCount();
  return n > 0 ? n : 132;
}

// A weight on the host: W (K, N) row-major, or for the LM head wte (N, K)
// with W = wte^T; its bias (N) or none; its packed form.
struct HostMatrix {
  std::string name;
  int K = 0, N = 0;
  bool transposed = false;
  std::vector<float> w;
  std::vector<float> bias;
  std::vector<float> packed;

  float At(int k, int n) const {
    return transposed ? w[static_cast<size_t>(n) * K + k] : w[static_cast<size_t>(k) * N + n];
  }
  const float* bias_or_null() const { return bias.empty() ? nullptr : bias.data(); }
};

HostMatrix MakeMatrix(const std::string& name, int K, int N, bool transposed, bool with_bias, uint64_t seed) {
  HostMatrix m;
  m.name = name;
  m.K = K;
  m.N = N;
  m.transposed = transposed;
  m.w = RandomVector(static_cast<size_t>(K) * N, seed, -0.1f, 0.1f);
  if (with_bias) m.bias = RandomVector(N, seed + 1, -0.1f, 0.1f);
  m.packed.resize(kernels::PackedGemmFloats(K, N));
  if (transposed) kernels::PackMatrixTransposed(m.w.data(), N, K, m.packed.data());
  else kernels::PackMatrix(m.w.data(), K, N, m.packed.data());
  return m;
}

// The packed weight and bias on the device.
struct DeviceMatrix {
  explicit DeviceMatrix(const HostMatrix& m) : K(m.K), N(m.N), packed(m.packed) {
    if (!m.bias.empty()) bias = std::make_unique<DeviceVector<float>>(m.bias);
  }
  kernels::PackedMatrixView view() const { return {packed.get(), K, N}; }
  const float* bias_ptr() const { return bias ? bias->get() : nullptr; }
  int K, N;
  DeviceVector<float> packed;
  std::unique_ptr<DeviceVector<float>> bias;
};

// dot[r * N + n] = sum_k x[r][k] W[k][n] in double, rows [0, M).
std::vector<double> ReferenceDots(const HostMatrix& m, const std::vector<float>& x, int M) {
  const int K = m.K, N = m.N;
  std::vector<double> dot(static_cast<size_t>(M) * N, 0.0);
  if (m.transposed) {
    constexpr int kChunk = 256;
    ParallelFor((N + kChunk - 1) / kChunk, [&](int c) {
      for (int n = c * kChunk; n < std::min(N, (c + 1) * kChunk); ++n) {
        const float* wn = m.w.data() + static_cast<size_t>(n) * K;
        for (int r = 0; r < M; ++r) {
          const float* xr = x.data() + static_cast<size_t>(r) * K;
          double s = 0;
          for (int k = 0; k < K; ++k) s += static_cast<double>(xr[k]) * wn[k];
          dot[static_cast<size_t>(r) * N + n] = s;
        }
      }
    });
  } else {
    ParallelFor(M, [&](int r) {
      double* out = dot.data() + static_cast<size_t>(r) * N;
      for (int k = 0; k < K; ++k) {
        const double xv = x[static_cast<size_t>(r) * K + k];
        const float* wk = m.w.data() + static_cast<size_t>(k) * N;
        for (int n = 0; n < N; ++n) out[n] += xv * wk[n];
      }
    });
  }
  return dot;
}

// The expected y (M, N) from the reference dots.
std::vector<float> Expected(const HostMatrix& m, const std::vector<double>& dot, int M, GemmEpilogue e,
                            const std::vector<float>& y0) {
  std::vector<float> out(static_cast<size_t>(M) * m.N);
  for (int r = 0; r < M; ++r) {
    for (int n = 0; n < m.N; ++n) {
      const size_t i = static_cast<size_t>(r) * m.N + n;
      double v = dot[i] + (m.bias.empty() ? 0.0 : m.bias[n]);
      if (e == GemmEpilogue::kGelu) v = GeluTanhRef(v);
      if (e == GemmEpilogue::kAccumulate) v += y0[i];
      out[i] = static_cast<float>(v);
    }
  }
  return out;
}

std::vector<float> ToHost(const float* device, size_t n) {
  std::vector<float> out(n);
  Status s = kernels::DeviceSync();
  if (s.ok()) s = kernels::CopyToHost(out.data(), device, n * sizeof(float));
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// Runs Gemm with a workspace that grows (zeroed) to what each call needs.
class GemmRunner {
 public:
  Status Run(const GemmPlan& plan, const DeviceMatrix& m, const float* x, int M, float* y, GemmEpilogue e,
             void* stream = nullptr) {
    const size_t need = kernels::GemmWorkspaceBytes(plan, M);
    if (need > ws_.bytes()) {
      if (Status s = ws_.Allocate(need); !s.ok()) return s;
      if (Status s = kernels::Memset(ws_.get(), 0, need); !s.ok()) return s;
    }
    return Gemm(plan, m.view(), x, M, m.bias_ptr(), y, e, ws_.get(), ws_.bytes(), stream);
  }
  const kernels::DeviceBuffer& workspace() const { return ws_; }

 private:
  kernels::DeviceBuffer ws_;
};

// Fills y (M rows) before a call: y0 for kAccumulate, NaN otherwise.
Status PrepareY(float* y, const std::vector<float>& y0, size_t n, GemmEpilogue e) {
  if (e == GemmEpilogue::kAccumulate) return kernels::CopyToDevice(y, y0.data(), n * sizeof(float));
  return kernels::Memset(y, 0xFF, n * sizeof(float));
}

std::string Describe(const HostMatrix& m, const GemmPlan& p, int M, GemmEpilogue e) {
  return m.name + " " + kernels::DescribeGemmPlan(p) + " M=" + std::to_string(M) + " " + GemmEpilogueName(e);
}

// GPT-2's matrices at width C (V = 50257): c_attn, attn.c_proj, mlp.c_fc,
// mlp.c_proj, and the tied LM head.
std::vector<HostMatrix> ModelMatrices(const std::string& model, int C, uint64_t seed) {
  std::vector<HostMatrix> out;
  out.push_back(MakeMatrix(model + " c_attn", C, 3 * C, false, true, seed));
  out.push_back(MakeMatrix(model + " attn.c_proj", C, C, false, true, seed + 10));
  out.push_back(MakeMatrix(model + " mlp.c_fc", C, 4 * C, false, true, seed + 20));
  out.push_back(MakeMatrix(model + " mlp.c_proj", 4 * C, C, false, true, seed + 30));
  out.push_back(MakeMatrix(model + " lm_head", C, 50257, true, false, seed + 40));
  return out;
}

TEST(GemmKernel, EveryGpt2MatrixMatchesTheCpuReferenceAtEveryBatchSize) {
  TW_REQUIRE_GPU();
  GemmRunner runner;
  const std::vector<int> batches = BatchSizes();
  const int max_rows = batches.back();
  using Model = std::pair<std::string, int>;
  const std::vector<Model> models =
      testing::CiShapes() ? std::vector<Model>{{"tiny", 64}, {"c128", 128}} : std::vector<Model>{{"gpt2", 768}, {"tiny", 64}};
  for (const auto& [model, C] : models) {
    for (const HostMatrix& m : ModelMatrices(model, C, C)) {
      if (testing::CiShapes() && model == "c128" && m.N == 50257) continue;  // the tiny model's LM head suffices
      const DeviceMatrix dm(m);
      const std::vector<float> x = RandomVector(static_cast<size_t>(max_rows) * m.K, 100 + m.K + m.N);
      const std::vector<float> y0 = RandomVector(static_cast<size_t>(max_rows) * m.N, 200 + m.K + m.N);
      const std::vector<double> dot = ReferenceDots(m, x, max_rows);
      const DeviceVector<float> dx(x);
      DeviceVector<float> dy(static_cast<size_t>(max_rows) * m.N);
      for (GemmPrecision prec : kPrecisions) {
        const GemmPlan plan = kernels::MakeGemmPlan(m.K, m.N, Sms(), prec);
        for (GemmEpilogue e : kEpilogues) {
          // CI shapes: the LM head (50,257 columns, 1,571 CTAs) only as the
          // model calls it, kStore, at 1, 7 and 33 rows.
          const bool ci_head = testing::CiShapes() && m.N == 50257;
          if (ci_head && e != GemmEpilogue::kStore) continue;
          const std::vector<float> want_all = Expected(m, dot, max_rows, e, y0);
          for (int M : batches) {
            if (ci_head && M != 1 && M != 7 && M != 33) continue;
            SCOPED_TRACE(Describe(m, plan, M, e));
            const size_t n = static_cast<size_t>(M) * m.N;
            TW_ASSERT_OK(PrepareY(dy.get(), y0, n, e));
            TW_ASSERT_OK(runner.Run(plan, dm, dx.get(), M, dy.get(), e));
            const std::vector<float> want(want_all.begin(), want_all.begin() + static_cast<std::ptrdiff_t>(n));
            EXPECT_TRUE(testing::AllClose(ToHost(dy.get(), n), want, Atol(prec), Atol(prec)));
          }
        }
      }
    }
  }
}

// The fp32 kernel's operations, in the order gemm.h documents: per lane t of
// a warp, an FMA chain over its k-steps (k = 8s + t, then 8s + t + 4); the 4
// lanes summed (l0 + l1) + (l2 + l3); the warps of a panel summed in order;
// the splits summed in order; then + bias and the epilogue (store or
// accumulate: no transcendental, so the host reproduces it exactly).
std::vector<float> EmulateFp32(const GemmPlan& p, const HostMatrix& m, const std::vector<float>& x, int M,
                               GemmEpilogue e, const std::vector<float>& y0) {
  const int K = m.K, N = m.N, ksteps = kernels::GemmKSteps(K);
  const int WP = p.warps_per_panel(), KW = p.ksteps_per_warp, KR = p.cta_ksteps();
  std::vector<float> out(static_cast<size_t>(M) * N);
  ParallelFor(M, [&](int r) {
    const float* xr = x.data() + static_cast<size_t>(r) * K;
    auto X = [&](int k) { return k < K ? xr[k] : 0.0f; };
    for (int n = 0; n < N; ++n) {
      auto W = [&](int k) { return k < K ? m.At(k, n) : 0.0f; };
      float total = 0.0f;
      for (int s = 0; s < p.splits; ++s) {
        float cta = 0.0f;
        for (int wi = 0; wi < WP; ++wi) {
          float lane[4];
          for (int t = 0; t < 4; ++t) {
            float acc = 0.0f;
            for (int f = 0; f < KW; ++f) {
              const int ks = s * KR + wi * KW + f;
              if (ks >= ksteps) break;
              acc = std::fma(W(ks * 8 + t), X(ks * 8 + t), acc);
              acc = std::fma(W(ks * 8 + t + 4), X(ks * 8 + t + 4), acc);
            }
            lane[t] = acc;
          }
          const float warp = (lane[0] + lane[1]) + (lane[2] + lane[3]);
          cta = wi == 0 ? warp : cta + warp;
        }
        total = s == 0 ? cta : total + cta;
      }
      if (!m.bias.empty()) total = total + m.bias[n];
      const size_t i = static_cast<size_t>(r) * N + n;
      out[i] = e == GemmEpilogue::kAccumulate ? y0[i] + total : total;
    }
  });
  return out;
}

// Indices where two float vectors differ bitwise (first few), or "".
std::string BitwiseDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " != " + std::to_string(b.size());
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      if (bad < 4) first += " [" + std::to_string(i) + "] " + std::to_string(a[i]) + " vs " + std::to_string(b[i]) + ";";
      bad++;
    }
  }
  return bad == 0 ? "" : std::to_string(bad) + " of " + std::to_string(a.size()) + " differ:" + first;
}

TEST(GemmKernel, Fp32PathIsBitForBitItsDocumentedOperationOrder) {
  TW_REQUIRE_GPU();
  GemmRunner runner;
  struct Case {
    int K, N, P, KW;  // P = 0: the server's plan
  };
  const std::vector<Case> gpt2 = {{768, 2304, 0, 0}, {3072, 768, 0, 0}, {768, 768, 0, 0}};
  const std::vector<Case> ci = {{128, 384, 0, 0}, {1024, 256, 0, 0}, {1024, 256, 2, 8}};
  std::vector<Case> cases = {{64, 256, 0, 0}, {256, 64, 0, 0}, {100, 33, 1, 1}, {100, 33, 8, 8}, {257, 130, 4, 2},
                             {9, 17, 2, 4}};
  cases.insert(cases.begin(), testing::CiShapes() ? ci.begin() : gpt2.begin(), testing::CiShapes() ? ci.end() : gpt2.end());
  for (const Case& c : cases) {
    const HostMatrix m = MakeMatrix("emulated", c.K, c.N, false, true, 31 + c.K);
    const DeviceMatrix dm(m);
    const GemmPlan plan = c.P == 0 ? kernels::MakeGemmPlan(c.K, c.N, Sms(), GemmPrecision::kFp32)
                                   : kernels::MakeGemmPlanWith(c.K, c.N, GemmPrecision::kFp32, c.P, c.KW);
    const int M = 33;
    const std::vector<float> x = RandomVector(static_cast<size_t>(M) * c.K, 41 + c.N);
    const std::vector<float> y0 = RandomVector(static_cast<size_t>(M) * c.N, 43 + c.N);
    const DeviceVector<float> dx(x);
    DeviceVector<float> dy(static_cast<size_t>(M) * c.N);
    for (GemmEpilogue e : {GemmEpilogue::kStore, GemmEpilogue::kAccumulate}) {
      SCOPED_TRACE(Describe(m, plan, M, e));
      TW_ASSERT_OK(PrepareY(dy.get(), y0, dy.size(), e));
      TW_ASSERT_OK(runner.Run(plan, dm, dx.get(), M, dy.get(), e));
      EXPECT_EQ(BitwiseDiff(ToHost(dy.get(), dy.size()), EmulateFp32(plan, m, x, M, e, y0)), "");
    }
  }
}

TEST(GemmKernel, RowsAreBitwiseIndependentOfTheBatchAroundThem) {
  TW_REQUIRE_GPU();
  GemmRunner runner;
  std::vector<HostMatrix> mats;
  if (testing::CiShapes()) {  // GPT-2's matrices at width 128, the LM head at 4099 columns
    mats.push_back(MakeMatrix("c128 c_attn", 128, 384, false, true, 51));
    mats.push_back(MakeMatrix("c128 mlp.c_proj", 512, 128, false, true, 52));
    mats.push_back(MakeMatrix("lm_head 4099", 64, 4099, true, false, 53));
  } else {
    mats.push_back(MakeMatrix("gpt2 c_attn", 768, 2304, false, true, 51));
    mats.push_back(MakeMatrix("gpt2 mlp.c_proj", 3072, 768, false, true, 52));
    mats.push_back(MakeMatrix("gpt2 lm_head", 768, 50257, true, false, 53));
  }
  mats.push_back(MakeMatrix("tiny mlp.c_fc", 64, 256, false, true, 54));
  mats.push_back(MakeMatrix("tiny mlp.c_proj", 256, 64, false, true, 55));
  constexpr int kBatch = 32;
  const int kBig = testing::CiShapes() ? 100 : 200;
  // Row r of the 32-row batch sits at row Pos(r) of the 200-row batch.
  auto pos = [&](int r) { return (r * 37 + 11) % kBig; };
  for (const HostMatrix& m : mats) {
    const DeviceMatrix dm(m);
    const size_t K = m.K, N = m.N;
    const std::vector<float> xa = RandomVector(kBatch * K, 61 + K), ya = RandomVector(kBatch * N, 62 + N);
    std::vector<float> xb = RandomVector(kBig * K, 63 + K), yb = RandomVector(kBig * N, 64 + N);
    for (int r = 0; r < kBatch; ++r) {
      std::copy_n(xa.begin() + r * K, K, xb.begin() + pos(r) * K);
      std::copy_n(ya.begin() + r * N, N, yb.begin() + pos(r) * N);
    }
    const DeviceVector<float> dxa(xa), dxb(xb);
    DeviceVector<float> dya(kBatch * N), dyb(kBig * N), dy1(N);
    for (GemmPrecision prec : kPrecisions) {
      const GemmPlan plan = kernels::MakeGemmPlan(m.K, m.N, Sms(), prec);
      for (GemmEpilogue e : kEpilogues) {
        SCOPED_TRACE(Describe(m, plan, kBatch, e));
        TW_ASSERT_OK(PrepareY(dya.get(), ya, dya.size(), e));
        TW_ASSERT_OK(runner.Run(plan, dm, dxa.get(), kBatch, dya.get(), e));
        const std::vector<float> a = ToHost(dya.get(), dya.size());
        TW_ASSERT_OK(PrepareY(dyb.get(), yb, dyb.size(), e));
        TW_ASSERT_OK(runner.Run(plan, dm, dxb.get(), kBig, dyb.get(), e));
        const std::vector<float> b = ToHost(dyb.get(), dyb.size());
        for (int r = 0; r < kBatch; ++r) {
          const std::vector<float> ra(a.begin() + r * N, a.begin() + (r + 1) * N);
          const std::vector<float> rb(b.begin() + pos(r) * N, b.begin() + (pos(r) + 1) * N);
          EXPECT_EQ(BitwiseDiff(ra, rb), "") << "row " << r << " of 32 vs row " << pos(r) << " of " << kBig;
        }
        for (int r : {0, 5, 8, 31}) {
          const std::vector<float> y1(ya.begin() + r * N, ya.begin() + (r + 1) * N);
          TW_ASSERT_OK(PrepareY(dy1.get(), y1, N, e));
          TW_ASSERT_OK(runner.Run(plan, dm, dxa.get() + r * K, 1, dy1.get(), e));
          const std::vector<float> ra(a.begin() + r * N, a.begin() + (r + 1) * N);
          EXPECT_EQ(BitwiseDiff(ra, ToHost(dy1.get(), N)), "") << "row " << r << " of 32 vs alone";
        }
      }
    }
  }
}

TEST(GemmKernel, EveryTilingHandlesEdgeShapesAndRaggedTiles) {
  TW_REQUIRE_GPU();
  GemmRunner runner;
  // K, N: 1; below, at and above a fragment (8) and a panel (16); K = 100
  // leaves a short last split and idle warps; N = 130 and 50257 leave
  // partial panels and empty panels in a group.
  std::vector<std::pair<int, int>> shapes = {{1, 1}, {7, 5}, {8, 16}, {9, 17}, {100, 33}, {257, 130}};
  shapes.emplace_back(64, testing::CiShapes() ? 4099 : 50257);
  for (const auto& [K, N] : shapes) {
    const int s[2] = {K, N};
    const HostMatrix m = MakeMatrix("edge", s[0], s[1], false, true, 71 + s[0] * 7 + s[1]);
    const DeviceMatrix dm(m);
    constexpr int kRows = 65;  // 3 row tiles, the last with one row
    const std::vector<float> x = RandomVector(static_cast<size_t>(kRows) * m.K, 81 + s[0]);
    const std::vector<float> y0 = RandomVector(static_cast<size_t>(kRows) * m.N, 82 + s[1]);
    const std::vector<double> dot = ReferenceDots(m, x, kRows);
    const DeviceVector<float> dx(x);
    DeviceVector<float> dy(static_cast<size_t>(kRows) * m.N);
    constexpr int kRowCounts[] = {1, 9, 33, kRows};
    auto epilogue_for = [](int M) { return M == 9 ? GemmEpilogue::kGelu : GemmEpilogue::kAccumulate; };
    std::vector<std::vector<float>> want;
    for (int M : kRowCounts) want.push_back(Expected(m, dot, M, epilogue_for(M), y0));
    for (int P : {1, 2, 4, 8}) {
      for (int KW : {1, 2, 4, 8}) {
        for (GemmPrecision prec : kPrecisions) {
          const GemmPlan plan = kernels::MakeGemmPlanWith(m.K, m.N, prec, P, KW);
          if (!kernels::CheckGemmPlan(plan).ok()) continue;  // P = 1, KW = 8: 64 k-steps per split
          for (size_t i = 0; i < std::size(kRowCounts); ++i) {
            const int M = kRowCounts[i];
            const GemmEpilogue e = epilogue_for(M);
            SCOPED_TRACE(Describe(m, plan, M, e));
            const size_t n = static_cast<size_t>(M) * m.N;
            TW_ASSERT_OK(PrepareY(dy.get(), y0, n, e));
            TW_ASSERT_OK(runner.Run(plan, dm, dx.get(), M, dy.get(), e));
            EXPECT_TRUE(testing::AllClose(ToHost(dy.get(), n), want[i], Atol(prec), Atol(prec)));
          }
        }
      }
    }
  }
}

TEST(GemmKernel, SplitCallsRepeatBitForBitAndLeaveTheCountersAtZero) {
  TW_REQUIRE_GPU();
  GemmRunner runner;
  const HostMatrix m = testing::CiShapes() ? MakeMatrix("c256 mlp.c_proj", 1024, 256, false, true, 91)
                                           : MakeMatrix("gpt2 mlp.c_proj", 3072, 768, false, true, 91);
  const DeviceMatrix dm(m);
  const int M = 33;
  const std::vector<float> x = RandomVector(static_cast<size_t>(M) * m.K, 92);
  const DeviceVector<float> dx(x);
  DeviceVector<float> dy(static_cast<size_t>(M) * m.N);
  for (GemmPrecision prec : kPrecisions) {
    const GemmPlan plan = kernels::MakeGemmPlan(m.K, m.N, Sms(), prec);
    ASSERT_GT(plan.splits, 1) << kernels::DescribeGemmPlan(plan);
    std::vector<float> first;
    for (int i = 0; i < 5; ++i) {
      TW_ASSERT_OK(kernels::Memset(dy.get(), 0xFF, dy.size() * sizeof(float)));
      TW_ASSERT_OK(runner.Run(plan, dm, dx.get(), M, dy.get(), GemmEpilogue::kStore));
      const std::vector<float> y = ToHost(dy.get(), dy.size());
      if (i == 0) first = y;
      else EXPECT_EQ(BitwiseDiff(first, y), "") << "call " << i;
    }
    std::vector<uint32_t> counters(kernels::kGemmMaxCounterTiles, 1);
    TW_ASSERT_OK(kernels::DeviceSync());
    TW_ASSERT_OK(kernels::CopyToHost(counters.data(), runner.workspace().get(), kernels::kGemmCounterBytes));
    EXPECT_EQ(std::count(counters.begin(), counters.end(), 0u), kernels::kGemmMaxCounterTiles);
  }
}

TEST(GemmKernel, GraphReplayGivesTheSameBitsAsDirectCalls) {
  TW_REQUIRE_GPU();
  TW_ASSERT_OK(GemmInit());  // before any capture
  GemmRunner runner;
  const int C = testing::CiShapes() ? 256 : 768;
  const HostMatrix fc = MakeMatrix("mlp.c_fc", C, 4 * C, false, true, 101);
  const HostMatrix proj = MakeMatrix("mlp.c_proj", 4 * C, C, false, true, 102);
  const DeviceMatrix dfc(fc), dproj(proj);
  const int M = 8;
  const std::vector<float> x = RandomVector(static_cast<size_t>(M) * C, 103);
  const std::vector<float> res = RandomVector(static_cast<size_t>(M) * C, 104);
  const DeviceVector<float> dx(x);
  DeviceVector<float> h(static_cast<size_t>(M) * 4 * C), y(static_cast<size_t>(M) * C);
  for (GemmPrecision prec : kPrecisions) {
    SCOPED_TRACE(kernels::GemmPrecisionName(prec));
    const GemmPlan pfc = kernels::MakeGemmPlan(C, 4 * C, Sms(), prec), pproj = kernels::MakeGemmPlan(4 * C, C, Sms(), prec);
    // The MLP: h = gelu(x W_fc + b), y += h W_proj + b; directly, then as a graph.
    TW_ASSERT_OK(kernels::CopyToDevice(y.get(), res.data(), res.size() * sizeof(float)));
    TW_ASSERT_OK(runner.Run(pfc, dfc, dx.get(), M, h.get(), GemmEpilogue::kGelu));
    TW_ASSERT_OK(runner.Run(pproj, dproj, h.get(), M, y.get(), GemmEpilogue::kAccumulate));
    const std::vector<float> direct = ToHost(y.get(), y.size());

    void* stream = nullptr;
    TW_ASSERT_OK(kernels::StreamCreate(&stream));
    void* exec = nullptr;
    TW_ASSERT_OK(kernels::GraphBegin(stream));
    Status a = runner.Run(pfc, dfc, dx.get(), M, h.get(), GemmEpilogue::kGelu, stream);
    Status b = runner.Run(pproj, dproj, h.get(), M, y.get(), GemmEpilogue::kAccumulate, stream);
    Status end = kernels::GraphEnd(stream, &exec);
    TW_ASSERT_OK(a);
    TW_ASSERT_OK(b);
    TW_ASSERT_OK(end);
    for (int i = 0; i < 3; ++i) {
      TW_ASSERT_OK(kernels::CopyToDevice(y.get(), res.data(), res.size() * sizeof(float), stream));
      TW_ASSERT_OK(kernels::Memset(h.get(), 0xFF, h.size() * sizeof(float), stream));
      TW_ASSERT_OK(kernels::GraphLaunch(exec, stream));
      TW_ASSERT_OK(kernels::StreamSync(stream));
      EXPECT_EQ(BitwiseDiff(direct, ToHost(y.get(), y.size())), "") << "replay " << i;
    }
    TW_ASSERT_OK(kernels::GraphDestroy(exec));
    TW_ASSERT_OK(kernels::StreamDestroy(stream));
  }
}

// A NaN in x makes its row NaN in both precisions, whatever the NaN's bits
// (3xTF32 used to round 0x7fffffff to -0 and 0x7f800001 to +inf, so the row
// came out finite); the other rows are untouched.
TEST(GemmKernel, NanInputsGiveNanRowsInBothPrecisions) {
  TW_REQUIRE_GPU();
  GemmRunner runner;
  const HostMatrix m = MakeMatrix("nan", 64, 48, false, true, 121);
  const DeviceMatrix dm(m);
  const uint32_t nans[] = {0x7fffffffu, 0xffffffffu, 0x7f800001u, 0x7fc00000u};
  const int M = 5;  // rows 0-3: one NaN each (at k = 3 + 7 r); row 4 clean
  std::vector<float> x = RandomVector(static_cast<size_t>(M) * m.K, 122);
  for (int r = 0; r < 4; ++r) std::memcpy(&x[static_cast<size_t>(r) * m.K + 3 + 7 * r], &nans[r], 4);
  const std::vector<double> dot = ReferenceDots(m, x, M);
  const std::vector<float> y0(static_cast<size_t>(M) * m.N, 0.0f);
  const std::vector<float> want = Expected(m, dot, M, GemmEpilogue::kStore, y0);
  const DeviceVector<float> dx(x);
  DeviceVector<float> dy(static_cast<size_t>(M) * m.N);
  for (GemmPrecision prec : kPrecisions) {
    const GemmPlan plan = kernels::MakeGemmPlanWith(m.K, m.N, prec, 2, 2);
    SCOPED_TRACE(Describe(m, plan, M, GemmEpilogue::kStore));
    TW_ASSERT_OK(runner.Run(plan, dm, dx.get(), M, dy.get(), GemmEpilogue::kStore));
    const std::vector<float> y = ToHost(dy.get(), dy.size());
    for (int r = 0; r < 4; ++r) {
      int finite = 0;
      for (int n = 0; n < m.N; ++n) finite += !std::isnan(y[static_cast<size_t>(r) * m.N + n]);
      EXPECT_EQ(finite, 0) << "row " << r << " (x holds the NaN 0x" << std::hex << nans[r] << ")";
    }
    const std::vector<float> clean(y.begin() + 4 * m.N, y.end()), clean_want(want.begin() + 4 * m.N, want.end());
    EXPECT_TRUE(testing::AllClose(clean, clean_want, Atol(prec), Atol(prec)));
  }
}

TEST(GemmKernel, LauncherRefusesBadArgumentsNamingThem) {
  TW_REQUIRE_GPU();
  const HostMatrix m = MakeMatrix("gpt2 mlp.c_proj", 3072, 768, false, true, 111);
  const DeviceMatrix dm(m);
  const GemmPlan plan = kernels::MakeGemmPlan(3072, 768, Sms(), GemmPrecision::kFp32);
  ASSERT_GT(plan.splits, 1);
  const int M = 4;
  DeviceVector<float> x(static_cast<size_t>(M) * 3072 + 4), y(static_cast<size_t>(M) * 768);
  const size_t ws_bytes = kernels::GemmWorkspaceBytes(plan, M);
  DeviceVector<float> ws(ws_bytes / sizeof(float) + 4);
  TW_ASSERT_OK(kernels::Memset(ws.get(), 0, ws_bytes));
  auto run = [&](const GemmPlan& p, kernels::PackedMatrixView w, const float* xp, int rows, float* yp, GemmEpilogue e,
                 void* wsp, size_t wsb) { return Gemm(p, w, xp, rows, dm.bias_ptr(), yp, e, wsp, wsb, nullptr); };
  auto expect_error = [](const Status& s, const std::string& word) {
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(word), std::string::npos) << s.message();
  };
  const GemmEpilogue st = GemmEpilogue::kStore;
  TW_ASSERT_OK(run(plan, dm.view(), x.get(), M, y.get(), st, ws.get(), ws_bytes));
  TW_ASSERT_OK(kernels::DeviceSync());
  expect_error(run(plan, {nullptr, 3072, 768}, x.get(), M, y.get(), st, ws.get(), ws_bytes), "w.data");
  expect_error(run(plan, {dm.view().data, 768, 768}, x.get(), M, y.get(), st, ws.get(), ws_bytes), "K=768");
  expect_error(run(plan, {dm.view().data + 1, 3072, 768}, x.get(), M, y.get(), st, ws.get(), ws_bytes), "16-byte");
  expect_error(run(plan, dm.view(), nullptr, M, y.get(), st, ws.get(), ws_bytes), "x is null");
  expect_error(run(plan, dm.view(), x.get(), M, nullptr, st, ws.get(), ws_bytes), "y is null");
  expect_error(run(plan, dm.view(), x.get(), 0, y.get(), st, ws.get(), ws_bytes), "M = 0");
  expect_error(run(plan, dm.view(), x.get(), M, y.get(), static_cast<GemmEpilogue>(5), ws.get(), ws_bytes),
               "epilogue = 5");
  expect_error(run(plan, dm.view(), x.get(), M, x.get() + 4, st, ws.get(), ws_bytes), "overlap");
  expect_error(run(plan, dm.view(), x.get(), M, y.get(), st, nullptr, 0), "workspace");
  expect_error(run(plan, dm.view(), x.get(), M, y.get(), st, ws.get(), ws_bytes - 4), "workspace");
  GemmPlan bad = plan;
  bad.splits = 1;
  expect_error(run(bad, dm.view(), x.get(), M, y.get(), st, ws.get(), ws_bytes), "splits = 1");
  // One split needs no workspace.
  const GemmPlan one = kernels::MakeGemmPlanWith(64, 768, GemmPrecision::kFp32, 2, 2);
  ASSERT_EQ(one.splits, 1);
  const HostMatrix small = MakeMatrix("small", 64, 768, false, false, 112);
  const DeviceMatrix dsmall(small);
  TW_ASSERT_OK(Gemm(one, dsmall.view(), x.get(), M, nullptr, y.get(), st, nullptr, 0, nullptr));
  TW_ASSERT_OK(kernels::DeviceSync());
}

}  // namespace
}  // namespace tw::kernels
