// The weight-streaming matmul (see gemm.h for the contract and
// src/cuda/gemm_layout.h for the packed layout and the plan).
//
// One CTA = 8 warps = (P panels) x (8 / P warps per panel), for one split of
// K (blockIdx.y) and one panel group (blockIdx.x). Warp w works on panel
// w / (8/P) of the group and on k-steps [ksub * KW, ksub * KW + KW) of the
// split, ksub = w % (8/P). Per row tile of 32 rows:
//   1. stage x (32 rows x the split's 8 * KR values of k) in shared memory,
//      in the order the warps read it (zero beyond M and K);
//   2. each warp: acc (32 rows x 16 columns) over its KW fragments;
//   3. the warps' tiles go to shared memory (over the x tile), summed in
//      warp order per panel; then the epilogue to y, or the split's partial
//      tile to the workspace.
// After the last row tile, a split CTA bumps its group's counter; the last
// of the S CTAs sums the S partials in split order, applies the epilogue
// and resets the counter.
#include "kernels/gemm.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/common.cuh"
#include "kernels/ptx.cuh"

namespace tw::kernels {

namespace {

using kernels::GemmPlan;
using kernels::GemmPrecision;

constexpr int kThreads = kernels::kGemmThreads;  // 256
constexpr int kRowTile = kernels::kGemmRowTile;  // 32
constexpr int kMaxKW = kernels::kGemmMaxWarpKSteps;
// A warp's partial tile in shared memory: 32 rows of 16 columns, 20 floats
// apart (the mma layout's stores hit 32 distinct banks: 2t*20 + g mod 32).
constexpr int kRedStride = 20;
constexpr int kRedWarpFloats = kRowTile * kRedStride;
// Largest dynamic shared memory of any plan (the 3xTF32 x tile at 32 k-steps).
constexpr int kMaxSharedBytes = kernels::kGemmMaxCtaKSteps * 2048;

struct GemmArgs {
  const float4* w;         // packed (panels, ksteps, 32 lanes, 4)
  const float* x;          // (M, K)
  const float* bias;       // (N) or null
  float* y;                // (M, N)
  float* partials;         // (groups, S, M, TP) when S > 1
  unsigned int* counters;  // (groups) when S > 1
  int M, K, N;
  int ksteps, panels;
  int P, WP, KW, KR, S;    // panels per CTA, warps per panel, k-steps per warp / per split, splits
  int log2_kr;             // log2(KR)
  int log2_tp;             // log2(TP), TP = 16 P columns per CTA
  int epilogue;            // GemmEpilogue
};

// tf32 bits of v: to nearest, ties away from zero, low 13 bits zero, NaN
// kept (kernels::Tf32RoundBits, which kernels::RoundToTf32 uses on the host).
__device__ __forceinline__ uint32_t Tf32Bits(float v) { return Tf32RoundBits(__float_as_uint(v)); }

__device__ __forceinline__ void SplitTf32(float v, uint32_t& big, uint32_t& small) {
  big = Tf32Bits(v);
  small = Tf32Bits(__fsub_rn(v, __uint_as_float(big)));
}

// As cpu::GeluTanh: x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
__device__ __forceinline__ float GeluTanh(float v) {
  const float x3 = __fmul_rn(__fmul_rn(v, v), v);
  const float u = __fmaf_rn(x3, 0.044715f, v);
  const float e = expf(__fmul_rn(u, -2.0f * 0.7978845608028654f));
  return __fdiv_rn(v, __fadd_rn(1.0f, e));
}

// y[row][col] from the finished sum over K.
__device__ __forceinline__ void Finish(const GemmArgs& a, int row, int col, float v) {
  if (a.bias != nullptr) v = __fadd_rn(v, __ldg(a.bias + col));
  float* out = a.y + static_cast<size_t>(row) * a.N + col;
  if (a.epilogue == static_cast<int>(GemmEpilogue::kGelu)) {
    v = GeluTanh(v);
  } else if (a.epilogue == static_cast<int>(GemmEpilogue::kAccumulate)) {
    v = __fadd_rn(*out, v);
  }
  *out = v;
}

// Stages rows [row0, row0 + nrows) of x, k in this split's range, as pairs
// (x[r][8s + t], x[r][8s + t + 4]) -- the two values of k a lane t uses in
// k-step s -- zero beyond M and K.
//   3xTF32: uint4 {big0, big1, small0, small1} at ((r/8) * KR + s) * 32 + 4 (r%8) + t
//           (the mma's B fragment of lane 4g + t for row group r/8);
//   fp32:   float2 at ((s * 16 + r/2) * 4 + t) * 2 + r%2
//           (one float4 per row pair and lane t: rows 2rp and 2rp + 1).
template <bool kTf32>
__device__ __forceinline__ void StageX(const GemmArgs& a, float4* smem, int row0, int nrows, int split) {
  const int rows_staged = kTf32 ? (nrows + 7) & ~7 : (nrows + 1) & ~1;
  const int per_row_log2 = a.log2_kr + 2;  // KR k-steps x 4 lanes
  const int total = rows_staged << per_row_log2;
  const int k_base = split * a.KR * 8;
  for (int e = threadIdx.x; e < total; e += kThreads) {
    const int r = e >> per_row_log2;
    const int q = e & ((1 << per_row_log2) - 1);
    const int s = q >> 2, t = q & 3;
    const int k = k_base + s * 8 + t;
    float v0 = 0.0f, v1 = 0.0f;
    if (r < nrows) {
      const float* xr = a.x + static_cast<size_t>(row0 + r) * a.K;
      if (k < a.K) v0 = __ldg(xr + k);
      if (k + 4 < a.K) v1 = __ldg(xr + k + 4);
    }
    if constexpr (kTf32) {
      uint4 o;
      SplitTf32(v0, o.x, o.z);
      SplitTf32(v1, o.y, o.w);
      reinterpret_cast<uint4*>(smem)[((r >> 3) * a.KR + s) * 32 + (r & 7) * 4 + t] = o;
    } else {
      reinterpret_cast<float2*>(smem)[((s * 16 + (r >> 1)) * 4 + t) * 2 + (r & 1)] = make_float2(v0, v1);
    }
  }
}

template <bool kTf32>
__global__ void __launch_bounds__(kThreads, 2) GemmKernel(const GemmArgs a) {
  TW_DYNAMIC_SHARED(float4, smem);
  __shared__ int s_last;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int group = blockIdx.x, split = blockIdx.y;
  const int p_local = warp / a.WP, ksub = warp % a.WP;
  const int panel = group * a.P + p_local;
  const int s_first = ksub * a.KW;             // first k-step of this warp in the split
  const int kstep0 = split * a.KR + s_first;   // ... in the matrix
  const int kw = panel < a.panels ? max(0, min(a.KW, a.ksteps - kstep0)) : 0;
  const int TP = a.P * 16;

  // This warp's fragments, loaded once (they stay in registers for every
  // row tile): lane's {W[t][g], W[t][g+8], W[t+4][g], W[t+4][g+8]} of each.
  float4 wf[kMaxKW];
  const float4* wsrc = a.w + (static_cast<size_t>(panel) * a.ksteps + kstep0) * 32 + lane;
#pragma unroll
  for (int f = 0; f < kMaxKW; ++f) wf[f] = f < kw ? __ldcs(wsrc + f * 32) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  float* red = reinterpret_cast<float*>(smem);  // (8 warps, 32 rows, kRedStride), over the x tile
  float* red_warp = red + warp * kRedWarpFloats;
  const int row_tiles = (a.M + kRowTile - 1) / kRowTile;
  for (int rt = 0; rt < row_tiles; ++rt) {
    const int row0 = rt * kRowTile;
    const int nrows = min(kRowTile, a.M - row0);
    if (rt > 0) __syncthreads();  // the previous tile's reduction has read shared memory
    StageX<kTf32>(a, smem, row0, nrows, split);
    __syncthreads();

    if constexpr (kTf32) {
      const int ngroups = (nrows + 7) >> 3;
      const uint4* xs = reinterpret_cast<const uint4*>(smem);
      float acc[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
#pragma unroll
      for (int f = 0; f < kMaxKW; ++f) {
        if (f < kw) {
          uint32_t ab[4], as[4];
          SplitTf32(wf[f].x, ab[0], as[0]);
          SplitTf32(wf[f].y, ab[1], as[1]);
          SplitTf32(wf[f].z, ab[2], as[2]);
          SplitTf32(wf[f].w, ab[3], as[3]);
#pragma unroll
          for (int rg = 0; rg < 4; ++rg) {
            if (rg < ngroups) {
              const uint4 xv = xs[(rg * a.KR + s_first + f) * 32 + lane];
              MmaTf32(acc[rg], as, xv.x, xv.y);  // small(W) * big(x)
              MmaTf32(acc[rg], ab, xv.z, xv.w);  // big(W) * small(x)
              MmaTf32(acc[rg], ab, xv.x, xv.y);  // big(W) * big(x)
            }
          }
        }
      }
      __syncthreads();  // every warp is done with the x tile
      // acc[rg]: (column g, row 8rg + 2t), (g, 8rg + 2t + 1), (g + 8, 8rg + 2t), (g + 8, 8rg + 2t + 1)
#pragma unroll
      for (int rg = 0; rg < 4; ++rg) {
        if (rg < ngroups) {
          float* r0 = red_warp + (rg * 8 + 2 * t) * kRedStride;
          r0[g] = acc[rg][0];
          r0[kRedStride + g] = acc[rg][1];
          r0[g + 8] = acc[rg][2];
          r0[kRedStride + g + 8] = acc[rg][3];
        }
      }
    } else {
      const int npairs = (nrows + 1) >> 1;
      const float4* xf = smem;
      // acc[r][c]: row r, column g + 8c, over this lane's k = t and t + 4 of each k-step.
      float acc[kRowTile][2];
#pragma unroll
      for (int r = 0; r < kRowTile; ++r) acc[r][0] = acc[r][1] = 0.0f;
#pragma unroll
      for (int f = 0; f < kMaxKW; ++f) {
        if (f < kw) {
          const float4 wv = wf[f];
#pragma unroll
          for (int rp = 0; rp < kRowTile / 2; ++rp) {
            if (rp < npairs) {
              const float4 xv = xf[((s_first + f) * 16 + rp) * 4 + t];
              // Per (row, column): k = t first, then k = t + 4.
              acc[2 * rp][0] = __fmaf_rn(wv.x, xv.x, acc[2 * rp][0]);
              acc[2 * rp][0] = __fmaf_rn(wv.z, xv.y, acc[2 * rp][0]);
              acc[2 * rp][1] = __fmaf_rn(wv.y, xv.x, acc[2 * rp][1]);
              acc[2 * rp][1] = __fmaf_rn(wv.w, xv.y, acc[2 * rp][1]);
              acc[2 * rp + 1][0] = __fmaf_rn(wv.x, xv.z, acc[2 * rp + 1][0]);
              acc[2 * rp + 1][0] = __fmaf_rn(wv.z, xv.w, acc[2 * rp + 1][0]);
              acc[2 * rp + 1][1] = __fmaf_rn(wv.y, xv.z, acc[2 * rp + 1][1]);
              acc[2 * rp + 1][1] = __fmaf_rn(wv.w, xv.w, acc[2 * rp + 1][1]);
            }
          }
        }
      }
      __syncthreads();  // every warp is done with the x tile
      // Sum the 4 lanes of a column (fixed xor tree: every lane gets the
      // same bits), then lane t writes rows r = t mod 4.
#pragma unroll
      for (int r = 0; r < kRowTile; ++r) {
        if ((r >> 1) < npairs) {
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            float v = acc[r][c];
            v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
            v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
            if ((r & 3) == t) red_warp[r * kRedStride + g + 8 * c] = v;
          }
        }
      }
    }
    __syncthreads();

    // The CTA's tile (nrows x TP): warps of each panel summed in warp order.
    for (int e = tid; e < (nrows << a.log2_tp); e += kThreads) {
      const int r = e >> a.log2_tp, c = e & (TP - 1);
      const float* src = red + (c >> 4) * a.WP * kRedWarpFloats + r * kRedStride + (c & 15);
      float v = src[0];
      for (int wi = 1; wi < a.WP; ++wi) v = __fadd_rn(v, src[wi * kRedWarpFloats]);
      const int col = group * TP + c;
      if (col < a.N) {
        const int row = row0 + r;
        if (a.S == 1) {
          Finish(a, row, col, v);
        } else {
          a.partials[((static_cast<size_t>(group) * a.S + split) * a.M + row) * TP + c] = v;
        }
      }
    }
  }

  if (a.S > 1) {
    // Publish this split's partials; the last CTA of the group sums them.
    __threadfence();
    __syncthreads();
    if (tid == 0) s_last = atomicAdd(a.counters + group, 1u) == static_cast<unsigned>(a.S - 1);
    __syncthreads();
    if (s_last) {
      __threadfence();
      const size_t split_stride = static_cast<size_t>(a.M) * TP;
      const float* base = a.partials + static_cast<size_t>(group) * a.S * split_stride;
      const int total = a.M << a.log2_tp;
      for (int e = tid; e < total; e += kThreads) {
        const int col = group * TP + (e & (TP - 1));
        if (col >= a.N) continue;
        const float* p = base + e;
        float v = __ldcg(p);
        for (int s = 1; s < a.S; ++s) v = __fadd_rn(v, __ldcg(p + s * split_stride));
        Finish(a, e >> a.log2_tp, col, v);
      }
      if (tid == 0) atomicExch(a.counters + group, 0u);
    }
  }
}

int Log2(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

std::string Str(long long v) { return std::to_string(v); }

bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const uintptr_t a0 = reinterpret_cast<uintptr_t>(a), b0 = reinterpret_cast<uintptr_t>(b);
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

// Raises the kernel's dynamic shared-memory limit once (first call wins; the
// result is kept for later calls).
template <bool kTf32>
cudaError_t AllowSharedMemory() {
  static const cudaError_t err =
      cudaFuncSetAttribute(GemmKernel<kTf32>, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSharedBytes);
  return err;
}

}  // namespace

const char* GemmEpilogueName(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kStore: return "store";
    case GemmEpilogue::kGelu: return "gelu";
    case GemmEpilogue::kAccumulate: return "accumulate";
  }
  return "unknown";
}

Status GemmInit() {
  if (cudaError_t err = AllowSharedMemory<false>(); err != cudaSuccess) {
    return CudaStatus(err, "GemmInit: cudaFuncSetAttribute(fp32 kernel, MaxDynamicSharedMemorySize)");
  }
  if (cudaError_t err = AllowSharedMemory<true>(); err != cudaSuccess) {
    return CudaStatus(err, "GemmInit: cudaFuncSetAttribute(3xtf32 kernel, MaxDynamicSharedMemorySize)");
  }
  return Status::Ok();
}

Status Gemm(const GemmPlan& plan, const kernels::PackedMatrixView& w, const float* x, int M, const float* bias,
            float* y, GemmEpilogue epilogue, void* workspace, size_t workspace_bytes, void* stream) {
  if (Status s = kernels::CheckGemmPlan(plan); !s.ok()) return Status::Error("Gemm: " + s.message());
  if (w.data == nullptr) return Status::Error("Gemm: w.data is null");
  if (w.K != plan.K || w.N != plan.N) {
    return Status::Error("Gemm: packed matrix is (K=" + Str(w.K) + ", N=" + Str(w.N) + ") but the plan is for (K=" +
                         Str(plan.K) + ", N=" + Str(plan.N) + ")");
  }
  if (reinterpret_cast<uintptr_t>(w.data) % 16 != 0) {
    return Status::Error("Gemm: w.data must be 16-byte aligned, address ends in 0x" +
                         Str(reinterpret_cast<uintptr_t>(w.data) % 16));
  }
  if (x == nullptr || y == nullptr) {
    return Status::Error(std::string("Gemm: ") + (x == nullptr ? "x" : "y") + " is null");
  }
  if (M < 1 || M > kernels::kGemmMaxRows) {
    return Status::Error("Gemm: M = " + Str(M) + " rows, want 1.." + Str(kernels::kGemmMaxRows));
  }
  if (reinterpret_cast<uintptr_t>(x) % 4 != 0 || reinterpret_cast<uintptr_t>(y) % 4 != 0 ||
      reinterpret_cast<uintptr_t>(bias) % 4 != 0) {
    return Status::Error("Gemm: x, y and bias must be 4-byte aligned");
  }
  const int e = static_cast<int>(epilogue);
  if (e < 0 || e > 2) return Status::Error("Gemm: epilogue = " + Str(e) + ", want kStore, kGelu or kAccumulate");
  const size_t x_bytes = static_cast<size_t>(M) * plan.K * sizeof(float);
  const size_t y_bytes = static_cast<size_t>(M) * plan.N * sizeof(float);
  if (Overlap(x, x_bytes, y, y_bytes)) return Status::Error("Gemm: x (M, K) and y (M, N) overlap");
  if (plan.splits > 1) {
    const size_t need = kernels::GemmWorkspaceBytes(plan, M);
    if (workspace == nullptr || workspace_bytes < need) {
      return Status::Error("Gemm: a plan with " + Str(plan.splits) + " splits needs a workspace of " + Str(need) +
                           " bytes for M = " + Str(M) + ", got " + Str(workspace == nullptr ? 0 : workspace_bytes) +
                           (workspace == nullptr ? " (null)" : ""));
    }
    if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0) return Status::Error("Gemm: workspace must be 16-byte aligned");
    if (Overlap(workspace, need, y, y_bytes) || Overlap(workspace, need, x, x_bytes)) {
      return Status::Error("Gemm: the workspace overlaps x or y");
    }
  }

  const bool tf32 = plan.precision == GemmPrecision::k3xTf32;
  if (Status s = GemmInit(); !s.ok()) return s;

  GemmArgs a;
  a.w = reinterpret_cast<const float4*>(w.data);
  a.x = x;
  a.bias = bias;
  a.y = y;
  a.counters = static_cast<unsigned int*>(workspace);
  a.partials = workspace == nullptr ? nullptr
                                    : reinterpret_cast<float*>(static_cast<char*>(workspace) + kernels::kGemmCounterBytes);
  a.M = M;
  a.K = plan.K;
  a.N = plan.N;
  a.ksteps = kernels::GemmKSteps(plan.K);
  a.panels = kernels::GemmPanels(plan.N);
  a.P = plan.panels_per_cta;
  a.WP = plan.warps_per_panel();
  a.KW = plan.ksteps_per_warp;
  a.KR = plan.cta_ksteps();
  a.S = plan.splits;
  a.log2_kr = Log2(a.KR);
  a.log2_tp = Log2(plan.tile_cols());
  a.epilogue = e;

  const dim3 grid(static_cast<unsigned>(plan.panel_groups()), static_cast<unsigned>(plan.splits));
  const size_t smem = kernels::GemmSharedBytes(plan);
  if (tf32) {
    Launch<GemmKernel<true>>(grid, kThreads, smem, AsStream(stream), a);
  } else {
    Launch<GemmKernel<false>>(grid, kThreads, smem, AsStream(stream), a);
  }
  TW_LAUNCH_CHECK("Gemm: kernel launch");
  return Status::Ok();
}

}  // namespace tw::kernels
