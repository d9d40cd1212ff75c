// GPT-2's parameters as the trainer holds them: one slab of T (float for
// training, double for the gradient checks) in model::Gpt2ParameterSpecs
// order (wte, wpe, per layer ln_1, attn.c_attn, attn.c_proj, ln_2,
// mlp.c_fc, mlp.c_proj, weight then bias, then ln_f), each tensor in
// Hugging Face's layout (Conv1D weights (in, out): y = x @ W + b; the LM
// head is wte itself). The gradients and AdamW's moments are slabs of the
// same layout, so the optimizer works element by element.
//
// Threading: pure functions and plain views; InitGpt2Params fills a slab on
// the calling thread. Allocation: the layout (one entry per tensor); the
// slabs are the caller's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt2.h"

namespace tw::train {

struct ParamTensor {
  std::string name;            // "h.0.attn.c_attn.weight" (Hugging Face, no prefix)
  std::vector<int64_t> shape;  // {C, 3C}
  size_t offset = 0;           // elements from the slab's start
  size_t numel = 0;
  // AdamW's decoupled weight decay applies: the rank-2 tensors (wte, wpe
  // and each layer's four matrices). Biases and layer-norm gains are not
  // decayed (GPT-2 / nanoGPT's choice: decaying a gain pulls it to 0).
  bool decay = false;
};

// Every tensor of a GPT-2 with config `c`, offsets back to back.
std::vector<ParamTensor> ParamLayout(const model::Gpt2Config& c);
// Elements in the slab: the last tensor's offset + numel.
size_t ParamCount(const std::vector<ParamTensor>& layout);

template <typename T>
struct LayerParams {
  T* ln_1_w;       // (C)
  T* ln_1_b;       // (C)
  T* attn_w;       // (C, 3C)
  T* attn_b;       // (3C)
  T* attn_proj_w;  // (C, C)
  T* attn_proj_b;  // (C)
  T* ln_2_w;       // (C)
  T* ln_2_b;       // (C)
  T* fc_w;         // (C, 4C)
  T* fc_b;         // (4C)
  T* proj_w;       // (4C, C)
  T* proj_b;       // (C)
};

// Named views into a slab of ParamLayout(c)'s layout (parameters or their
// gradients).
template <typename T>
struct Gpt2Params {
  T* wte = nullptr;  // (V, C): token embeddings and the tied LM head
  T* wpe = nullptr;  // (n_ctx, C)
  std::vector<LayerParams<T>> layers;
  T* ln_f_w = nullptr;  // (C)
  T* ln_f_b = nullptr;  // (C)
};

template <typename T>
Gpt2Params<T> ParamViews(const model::Gpt2Config& c, T* slab);

// GPT-2's initialisation, seeded: every matrix and embedding N(0, 0.02),
// the residual projections (attn.c_proj, mlp.c_proj weights) N(0, 0.02 /
// sqrt(2 n_layer)), layer-norm gains 1, biases 0. One model::TensorRng
// stream per tensor (seed and name), normals in double, then rounded to T:
// the same seed gives the same bits on every machine, and the float slab
// is the double slab rounded.
template <typename T>
void InitGpt2Params(const model::Gpt2Config& c, uint64_t seed, T* slab);

}  // namespace tw::train
