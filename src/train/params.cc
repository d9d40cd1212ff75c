#include "train/params.h"

#include <cmath>

#include "model/random_weights.h"

namespace tw::train {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Tensors per layer in Gpt2ParameterSpecs' order (ln_1 w/b, c_attn w/b,
// attn.c_proj w/b, ln_2 w/b, c_fc w/b, mlp.c_proj w/b).
constexpr int kTensorsPerLayer = 12;

}  // namespace

std::vector<ParamTensor> ParamLayout(const model::Gpt2Config& c) {
  std::vector<ParamTensor> out;
  size_t offset = 0;
  for (model::Gpt2TensorSpec& s : model::Gpt2ParameterSpecs(c)) {
    ParamTensor t;
    t.name = std::move(s.name);
    t.shape = std::move(s.shape);
    t.numel = 1;
    for (int64_t d : t.shape) t.numel *= static_cast<size_t>(d);
    t.offset = offset;
    t.decay = t.shape.size() == 2;
    offset += t.numel;
    out.push_back(std::move(t));
  }
  return out;
}

size_t ParamCount(const std::vector<ParamTensor>& layout) {
  return layout.empty() ? 0 : layout.back().offset + layout.back().numel;
}

template <typename T>
Gpt2Params<T> ParamViews(const model::Gpt2Config& c, T* slab) {
  const std::vector<ParamTensor> layout = ParamLayout(c);
  auto at = [&](size_t i) { return slab + layout[i].offset; };
  Gpt2Params<T> p;
  p.wte = at(0);
  p.wpe = at(1);
  for (int l = 0; l < c.n_layer; ++l) {
    const size_t b = 2 + static_cast<size_t>(l) * kTensorsPerLayer;
    p.layers.push_back(LayerParams<T>{at(b), at(b + 1), at(b + 2), at(b + 3), at(b + 4), at(b + 5), at(b + 6),
                                      at(b + 7), at(b + 8), at(b + 9), at(b + 10), at(b + 11)});
  }
  const size_t f = 2 + static_cast<size_t>(c.n_layer) * kTensorsPerLayer;
  p.ln_f_w = at(f);
  p.ln_f_b = at(f + 1);
  return p;
}

template <typename T>
void InitGpt2Params(const model::Gpt2Config& c, uint64_t seed, T* slab) {
  const double residual_std = 0.02 / std::sqrt(2.0 * c.n_layer);
  for (const ParamTensor& t : ParamLayout(c)) {
    T* p = slab + t.offset;
    const bool layer_norm = t.name.find("ln_") != std::string::npos;
    if (EndsWith(t.name, ".bias")) {
      for (size_t i = 0; i < t.numel; ++i) p[i] = T(0);
    } else if (layer_norm) {
      for (size_t i = 0; i < t.numel; ++i) p[i] = T(1);
    } else {
      const double std = EndsWith(t.name, "c_proj.weight") ? residual_std : 0.02;
      model::TensorRng rng(seed, t.name);
      for (size_t i = 0; i < t.numel; ++i) p[i] = static_cast<T>(std * rng.Normal());
    }
  }
}

template Gpt2Params<float> ParamViews(const model::Gpt2Config&, float*);
template Gpt2Params<double> ParamViews(const model::Gpt2Config&, double*);
template Gpt2Params<const float> ParamViews(const model::Gpt2Config&, const float*);
template Gpt2Params<const double> ParamViews(const model::Gpt2Config&, const double*);
template void InitGpt2Params(const model::Gpt2Config&, uint64_t, float*);
template void InitGpt2Params(const model::Gpt2Config&, uint64_t, double*);

}  // namespace tw::train
