// Development program for the row kernels (kernels/rownorm.{h,cu}): layer
// norm versions against a CPU reference, then every launcher of rownorm.h
// (embedding, layer norm, residual add, their fused forms, GELU) validated
// and timed.
//
//   build/cuda/dev/rownorm              every version, then every launcher
//   build/cuda/dev/rownorm <1|2|3>      one layer norm version
//   build/cuda/dev/rownorm launchers    only the launchers
//   ... --no-timing                     the validations only
//
// TW_GPU_TEST_SHAPES=ci (validation only, for the CPU emulator): the layer
// norm versions at the same widths (4 to 2048) with 65 rows instead of
// 1024 as the prefill-sized case (v3's last block part full); Embed and
// EmbedLayerNorm with a 4099-token vocabulary except one call at GPT-2's
// 50257 (8 rows, the fused form, the out-of-range ids); every other
// launcher at the full run's shapes, which are small already.
//
// Floors at GPT-2 small's shapes (C = 768), fp32, ~4.3 TB/s copy rate
// (read + write) and ~60 TFLOP/s fp32 on an H200:
//   LayerNorm, B rows: bytes 2 * B * C * 4 + 2 * C * 4 (x in, out, w, b):
//     B = 1: 9 KB -> 0.002 us; B = 32: 203 KB -> 0.05 us; B = 1024 (a
//     prefill pass): 6.3 MB -> 1.5 us. ~8 flops a float: B = 32 is 0.2
//     MFLOP -> 0.003 us. Decode shapes are therefore pure latency (a launch
//     and one memory round trip, ~2-4 us); only prefill-sized row counts
//     can show bandwidth.
//   ResidualLayerNorm (1 part + bias): 4 * B * C * 4 + 3 * C * 4 bytes.
//   Embed: 3 * B * C * 4 bytes. GELU over (B, 4C): 2 * B * 4C * 4 bytes.
//
// Versions of LayerNorm (the row kernel every fused form shares):
//   v1  one thread per row (llm.c's layernorm kernel 1): mean and variance
//       by two sequential loops over the row in global memory. Simplest;
//       at B = 1 one thread walks 768 floats three times, so it should be
//       the slowest by far (each load a dependent round trip, uncoalesced
//       across rows).
//   v2  one 256-thread block per row, strided scalar loads, three passes
//       over x in global memory (mean, variance, normalise) with a
//       shared-memory block sum in fixed order. Should cut v1's latency
//       ~100x at B = 1 (all loads of a pass in flight at once); two block
//       barriers per sum.
//   v3  the launcher (rownorm.cu): one warp per row, the row in registers
//       as float4s, two passes over the registers, xor-shuffle sums, no
//       barriers, 4 rows per block. Should match v2 at decode sizes (both
//       latency-bound) and beat it at prefill sizes (one read of x instead
//       of three, 16-byte loads).
// Measured on an H200, 2026-12-04 (bench/results/gpu-2026-12-04/kernels.log):
// v1 0.069 ms at B = 1, v2 0.0060, v3 0.0069; at B = 32 v2 0.0059, v3 0.0071.
// All three are latency-bound at decode sizes (a few us of launch each):
// v3 did not beat v2, and the row kernels' cost is their launch count.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/dev/common.h"
#include "kernels/rownorm.h"

using tw::dev::Benchmark;
using tw::dev::DeviceAlloc;
using tw::dev::Poison;
using tw::dev::RandomFloats;
using tw::dev::Report;
using tw::dev::ToDevice;
using tw::dev::Validate;

namespace {

constexpr float kEps = 1e-5f;

// ---- CPU references (double accumulation) ---------------------------------

// out (rows, C) = LayerNorm(x) with mean and variance in double.
void LayerNormRef(const float* x, int rows, int C, const float* w, const float* b, float eps, float* out) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<size_t>(r) * C;
    double sum = 0;
    for (int c = 0; c < C; ++c) sum += xr[c];
    const double mean = sum / C;
    double sq = 0;
    for (int c = 0; c < C; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
    const double rstd = 1.0 / std::sqrt(sq / C + eps);
    for (int c = 0; c < C; ++c) out[static_cast<size_t>(r) * C + c] = static_cast<float>((xr[c] - mean) * rstd * w[c] + b[c]);
  }
}

double GeluRef(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

// ---- v1: one thread per row ---------------------------------------------------

__global__ void LayerNormV1(const float* x, int rows, int C, const float* w, const float* b, float eps, float* out) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + static_cast<size_t>(r) * C;  // (C)
  float* o = out + static_cast<size_t>(r) * C;       // (C)
  float sum = 0.0f;
  for (int c = 0; c < C; ++c) sum += xr[c];
  const float mean = sum / static_cast<float>(C);
  float sq = 0.0f;
  for (int c = 0; c < C; ++c) sq = fmaf(xr[c] - mean, xr[c] - mean, sq);
  const float rstd = 1.0f / sqrtf(sq / static_cast<float>(C) + eps);
  for (int c = 0; c < C; ++c) o[c] = fmaf((xr[c] - mean) * rstd, w[c], b[c]);
}

// ---- v2: one block per row, three passes over global memory -----------------

constexpr int kV2Threads = 256;

// Sum over the block in a fixed order: xor tree in each warp, then the
// warps' sums in warp order. Every thread gets the total.
__device__ float BlockSumV2(float v, float* scratch /* (8) */) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = 0.0f;
  for (int k = 0; k < kV2Threads / 32; ++k) t += scratch[k];
  __syncthreads();
  return t;
}

__global__ void __launch_bounds__(kV2Threads) LayerNormV2(const float* x, int C, const float* w, const float* b,
                                                          float eps, float* out) {
  __shared__ float scratch[kV2Threads / 32];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * C;  // (C)
  float* o = out + static_cast<size_t>(blockIdx.x) * C;       // (C)
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += kV2Threads) s += xr[c];
  const float mean = BlockSumV2(s, scratch) / static_cast<float>(C);
  float q = 0.0f;
  for (int c = threadIdx.x; c < C; c += kV2Threads) q = fmaf(xr[c] - mean, xr[c] - mean, q);
  const float rstd = 1.0f / sqrtf(BlockSumV2(q, scratch) / static_cast<float>(C) + eps);
  for (int c = threadIdx.x; c < C; c += kV2Threads) o[c] = fmaf((xr[c] - mean) * rstd, w[c], b[c]);
}

void RunLayerNorm(int version, const float* x, int rows, int C, const float* w, const float* b, float* out) {
  if (rows == 0) return;
  switch (version) {
    case 1:
      tw::kernels::Launch<LayerNormV1>((rows + 127) / 128, 128, 0, nullptr, x, rows, C, w, b, kEps, out);
      break;
    case 2:
      tw::kernels::Launch<LayerNormV2>(rows, kV2Threads, 0, nullptr, x, C, w, b, kEps, out);
      break;
    default: {
      tw::Status s = tw::kernels::LayerNorm(x, rows, C, w, b, kEps, out, nullptr);
      if (!s.ok()) {
        std::fprintf(stderr, "LayerNorm: %s\n", s.message().c_str());
        std::exit(1);
      }
    }
  }
  CUDA_CHECK(cudaGetLastError());
}

void Check(const tw::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

// ---- results table --------------------------------------------------------------

struct Row {
  std::string name;
  int rows;
  bool ok;
  float ms;
  double gbps;
};
std::vector<Row> g_table;

void Timed(const std::string& name, int rows, bool ok, double bytes, double flops, const std::function<void()>& fn) {
  if (!ok) {
    g_table.push_back({name, rows, false, 0.0f, 0.0});
    return;
  }
  const float ms = Benchmark(50, fn);
  const std::string label = name + " B=" + std::to_string(rows);
  Report(label.c_str(), ms, bytes, flops);
  g_table.push_back({name, rows, true, ms, bytes / (ms * 1e-3) / 1e9});
}

// Inputs like a residual stream: an offset per row and spread values.
std::vector<float> StreamLike(size_t rows, int C, uint64_t seed) {
  std::vector<float> x = RandomFloats(rows * C, seed, -2.0f, 2.0f);
  std::vector<float> off = RandomFloats(rows, seed + 1, -3.0f, 3.0f);
  for (size_t r = 0; r < rows; ++r) {
    for (int c = 0; c < C; ++c) x[r * C + c] += off[r];
  }
  return x;
}

// ---- LayerNorm versions -----------------------------------------------------------

bool ValidateVersion(int version) {
  std::printf("LayerNorm v%d: validation\n", version);
  struct Shape {
    int rows, C;
  };
  // Widths from the smallest (4) to the largest (kRowMaxC = 2048); the last
  // a prefill's rows (CI: 65, ending in a part-full block of v3).
  const Shape shapes[] = {{1, 768}, {8, 768}, {32, 768}, {7, 64}, {3, 4}, {5, 1600}, {2, 2048},
                          {tw::dev::CiShapes() ? 65 : 1024, 768}};
  bool all = true;
  for (const Shape& sh : shapes) {
    const size_t n = static_cast<size_t>(sh.rows) * sh.C;
    std::vector<float> x = StreamLike(sh.rows, sh.C, 11 + sh.C + sh.rows);
    std::vector<float> w = RandomFloats(sh.C, 21, 0.5f, 1.5f), b = RandomFloats(sh.C, 22, -0.5f, 0.5f);
    std::vector<float> ref(n);
    LayerNormRef(x.data(), sh.rows, sh.C, w.data(), b.data(), kEps, ref.data());
    float* dx = ToDevice(x);
    float* dw = ToDevice(w);
    float* db = ToDevice(b);
    float* dout = DeviceAlloc<float>(n);
    Poison(dout, n * sizeof(float));
    RunLayerNorm(version, dx, sh.rows, sh.C, dw, db, dout);
    const std::string name = "rows " + std::to_string(sh.rows) + " C " + std::to_string(sh.C);
    // fp32 against a double reference: mean/variance rounding ~1e-6 relative.
    all &= Validate(name.c_str(), dout, ref.data(), n, 1e-5f, 1e-5f);
    CUDA_CHECK(cudaFree(dx));
    CUDA_CHECK(cudaFree(dw));
    CUDA_CHECK(cudaFree(db));
    CUDA_CHECK(cudaFree(dout));
  }
  return all;
}

void TimeVersion(int version, bool ok) {
  const int C = 768;
  for (int rows : {1, 8, 32, 1024}) {
    const size_t n = static_cast<size_t>(rows) * C;
    float* dx = ToDevice(StreamLike(rows, C, 5));
    float* dw = ToDevice(RandomFloats(C, 6, 0.5f, 1.5f));
    float* db = ToDevice(RandomFloats(C, 7, -0.5f, 0.5f));
    float* dout = DeviceAlloc<float>(n);
    Timed("layernorm v" + std::to_string(version), rows, ok, 2.0 * n * 4 + 2.0 * C * 4, 8.0 * n,
          [&] { RunLayerNorm(version, dx, rows, C, dw, db, dout); });
    CUDA_CHECK(cudaFree(dx));
    CUDA_CHECK(cudaFree(dw));
    CUDA_CHECK(cudaFree(db));
    CUDA_CHECK(cudaFree(dout));
  }
}

// ---- every launcher ----------------------------------------------------------------

// Reads a device vector back.
template <typename T>
std::vector<T> ToHost(const T* d, size_t n) {
  std::vector<T> h(n);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

constexpr int kVocab = 50257;

// Embed and EmbedLayerNorm, with two rows of out-of-range ids (which must
// come out NaN while the others are exact).
bool ValidateEmbed(int rows, int C, bool fused, int vocab) {
  const int n_ctx = 1024;
  std::vector<float> wte = RandomFloats(static_cast<size_t>(vocab) * C, 31, -0.2f, 0.2f);
  std::vector<float> wpe = RandomFloats(static_cast<size_t>(n_ctx) * C, 32, -0.1f, 0.1f);
  std::vector<int32_t> tok(rows), pos(rows);
  for (int r = 0; r < rows; ++r) {
    tok[r] = r == 0 ? vocab - 1 : (r * 7919) % vocab;
    pos[r] = r == 0 ? n_ctx - 1 : (r * 31) % n_ctx;
  }
  if (rows >= 8) {
    tok[3] = vocab;  // out of range: NaN row
    pos[5] = -1;     // out of range: NaN row
  }
  const size_t n = static_cast<size_t>(rows) * C;
  std::vector<float> want(n), want_ln(n);
  for (int r = 0; r < rows; ++r) {
    const bool ok = tok[r] >= 0 && tok[r] < vocab && pos[r] >= 0 && pos[r] < n_ctx;
    for (int c = 0; c < C; ++c) {
      want[r * C + c] = ok ? wte[static_cast<size_t>(tok[r]) * C + c] + wpe[static_cast<size_t>(pos[r]) * C + c] : NAN;
    }
  }
  std::vector<float> w = RandomFloats(C, 33, 0.5f, 1.5f), b = RandomFloats(C, 34, -0.5f, 0.5f);
  LayerNormRef(want.data(), rows, C, w.data(), b.data(), kEps, want_ln.data());
  float* dwte = ToDevice(wte);
  float* dwpe = ToDevice(wpe);
  int32_t* dtok = ToDevice(tok);
  int32_t* dpos = ToDevice(pos);
  float* dw = ToDevice(w);
  float* db = ToDevice(b);
  float* dx = DeviceAlloc<float>(n);
  float* dout = DeviceAlloc<float>(n);
  Poison(dx, n * 4);
  Poison(dout, n * 4);
  if (fused) {
    Check(tw::kernels::EmbedLayerNorm(dtok, dpos, rows, dwte, vocab, dwpe, n_ctx, C, dx, dw, db, kEps, dout, nullptr),
          "EmbedLayerNorm");
  } else {
    Check(tw::kernels::Embed(dtok, dpos, rows, dwte, vocab, dwpe, n_ctx, C, dx, nullptr), "Embed");
  }
  // Exact: the same float addition. NaN rows where the ids are bad.
  std::vector<float> got = ToHost(dx, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    if (!both_nan && std::memcmp(&got[i], &want[i], 4) != 0) bad++;
  }
  std::printf("  %-28s %s  %zu of %zu differ from wte + wpe (bitwise; bad ids -> NaN)\n",
              (std::string(fused ? "EmbedLayerNorm x" : "Embed") + " rows " + std::to_string(rows) +
               (vocab == kVocab ? "" : " V " + std::to_string(vocab)))
                  .c_str(),
              bad == 0 ? "ok  " : "FAIL", bad, n);
  bool ok = bad == 0;
  if (fused) {
    // The layer norm of the good rows only (NaN rows checked above).
    std::vector<float> got_ln = ToHost(dout, n);
    size_t lbad = 0;
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(want_ln[i])) {
        lbad += !std::isnan(got_ln[i]);
        continue;
      }
      lbad += !(std::fabs(got_ln[i] - want_ln[i]) <= 1e-5f + 1e-5f * std::fabs(want_ln[i]));
    }
    std::printf("  %-28s %s  %zu of %zu outside 1e-5 + 1e-5|ref|\n",
                ("EmbedLayerNorm out rows " + std::to_string(rows)).c_str(), lbad == 0 ? "ok  " : "FAIL", lbad, n);
    ok &= lbad == 0;
  }
  for (void* p : std::initializer_list<void*>{dwte, dwpe, dtok, dpos, dw, db, dx, dout}) CUDA_CHECK(cudaFree(p));
  return ok;
}

// ResidualAdd / ResidualLayerNorm: x must come out bitwise equal to the
// same float additions in the same order; out within the layer norm's
// tolerance of the double reference.
bool ValidateResidual(int rows, int C, int parts, bool with_bias, bool fused) {
  const size_t n = static_cast<size_t>(rows) * C;
  const size_t stride = n + 4 * 3;  // parts with a gap between them
  std::vector<float> x = StreamLike(rows, C, 41);
  std::vector<float> delta = RandomFloats(stride * parts, 42, -0.5f, 0.5f);
  std::vector<float> bias = RandomFloats(C, 43, -0.1f, 0.1f);
  std::vector<float> w = RandomFloats(C, 44, 0.5f, 1.5f), b = RandomFloats(C, 45, -0.5f, 0.5f);
  std::vector<float> want = x, want_ln(n);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < C; ++c) {
      float s = x[static_cast<size_t>(r) * C + c];
      if (with_bias) s += bias[c];
      for (int p = 0; p < parts; ++p) s += delta[p * stride + static_cast<size_t>(r) * C + c];
      want[static_cast<size_t>(r) * C + c] = s;
    }
  }
  LayerNormRef(want.data(), rows, C, w.data(), b.data(), kEps, want_ln.data());
  float* dx = ToDevice(x);
  float* dd = ToDevice(delta);
  float* dbias = ToDevice(bias);
  float* dw = ToDevice(w);
  float* db = ToDevice(b);
  float* dout = DeviceAlloc<float>(n);
  Poison(dout, n * 4);
  const float* bias_arg = with_bias ? dbias : nullptr;
  if (fused) {
    Check(tw::kernels::ResidualLayerNorm(dx, dd, parts, stride, bias_arg, rows, C, dw, db, kEps, dout, nullptr),
          "ResidualLayerNorm");
  } else {
    Check(tw::kernels::ResidualAdd(dx, dd, parts, stride, bias_arg, rows, C, nullptr), "ResidualAdd");
  }
  const std::string tag = std::string(fused ? "ResidualLayerNorm" : "ResidualAdd") + " p" + std::to_string(parts) +
                          (with_bias ? "+b" : "") + " r" + std::to_string(rows);
  // x: the same additions in the same order, so bit for bit (atol = rtol = 0).
  bool ok = Validate((tag + " x").c_str(), dx, want.data(), n, 0.0f, 0.0f);
  if (fused) ok &= Validate((tag + " out").c_str(), dout, want_ln.data(), n, 1e-5f, 1e-5f);
  for (void* p : std::initializer_list<void*>{dx, dd, dbias, dw, db, dout}) CUDA_CHECK(cudaFree(p));
  return ok;
}

bool ValidateLayerNormInPlace(int rows, int C) {
  const size_t n = static_cast<size_t>(rows) * C;
  std::vector<float> x = StreamLike(rows, C, 51);
  std::vector<float> w = RandomFloats(C, 52, 0.5f, 1.5f), b = RandomFloats(C, 53, -0.5f, 0.5f);
  std::vector<float> want(n);
  LayerNormRef(x.data(), rows, C, w.data(), b.data(), kEps, want.data());
  float* dx = ToDevice(x);
  float* dw = ToDevice(w);
  float* db = ToDevice(b);
  Check(tw::kernels::LayerNorm(dx, rows, C, dw, db, kEps, dx, nullptr), "LayerNorm in place");
  const bool ok = Validate(("LayerNorm in place r" + std::to_string(rows)).c_str(), dx, want.data(), n, 1e-5f, 1e-5f);
  for (void* p : std::initializer_list<void*>{dx, dw, db}) CUDA_CHECK(cudaFree(p));
  return ok;
}

// GELU over n floats starting `offset` floats into the buffer (offset 1..3:
// the scalar kernel; 0: float4 with a tail when n % 4 != 0).
bool ValidateGelu(size_t n, int offset) {
  std::vector<float> x = RandomFloats(n + offset, 61, -8.0f, 8.0f);
  if (n + offset > 4) {
    x[offset] = -30.0f;  // exp overflows to inf: -0
    x[offset + 1] = 30.0f;
  }
  std::vector<float> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = static_cast<float>(GeluRef(x[offset + i]));
  float* d = ToDevice(x);
  Check(tw::kernels::GeluTanh(d + offset, n, nullptr), "GeluTanh");
  const std::string name = "GeluTanh n " + std::to_string(n) + " +" + std::to_string(offset);
  // expf (2 ulp) and an IEEE division against a double reference.
  const bool ok = Validate(name.c_str(), d + offset, want.data(), n, 1e-7f, 2e-6f);
  CUDA_CHECK(cudaFree(d));
  return ok;
}

bool ValidateLaunchers() {
  std::printf("launchers: validation\n");
  bool ok = true;
  // CI: GPT-2's vocabulary in one call (the fused one at 8 rows, with the
  // out-of-range ids), 4099 tokens in the others.
  const bool ci = tw::dev::CiShapes();
  for (int rows : {1, 8, 32}) {
    ok &= ValidateEmbed(rows, 768, false, ci ? 4099 : kVocab);
    ok &= ValidateEmbed(rows, 768, true, ci && rows != 8 ? 4099 : kVocab);
  }
  ok &= ValidateEmbed(9, 64, true, ci ? 4099 : kVocab);
  for (int rows : {1, 7, 32}) {
    for (int parts : {1, 3}) {
      for (bool bias : {false, true}) {
        ok &= ValidateResidual(rows, 768, parts, bias, false);
        ok &= ValidateResidual(rows, 768, parts, bias, true);
      }
    }
  }
  ok &= ValidateResidual(5, 64, 16, true, true);
  ok &= ValidateResidual(3, 2048, 2, true, true);
  ok &= ValidateLayerNormInPlace(7, 768);
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{5}, size_t{1023}, size_t{32 * 4 * 768 + 3}}) {
    for (int offset : {0, 1}) ok &= ValidateGelu(n, offset);
  }
  return ok;
}

void TimeLaunchers(bool ok) {
  const int C = 768, vocab = kVocab, n_ctx = 1024;
  for (int rows : {1, 8, 32}) {
    const size_t n = static_cast<size_t>(rows) * C;
    float* wte = ToDevice(RandomFloats(static_cast<size_t>(vocab) * C, 71, -0.2f, 0.2f));
    float* wpe = ToDevice(RandomFloats(static_cast<size_t>(n_ctx) * C, 72, -0.1f, 0.1f));
    std::vector<int32_t> tok(rows), pos(rows);
    for (int r = 0; r < rows; ++r) tok[r] = (r * 7919) % vocab, pos[r] = (r * 31) % n_ctx;
    int32_t* dtok = ToDevice(tok);
    int32_t* dpos = ToDevice(pos);
    float* x = ToDevice(StreamLike(rows, C, 73));
    float* delta = ToDevice(RandomFloats(n * 4, 74, -0.01f, 0.01f));
    float* bias = ToDevice(RandomFloats(C, 75, -0.1f, 0.1f));
    float* w = ToDevice(RandomFloats(C, 76, 0.5f, 1.5f));
    float* b = ToDevice(RandomFloats(C, 77, -0.5f, 0.5f));
    float* out = DeviceAlloc<float>(n);
    float* fc = ToDevice(RandomFloats(n * 4, 78, -3.0f, 3.0f));
    Timed("Embed", rows, ok, 3.0 * n * 4, 1.0 * n, [&] {
      Check(tw::kernels::Embed(dtok, dpos, rows, wte, vocab, wpe, n_ctx, C, x, nullptr), "Embed");
    });
    Timed("EmbedLayerNorm", rows, ok, 4.0 * n * 4 + 2.0 * C * 4, 9.0 * n, [&] {
      Check(tw::kernels::EmbedLayerNorm(dtok, dpos, rows, wte, vocab, wpe, n_ctx, C, x, w, b, kEps, out, nullptr),
            "EmbedLayerNorm");
    });
    Timed("LayerNorm", rows, ok, 2.0 * n * 4 + 2.0 * C * 4, 8.0 * n,
          [&] { Check(tw::kernels::LayerNorm(x, rows, C, w, b, kEps, out, nullptr), "LayerNorm"); });
    Timed("ResidualAdd p1+b", rows, ok, 3.0 * n * 4 + C * 4.0, 2.0 * n, [&] {
      Check(tw::kernels::ResidualAdd(x, delta, 1, n, bias, rows, C, nullptr), "ResidualAdd");
    });
    Timed("ResidualLayerNorm p1+b", rows, ok, 4.0 * n * 4 + 3.0 * C * 4, 10.0 * n, [&] {
      Check(tw::kernels::ResidualLayerNorm(x, delta, 1, n, bias, rows, C, w, b, kEps, out, nullptr),
            "ResidualLayerNorm");
    });
    Timed("ResidualLayerNorm p4+b", rows, ok, 7.0 * n * 4 + 3.0 * C * 4, 13.0 * n, [&] {
      Check(tw::kernels::ResidualLayerNorm(x, delta, 4, n, bias, rows, C, w, b, kEps, out, nullptr),
            "ResidualLayerNorm");
    });
    // ~8 flops a float plus the exponential.
    Timed("GeluTanh (B, 4C)", rows, ok, 2.0 * n * 4 * 4, 8.0 * n * 4,
          [&] { Check(tw::kernels::GeluTanh(fc, n * 4, nullptr), "GeluTanh"); });
    for (void* p : std::initializer_list<void*>{wte, wpe, dtok, dpos, x, delta, bias, w, b, out, fc}) {
      CUDA_CHECK(cudaFree(p));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const tw::dev::Options opt =
      tw::dev::ParseOptions(argc, argv, {"1", "2", "3", "launchers"}, "only this layer norm version, or the launchers");
  int dev = 0;
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (opt.timing) tw::dev::MeasuredCeilings();
  bool all_ok = true;
  for (int v = 1; v <= 3; ++v) {
    if (!opt.only.empty() && opt.only != std::to_string(v)) continue;
    const bool ok = ValidateVersion(v);
    all_ok &= ok;
    if (opt.timing) TimeVersion(v, ok);
  }
  if (opt.only.empty() || opt.only == "launchers") {
    const bool ok = ValidateLaunchers();
    all_ok &= ok;
    if (opt.timing) {
      std::printf("launchers: timing (C = 768)\n");
      TimeLaunchers(ok);
    }
  }
  if (opt.timing) {
    std::printf("\n%-26s %6s %10s %9s\n", "kernel", "rows", "ms", "GB/s");
    for (const Row& r : g_table) {
      if (r.ok) std::printf("%-26s %6d %10.4f %9.0f\n", r.name.c_str(), r.rows, r.ms, r.gbps);
      else std::printf("%-26s %6d %10s %9s\n", r.name.c_str(), r.rows, "FAIL", "-");
    }
  }
  std::printf("%s\n", all_ok ? "all validations passed" : "SOME VALIDATIONS FAILED");
  return all_ok ? 0 : 1;
}
