// The optimizer's pieces against their definitions (train/optimizer.h):
// the learning-rate schedule's values, the norm clip, the gradient norm's
// independence of the thread count, and AdamW's update by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu/thread_pool.h"
#include "model/random_weights.h"
#include "train/optimizer.h"

namespace tw::train {
namespace {

TEST(LearningRate, LinearWarmupThenCosineToTheFloor) {
  LrSchedule s;
  s.max_lr = 1e-3;
  s.min_lr = 1e-4;
  s.warmup_steps = 10;
  s.total_steps = 110;
  EXPECT_DOUBLE_EQ(LearningRate(s, 0), 1e-4);      // 1/10 of the peak
  EXPECT_DOUBLE_EQ(LearningRate(s, 4), 5e-4);
  EXPECT_DOUBLE_EQ(LearningRate(s, 9), 1e-3);      // the warmup's last step reaches the peak
  EXPECT_DOUBLE_EQ(LearningRate(s, 10), 1e-3);     // the cosine starts at the peak
  EXPECT_NEAR(LearningRate(s, 60), 5.5e-4, 1e-15);  // halfway: the mean of peak and floor
  EXPECT_NEAR(LearningRate(s, 35), 1e-4 + 9e-4 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-15);
  EXPECT_GT(LearningRate(s, 109), 1e-4);           // the last step is just above the floor
  EXPECT_NEAR(LearningRate(s, 109), 1e-4, 1e-6);
  EXPECT_DOUBLE_EQ(LearningRate(s, 110), 1e-4);
  s.warmup_steps = 0;
  EXPECT_DOUBLE_EQ(LearningRate(s, 0), 1e-3);
}

std::vector<float> RandomGrads(size_t n) {
  model::TensorRng rng(3, "grads");
  std::vector<float> g(n);
  for (float& x : g) x = static_cast<float>(rng.Normal());
  return g;
}

TEST(ClipGradNorm, ScalesTheNormDownToTheBoundAndLeavesSmallerNormsAlone) {
  std::vector<float> g = RandomGrads(3 * kNormBlock + 17);  // several norm blocks, a partial one
  const double before = GradNorm(g.data(), g.size(), nullptr);
  ASSERT_GT(before, 10.0);
  EXPECT_DOUBLE_EQ(ClipGradNorm(g.data(), g.size(), 2.5, nullptr), before);
  EXPECT_NEAR(GradNorm(g.data(), g.size(), nullptr), 2.5, 2.5 * 1e-6);
  const std::vector<float> clipped = g;
  EXPECT_NEAR(ClipGradNorm(g.data(), g.size(), 100.0, nullptr), 2.5, 2.5 * 1e-6);
  EXPECT_EQ(0, std::memcmp(g.data(), clipped.data(), g.size() * sizeof(float))) << "under the bound: untouched";
  EXPECT_NEAR(ClipGradNorm(g.data(), g.size(), 0.0, nullptr), 2.5, 2.5 * 1e-6);  // 0: no clip
  EXPECT_EQ(0, std::memcmp(g.data(), clipped.data(), g.size() * sizeof(float)));
}

TEST(ClipGradNorm, TheNormIsTheSameBitsOnAnyThreadCount) {
  const std::vector<float> g = RandomGrads(5 * kNormBlock + 3);
  cpu::ThreadPool three(3);
  const double a = GradNorm(g.data(), g.size(), nullptr), b = GradNorm(g.data(), g.size(), &three);
  EXPECT_EQ(0, std::memcmp(&a, &b, sizeof a));
}

TEST(AdamW, ThreeStepsByHandWithDecayOnMatricesOnly) {
  // A 2 x 2 matrix (decayed) and a bias of 2 (not), one slab.
  std::vector<ParamTensor> layout(2);
  layout[0].name = "m.weight";
  layout[0].shape = {2, 2};
  layout[0].numel = 4;
  layout[0].decay = true;
  layout[1].name = "m.bias";
  layout[1].shape = {2};
  layout[1].offset = 4;
  layout[1].numel = 2;
  AdamWConfig cfg;
  cfg.weight_decay = 0.5;
  std::unique_ptr<AdamW<double>> opt;
  ASSERT_TRUE(AdamW<double>::Create(layout, cfg, &opt).ok());
  std::vector<double> p = {0.5, -0.25, 1.0, 2.0, 0.5, -1.0};
  std::vector<double> want = p, m(6, 0.0), v(6, 0.0);
  const double grads[3][6] = {{0.1, -0.2, 0.0, 3.0, 0.1, 0.0}, {0.2, 0.1, 0.0, -1.0, -0.3, 0.0},
                              {-0.1, 0.0, 0.5, 0.5, 0.2, 1e-3}};
  for (int t = 1; t <= 3; ++t) {
    const double lr = 0.01 * t;
    opt->Update(p.data(), grads[t - 1], lr, nullptr);
    for (int i = 0; i < 6; ++i) {
      const double g = grads[t - 1][i];
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.95 * v[i] + 0.05 * g * g;
      const double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.95, t));
      want[i] -= lr * (mh / (std::sqrt(vh) + 1e-8) + (i < 4 ? 0.5 : 0.0) * want[i]);
    }
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(p[i], want[i], 1e-15) << "step " << t << " element " << i;
    // Without a gradient yet, a matrix element only decays and a bias stays.
    if (t == 1) {
      EXPECT_DOUBLE_EQ(p[2], 1.0 - 0.01 * 0.5 * 1.0);
    }
    if (t == 2) {
      EXPECT_EQ(p[5], -1.0);
    }
  }
  EXPECT_EQ(opt->steps(), 3);
}

}  // namespace
}  // namespace tw::train
