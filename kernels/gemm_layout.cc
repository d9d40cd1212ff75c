#include "kernels/gemm_layout.h"

#include <algorithm>
#include <cstring>

namespace tw::kernels {

namespace {

// Writes every fragment of the packed matrix in storage order, reading the
// source element for each slot through `at(k, n)` (zero outside K x N).
template <class At>
void PackFragments(int K, int N, float* dst, At at) {
  const int ksteps = GemmKSteps(K), panels = GemmPanels(N);
  size_t i = 0;
  for (int p = 0; p < panels; ++p) {
    for (int s = 0; s < ksteps; ++s) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        for (int reg = 0; reg < 4; ++reg) {
          const int n = p * kGemmPanelCols + g + 8 * (reg % 2);
          const int k = s * kGemmKStep + t + 4 * (reg / 2);
          dst[i++] = (k < K && n < N) ? at(k, n) : 0.0f;
        }
      }
    }
  }
}

}  // namespace

void PackMatrix(const float* w, int K, int N, float* dst) {
  PackFragments(K, N, dst, [&](int k, int n) { return w[static_cast<size_t>(k) * N + n]; });
}

void PackMatrixTransposed(const float* wt, int N, int K, float* dst) {
  PackFragments(K, N, dst, [&](int k, int n) { return wt[static_cast<size_t>(n) * K + k]; });
}

GemmPlan MakeGemmPlan(int K, int N, int sm_count, GemmPrecision precision) {
  // Preferred tilings first: (panels per CTA, most k-steps per warp).
  constexpr int kCandidates[][2] = {{2, 8}, {1, 4}, {1, 2}, {1, 1}};
  const int ksteps = GemmKSteps(std::max(K, 1));
  GemmPlan best;
  bool have_best = false;
  for (const auto& c : kCandidates) {
    const int P = c[0], wp = kGemmWarps / P;
    // Splits at the widest span, then the fewest k-steps per warp (a power
    // of two) that still covers a split: no warp idles on a short K.
    const int splits = (ksteps + wp * c[1] - 1) / (wp * c[1]);
    const int per_split = (ksteps + splits - 1) / splits;
    const int kw = static_cast<int>(std::bit_ceil(static_cast<unsigned>((per_split + wp - 1) / wp)));
    GemmPlan plan = MakeGemmPlanWith(K, N, precision, P, std::min(kw, c[1]));
    if (!CheckGemmPlan(plan).ok()) continue;
    if (plan.ctas() >= sm_count) return plan;
    if (!have_best || plan.ctas() > best.ctas()) {
      best = plan;
      have_best = true;
    }
  }
  if (!have_best) return MakeGemmPlanWith(K, N, precision, 2, 8);  // K or N < 1: CheckGemmPlan says why
  return best;
}

std::string DescribeGemmPlan(const GemmPlan& p) {
  return std::string(GemmPrecisionName(p.precision)) + " K=" + std::to_string(p.K) + " N=" + std::to_string(p.N) +
         ": " + std::to_string(p.panels_per_cta) + " panel(s) x " + std::to_string(p.ksteps_per_warp) +
         " k-steps per warp, " + std::to_string(p.splits) + " split(s), " + std::to_string(p.ctas()) + " CTAs";
}

double Emulate3xTf32Dot(const float* x, const float* w, size_t w_stride, int K) {
  double sum = 0.0;
  for (int k = 0; k < K; ++k) {
    float xb = 0, xs = 0, wb = 0, ws = 0;
    SplitTf32(x[k], &xb, &xs);
    SplitTf32(w[static_cast<size_t>(k) * w_stride], &wb, &ws);
    sum += static_cast<double>(ws) * xb + static_cast<double>(wb) * xs + static_cast<double>(wb) * xb;
  }
  return sum;
}

}  // namespace tw::kernels
