// The float path (cpu::Matmul, the packed weights, the per-head attention
// matmuls, the chunked LM head) against the double path on the same
// weights and batch. Shapes with ragged edges everywhere: C = 40 (not a
// multiple of the 16-column panel), head_dim 10, vocab 67, T = 19, three
// windows, LM-head chunks of 20 rows (20 + 20 + 17).
//
// Tolerances (float32 against float64): the loss within 1e-6 relative
// (measured 4e-8); each tensor's gradient within 2e-5 of that tensor's
// largest |gradient| (measured 2e-6).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "cpu/thread_pool.h"
#include "train/trainer.h"
#include "train_test_util.h"

namespace tw::train {
namespace {

TEST(FloatPath, LossAndGradientsMatchTheDoublePath) {
  const model::Gpt2Config c = testing::TinyTrainConfig(2, 4, 40, 67, 24);
  cpu::ThreadPool pool(2);
  std::unique_ptr<Gpt2Trainer<double>> d = testing::NewTrainer<double>(c, 3, 19, 20, &pool);
  std::unique_ptr<Gpt2Trainer<float>> f = testing::NewTrainer<float>(c, 3, 19, 20, &pool);
  ASSERT_TRUE(d && f);
  // Draw in float so that both paths see exactly the same weights.
  testing::RandomizeParams(f->layout(), 11, f->params());
  for (size_t i = 0; i < f->num_params(); ++i) d->params()[i] = f->params()[i];
  const std::vector<int32_t> tokens = testing::RandomTokens(57, c.vocab_size, 3);
  const std::vector<int32_t> targets = testing::RandomTokens(57, c.vocab_size, 4);
  double ld = 0, lf = 0, lf_only = 0;
  ASSERT_TRUE(d->LossAndGradients(tokens.data(), targets.data(), 3, &ld).ok());
  ASSERT_TRUE(f->LossAndGradients(tokens.data(), targets.data(), 3, &lf).ok());
  ASSERT_TRUE(f->Loss(tokens.data(), targets.data(), 3, &lf_only).ok());
  EXPECT_EQ(lf, lf_only) << "the loss without gradients is the same computation";
  EXPECT_NEAR(lf, ld, 1e-6 * ld);
  double worst = 0;
  for (const ParamTensor& p : f->layout()) {
    double gmax = 0, err = 0;
    for (size_t i = 0; i < p.numel; ++i) {
      gmax = std::max(gmax, std::fabs(d->grads()[p.offset + i]));
      err = std::max(err, std::fabs(d->grads()[p.offset + i] - f->grads()[p.offset + i]));
    }
    ASSERT_GT(gmax, 0) << p.name;
    EXPECT_LE(err, 2e-5 * gmax) << p.name << ": largest |gradient| " << gmax;
    worst = std::max(worst, err / gmax);
  }
  std::printf("loss %.9f (double %.9f); worst gradient error / tensor max: %.3g\n", lf, ld, worst);
}

}  // namespace
}  // namespace tw::train
