// The host side of the CUDA matmuls (kernels/gemm.h): how a weight matrix is
// packed for the kernel, the launch plan of each matrix, and the size of the
// split-K workspace. Plain C++ (no CUDA headers): the runner packs at load
// time and plans once at start-up; the CPU-only test suite checks all of it.
//
// Packed layout ("fragment-major"). A weight W of logical shape (K, N)
// (Hugging Face Conv1D: y = x @ W) is cut into panels of 16 output columns
// and k-steps of 8 rows; each 16 x 8 block is one fragment of 128 floats,
// stored as 32 lanes x 4 floats, exactly the A operand of the tensor cores'
// mma.m16n8k8 (weight columns on the MMA's M side, batch rows on its N side):
//
//   lane = 4 * (n % 8) + (k % 4),  register = (n % 16) / 8 + 2 * ((k % 8) / 4)
//   packed[((panel * ksteps + kstep) * 32 + lane) * 4 + register] = W[k][n]
//
// so a warp reads one fragment as one 16-byte load per lane (512 contiguous
// bytes). Panels are stored one after another, each with all its k-steps in
// order; columns n >= N and rows k >= K are zero. The fp32 and the 3xTF32
// kernels read the same layout (the precision is chosen per plan, i.e. per
// call). PackedGemmFloats(K, N) is a multiple of 128 floats, so matrices
// packed back to back in one slab whose base is 16-byte aligned stay 16-byte
// aligned (the kernel requires it).
//
// Plan. A CTA of 8 warps owns `panels_per_cta` panels (P) of one split of K;
// each panel's k-range in the split is shared by 8 / P warps, each streaming
// `ksteps_per_warp` (KW) consecutive fragments into registers, where they stay
// for every row tile of x. A split covers (8 / P) * KW k-steps (at most 32,
// i.e. 256 values of k: the x tile in shared memory) and `splits` =
// ceil(ksteps / that). The plan is a function of (K, N, SM count) only,
// never of the number of rows M: this is what keeps a row's result bitwise
// independent of the batch it is in (the reduction order over k is fixed by
// the plan). A plan with splits > 1 reduces the splits' partial sums in split
// order, in the last CTA of each panel group to finish (an integer counter
// per group in the workspace; no float atomics).
//
// Workspace: one device buffer per stream, zeroed once after allocation,
// GemmWorkspaceBytes(plan, max_rows) bytes for every plan it serves (take the
// maximum). Its first kGemmCounterBytes hold the per-group counters, which
// every call leaves at zero again; the partial sums follow. Two matmuls
// sharing a workspace must not run concurrently.
//
// Threads: pure functions of their arguments, callable from any thread.
// Allocation: none (the caller owns every buffer). Never: touches the GPU.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/host_device.h"
#include "common/status.h"

namespace tw::kernels {

inline constexpr int kGemmPanelCols = 16;         // output columns per panel (MMA M)
inline constexpr int kGemmKStep = 8;              // k values per fragment (MMA K)
inline constexpr int kGemmFragmentFloats = 128;   // 16 x 8 weights, 32 lanes x 4
inline constexpr int kGemmWarps = 8;              // warps per CTA
inline constexpr int kGemmThreads = 32 * kGemmWarps;
inline constexpr int kGemmRowTile = 32;           // rows of x per pass of a CTA
inline constexpr int kGemmMaxWarpKSteps = 8;      // fragments a warp keeps in registers
inline constexpr int kGemmMaxCtaKSteps = 32;      // k-steps of one split (x tile: 32 x 256)
inline constexpr int kGemmMaxRows = 1 << 20;      // M limit (int indexing of a panel group's rows)
inline constexpr int kGemmMaxCounterTiles = 8192; // panel groups of a split plan
inline constexpr size_t kGemmCounterBytes = sizeof(uint32_t) * kGemmMaxCounterTiles;

enum class GemmPrecision : int {
  kFp32 = 0,     // fp32 FMA: the exact reference path
  k3xTf32 = 1,   // tensor cores, each operand split into tf32 big + small: ~fp32 accuracy
};

inline const char* GemmPrecisionName(GemmPrecision p) {
  return p == GemmPrecision::kFp32 ? "fp32" : p == GemmPrecision::k3xTf32 ? "3xtf32" : "unknown";
}

inline constexpr int GemmKSteps(int K) { return (K + kGemmKStep - 1) / kGemmKStep; }
inline constexpr int GemmPanels(int N) { return (N + kGemmPanelCols - 1) / kGemmPanelCols; }

// Floats of a packed (K, N) matrix (64-bit: the LM head of a large vocabulary
// at large K passes 2^31).
inline constexpr size_t PackedGemmFloats(int K, int N) {
  return static_cast<size_t>(GemmPanels(N)) * static_cast<size_t>(GemmKSteps(K)) * kGemmFragmentFloats;
}

// Where W[k][n] (0 <= k < K, 0 <= n < N) lives in the packed matrix.
inline constexpr size_t PackedGemmIndex(int K, int k, int n) {
  const int m = n % kGemmPanelCols, kk = k % kGemmKStep;
  const int lane = 4 * (m % 8) + kk % 4;
  const int reg = m / 8 + 2 * (kk / 4);
  const size_t fragment = static_cast<size_t>(n / kGemmPanelCols) * static_cast<size_t>(GemmKSteps(K)) +
                          static_cast<size_t>(k / kGemmKStep);
  return (fragment * 32 + static_cast<size_t>(lane)) * 4 + static_cast<size_t>(reg);
}

// A packed matrix on the device, as the kernel reads it.
struct PackedMatrixView {
  const float* data = nullptr;  // device, PackedGemmFloats(K, N) floats, 16-byte aligned
  int K = 0;                    // inner dimension (rows of W)
  int N = 0;                    // output columns
};

// w: (K, N) row-major, Hugging Face Conv1D layout. dst: PackedGemmFloats(K, N)
// floats (padding written as zeros).
void PackMatrix(const float* w, int K, int N, float* dst);
// wt: (N, K) row-major (the tied LM head wte, (V, C)): packs wt^T, i.e. the
// matrix of shape (K, N) with W[k][n] = wt[n][k].
void PackMatrixTransposed(const float* wt, int N, int K, float* dst);
// W[k][n] read back from a packed matrix (tests).
inline float UnpackElement(const float* packed, int K, int k, int n) { return packed[PackedGemmIndex(K, k, n)]; }

struct GemmPlan {
  int K = 0;
  int N = 0;
  GemmPrecision precision = GemmPrecision::kFp32;
  int panels_per_cta = 1;   // P: 1, 2, 4 or 8
  int ksteps_per_warp = 1;  // KW: 1, 2, 4 or 8
  int splits = 1;           // S = ceil(GemmKSteps(K) / cta_ksteps())

  int warps_per_panel() const { return kGemmWarps / panels_per_cta; }
  int cta_ksteps() const { return warps_per_panel() * ksteps_per_warp; }
  int panel_groups() const { return (GemmPanels(N) + panels_per_cta - 1) / panels_per_cta; }
  int tile_cols() const { return panels_per_cta * kGemmPanelCols; }
  // Output columns rounded up to whole panel groups (the partials' row length).
  size_t padded_cols() const { return static_cast<size_t>(panel_groups()) * tile_cols(); }
  long long ctas() const { return static_cast<long long>(panel_groups()) * splits; }
};

// A plan with the given tiling; splits follows from K. Check it with
// CheckGemmPlan (e.g. P = 1 with KW = 8 spans 64 k-steps: refused).
inline GemmPlan MakeGemmPlanWith(int K, int N, GemmPrecision precision, int panels_per_cta, int ksteps_per_warp) {
  GemmPlan p;
  p.K = K;
  p.N = N;
  p.precision = precision;
  p.panels_per_cta = panels_per_cta;
  p.ksteps_per_warp = ksteps_per_warp;
  const int span = panels_per_cta > 0 && ksteps_per_warp > 0 ? p.cta_ksteps() : 0;
  p.splits = span > 0 && K > 0 ? (GemmKSteps(K) + span - 1) / span : 0;
  return p;
}

// The plan the server uses for a (K, N) matrix on a device with `sm_count`
// multiprocessors. Prefers 2 panels per CTA and 8 fragments per warp (x
// reused across 32 columns, 4 KB of weights in flight per warp); takes
// narrower tiles until the grid covers every SM once; never depends on M.
GemmPlan MakeGemmPlan(int K, int N, int sm_count, GemmPrecision precision);

// "3xtf32 K=768 N=2304: 2 panels x 8 k-steps per warp, 3 splits, 216 CTAs"
std::string DescribeGemmPlan(const GemmPlan& plan);

// OK if the kernel can run `plan`; otherwise names the field and its value.
inline Status CheckGemmPlan(const GemmPlan& p) {
  auto bad = [&](const char* what, long long v, const char* want) {
    return Status::Error(std::string("GemmPlan: ") + what + " = " + std::to_string(v) + ", want " + want);
  };
  if (p.K < 1) return bad("K", p.K, ">= 1");
  if (p.N < 1) return bad("N", p.N, ">= 1");
  if (p.precision != GemmPrecision::kFp32 && p.precision != GemmPrecision::k3xTf32) {
    return bad("precision", static_cast<int>(p.precision), "kFp32 or k3xTf32");
  }
  if (p.panels_per_cta < 1 || p.panels_per_cta > kGemmWarps || !std::has_single_bit(static_cast<unsigned>(p.panels_per_cta))) {
    return bad("panels_per_cta", p.panels_per_cta, "1, 2, 4 or 8");
  }
  if (p.ksteps_per_warp < 1 || p.ksteps_per_warp > kGemmMaxWarpKSteps ||
      !std::has_single_bit(static_cast<unsigned>(p.ksteps_per_warp))) {
    return bad("ksteps_per_warp", p.ksteps_per_warp, "1, 2, 4 or 8");
  }
  if (p.cta_ksteps() > kGemmMaxCtaKSteps) {
    return bad("(8 / panels_per_cta) * ksteps_per_warp", p.cta_ksteps(), "<= 32 (the x tile in shared memory)");
  }
  const int want_splits = (GemmKSteps(p.K) + p.cta_ksteps() - 1) / p.cta_ksteps();
  if (p.splits != want_splits) return bad("splits", p.splits, ("ceil(ksteps / cta_ksteps) = " + std::to_string(want_splits)).c_str());
  if (p.splits > 65535) return bad("splits", p.splits, "<= 65535 (grid y)");
  if (p.splits > 1 && p.panel_groups() > kGemmMaxCounterTiles) {
    return bad("panel_groups of a split plan", p.panel_groups(), "<= 8192 (workspace counters)");
  }
  return Status::Ok();
}

// Bytes of shared memory one CTA of `plan` uses (x tile or reduction tile).
inline size_t GemmSharedBytes(const GemmPlan& p) {
  const size_t x_tile = static_cast<size_t>(p.cta_ksteps()) *
                        (p.precision == GemmPrecision::k3xTf32 ? 2048 : 1024);  // 32 rows x 8 k x (2 or 1) floats
  const size_t reduce = static_cast<size_t>(kGemmWarps) * kGemmRowTile * 20 * sizeof(float);
  return x_tile > reduce ? x_tile : reduce;
}

// Workspace bytes for calls of `plan` with up to max_rows rows: the counters,
// then (splits, max_rows, padded_cols) floats of partial sums if splits > 1.
inline size_t GemmWorkspaceBytes(const GemmPlan& p, int max_rows) {
  size_t bytes = kGemmCounterBytes;
  if (p.splits > 1 && max_rows > 0) {
    bytes += static_cast<size_t>(p.splits) * static_cast<size_t>(max_rows) * p.padded_cols() * sizeof(float);
  }
  return bytes;
}

// ---- 3xTF32 on the host (tests bound its error; the kernel does the same) ----

// The tf32 bits of the float whose bits are u (10 explicit mantissa bits,
// the low 13 bits zero): to nearest, ties away from zero, as
// cvt.rna.tf32.f32. The kernel (Tf32Bits in gemm.cu) and RoundToTf32 below
// both call it. A NaN stays a NaN (quiet, its sign kept): adding the
// rounding bit to a NaN with low mantissa bits set would carry into the
// exponent and sign (0x7fffffff, the GPU's canonical NaN, gave -0) or,
// masked, leave an infinity (0x7f800001 gave +inf). Infinities stay
// infinities; finite inputs below 3.4e38 * (1 - 2^-11) stay finite.
TW_HOST_DEVICE constexpr uint32_t Tf32RoundBits(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u | 0x00400000u) & 0xFFFFE000u;  // NaN
  return (u + 0x1000u) & 0xFFFFE000u;
}

// Rounds a float to tf32 (Tf32RoundBits on its bits).
inline constexpr float RoundToTf32(float v) { return std::bit_cast<float>(Tf32RoundBits(std::bit_cast<uint32_t>(v))); }

// v = big + small (exactly, for normal v), big = tf32(v), small = tf32(v - big).
inline constexpr void SplitTf32(float v, float* big, float* small) {
  *big = RoundToTf32(v);
  *small = RoundToTf32(v - *big);
}

// sum_k x[k] * w[k * w_stride] as the 3xTF32 kernel forms it term by term
// (small*big + big*small + big*big, products exact, the sum in double): the
// error of the split alone, without the tensor cores' accumulation order.
double Emulate3xTf32Dot(const float* x, const float* w, size_t w_stride, int K);

}  // namespace tw::kernels
