// Training is reproducible bit for bit: a few full steps (loss and
// gradients, the norm clip, AdamW) from GPT-2's initialisation give the
// same parameters with 1 and 3 threads, and at kernel levels avx2 and
// avx512 (trainer.h's contract; cpu::Matmul's own is tests/cpu's
// MatmulIsaContract).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
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

// FNV-1a over the parameters' bytes.
uint64_t Fingerprint(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// The same bits at avx2 and avx512, and on every machine: the parameters
// after the steps above, at each of the two levels this CPU runs (an
// AVX2-only machine runs one, a Zen 4/5 both), are the bytes whose
// fingerprint was recorded on a Zen 5 (at both levels, equal). A machine
// that trained differently fails here, not silently in `make model`.
constexpr uint64_t kTrainFewStepsFingerprint = 1472001386281263679ull;

TEST(Determinism, EveryKernelLevelGivesTheRecordedParameters) {
  ASSERT_TRUE(cpu::IsaSupported(cpu::Isa::kAvx2)) << "the trainer's contract covers x86-64 with AVX2 and FMA";
  int levels = 0;
  for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
    if (!cpu::IsaSupported(isa)) continue;
    ASSERT_TRUE(cpu::ForceIsa(isa).ok());
    const std::vector<float> p = TrainFewSteps(2);
    cpu::ResetIsa();
    std::printf("%s: fingerprint %llu\n", cpu::IsaName(isa), static_cast<unsigned long long>(Fingerprint(p)));
    EXPECT_EQ(Fingerprint(p), kTrainFewStepsFingerprint) << cpu::IsaName(isa);
    levels++;
  }
  EXPECT_GE(levels, 1);
}

}  // namespace
}  // namespace tw::train
