// The optimizer side of training: AdamW over a parameter slab, the global
// gradient-norm clip, and the learning-rate schedule (linear warmup, then
// a cosine down to a floor), as llm.c's train_gpt2.c does them.
//
// AdamW (Loshchilov & Hutter): m = b1 m + (1 - b1) g; v = b2 v + (1 - b2)
// g^2; p -= lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd p), with
// the decay only where ParamTensor::decay (the rank-2 tensors: embeddings
// and matrices; never biases or layer-norm gains). Defaults: b1 0.9, b2
// 0.95, eps 1e-8 (GPT-3's and nanoGPT's).
//
// Determinism: each element's update is a fixed sequence of T operations
// (the step's bias corrections computed once in double); the gradient norm
// sums squares in double over fixed blocks (kNormBlock elements, eight
// lanes each, blocks added in order), so neither depends on the thread
// count.
//
// Threading: calls come from one thread; the element-wise work is spread
// over the pool (may be null). Allocation: m and v (two slabs the size of
// the parameters) in Create; nothing per step.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/status.h"
#include "cpu/thread_pool.h"
#include "train/params.h"

namespace tw::train {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // decoupled; applied to ParamTensor::decay tensors only
};

template <typename T>
class AdamW {
 public:
  static Status Create(const std::vector<ParamTensor>& layout, const AdamWConfig& config,
                       std::unique_ptr<AdamW>* out);

  // One update of params from grads at learning rate lr; the first call is
  // step 1 (its bias corrections).
  void Update(T* params, const T* grads, double lr, cpu::ThreadPool* pool);
  int steps() const { return steps_; }
  const T* m() const { return m_.data(); }
  const T* v() const { return v_.data(); }

 private:
  struct Block {
    size_t begin, end;
    bool decay;
  };
  AdamWConfig config_;
  std::vector<Block> blocks_;  // the slab in pieces of at most kUpdateBlock elements, within one tensor each
  std::vector<T> m_, v_;
  int steps_ = 0;
  double beta1_pow_ = 1, beta2_pow_ = 1;  // beta1^steps_, beta2^steps_
};

// Elements per block of the gradient norm's sum (fixed: the sum's order).
constexpr size_t kNormBlock = 1 << 16;

// sqrt(sum of g[i]^2), in double.
template <typename T>
double GradNorm(const T* g, size_t n, cpu::ThreadPool* pool);

// The global norm clip: when the norm exceeds max_norm (> 0), every
// gradient is multiplied by max_norm / norm, so the norm becomes max_norm
// (up to rounding). Returns the norm before clipping. max_norm <= 0: no
// clip.
template <typename T>
double ClipGradNorm(T* g, size_t n, double max_norm, cpu::ThreadPool* pool);

struct LrSchedule {
  double max_lr = 1e-3;
  double min_lr = 1e-4;
  int warmup_steps = 0;
  int total_steps = 1;
};

// The learning rate of step `step` (0-based): max_lr (step + 1) / warmup
// during the warmup, then min_lr + (max_lr - min_lr) (1 + cos(pi r)) / 2
// with r = (step - warmup) / (total - warmup) going from 0 towards 1;
// min_lr from total_steps on.
double LearningRate(const LrSchedule& s, int step);

}  // namespace tw::train
