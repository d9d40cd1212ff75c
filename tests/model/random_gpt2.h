// A GPT-2 model with random weights in one slab, for tests and the CPU
// benchmark (which needs a 124M-shaped model without any files). Gains near
// 1 and biases near 0 (none exactly 1 or 0), so a skipped parameter shows.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/gpt2.h"

namespace tw::testing {

class RandomGpt2Model : public model::Gpt2Model {
 public:
  RandomGpt2Model(const model::Gpt2Config& cfg, uint64_t seed) {
    config_ = cfg;
    const size_t C = cfg.n_embd, V = cfg.vocab_size, T = cfg.n_ctx;
    const size_t per_layer = 2 * C + C * 3 * C + 3 * C + C * C + C + 2 * C + C * 4 * C + 4 * C + 4 * C * C + C;
    const size_t total = V * C + T * C + per_layer * cfg.n_layer + 2 * C;
    slab_.resize(total);
    parameter_bytes_ = total * sizeof(float);
    uint64_t state = seed;
    size_t used = 0;
    // Fills the next n floats with mean + a uniform variable of standard
    // deviation `std` (uniform, not normal: fast enough for 124M values) and
    // returns them.
    auto take = [&](size_t n, float mean, float std) {
      float* p = slab_.data() + used;
      used += n;
      const float half_width = std * 1.7320508f;  // U(-a, a) has std a / sqrt(3)
      for (size_t i = 0; i < n; ++i) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);  // splitmix64
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        const float u = static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;  // [-1, 1)
        p[i] = mean + half_width * u;
      }
      return static_cast<const float*>(p);
    };
    weights_.wte = take(V * C, 0.0f, 0.1f);   // (V, C)
    weights_.wpe = take(T * C, 0.0f, 0.05f);  // (T, C)
    for (int l = 0; l < cfg.n_layer; ++l) {
      model::Gpt2Layer ly;
      ly.ln_1_w = take(C, 1.0f, 0.1f);
      ly.ln_1_b = take(C, 0.0f, 0.05f);
      ly.attn_w = take(C * 3 * C, 0.0f, 0.08f);
      ly.attn_b = take(3 * C, 0.0f, 0.05f);
      ly.attn_proj_w = take(C * C, 0.0f, 0.05f);
      ly.attn_proj_b = take(C, 0.0f, 0.05f);
      ly.ln_2_w = take(C, 1.0f, 0.1f);
      ly.ln_2_b = take(C, 0.0f, 0.05f);
      ly.fc_w = take(C * 4 * C, 0.0f, 0.05f);
      ly.fc_b = take(4 * C, 0.0f, 0.05f);
      ly.proj_w = take(4 * C * C, 0.0f, 0.03f);
      ly.proj_b = take(C, 0.0f, 0.05f);
      weights_.layers.push_back(ly);
    }
    weights_.ln_f_w = take(C, 1.0f, 0.1f);
    weights_.ln_f_b = take(C, 0.0f, 0.05f);
  }

 private:
  std::vector<float> slab_;  // every parameter, in the order taken above
};

inline model::Gpt2Config SmallConfig() {
  model::Gpt2Config c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.n_ctx = 96;
  c.vocab_size = 1000;
  return c;
}

}  // namespace tw::testing
