// Random GPT-2 checkpoints in Hugging Face's layout, for tests and for
// `weights_tool random`.
//
// WriteRandomGpt2() writes `dir`/config.json and `dir`/model.safetensors with
// the real download's key layout: names without prefix, sorted, including the
// h.N.attn.bias causal-mask buffers (1, 1, n_ctx, n_ctx) that the loader must
// skip. (The tokenizer files are the caller's: weights_tool adds them.)
//
// Deterministic: the same config and seed give byte-identical files (one
// xoshiro256** stream per tensor, seeded from the seed and the tensor's name,
// Box-Muller normals in double precision; same binary, same bytes).
// Init: matrices and embeddings N(0, 0.02), the residual projections
// (attn.c_proj, mlp.c_proj) N(0, 0.02 / sqrt(2 n_layer)) as in GPT-2, layer-norm
// gains 1 + N(0, 0.02), every bias N(0, 0.01) (none is exactly 0 or 1, so a
// skipped parameter shows in a forward-pass test).
//
// Memory: streams the data section in chunks of `chunk_bytes`; never holds a
// tensor, let alone the file (gpt2 shape: ~500 MB on disk, ~1 MiB in memory).
// Writes to model.safetensors.tmp and renames, so a failed run leaves no
// half-written model.safetensors. Calling thread only; blocking file I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/gpt2.h"
#include "model/sampling.h"

namespace tw::model {

// One tensor's draws: the sampler's xoshiro256** (model::Rng), seeded with
// the seed and an FNV-1a hash of the tensor's name, so each tensor's values
// depend on nothing else; uniforms with 53 random bits, normals by
// Box-Muller in double precision. (Also the trainer's initialisation,
// train/params.h.)
class TensorRng {
 public:
  TensorRng(uint64_t seed, std::string_view name) : rng_(seed ^ Fnv1a(name)) {}
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(rng_.Next() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; the second value of each pair is kept).
  double Normal();

 private:
  static uint64_t Fnv1a(std::string_view name) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char ch : name) {
      h ^= static_cast<uint8_t>(ch);
      h *= 0x100000001b3ull;
    }
    return h;
  }
  Rng rng_;
  bool have_spare_ = false;
  double spare_ = 0;
};

struct RandomGpt2Options {
  Gpt2Config config;
  uint64_t seed = 0;
  size_t chunk_bytes = 1 << 20;  // write granularity, bytes
  // Called after each chunk with (bytes of data written, total data bytes).
  std::function<void(uint64_t, uint64_t)> progress;
};

// "tiny": 2 layers, 4 heads, 64 wide, 1024 positions, vocab 50257 (GPT-2's
//         context and vocabulary, everything else small: ~22 MB on disk, 8 MB
//         of it the two (1, 1, 1024, 1024) mask buffers the loader skips).
// "gpt2": 12 / 12 / 768 / 1024 / 50257 (124M parameters). False if unknown.
bool NamedGpt2Shape(std::string_view name, Gpt2Config* out);

// config.json text for `c` (Hugging Face's field names).
std::string Gpt2ConfigJson(const Gpt2Config& c);

// Creates `dir` (and parents) if needed and writes config.json and
// model.safetensors into it.
Status WriteRandomGpt2(const std::string& dir, const RandomGpt2Options& options);

// mkdir -p.
Status MakeDirs(const std::string& dir);

// Writes the concatenation of `parts` to `path` + ".tmp", then renames it
// to `path`: a reader sees the old file or the whole new one, never a part
// (a failed write removes the .tmp file). Blocking file I/O.
Status WriteFileAtomically(const std::string& path, std::span<const std::string_view> parts);

}  // namespace tw::model
