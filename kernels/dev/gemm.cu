// Matmul development program (llm.c dev/cuda style): y (M, N) = epilogue(x (M, K) @ W (K, N) + bias)
// for GPT-2-small's matrices, each version validated against a CPU reference
// (double accumulation) at M = 1, 7, 8, 32, 33, 256, then timed at M = 1, 8,
// 32, 256 (median, L2 flushed). Then a sweep of every tiling of v2 and v3 at
// M = 1 and 32 (each validated), to tune kernels::MakeGemmPlan, and a table.
//
//   make CUDA=1 build/cuda/dev/gemm && build/cuda/dev/gemm [1|2|3] [--no-timing]
//
// No version: all three. --no-timing: the validations only (every tiling of
// the sweep still validated). TW_GPU_TEST_SHAPES=ci (validation only, for the
// CPU emulator): the same five matrices' epilogues, bias and packing at
// K = 128 (c_attn 128x384, attn.c_proj 128x128, mlp.c_fc 128x512), mlp.c_proj
// as K = 512 N = 130 (8 splits of K at 132 SMs; 2 at the sweep's widest
// tiling) and the LM head as 64x1025 (transposed packing, one split, a last
// panel of one column as at 50257); N = 130 and 1025 end in a part-full
// panel group. Rows M = 1, 7, 33, 65 (one to three row tiles of 32, the last
// partly filled); the sweep at M = 1 and 33. Every version as in the full run.
//
// Floors (GPT-2-small, fp32 weights, per decode step = 12 layers + LM head):
//   bytes  123.5M weights = 494 MB: 115 us at 4.3 TB/s (the H200's measured
//          copy rate), 103 us at 4.8 TB/s. Per matrix: c_attn 7.1 MB (1.6 us),
//          attn.c_proj 2.4 MB (0.55 us), mlp.c_fc 9.4 MB (2.2 us), mlp.c_proj
//          9.4 MB (2.2 us), LM head (768 x 50257) 154 MB (36 us).
//   flops  2 M x 123.5M: M = 1: 0.25 GFLOP (4 us at ~60 TFLOP/s fp32 FMA);
//          M = 8: 2.0 GFLOP (33 us); M = 32: 7.9 GFLOP (130 us: fp32 FMA is
//          compute-bound there, above the byte floor); M = 256: 63 GFLOP
//          (1.05 ms fp32; 3xTF32 issues 3x the tensor-core work, 190 GFLOP,
//          ~0.4-0.6 ms at the 495 TFLOP/s dense TF32 peak or what mma.sync
//          reaches of it).
//   Report() shows GB/s of weights + x + y (y twice for kAccumulate) and
//   TFLOP/s against the fp32 FMA ceiling (3xTF32's useful flops, not its 3x).
//
// Versions (the predictions, written before any GPU ran them; what an H200
// measured, 2026-12-04, bench/results/gpu-2026-12-04/kernels.log, follows):
//   v1 naive: one thread per output, W (K, N) row-major read down a column
//      (coalesced across threads), x broadcast. Reads W once per row of x
//      (M x the floor; L2 absorbs part of it at small matrices); at M = 1
//      only one 256-thread block per 256 columns: should reach a fair share
//      of bandwidth at M = 1 and fall off linearly with M.
//   v2 fp32 weight streaming (kernels/gemm.cu, kFp32): packed fragments, 8
//      per warp held in registers (32 KB in flight per CTA), x staged in
//      shared memory per 32-row tile, split-K with a deterministic last-CTA
//      reduction. Should be near the byte floor for M <= 8 and FMA-bound at
//      M = 32 (~2x the floor); at M = 256 x tiles are re-staged per row tile
//      (the weights stay in registers).
//   v3 3xTF32 mma.sync (same kernel, k3xTf32): 3 m16n8k8 MMAs per fragment
//      and row group instead of 64 FMAs per lane; should match v2 at M <= 8
//      (memory-bound) and be ~2-3x faster at M = 32 and 256.
//   (v4 bf16 weights: not written.)
// Measured on the H200 (copy ceiling 4229 GB/s): the predictions were wrong
// in both directions. v2 at M = 1 reaches 13-14% of the copy rate on the
// layer matrices (0.010-0.016 ms: launch and split-K latency, not bytes) and
// 36% on lm_head (0.101 ms), where naive v1 is faster (0.084 ms, 44%);
// 3xTF32 (v3) is no faster than v2 at M <= 8 and only 1.1-1.3x at M = 32 and
// 256 (lm_head M = 256: 1.46 ms vs 1.90), not 2-3x. A decode step of the 49
// matrix calls costs v2 0.745 ms at M = 1 against a 0.117 ms byte floor.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gemm_layout.h"
#include "kernels/dev/common.h"
#include "kernels/dev/cpu_reference.h"
#include "kernels/gemm.h"

namespace {

using tw::kernels::GemmPlan;
using tw::kernels::GemmPrecision;
using tw::kernels::GemmEpilogue;

// Rows timed at every shape.
constexpr int kTimeM[] = {1, 8, 32, 256};

struct Shape {
  const char* name;
  int K, N;
  GemmEpilogue epilogue;
  bool bias;
  bool lm_head;  // W = wte^T, packed from wte (N, K)
  int per_step;  // times per decode step (12 layers, or once)
};

// What a run validates: the matrices, the rows at each (the last is the
// most any run uses) and the rows of the tiling sweep.
struct Sizes {
  std::vector<Shape> shapes;
  std::vector<int> validate_m;
  std::vector<int> sweep_m;
};

const Sizes kGpt2Sizes = {
    {
        {"c_attn", 768, 2304, GemmEpilogue::kStore, true, false, 12},
        {"attn.c_proj", 768, 768, GemmEpilogue::kAccumulate, true, false, 12},
        {"mlp.c_fc", 768, 3072, GemmEpilogue::kGelu, true, false, 12},
        {"mlp.c_proj", 3072, 768, GemmEpilogue::kAccumulate, true, false, 12},
        {"lm_head", 768, 50257, GemmEpilogue::kStore, false, true, 1},
    },
    {1, 7, 8, 32, 33, 256},
    {1, 32},
};

// The CI sizes: the same epilogues, bias or none, and packing (plain or
// transposed) at width 128; mlp.c_proj's K = 512 splits K at every tiling
// of the sweep, N = 130 and 1025 (as 50257) end in a part-full panel and
// panel group. Rows: one, two and three row tiles of 32, the last partly
// filled; the sweep's second row tile has one row.
const Sizes kCiSizes = {
    {
        {"c_attn c128", 128, 384, GemmEpilogue::kStore, true, false, 12},
        {"attn.c_proj c128", 128, 128, GemmEpilogue::kAccumulate, true, false, 12},
        {"mlp.c_fc c128", 128, 512, GemmEpilogue::kGelu, true, false, 12},
        {"mlp.c_proj K512 N130", 512, 130, GemmEpilogue::kAccumulate, true, false, 12},
        {"lm_head V1025", 64, 1025, GemmEpilogue::kStore, false, true, 1},
    },
    {1, 7, 33, 65},
    {1, 33},
};

// ---- v1: naive, one thread per output ----------------------------------------

__device__ float DevGelu(float v) {
  const float x3 = __fmul_rn(__fmul_rn(v, v), v);
  const float u = __fmaf_rn(x3, 0.044715f, v);
  return __fdiv_rn(v, __fadd_rn(1.0f, expf(__fmul_rn(u, -2.0f * 0.7978845608028654f))));
}

__global__ void NaiveGemm(const float* x /*(M, K)*/, const float* w /*(K, N)*/, const float* bias /*(N)*/,
                          float* y /*(M, N)*/, int K, int N, int epilogue) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= N) return;
  const float* xr = x + static_cast<size_t>(row) * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(xr[k], w[static_cast<size_t>(k) * N + col], acc);
  if (bias != nullptr) acc += bias[col];
  float* out = y + static_cast<size_t>(row) * N + col;
  if (epilogue == static_cast<int>(GemmEpilogue::kGelu)) acc = DevGelu(acc);
  if (epilogue == static_cast<int>(GemmEpilogue::kAccumulate)) acc += *out;
  *out = acc;
}

// ---- data ------------------------------------------------------------------------

// max_m: the most rows the run uses (MakeData's argument).
struct Data {
  const Shape* s = nullptr;
  std::vector<float> w;      // (K, N)
  std::vector<float> bias;   // (N) or empty
  std::vector<float> x;      // (max_m, K)
  std::vector<float> y0;     // (max_m, N): the residual for kAccumulate
  std::vector<double> dot;   // (max_m, N): x @ W in double
  float* d_w = nullptr;      // (K, N), for v1
  float* d_packed = nullptr; // packed
  float* d_bias = nullptr;   // (N) or null
  float* d_x = nullptr;      // (max_m, K)
  float* d_y0 = nullptr;     // (max_m, N)
  float* d_y = nullptr;      // (max_m, N)
};

Data MakeData(const Shape& s, int max_m, uint64_t seed) {
  Data d;
  d.s = &s;
  const size_t K = s.K, N = s.N;
  std::vector<float> packed(tw::kernels::PackedGemmFloats(s.K, s.N));
  if (s.lm_head) {
    const std::vector<float> wte = tw::dev::RandomFloats(N * K, seed, -0.1f, 0.1f);  // (N, K)
    d.w.resize(K * N);
    for (size_t n = 0; n < N; ++n) {
      for (size_t k = 0; k < K; ++k) d.w[k * N + n] = wte[n * K + k];
    }
    tw::kernels::PackMatrixTransposed(wte.data(), s.N, s.K, packed.data());
  } else {
    d.w = tw::dev::RandomFloats(K * N, seed, -0.1f, 0.1f);
    tw::kernels::PackMatrix(d.w.data(), s.K, s.N, packed.data());
  }
  if (s.bias) d.bias = tw::dev::RandomFloats(N, seed + 1, -0.1f, 0.1f);
  d.x = tw::dev::RandomFloats(max_m * K, seed + 2);
  d.y0 = tw::dev::RandomFloats(max_m * N, seed + 3);
  d.dot.assign(max_m * N, 0.0);
  tw::dev::ParallelFor(max_m, [&](int r) {
    double* out = d.dot.data() + r * N;
    for (size_t k = 0; k < K; ++k) {
      const double xv = d.x[r * K + k];
      const float* wk = d.w.data() + k * N;
      for (size_t n = 0; n < N; ++n) out[n] += xv * wk[n];
    }
  });
  d.d_w = tw::dev::ToDevice(d.w);
  d.d_packed = tw::dev::ToDevice(packed);
  d.d_bias = s.bias ? tw::dev::ToDevice(d.bias) : nullptr;
  d.d_x = tw::dev::ToDevice(d.x);
  d.d_y0 = tw::dev::ToDevice(d.y0);
  d.d_y = tw::dev::DeviceAlloc<float>(max_m * N);
  return d;
}

void FreeData(Data* d) {
  for (float* p : {d->d_w, d->d_packed, d->d_bias, d->d_x, d->d_y0, d->d_y}) {
    if (p != nullptr) CUDA_CHECK(cudaFree(p));
  }
}

// The expected y for the first M rows.
std::vector<float> Expected(const Data& d, int M) {
  const int N = d.s->N;
  std::vector<float> out(static_cast<size_t>(M) * N);
  for (int r = 0; r < M; ++r) {
    for (int n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(r) * N + n;
      double v = d.dot[i] + (d.bias.empty() ? 0.0 : d.bias[n]);
      if (d.s->epilogue == GemmEpilogue::kGelu) v = tw::dev::GeluTanhRef(v);
      if (d.s->epilogue == GemmEpilogue::kAccumulate) v += d.y0[i];
      out[i] = static_cast<float>(v);
    }
  }
  return out;
}

// ---- running -------------------------------------------------------------------

struct Workspace {
  void* ptr = nullptr;
  size_t bytes = 0;
  void Reserve(size_t need) {
    if (need <= bytes) return;
    if (ptr != nullptr) CUDA_CHECK(cudaFree(ptr));
    CUDA_CHECK(cudaMalloc(&ptr, need));
    CUDA_CHECK(cudaMemset(ptr, 0, need));  // the counters start at zero
    bytes = need;
  }
};
Workspace g_ws;

GemmPrecision PrecisionOf(int version) { return version == 3 ? GemmPrecision::k3xTf32 : GemmPrecision::kFp32; }

void Launch(int version, const Data& d, const GemmPlan& plan, int M) {
  const Shape& s = *d.s;
  if (version == 1) {
    tw::kernels::Launch<NaiveGemm>(dim3((s.N + 255) / 256, M), 256, 0, nullptr, d.d_x, d.d_w, d.d_bias, d.d_y, s.K,
                                   s.N, static_cast<int>(s.epilogue));
    CUDA_CHECK(cudaGetLastError());
    return;
  }
  const tw::Status st = tw::kernels::Gemm(plan, {d.d_packed, s.K, s.N}, d.d_x, M, d.d_bias, d.d_y, s.epilogue,
                                          g_ws.ptr, g_ws.bytes, nullptr);
  if (!st.ok()) {
    std::fprintf(stderr, "Gemm failed: %s\n", st.message().c_str());
    std::exit(1);
  }
}

// y := y0 (kAccumulate) or NaN, then one launch.
void RunOnce(int version, const Data& d, const GemmPlan& plan, int M) {
  const size_t n = static_cast<size_t>(M) * d.s->N;
  if (d.s->epilogue == GemmEpilogue::kAccumulate) {
    CUDA_CHECK(cudaMemcpy(d.d_y, d.d_y0, n * sizeof(float), cudaMemcpyDeviceToDevice));
  } else {
    tw::dev::Poison(d.d_y, n * sizeof(float));
  }
  Launch(version, d, plan, M);
}

float Tolerance(int version) { return version == 3 ? 2e-4f : 1e-4f; }

// Quiet check: true if every element is within tolerance (and not NaN).
bool Check(const Data& d, int M, float tol, double* max_abs) {
  const size_t n = static_cast<size_t>(M) * d.s->N;
  std::vector<float> got(n);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(got.data(), d.d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  const std::vector<float> want = Expected(d, M);
  bool ok = true;
  *max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (std::isnan(e)) {
      ok = false;
      *max_abs = INFINITY;
      continue;
    }
    if (e > tol + tol * std::fabs(want[i])) ok = false;
    *max_abs = std::max(*max_abs, e);
  }
  return ok;
}

double MovedBytes(const Shape& s, int M) {
  const double y_passes = s.epilogue == GemmEpilogue::kAccumulate ? 2.0 : 1.0;
  return 4.0 * (static_cast<double>(s.K) * s.N + static_cast<double>(M) * s.K + y_passes * M * s.N);
}
double Flops(const Shape& s, int M) { return 2.0 * M * s.K * static_cast<double>(s.N); }

struct Timing {
  int version, shape, M;
  float ms;
};

}  // namespace

int main(int argc, char** argv) {
  const tw::dev::Options opt = tw::dev::ParseOptions(argc, argv, {"1", "2", "3"}, "only this version");
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs\n", prop.name, sms);
  if (opt.timing) tw::dev::MeasuredCeilings();
  {
    const tw::Status st = tw::kernels::GemmInit();
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
  }

  std::vector<int> versions;
  for (int v = 1; v <= 3; ++v) {
    if (opt.only.empty() || opt.only == std::to_string(v)) versions.push_back(v);
  }
  const Sizes& sizes = tw::dev::CiShapes() ? kCiSizes : kGpt2Sizes;
  const std::vector<Shape>& shapes = sizes.shapes;
  const int max_m = sizes.validate_m.back();
  const int shape_count = static_cast<int>(shapes.size());
  std::vector<Timing> timings;
  bool all_ok = true;

  for (int si = 0; si < shape_count; ++si) {
    const Shape& s = shapes[si];
    Data d = MakeData(s, max_m, 1000 + si);
    std::printf("\n== %s: K=%d N=%d, epilogue %s%s\n", s.name, s.K, s.N, tw::kernels::GemmEpilogueName(s.epilogue),
                s.bias ? " + bias" : "");
    for (int v : versions) {
      const GemmPlan plan = tw::kernels::MakeGemmPlan(s.K, s.N, sms, PrecisionOf(v));
      if (v > 1) {
        g_ws.Reserve(tw::kernels::GemmWorkspaceBytes(plan, max_m));
        std::printf(" v%d plan: %s\n", v, tw::kernels::DescribeGemmPlan(plan).c_str());
      }
      for (int M : sizes.validate_m) {
        RunOnce(v, d, plan, M);
        char name[64];
        std::snprintf(name, sizeof(name), "v%d M=%d", v, M);
        const std::vector<float> want = Expected(d, M);
        all_ok &= tw::dev::Validate(name, d.d_y, want.data(), want.size(), Tolerance(v), Tolerance(v));
      }
      if (!opt.timing) continue;
      for (int M : kTimeM) {
        const int repeats = v == 1 && M >= 32 ? 5 : 20;
        const float ms = tw::dev::Benchmark(repeats, [&] { Launch(v, d, plan, M); });
        char name[64];
        std::snprintf(name, sizeof(name), "%s v%d M=%d", s.name, v, M);
        tw::dev::Report(name, ms, MovedBytes(s, M), Flops(s, M));
        timings.push_back({v, si, M, ms});
      }
    }

    // Every tiling of v2 / v3 at M = 1 and 32 (CI: 33), validated; timed,
    // the fastest vs the default.
    for (int v : versions) {
      if (v == 1) continue;
      const GemmPlan def = tw::kernels::MakeGemmPlan(s.K, s.N, sms, PrecisionOf(v));
      for (int M : sizes.sweep_m) {
        float def_ms = 0, best_ms = 1e30f;
        GemmPlan best = def;
        int tilings = 0, valid = 0;
        for (int P : {1, 2, 4, 8}) {
          for (int KW : {1, 2, 4, 8}) {
            const GemmPlan plan = tw::kernels::MakeGemmPlanWith(s.K, s.N, PrecisionOf(v), P, KW);
            if (!tw::kernels::CheckGemmPlan(plan).ok()) continue;
            ++tilings;
            g_ws.Reserve(tw::kernels::GemmWorkspaceBytes(plan, max_m));
            RunOnce(v, d, plan, M);
            double max_abs = 0;
            if (!Check(d, M, Tolerance(v), &max_abs)) {
              std::printf("  FAIL sweep v%d M=%d %s: max|d| %.3e\n", v, M, tw::kernels::DescribeGemmPlan(plan).c_str(),
                          max_abs);
              all_ok = false;
              continue;
            }
            ++valid;
            if (!opt.timing) continue;
            const float ms = tw::dev::Benchmark(10, [&] { Launch(v, d, plan, M); });
            if (P == def.panels_per_cta && KW == def.ksteps_per_warp) def_ms = ms;
            if (ms < best_ms) {
              best_ms = ms;
              best = plan;
            }
          }
        }
        if (opt.timing) {
          std::printf("  sweep v%d M=%-3d default %.4f ms | best %.4f ms (%.2fx): %s\n", v, M, def_ms, best_ms,
                      best_ms > 0 ? def_ms / best_ms : 0.0, tw::kernels::DescribeGemmPlan(best).c_str());
        } else {
          std::printf("  sweep v%d M=%-3d %s  %d of %d tilings valid\n", v, M, valid == tilings ? "ok  " : "FAIL",
                      valid, tilings);
        }
      }
    }
    FreeData(&d);
  }

  if (opt.timing) {
    // Compact table: ms per matrix, and a decode step's matmuls (12 layers + head).
    std::printf("\n%-12s %-4s", "matrix", "ver");
    for (int M : kTimeM) std::printf("  M=%-4d ms", M);
    std::printf("\n");
    for (int v : versions) {
      std::vector<double> step(std::size(kTimeM), 0.0);
      for (int si = 0; si < shape_count; ++si) {
        std::printf("%-12s v%-3d", shapes[si].name, v);
        for (size_t mi = 0; mi < std::size(kTimeM); ++mi) {
          for (const Timing& t : timings) {
            if (t.version == v && t.shape == si && t.M == kTimeM[mi]) {
              std::printf("  %9.4f", t.ms);
              step[mi] += t.ms * shapes[si].per_step;
            }
          }
        }
        std::printf("\n");
      }
      std::printf("%-12s v%-3d", "step (x12+1)", v);
      for (double ms : step) std::printf("  %9.4f", ms);
      std::printf("   (floor %.3f ms: 494 MB at the measured copy rate)\n",
                  494e6 / (tw::dev::MeasuredCeilings().copy_gbps * 1e9) * 1e3);
    }
  }
  std::printf("\n%s\n", all_ok ? "all validations passed" : "SOME VALIDATIONS FAILED");
  if (g_ws.ptr != nullptr) CUDA_CHECK(cudaFree(g_ws.ptr));
  return all_ok ? 0 : 1;
}
