// GPT-2 model: configuration and weights as the forward pass sees them.
//
// LoadGpt2() reads a Hugging Face GPT-2 folder (config.json +
// model.safetensors). The loader validates everything before use (see
// safetensors.h) and owns the memory; a Gpt2Model is immutable after loading
// and may be read from any thread.
//
// Layout follows Hugging Face's Conv1D convention: a weight of shape
// (in, out) is applied as y = x @ W + b.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tw::model {

struct Gpt2Config {
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int n_ctx = 1024;       // n_positions
  int vocab_size = 50257;
  float layer_norm_epsilon = 1e-5f;
  int eos_token_id = 50256;
};

struct Gpt2Layer {
  const float* ln_1_w;       // (C)
  const float* ln_1_b;       // (C)
  const float* attn_w;       // (C, 3C)   c_attn
  const float* attn_b;       // (3C)
  const float* attn_proj_w;  // (C, C)    attn.c_proj
  const float* attn_proj_b;  // (C)
  const float* ln_2_w;       // (C)
  const float* ln_2_b;       // (C)
  const float* fc_w;         // (C, 4C)   mlp.c_fc
  const float* fc_b;         // (4C)
  const float* proj_w;       // (4C, C)   mlp.c_proj
  const float* proj_b;       // (C)
};

struct Gpt2Weights {
  const float* wte = nullptr;  // (V, C) token embeddings, tied with the LM head
  const float* wpe = nullptr;  // (n_ctx, C) position embeddings
  std::vector<Gpt2Layer> layers;
  const float* ln_f_w = nullptr;  // (C)
  const float* ln_f_b = nullptr;  // (C)
};

class Gpt2Model {
 public:
  virtual ~Gpt2Model() = default;
  const Gpt2Config& config() const { return config_; }
  const Gpt2Weights& weights() const { return weights_; }
  size_t parameter_bytes() const { return parameter_bytes_; }

 protected:
  Gpt2Config config_;
  Gpt2Weights weights_;
  size_t parameter_bytes_ = 0;
};

// Loads `dir`/config.json and `dir`/model.safetensors. On failure the message
// names the file, the tensor and what was expected.
//
// Implemented in gpt2_loader.cc. What it accepts and where the weights live:
// - tensor names with or without a "transformer." prefix;
// - h.N.attn.bias and h.N.attn.masked_bias (causal-mask buffers, not
//   parameters) are skipped whatever their dtype;
// - lm_head.weight, if present, must equal wte byte for byte (GPT-2 ties
//   them) and is then ignored; an untied head is an error;
// - every parameter of Gpt2ParameterSpecs() must be present, F32, BF16 or
//   F16, with its exact shape; any other tensor is an error (a file we do not
//   understand is not silently half-used);
// - weights are one slab: normally the read-only mmap of model.safetensors
//   itself (zero copy: no second 500 MB, pages shared with other processes
//   and the page cache). Only if some tensor is not 4-byte aligned in the
//   mapping (the format does not promise it) are the parameters copied into
//   one 64-byte-aligned allocation and the file unmapped. BF16 and F16
//   tensors are widened to float32 (exactly) in that same copy, so a 16-bit
//   checkpoint costs twice its file size in memory; parameter_bytes()
//   counts the float32 bytes.
Status LoadGpt2(const std::string& dir, std::unique_ptr<Gpt2Model>* out);

// One parameter tensor as the loader expects it (name without prefix).
struct Gpt2TensorSpec {
  std::string name;            // "h.0.attn.c_attn.weight"
  std::vector<int64_t> shape;  // {C, 3C}
};

// Every parameter of a GPT-2 with config `c`: wte, wpe, then per layer ln_1,
// attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj (weight then bias),
// then ln_f. No buffers (attn.bias) and no lm_head.
std::vector<Gpt2TensorSpec> Gpt2ParameterSpecs(const Gpt2Config& c);

// Parses and validates a Hugging Face GPT-2 config.json: n_layer, n_head,
// n_embd, n_positions (else n_ctx), vocab_size are required positive
// integers within Gpt2ConfigLimits, n_embd % n_head == 0;
// layer_norm_epsilon (default 1e-5) and eos_token_id (default 50256, must be
// < vocab_size) are optional. Settings that change the math the forward pass
// implements (activation_function other than gelu_new/gelu_pytorch_tanh,
// n_inner != 4*n_embd, scale_attn_weights false,
// scale_attn_by_inverse_layer_idx true, model_type other than gpt2) are
// errors. `label` names the file in messages.
struct Gpt2ConfigLimits {
  int max_layers = 1024;
  int max_heads = 1024;
  int max_embd = 1 << 16;            // n_embd, elements
  int max_positions = 1 << 20;       // n_positions, tokens
  int max_vocab = 1 << 24;           // vocab_size, tokens
  size_t max_config_bytes = 1 << 20; // config.json
};
Status ParseGpt2Config(std::string_view json_text, std::string_view label, Gpt2Config* out,
                       const Gpt2ConfigLimits& limits = Gpt2ConfigLimits());

}  // namespace tw::model
