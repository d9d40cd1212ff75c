// Training is reproducible bit for bit: a few full steps (loss and
// gradients, the norm clip, AdamW) from GPT-2's initialisation give the
// same parameters with 1 and 3 threads, and at kernel levels avx2 and
// avx512 (trainer.h's contract; cpu::Matmul's own is tests/cpu's
// MatmulIsaContract).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#include "train_test_util.h"

namespace tw::train {
namespace {

// 4 steps of a 2-layer model (C = 48, head_dim 12, vocab 300, ragged LM-head
// chunks) on 4 windows of 16 tokens; returns the parameters.
std::vector<float> TrainFewSteps(int threads) {
  const model::Gpt2Config c = testing::TinyTrainConfig(2, 4, 48, 300, 32);
  cpu::ThreadPool pool(threads);
  std::unique_ptr<Gpt2Trainer<float>> t = testing::NewTrainer<float>(c, 4, 16, 24, &pool);
  if (!t) return {};
  InitGpt2Params(c, 5, t->params());
  std::unique_ptr<AdamW<float>> opt;
  EXPECT_TRUE(AdamW<float>::Create(t->layout(), AdamWConfig(), &opt).ok());
  for (int step = 0; step < 4; ++step) {
    const std::vector<int32_t> tokens = testing::RandomTokens(64, c.vocab_size, 100 + step);
    const std::vector<int32_t> targets = testing::RandomTokens(64, c.vocab_size, 200 + step);
    double loss = 0;
    EXPECT_TRUE(t->LossAndGradients(tokens.data(), targets.data(), 4, &loss).ok());
    ClipGradNorm(t->grads(), t->num_params(), 1.0, &pool);
    opt->Update(t->params(), t->grads(), 1e-2, &pool);
  }
  return std::vector<float>(t->params(), t->params() + t->num_params());
}

TEST(Determinism, OneAndThreeThreadsGiveBitIdenticalParameters) {
  const std::vector<float> one = TrainFewSteps(1);
  const std::vector<float> three = TrainFewSteps(3);
  ASSERT_EQ(one.size(), three.size());
  EXPECT_EQ(0, std::memcmp(one.data(), three.data(), one.size() * sizeof(float)));
  // And the steps did something: the parameters left their initialisation.
  std::vector<float> init(one.size());
  InitGpt2Params(testing::TinyTrainConfig(2, 4, 48, 300, 32), 5, init.data());
  size_t moved = 0;
  for (size_t i = 0; i < one.size(); ++i) moved += one[i] != init[i];
  EXPECT_GT(moved, one.size() / 2);
}

TEST(Determinism, Avx2AndAvx512GiveBitIdenticalParameters) {
  if (!cpu::IsaSupported(cpu::Isa::kAvx2) || !cpu::IsaSupported(cpu::Isa::kAvx512)) {
    GTEST_SKIP() << "needs both avx2 and avx512 (this CPU's best: " << cpu::IsaName(cpu::BestIsa()) << ")";
  }
  ASSERT_TRUE(cpu::ForceIsa(cpu::Isa::kAvx2).ok());
  const std::vector<float> avx2 = TrainFewSteps(2);
  ASSERT_TRUE(cpu::ForceIsa(cpu::Isa::kAvx512).ok());
  const std::vector<float> avx512 = TrainFewSteps(2);
  cpu::ResetIsa();
  EXPECT_EQ(0, std::memcmp(avx2.data(), avx512.data(), avx2.size() * sizeof(float)));
}

}  // namespace
}  // namespace tw::train
