// GPU tests of the row kernels (kernels/rownorm.h) against the CPU backend's
// kernels (cpu::LayerNorm, cpu::GeluTanh, cpu::Add): every launcher on
// random inputs (never zeros; outputs poisoned with NaN first), the row
// widths the GPT-2 family and the tiny test model use and the limits,
// bitwise batch invariance, and the refusals.
//
// Tolerances (fp32 throughout):
//   - Embed, ResidualAdd and the residual half of ResidualLayerNorm are the
//     same float additions in the same order as the host's: bitwise.
//   - LayerNorm: the mean and variance are summed in a different order than
//     the CPU's (warp tree vs vector lanes), ~1e-6 relative; outputs are
//     O(1) times w: atol 1e-5, rtol 1e-5.
//   - GELU: the same float operations as the CPU's except the exponential
//     (expf, 2 ulp, vs the CPU's polynomial, < 1e-8 + rounding): rtol 1e-6,
//     and atol 1e-12 for the tail where the CPU's exponent clamp gives
//     ~1e-37 and the GPU's overflow -0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "gpu/gpu_test_util.h"
#include "kernels/rownorm.h"

namespace tw {
namespace {

using testing::AllClose;
using testing::DeviceVector;
using testing::RandomVector;

constexpr float kEps = 1e-5f;
constexpr float kLnAtol = 1e-5f, kLnRtol = 1e-5f;

// A residual stream: an offset per row plus spread values.
std::vector<float> StreamLike(int rows, int C, uint64_t seed) {
  std::vector<float> x = RandomVector(static_cast<size_t>(rows) * C, seed, -2.0f, 2.0f);
  std::vector<float> off = RandomVector(rows, seed + 1, -3.0f, 3.0f);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < C; ++c) x[static_cast<size_t>(r) * C + c] += off[r];
  }
  return x;
}

std::vector<float> CpuLayerNorm(const std::vector<float>& x, int rows, int C, const std::vector<float>& w,
                                const std::vector<float>& b) {
  std::vector<float> out(x.size());
  cpu::LayerNorm(nullptr, x.data(), rows, C, w.data(), b.data(), kEps, out.data());
  return out;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> Slice(const std::vector<float>& v, size_t begin, size_t n) {
  return std::vector<float>(v.begin() + begin, v.begin() + begin + n);
}

const int kWidths[] = {4, 64, 128, 768, 1024, 1280, 1600, 2048};

TEST(RowKernelsGpu, LayerNormMatchesCpuLayerNormAtEveryWidth) {
  TW_REQUIRE_GPU();
  for (int C : kWidths) {
    for (int rows : {1, 7, 32}) {
      SCOPED_TRACE("C " + std::to_string(C) + " rows " + std::to_string(rows));
      const std::vector<float> x = StreamLike(rows, C, 100 + C + rows);
      const std::vector<float> w = RandomVector(C, 2, 0.5f, 1.5f), b = RandomVector(C, 3, -0.5f, 0.5f);
      DeviceVector<float> dx(x), dw(w), db(b), dout(x.size());
      TW_ASSERT_OK(kernels::LayerNorm(dx.get(), rows, C, dw.get(), db.get(), kEps, dout.get(), nullptr));
      EXPECT_TRUE(AllClose(dout.ToHost(), CpuLayerNorm(x, rows, C, w, b), kLnAtol, kLnRtol));
      EXPECT_TRUE(SameBits(dx.ToHost(), x)) << "LayerNorm wrote its input";
    }
  }
}

TEST(RowKernelsGpu, LayerNormInPlaceEqualsOutOfPlaceBitwise) {
  TW_REQUIRE_GPU();
  const int rows = 9, C = 768;
  const std::vector<float> x = StreamLike(rows, C, 7);
  const std::vector<float> w = RandomVector(C, 8, 0.5f, 1.5f), b = RandomVector(C, 9, -0.5f, 0.5f);
  DeviceVector<float> dx(x), dw(w), db(b), dout(x.size());
  TW_ASSERT_OK(kernels::LayerNorm(dx.get(), rows, C, dw.get(), db.get(), kEps, dout.get(), nullptr));
  TW_ASSERT_OK(kernels::LayerNorm(dx.get(), rows, C, dw.get(), db.get(), kEps, dx.get(), nullptr));
  EXPECT_TRUE(SameBits(dx.ToHost(), dout.ToHost()));
}

// x + bias + delta[0] + ... in that order, as the kernels promise.
std::vector<float> HostResidual(const std::vector<float>& x, const std::vector<float>& delta, int parts,
                                size_t stride, const std::vector<float>* bias, int rows, int C) {
  std::vector<float> out = x;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < C; ++c) {
      const size_t i = static_cast<size_t>(r) * C + c;
      float s = x[i];
      if (bias != nullptr) s += (*bias)[c];
      for (int p = 0; p < parts; ++p) s += delta[p * stride + i];
      out[i] = s;
    }
  }
  return out;
}

TEST(RowKernelsGpu, ResidualAddIsTheSameFloatAdditionsInTheSameOrder) {
  TW_REQUIRE_GPU();
  for (int C : {64, 768}) {
    for (int rows : {1, 7, 32}) {
      for (int parts : {1, 2, 4, kernels::kResidualMaxParts}) {
        for (bool with_bias : {false, true}) {
          SCOPED_TRACE("C " + std::to_string(C) + " rows " + std::to_string(rows) + " parts " + std::to_string(parts) +
                       (with_bias ? " bias" : ""));
          const size_t n = static_cast<size_t>(rows) * C, stride = n + 8;  // a gap between the parts
          const std::vector<float> x = StreamLike(rows, C, 20 + rows);
          const std::vector<float> delta = RandomVector(stride * parts, 21, -0.5f, 0.5f);
          const std::vector<float> bias = RandomVector(C, 22, -0.1f, 0.1f);
          DeviceVector<float> dx(x), dd(delta), dbias(bias);
          TW_ASSERT_OK(kernels::ResidualAdd(dx.get(), dd.get(), parts, stride, with_bias ? dbias.get() : nullptr, rows,
                                            C, nullptr));
          EXPECT_TRUE(SameBits(dx.ToHost(), HostResidual(x, delta, parts, stride, with_bias ? &bias : nullptr, rows, C)));
        }
      }
    }
  }
}

TEST(RowKernelsGpu, ResidualLayerNormUpdatesTheStreamAndNormalisesIt) {
  TW_REQUIRE_GPU();
  for (int C : {64, 768, 2048}) {
    for (int rows : {1, 7, 32}) {
      for (int parts : {1, 3}) {
        for (bool with_bias : {false, true}) {
          SCOPED_TRACE("C " + std::to_string(C) + " rows " + std::to_string(rows) + " parts " + std::to_string(parts) +
                       (with_bias ? " bias" : ""));
          const size_t n = static_cast<size_t>(rows) * C, stride = n;
          const std::vector<float> x = StreamLike(rows, C, 30 + rows);
          const std::vector<float> delta = RandomVector(stride * parts, 31, -0.5f, 0.5f);
          const std::vector<float> bias = RandomVector(C, 32, -0.1f, 0.1f);
          const std::vector<float> w = RandomVector(C, 33, 0.5f, 1.5f), b = RandomVector(C, 34, -0.5f, 0.5f);
          DeviceVector<float> dx(x), dd(delta), dbias(bias), dw(w), db(b), dout(n);
          TW_ASSERT_OK(kernels::ResidualLayerNorm(dx.get(), dd.get(), parts, stride, with_bias ? dbias.get() : nullptr,
                                                  rows, C, dw.get(), db.get(), kEps, dout.get(), nullptr));
          const std::vector<float> want_x =
              HostResidual(x, delta, parts, stride, with_bias ? &bias : nullptr, rows, C);
          EXPECT_TRUE(SameBits(dx.ToHost(), want_x));
          EXPECT_TRUE(AllClose(dout.ToHost(), CpuLayerNorm(want_x, rows, C, w, b), kLnAtol, kLnRtol));
        }
      }
    }
  }
}

struct EmbedCase {
  int vocab, n_ctx, C;
  std::vector<int32_t> tokens, positions;
};

// x as the CPU forward pass builds it (cpu::Add), NaN rows for bad ids.
std::vector<float> CpuEmbed(const EmbedCase& e, const std::vector<float>& wte, const std::vector<float>& wpe) {
  const int rows = static_cast<int>(e.tokens.size());
  std::vector<float> x(static_cast<size_t>(rows) * e.C, NAN);
  for (int r = 0; r < rows; ++r) {
    const int t = e.tokens[r], p = e.positions[r];
    if (t < 0 || t >= e.vocab || p < 0 || p >= e.n_ctx) continue;
    cpu::Add(wte.data() + static_cast<size_t>(t) * e.C, wpe.data() + static_cast<size_t>(p) * e.C,
             x.data() + static_cast<size_t>(r) * e.C, e.C);
  }
  return x;
}

TEST(RowKernelsGpu, EmbedIsWtePlusWpeBitwiseAndBadIdsGiveNanRows) {
  TW_REQUIRE_GPU();
  for (int C : {64, 768}) {
    EmbedCase e{50257, 1024, C, {}, {}};
    // Edge ids (0, the last token, the last position) and four bad rows.
    e.tokens = {0, 50256, 17, 50257, 3, -1, 9, 12, 40000, 5};
    e.positions = {0, 1023, 5, 2, 1024, 7, -1, 8, 1, 0};
    const int rows = static_cast<int>(e.tokens.size());
    const std::vector<float> wte = RandomVector(static_cast<size_t>(e.vocab) * C, 41, -0.2f, 0.2f);
    const std::vector<float> wpe = RandomVector(static_cast<size_t>(e.n_ctx) * C, 42, -0.1f, 0.1f);
    DeviceVector<float> dwte(wte), dwpe(wpe), dx(static_cast<size_t>(rows) * C);
    DeviceVector<int32_t> dtok(e.tokens), dpos(e.positions);
    TW_ASSERT_OK(kernels::Embed(dtok.get(), dpos.get(), rows, dwte.get(), e.vocab, dwpe.get(), e.n_ctx, C, dx.get(),
                                nullptr));
    const std::vector<float> got = dx.ToHost(), want = CpuEmbed(e, wte, wpe);
    for (int r = 0; r < rows; ++r) {
      const bool bad = std::isnan(want[static_cast<size_t>(r) * C]);
      for (int c = 0; c < C; ++c) {
        const size_t i = static_cast<size_t>(r) * C + c;
        if (bad) {
          ASSERT_TRUE(std::isnan(got[i])) << "row " << r << " (bad ids) col " << c << " = " << got[i];
        } else {
          ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
              << "row " << r << " col " << c << ": " << got[i] << " vs " << want[i];
        }
      }
    }
  }
}

TEST(RowKernelsGpu, EmbedLayerNormMatchesEmbedThenCpuLayerNorm) {
  TW_REQUIRE_GPU();
  for (int C : {64, 768, 1600}) {
    for (int rows : {1, 7, 32}) {
      SCOPED_TRACE("C " + std::to_string(C) + " rows " + std::to_string(rows));
      EmbedCase e{1000, 128, C, {}, {}};
      for (int r = 0; r < rows; ++r) {
        e.tokens.push_back((r * 389 + 1) % e.vocab);
        e.positions.push_back((r * 37) % e.n_ctx);
      }
      const std::vector<float> wte = RandomVector(static_cast<size_t>(e.vocab) * C, 51, -0.5f, 0.5f);
      const std::vector<float> wpe = RandomVector(static_cast<size_t>(e.n_ctx) * C, 52, -0.3f, 0.3f);
      const std::vector<float> w = RandomVector(C, 53, 0.5f, 1.5f), b = RandomVector(C, 54, -0.5f, 0.5f);
      const size_t n = static_cast<size_t>(rows) * C;
      DeviceVector<float> dwte(wte), dwpe(wpe), dw(w), db(b), dx(n), dout(n);
      DeviceVector<int32_t> dtok(e.tokens), dpos(e.positions);
      TW_ASSERT_OK(kernels::EmbedLayerNorm(dtok.get(), dpos.get(), rows, dwte.get(), e.vocab, dwpe.get(), e.n_ctx, C,
                                           dx.get(), dw.get(), db.get(), kEps, dout.get(), nullptr));
      const std::vector<float> want_x = CpuEmbed(e, wte, wpe);
      EXPECT_TRUE(SameBits(dx.ToHost(), want_x));
      EXPECT_TRUE(AllClose(dout.ToHost(), CpuLayerNorm(want_x, rows, C, w, b), kLnAtol, kLnRtol));
    }
  }
}

TEST(RowKernelsGpu, GeluMatchesCpuGeluAtEveryLengthAndAlignment) {
  TW_REQUIRE_GPU();
  const size_t lengths[] = {1, 2, 3, 4, 5, 7, 8, 255, 256, 257, 1023, 1024, 1025, 4 * 768 * 3 + 1, 4 * 768 * 32};
  for (size_t n : lengths) {
    for (int offset : {0, 1, 2, 3}) {  // 0: the float4 path (16-byte aligned); others: the scalar path
      SCOPED_TRACE("n " + std::to_string(n) + " offset " + std::to_string(offset));
      std::vector<float> x = RandomVector(n + offset, 60 + n, -6.0f, 6.0f);
      if (n >= 3) {
        x[offset] = -30.0f;  // exp(-2u) overflows
        x[offset + 1] = 30.0f;
        x[offset + 2] = -1e-30f;
      }
      std::vector<float> want(x.begin() + offset, x.end());
      cpu::GeluTanh(nullptr, want.data(), want.size());
      DeviceVector<float> dx(x);
      TW_ASSERT_OK(kernels::GeluTanh(dx.get() + offset, n, nullptr));
      const std::vector<float> all = dx.ToHost();
      EXPECT_TRUE(SameBits(Slice(all, 0, offset), Slice(x, 0, offset))) << "GELU wrote before its start";
      EXPECT_TRUE(AllClose(Slice(all, offset, n), want, 1e-12f, 1e-6f));
    }
  }
}

// Row r alone, in batches of 7 and 32 (at different places), and in a
// batch of 100: the same bits.
TEST(RowKernelsGpu, EveryRowIsBitwiseIndependentOfItsBatch) {
  TW_REQUIRE_GPU();
  const int C = 768, kRows = 100;
  const size_t n = static_cast<size_t>(kRows) * C;
  const std::vector<float> x = StreamLike(kRows, C, 70);
  const std::vector<float> delta = RandomVector(2 * n, 71, -0.5f, 0.5f);
  const std::vector<float> bias = RandomVector(C, 72, -0.1f, 0.1f);
  const std::vector<float> w = RandomVector(C, 73, 0.5f, 1.5f), b = RandomVector(C, 74, -0.5f, 0.5f);
  DeviceVector<float> dw(w), db(b), dbias(bias), dd(delta);
  // LayerNorm and ResidualLayerNorm (2 parts, bias) of rows [first, first + rows).
  auto run = [&](int first, int rows, std::vector<float>* ln, std::vector<float>* res_x, std::vector<float>* res_ln) {
    const size_t off = static_cast<size_t>(first) * C, m = static_cast<size_t>(rows) * C;
    DeviceVector<float> dx(x), dout(n), dx2(x), dout2(n);
    ASSERT_TRUE(kernels::LayerNorm(dx.get() + off, rows, C, dw.get(), db.get(), kEps, dout.get() + off, nullptr).ok());
    ASSERT_TRUE(kernels::ResidualLayerNorm(dx2.get() + off, dd.get() + off, 2, n, dbias.get(), rows, C, dw.get(),
                                           db.get(), kEps, dout2.get() + off, nullptr)
                    .ok());
    *ln = Slice(dout.ToHost(), off, m);
    *res_x = Slice(dx2.ToHost(), off, m);
    *res_ln = Slice(dout2.ToHost(), off, m);
  };
  std::vector<float> ln_all, rx_all, rln_all;
  run(0, kRows, &ln_all, &rx_all, &rln_all);
  struct Batch {
    int first, rows;
  };
  for (Batch bt : {Batch{0, 32}, Batch{3, 7}, Batch{61, 32}, Batch{93, 7}}) {
    std::vector<float> ln, rx, rln;
    run(bt.first, bt.rows, &ln, &rx, &rln);
    const size_t off = static_cast<size_t>(bt.first) * C, m = static_cast<size_t>(bt.rows) * C;
    EXPECT_TRUE(SameBits(ln, Slice(ln_all, off, m))) << "LayerNorm, rows " << bt.first << " + " << bt.rows;
    EXPECT_TRUE(SameBits(rx, Slice(rx_all, off, m))) << "ResidualLayerNorm x, rows " << bt.first << " + " << bt.rows;
    EXPECT_TRUE(SameBits(rln, Slice(rln_all, off, m))) << "ResidualLayerNorm out, rows " << bt.first << " + " << bt.rows;
  }
  for (int r : {0, 1, 31, 32, 57, 99}) {
    std::vector<float> ln, rx, rln;
    run(r, 1, &ln, &rx, &rln);
    const size_t off = static_cast<size_t>(r) * C;
    EXPECT_TRUE(SameBits(ln, Slice(ln_all, off, C))) << "LayerNorm, row " << r << " alone";
    EXPECT_TRUE(SameBits(rx, Slice(rx_all, off, C))) << "ResidualLayerNorm x, row " << r << " alone";
    EXPECT_TRUE(SameBits(rln, Slice(rln_all, off, C))) << "ResidualLayerNorm out, row " << r << " alone";
  }
}

bool Mentions(const Status& s, const std::string& text) {
  return !s.ok() && s.message().find(text) != std::string::npos;
}

TEST(RowKernelsGpu, LaunchersRefuseBadArgumentsNamingThem) {
  TW_REQUIRE_GPU();
  const int C = 768, rows = 4;
  DeviceVector<float> x(static_cast<size_t>(rows) * C + 4), w(C), b(C), out(static_cast<size_t>(rows) * C);
  DeviceVector<float> delta(static_cast<size_t>(2) * rows * C);
  DeviceVector<int32_t> ids(rows);
  EXPECT_TRUE(Mentions(kernels::LayerNorm(x.get(), rows, 770, w.get(), b.get(), kEps, out.get(), nullptr), "C = 770"));
  EXPECT_TRUE(Mentions(kernels::LayerNorm(x.get(), rows, 0, w.get(), b.get(), kEps, out.get(), nullptr), "C = 0"));
  EXPECT_TRUE(Mentions(kernels::LayerNorm(x.get(), rows, 4096, w.get(), b.get(), kEps, out.get(), nullptr), "C = 4096"));
  EXPECT_TRUE(Mentions(kernels::LayerNorm(x.get(), -1, C, w.get(), b.get(), kEps, out.get(), nullptr), "rows = -1"));
  EXPECT_TRUE(Mentions(kernels::LayerNorm(x.get(), rows, C, nullptr, b.get(), kEps, out.get(), nullptr), "w is null"));
  EXPECT_TRUE(
      Mentions(kernels::LayerNorm(x.get() + 1, rows, C, w.get(), b.get(), kEps, out.get(), nullptr), "16-byte aligned"));
  EXPECT_TRUE(Mentions(kernels::LayerNorm(x.get(), rows, C, w.get(), b.get(), NAN, out.get(), nullptr), "eps"));
  EXPECT_TRUE(Mentions(kernels::ResidualAdd(x.get(), delta.get(), 0, 0, nullptr, rows, C, nullptr), "parts = 0"));
  EXPECT_TRUE(Mentions(kernels::ResidualAdd(x.get(), delta.get(), 17, 0, nullptr, rows, C, nullptr), "parts = 17"));
  EXPECT_TRUE(Mentions(kernels::ResidualAdd(x.get(), delta.get(), 2, C, nullptr, rows, C, nullptr), "part_stride"));
  EXPECT_TRUE(Mentions(kernels::ResidualAdd(x.get(), x.get(), 1, 0, nullptr, rows, C, nullptr), "delta is x"));
  EXPECT_TRUE(Mentions(kernels::ResidualLayerNorm(x.get(), delta.get(), 1, 0, nullptr, rows, C, w.get(), b.get(), kEps,
                                                  x.get(), nullptr),
                       "out is x"));
  EXPECT_TRUE(Mentions(kernels::Embed(ids.get(), ids.get(), rows, w.get(), 0, w.get(), 1, C, x.get(), nullptr),
                       "vocab = 0"));
  EXPECT_TRUE(Mentions(kernels::Embed(nullptr, ids.get(), rows, w.get(), 1, w.get(), 1, C, x.get(), nullptr),
                       "tokens is null"));
  EXPECT_TRUE(Mentions(kernels::EmbedLayerNorm(ids.get(), ids.get(), rows, w.get(), 1, w.get(), 1, C, x.get(), w.get(),
                                               b.get(), kEps, x.get(), nullptr),
                       "out is x"));
  EXPECT_TRUE(Mentions(kernels::GeluTanh(nullptr, 5, nullptr), "x is null"));
  // Nothing to do is fine, and launches nothing.
  TW_ASSERT_OK(kernels::LayerNorm(x.get(), 0, C, w.get(), b.get(), kEps, out.get(), nullptr));
  TW_ASSERT_OK(kernels::GeluTanh(nullptr, 0, nullptr));
  TW_ASSERT_OK(kernels::DeviceSync());
}

}  // namespace
}  // namespace tw
