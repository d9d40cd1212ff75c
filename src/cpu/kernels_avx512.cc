// The AVX-512F kernel level: kernels_simd.inc over 16-lane __m512 ops.
// Everything below the pragma is compiled for AVX-512F (plus AVX2/FMA) and is
// only called after __builtin_cpu_supports says the CPU has it (kernels.cc).
// GCC 12's AVX-512 intrinsics read _mm512_undefined_*() values, which trips
// -Wuninitialized under -Werror (GCC bug 105593); the warning is about the
// compiler's own header, so it is silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "cpu/kernel_table.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#endif

namespace tw::cpu::internal {

#include "cpu/scalar_ops.inc"

namespace {

struct V {
  using T = __m512;
  static constexpr int W = 16;
  static constexpr int MR = 12;  // 12 rows x 2 panels = 24 accumulators of 32 zmm
  static constexpr int NP = 2;
  static constexpr int MR2 = 8;  // 8 rows x 3 panels: also 24 accumulators
  static constexpr int NP2 = 3;
  static constexpr bool Shape2AnyRows = true;  // whichever pads the row count less
  static constexpr int AttendRows = 4;  // queries whose value sums share registers (4 x 4 zmm at head_dim 64)
  static T Zero() { return _mm512_setzero_ps(); }
  static T Set1(float f) { return _mm512_set1_ps(f); }
  static T Load(const float* p) { return _mm512_loadu_ps(p); }
  // 16 bfloat16 -> float32: each 16-bit value becomes the top half of a lane.
  static T LoadBf16(const uint16_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  // 16 int8 -> float32 (exact).
  static T LoadI8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static void Store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T Add(T a, T b) { return _mm512_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T Mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T Div(T a, T b) { return _mm512_div_ps(a, b); }
  static T Fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T Max(T a, T b) { return _mm512_max_ps(a, b); }
  static T Min(T a, T b) { return _mm512_min_ps(a, b); }
  // v where a > b, else 0 (also where a or b is NaN).
  static T KeepIfGreater(T v, T a, T b) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), v); }
  // v where a >= b, else 0 (also where a or b is NaN).
  static T KeepIfAtLeast(T v, T a, T b) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a, b, _CMP_GE_OQ), v); }
  // Bit i set where lane i of a >= b (never for NaN).
  static unsigned AtLeastMask(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  // Horizontal sum as a fixed tree: lane i + lane i+8, then i+4, i+2, i+1.
  // SumEach below follows the same tree lane by lane, so both give the same
  // bits for the same vector.
  static float ReduceAdd(T v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // SumEach(a) lane j = ReduceAdd(vector j), where vector j is stored in
  // a[Slot(j)] (the transposing tree leaves its results in this order).
  static constexpr int Slot(int j) { return (j % 4) * 4 + j / 4; }
  static T SumEach(const T* a) {
    T c[8], e[4], g[2];
    for (int p = 0; p < 8; ++p)  // lanes i + i+8 of two vectors -> one
      c[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], 0x44),
                           _mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], 0xEE));
    for (int p = 0; p < 4; ++p)  // i + i+4
      e[p] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * p], c[2 * p + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(c[2 * p], c[2 * p + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int p = 0; p < 2; ++p)  // i + i+2
      g[p] = _mm512_add_ps(_mm512_shuffle_ps(e[2 * p], e[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(e[2 * p], e[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_ps(g[0], g[1], _MM_SHUFFLE(2, 0, 2, 0)),  // i + i+1
                         _mm512_shuffle_ps(g[0], g[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  static float ReduceMax(T v) { return _mm512_reduce_max_ps(v); }
  static T Round(T x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static T Pow2(T n) {
    __m512i i = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(i, 23));
  }
};

}  // namespace

#include "cpu/kernels_simd.inc"

const KernelTable& Avx512Table() { return kTable; }

}  // namespace tw::cpu::internal

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
