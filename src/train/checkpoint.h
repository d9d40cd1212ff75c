// A trained model as a Hugging Face GPT-2 folder: config.json
// (model::Gpt2ConfigJson), model.safetensors (every parameter F32, or BF16, under its
// Hugging Face name without prefix, sorted by name as the real files are;
// no attn.bias mask buffers, which the loader does not need), and, when
// asked, the GPT-2 tokenizer's vocab.json and merges.txt (the copy
// embedded in the binary, as `weights_tool random` writes them). So
// `weights_tool verify DIR` and `tokenwire serve --model DIR` load it
// unchanged.
//
// Each file is written to NAME.tmp and renamed (model::WriteFileAtomically):
// a reader sees a whole old file or a whole new one, and a checkpoint
// rewritten every N steps is never half-written. Calling thread only;
// blocking file I/O; F32 tensor bytes are written straight from the slab
// (no copy), BF16 ones from one rounded copy of the parameters.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/gpt2.h"
#include "train/params.h"

namespace tw::train {

struct CheckpointOptions {
  // BF16 tensors (each float rounded to nearest, ties to even:
  // cpu::Bf16FromFloat) instead of F32: half the file.
  bool bf16 = false;
  bool tokenizer_files = true;  // vocab.json + merges.txt (GPT-2's: only for vocab_size 50257)
  // The safetensors header's __metadata__ (beside "format": "pt").
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Creates `dir` if needed and writes the folder. params: a slab in
// ParamLayout(config)'s order.
Status WriteCheckpoint(const std::string& dir, const model::Gpt2Config& config, const float* params,
                       const CheckpointOptions& options);

}  // namespace tw::train
