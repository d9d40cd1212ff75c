#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

#include "train/layers.h"

namespace tw::train {
namespace {

constexpr size_t kUpdateBlock = 1 << 16;  // elements per AdamW task

template <typename Fn>
void ForTasks(cpu::ThreadPool* pool, int tasks, const Fn& fn) {
  if (pool && tasks > 1) pool->ParallelFor(tasks, fn);
  else for (int i = 0; i < tasks; ++i) fn(i, 0);
}

}  // namespace

template <typename T>
Status AdamW<T>::Create(const std::vector<ParamTensor>& layout, const AdamWConfig& config,
                        std::unique_ptr<AdamW>* out) {
  if (!(config.beta1 >= 0 && config.beta1 < 1 && config.beta2 >= 0 && config.beta2 < 1 && config.eps > 0 &&
        config.weight_decay >= 0)) {
    return Status::Error("AdamW: betas must be in [0, 1), eps > 0 and weight_decay >= 0");
  }
  auto a = std::make_unique<AdamW>();
  a->config_ = config;
  for (const ParamTensor& t : layout) {
    for (size_t b = 0; b < t.numel; b += kUpdateBlock) {
      a->blocks_.push_back(Block{t.offset + b, t.offset + std::min(t.numel, b + kUpdateBlock), t.decay});
    }
  }
  a->m_.assign(ParamCount(layout), T(0));
  a->v_.assign(ParamCount(layout), T(0));
  *out = std::move(a);
  return Status::Ok();
}

template <typename T>
void AdamW<T>::Update(T* params, const T* grads, double lr, cpu::ThreadPool* pool) {
  steps_++;
  beta1_pow_ *= config_.beta1;  // beta^t by repeated products: no pow()
  beta2_pow_ *= config_.beta2;
  const T b1 = static_cast<T>(config_.beta1), b2 = static_cast<T>(config_.beta2);
  const T one_b1 = static_cast<T>(1 - config_.beta1), one_b2 = static_cast<T>(1 - config_.beta2);
  const T bc1 = static_cast<T>(1 - beta1_pow_);
  const T bc2 = static_cast<T>(1 - beta2_pow_);
  const T eps = static_cast<T>(config_.eps), rate = static_cast<T>(lr);
  const T wd = static_cast<T>(config_.weight_decay);
  T* m = m_.data();
  T* v = v_.data();
  ForTasks(pool, static_cast<int>(blocks_.size()), [&](int i, int) {
    const Block& b = blocks_[i];
    const T decay = b.decay ? wd : T(0);
    for (size_t k = b.begin; k < b.end; ++k) {
      const T g = grads[k];
      m[k] = b1 * m[k] + one_b1 * g;
      v[k] = b2 * v[k] + one_b2 * g * g;
      const T m_hat = m[k] / bc1, v_hat = v[k] / bc2;
      params[k] -= rate * (m_hat / (std::sqrt(v_hat) + eps) + decay * params[k]);
    }
  });
}

template <typename T>
double GradNorm(const T* g, size_t n, cpu::ThreadPool* pool) {
  const int blocks = static_cast<int>((n + kNormBlock - 1) / kNormBlock);
  std::vector<double> partial(blocks);
  ForTasks(pool, blocks, [&](int b, int) {
    const size_t begin = static_cast<size_t>(b) * kNormBlock, end = std::min(n, begin + kNormBlock);
    double s[layers::kLanes] = {};
    size_t i = begin;
    for (; i + layers::kLanes <= end; i += layers::kLanes)
      for (int j = 0; j < layers::kLanes; ++j) s[j] += static_cast<double>(g[i + j]) * g[i + j];
    for (int j = 0; i < end; ++i, ++j) s[j] += static_cast<double>(g[i]) * g[i];
    partial[b] = layers::CombineLanes(s);
  });
  double total = 0;
  for (double p : partial) total += p;
  return std::sqrt(total);
}

template <typename T>
double ClipGradNorm(T* g, size_t n, double max_norm, cpu::ThreadPool* pool) {
  const double norm = GradNorm(g, n, pool);
  if (max_norm > 0 && norm > max_norm) {
    const T scale = static_cast<T>(max_norm / norm);
    const int blocks = static_cast<int>((n + kNormBlock - 1) / kNormBlock);
    ForTasks(pool, blocks, [&](int b, int) {
      const size_t begin = static_cast<size_t>(b) * kNormBlock, end = std::min(n, begin + kNormBlock);
      for (size_t i = begin; i < end; ++i) g[i] *= scale;
    });
  }
  return norm;
}

double LearningRate(const LrSchedule& s, int step) {
  if (step < s.warmup_steps) return s.max_lr * (step + 1) / s.warmup_steps;
  if (step >= s.total_steps) return s.min_lr;
  const double span = std::max(1, s.total_steps - s.warmup_steps);
  const double r = (step - s.warmup_steps) / span;
  return s.min_lr + (s.max_lr - s.min_lr) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * r));
}

template class AdamW<float>;
template class AdamW<double>;
template double GradNorm(const float*, size_t, cpu::ThreadPool*);
template double GradNorm(const double*, size_t, cpu::ThreadPool*);
template double ClipGradNorm(float*, size_t, double, cpu::ThreadPool*);
template double ClipGradNorm(double*, size_t, double, cpu::ThreadPool*);

}  // namespace tw::train
