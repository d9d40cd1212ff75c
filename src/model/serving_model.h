// Where `tokenwire serve --backend cpu` and `tokenwire generate` get their
// GPT-2:
// - --model DIR: a Hugging Face folder;
// - no --model: the default model, GPT-2 of a small shape trained by this
//   project on English quotations (`make model`, src/model/data/README.md),
//   embedded in the binary, so a stream reads as English with no download;
// - --model random-tiny: random weights of the "tiny" shape (2 layers, 4
//   heads, 64 wide; GPT-2's 1024 positions and vocabulary), seed 0: the
//   small model the tests pin their outputs on. (A folder of that name is
//   ./random-tiny.)
//
// Both built-in models are written by their writers (the embedded bytes, or
// WriteRandomGpt2) into a fresh directory under $TMPDIR (else /tmp), loaded
// with LoadGpt2 (which maps the file, or copies it when it widens BF16), and
// the files and the directory are removed at once: the mapping or the copy
// keeps the data alive, nothing is left on disk. Every start serves the same
// model.
//
// Threads: start-up only (blocking file I/O). Memory: the model (~13 MB for
// the tiny shape, ~30 MB for the default; a real gpt2 folder is mapped,
// ~500 MB).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/gpt2.h"

namespace tw::model {

// The --model value that names the random tiny weights.
inline constexpr std::string_view kRandomTinyModel = "random-tiny";
// The default model's id (/v1/models).
inline constexpr std::string_view kDefaultModelName = "gpt2-fortunes";

// True for "" (the default model) and kRandomTinyModel: models built into the
// binary, whose tokenizer is the binary's embedded GPT-2 vocabulary.
bool IsBuiltInModel(std::string_view dir);

// Loads `dir` as above. *name is the folder's base name for a folder ("gpt2"
// if it has none), with every byte outside letters, digits and . _ - :
// replaced by '-' and at most 128 bytes kept (an id must be one URL path
// segment), kDefaultModelName for the default model and "gpt2-random-tiny"
// for random weights.
Status LoadModelForServing(const std::string& dir, std::shared_ptr<const Gpt2Model>* out,
                           std::string* name);

// The default model's config.json and model.safetensors as embedded.
std::string_view DefaultModelConfigJson();
std::string_view DefaultModelSafetensors();

}  // namespace tw::model
