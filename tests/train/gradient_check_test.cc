// The double path's gradients against central finite differences, every
// element of every parameter tensor of a tiny GPT-2 (2 layers, 2 heads,
// C = 8, vocab 23, T = 6, B = 2).
//
// Tolerance: with h = 1e-5 in float64 a central difference is within
// ~1e-10 of the derivative (truncation ~h^2 f''' plus rounding ~1e-16 / h);
// each element must satisfy |analytic - numeric| <= 1e-7 max(|a|, |n|) +
// 1e-9. Measured: over the gradients above 1e-2 (most of them) the largest
// relative error is ~1e-8; below, the rounding of the loss (~1e-16 / h)
// dominates and the 1e-9 absolute term holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "train/trainer.h"
#include "train_test_util.h"

namespace tw::train {
namespace {

TEST(GradientCheck, EveryParameterMatchesCentralDifferencesInDouble) {
  const model::Gpt2Config c = testing::TinyTrainConfig(2, 2, 8, 23, 8);
  // LM-head chunks of 5 rows: several, the last one short.
  std::unique_ptr<Gpt2Trainer<double>> t = testing::NewTrainer<double>(c, 2, 6, 5, nullptr);
  ASSERT_TRUE(t);
  testing::RandomizeParams(t->layout(), 7, t->params());
  const std::vector<int32_t> tokens = testing::RandomTokens(12, c.vocab_size, 1);
  const std::vector<int32_t> targets = testing::RandomTokens(12, c.vocab_size, 2);
  double loss = 0;
  ASSERT_TRUE(t->LossAndGradients(tokens.data(), targets.data(), 2, &loss).ok());
  const std::vector<double> analytic(t->grads(), t->grads() + t->num_params());
  const double h = 1e-5;
  double worst_rel = 0;
  size_t big = 0;
  for (const ParamTensor& p : t->layout()) {
    double tensor_worst = 0;
    for (size_t i = 0; i < p.numel; ++i) {
      double* x = t->params() + p.offset + i;
      const double saved = *x;
      double up = 0, down = 0;
      *x = saved + h;
      ASSERT_TRUE(t->Loss(tokens.data(), targets.data(), 2, &up).ok());
      *x = saved - h;
      ASSERT_TRUE(t->Loss(tokens.data(), targets.data(), 2, &down).ok());
      *x = saved;
      const double numeric = (up - down) / (2 * h);
      const double a = analytic[p.offset + i];
      const double scale = std::max(std::fabs(a), std::fabs(numeric));
      EXPECT_LE(std::fabs(a - numeric), 1e-7 * scale + 1e-9)
          << p.name << "[" << i << "]: analytic " << a << ", numeric " << numeric;
      if (scale > 1e-2) tensor_worst = std::max(tensor_worst, std::fabs(a - numeric) / scale);
      if (scale > 1e-2) big++;
    }
    worst_rel = std::max(worst_rel, tensor_worst);
  }
  // Most gradients are far from zero (the check has something to check).
  EXPECT_GT(big, t->num_params() / 4);
  std::printf("%zu of %zu gradients above 1e-2; their largest relative error: %.3g\n", big, t->num_params(),
              worst_rel);
}

}  // namespace
}  // namespace tw::train
