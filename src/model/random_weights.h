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
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/gpt2.h"

namespace tw::model {

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

}  // namespace tw::model
