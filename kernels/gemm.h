// The matmuls of the CUDA forward pass, behind a plain C++ launcher:
//
//   y (M, N)  = epilogue(x (M, K) @ W (K, N) + bias (N))
//
// for GPT-2's four matrices of each layer (c_attn, attn.c_proj, mlp.c_fc,
// mlp.c_proj) and the tied LM head (W = wte^T, no bias). W is packed once at
// load time by kernels::PackMatrix / PackMatrixTransposed (src/cuda/gemm_layout.h,
// which also describes the layout, the plan and the workspace).
//
// How it runs. One CTA (256 threads) per (panel group, split of K): each warp
// streams its fragments of W into registers once (16-byte loads, evict-first),
// then the CTA walks x in tiles of 32 rows: the tile's slice of x is staged in
// shared memory, every warp multiplies its fragments with it, the warps'
// partial tiles are summed in warp order, and the result goes to y through
// the epilogue (one split) or to the workspace (several splits, summed in
// split order by the last CTA of the group to finish). W is read from memory
// once per call whatever M is; decode (M <= 32) is one row tile.
//
// Precisions (plan.precision, so per call):
//   kFp32    fp32 FMA chains (each lane sums k = t and t + 4 of every k-step
//            of its warp, then a fixed xor tree over the 4 lanes of a
//            column, then warps in order, then splits in order).
//   k3xTf32  mma.sync.m16n8k8 tf32 with weight columns as M and rows of x as
//            N; each operand split into big = tf32(v) and small =
//            tf32(v - big); per k-step acc += Ws*Xb, += Wb*Xs, += Wb*Xb.
//            Error ~ fp32 (terms Ws*Xs dropped, ~2^-22 relative per
//            product; the tensor cores' accumulation rounding). A NaN in x
//            or W gives NaN, as in fp32; an infinity gives NaN too (its
//            split's small part is inf - inf) where fp32 gives an infinity.
// Both are bitwise batch-invariant: an output element's sequence of
// operations depends only on the plan (K, N, SM count), never on M, on the
// other rows or on the row's position in the batch; no float atomics.
//
// Epilogues: kStore y = acc + bias; kGelu y = gelu_tanh(acc + bias) (the
// same formula as cpu::GeluTanh); kAccumulate y = y + (acc + bias) (the
// residual stream). bias may be null (then no bias).
//
// Supported: any K >= 1, N >= 1, 1 <= M <= kernels::kGemmMaxRows. Requires
// w.data 16-byte aligned; x, y, bias 4-byte aligned; x and y not
// overlapping; for plans with splits > 1 a workspace of at least
// kernels::GemmWorkspaceBytes(plan, M) bytes, 16-byte aligned, whose first
// kernels::kGemmCounterBytes are zero (zero the buffer once after allocating
// it; every call leaves them zero). One workspace per stream: two calls
// sharing one must not run concurrently.
//
// Threads: any host thread; the launch is asynchronous on `stream` (nullptr:
// the default stream). Allocation: none. Call GemmInit() once at start-up,
// before capturing any graph: it raises the kernels' dynamic shared-memory
// limit (a runtime attribute call, once per process, for the current device;
// Gemm() also does it on first use). Never: synchronizes, allocates, or
// reads outside the stated shapes.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "kernels/gemm_layout.h"

namespace tw::kernels {

enum class GemmEpilogue : int {
  kStore = 0,       // y = x @ W + bias
  kGelu = 1,        // y = gelu_tanh(x @ W + bias)
  kAccumulate = 2,  // y += x @ W + bias
};

const char* GemmEpilogueName(GemmEpilogue e);  // "store", "gelu", "accumulate"

// Prepares both kernels (shared-memory limit); idempotent.
Status GemmInit();

// y (M, w.N) = epilogue(x (M, w.K) @ W + bias (w.N)); see above.
// plan: for (w.K, w.N), checked with kernels::CheckGemmPlan.
// workspace: device, workspace_bytes long; may be null when plan.splits == 1.
Status Gemm(const kernels::GemmPlan& plan,
            const kernels::PackedMatrixView& w,  // packed (K, N)
            const float* x,                   // (M, K) row-major
            int M,
            const float* bias,                // (N) or null
            float* y,                         // (M, N) row-major; read too for kAccumulate
            GemmEpilogue epilogue,
            void* workspace,                  // see above; counters zero on entry and on return
            size_t workspace_bytes,
            void* stream);

}  // namespace tw::kernels
