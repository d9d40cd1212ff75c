// Internal to src/cpu: the per-ISA kernel entry points that kernels.cc
// dispatches to. Each table is defined by one translation unit
// (kernels_scalar.cc, kernels_avx2.cc, kernels_avx512.cc) that instantiates
// kernels_simd.inc for its instruction set.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/kernels.h"

namespace tw::cpu::internal {

struct KernelTable {
  // y (rows, w.out) = [y +] [bias +] x (rows, w.in) @ W (y's term when
  // accumulate, bias's when not null) restricted to the columns of panels
  // [panel_begin, panel_end), in w's format. scratch: null or
  // kMatmulScratchFloats floats (64-byte aligned) this call alone uses.
  void (*gemm_panels)(const float* x, int rows, const PackedWeight& w, int panel_begin, int panel_end,
                      const float* bias, bool accumulate, float* y, float* scratch);
  void (*layernorm_row)(const float* x, int C, const float* w, const float* b, float eps,
                        float* out);
  void (*gelu)(float* x, size_t n);
  void (*add)(const float* a, const float* b, float* out, size_t n);
  void (*softmax)(float* x, int n);
  float (*max_value)(const float* x, int n);
  void (*exp_weights)(const float* x, int n, float mx, float inv_t, float* out, float* block_sums);
  float (*sum_at_least)(const float* x, const float* w, int n, float t);
  int (*collect_at_least)(const float* x, int n, float t, int32_t* ids, int cap);
  void (*keep_at_least)(const float* x, int n, float t, float* w, float* block_sums);
  void (*attend)(const float* q, const PagedKvHead& kv, int len, float scale, float* scores,
                 float* out);
  void (*attend_rows)(const float* q, size_t q_stride, int m, const PagedKvHead& kv, int len0, float scale,
                      float* scores, float* out, size_t out_stride);
  void (*attend_heads)(const float* q, int heads, const PagedKvHead& kv, size_t head_stride, int len,
                       float scale, float* scores, float* out);
  int tile_panels;  // a multiple of every register-tile shape's panels (column split unit)
};

const KernelTable& ScalarTable();
const KernelTable& Avx2Table();    // only valid where IsaSupported(kAvx2)
const KernelTable& Avx512Table();  // only valid where IsaSupported(kAvx512)

}  // namespace tw::cpu::internal
