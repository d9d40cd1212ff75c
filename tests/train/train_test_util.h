// Helpers shared by the trainer's tests: tiny configurations, parameters
// drawn far from GPT-2's initialisation (gains away from 1, biases away
// from 0, so a layer whose gradient is dropped shows), and batches.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/thread_pool.h"
#include "model/gpt2.h"
#include "model/random_weights.h"
#include "train/params.h"
#include "train/trainer.h"

namespace tw::testing {

inline model::Gpt2Config TinyTrainConfig(int layers, int heads, int embd, int vocab, int positions) {
  model::Gpt2Config c;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_embd = embd;
  c.vocab_size = vocab;
  c.n_ctx = positions;
  c.eos_token_id = vocab - 1;
  return c;
}

// A trainer for `batch` windows of `seq` tokens, LM-head chunks of
// head_rows rows (null, with a test failure, if Create refuses).
template <typename T>
std::unique_ptr<train::Gpt2Trainer<T>> NewTrainer(const model::Gpt2Config& c, int batch, int seq, int head_rows,
                                                  cpu::ThreadPool* pool) {
  train::TrainerShape shape;
  shape.max_batch = batch;
  shape.seq = seq;
  shape.head_rows = head_rows;
  std::unique_ptr<train::Gpt2Trainer<T>> t;
  Status st = train::Gpt2Trainer<T>::Create(c, shape, pool, &t);
  EXPECT_TRUE(st.ok()) << st.message();
  return t;
}

// Every parameter random: matrices N(0, 0.3) (large enough that the
// attention and the GELU are far from linear), gains 1 + N(0, 0.2), biases
// N(0, 0.2). One stream per tensor (model::TensorRng).
template <typename T>
void RandomizeParams(const std::vector<train::ParamTensor>& layout, uint64_t seed, T* slab) {
  for (const train::ParamTensor& t : layout) {
    model::TensorRng rng(seed, t.name);
    const bool gain = t.shape.size() == 1 && t.name.find("ln_") != std::string::npos &&
                      t.name.find(".weight") != std::string::npos;
    const double std = t.shape.size() == 2 ? 0.3 : 0.2;
    for (size_t i = 0; i < t.numel; ++i) slab[t.offset + i] = static_cast<T>((gain ? 1.0 : 0.0) + std * rng.Normal());
  }
}

// (B, T) token ids in [0, vocab) from a fixed stream.
inline std::vector<int32_t> RandomTokens(int count, int vocab, uint64_t seed) {
  model::TensorRng rng(seed, "tokens");
  std::vector<int32_t> out(count);
  for (int32_t& t : out) t = static_cast<int32_t>(rng.Uniform() * vocab);
  return out;
}

}  // namespace tw::testing
