// The AVX2 + FMA kernel level: kernels_simd.inc over 8-lane __m256 ops.
// Everything below the pragma is compiled for AVX2/FMA and is only called
// after __builtin_cpu_supports says the CPU has them (kernels.cc).
#include <immintrin.h>

#include "cpu/kernel_table.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace tw::cpu::internal {

#include "cpu/scalar_ops.inc"

namespace {

struct V {
  using T = __m256;
  static constexpr int W = 8;
  static constexpr int MR = 6;  // 6 rows x 2 vectors = 12 accumulators of 16 ymm
  static constexpr int NP = 1;
  // Batches of 1-2 rows: 2 rows x 3 panels (6 vectors), also 12
  // accumulators: one row of 6x1 has only 2 FMA chains, each waiting on the
  // last (4-cycle latency), where 1x3 keeps 6 going.
  static constexpr int MR2 = 2;
  static constexpr int NP2 = 3;
  static constexpr bool Shape2AnyRows = false;  // only for rows <= MR2 (more rows: 6x1 reads fewer vectors per FMA)
  static constexpr int AttendRows = 1;  // head_dim 64 is 8 ymm a query: one at a time
  static T Zero() { return _mm256_setzero_ps(); }
  static T Set1(float f) { return _mm256_set1_ps(f); }
  static T Load(const float* p) { return _mm256_loadu_ps(p); }
  // 8 bfloat16 -> float32: each 16-bit value becomes the top half of a lane.
  static T LoadBf16(const uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  // 8 int8 -> float32 (exact).
  static T LoadI8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static void Store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T Mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T Div(T a, T b) { return _mm256_div_ps(a, b); }
  static T Fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T Max(T a, T b) { return _mm256_max_ps(a, b); }
  static T Min(T a, T b) { return _mm256_min_ps(a, b); }
  // v where a > b, else 0 (also where a or b is NaN).
  static T KeepIfGreater(T v, T a, T b) { return _mm256_and_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ), v); }
  // v where a >= b, else 0 (also where a or b is NaN).
  static T KeepIfAtLeast(T v, T a, T b) { return _mm256_and_ps(_mm256_cmp_ps(a, b, _CMP_GE_OQ), v); }
  // Bit i set where lane i of a >= b (never for NaN).
  static unsigned AtLeastMask(T a, T b) { return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_GE_OQ))); }
  static float ReduceAdd(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // SumEach(a) lane j = ReduceAdd(vector j) bit for bit (the same tree:
  // i + i+4, i+2, i+1), where vector j is stored in a[Slot(j)].
  static constexpr int Slot(int j) { return (j % 4) * 2 + j / 4; }
  static T SumEach(const T* a) {
    T c[4], e[2];
    for (int p = 0; p < 4; ++p)
      c[p] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * p], a[2 * p + 1], 0x20),
                           _mm256_permute2f128_ps(a[2 * p], a[2 * p + 1], 0x31));
    for (int p = 0; p < 2; ++p)
      e[p] = _mm256_add_ps(_mm256_shuffle_ps(c[2 * p], c[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(c[2 * p], c[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_add_ps(_mm256_shuffle_ps(e[0], e[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm256_shuffle_ps(e[0], e[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  static float ReduceMax(T v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static T Round(T x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static T Pow2(T n) {
    __m256i i = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(i, 23));
  }
};

}  // namespace

#include "cpu/kernels_simd.inc"

const KernelTable& Avx2Table() { return kTable; }

}  // namespace tw::cpu::internal

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
