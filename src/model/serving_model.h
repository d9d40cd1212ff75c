// Where `tokenwire serve --backend cpu` gets its GPT-2: a Hugging Face folder
// (--model DIR), or, without --model, random weights of the "tiny" shape
// (2 layers, 4 heads, 64 wide; GPT-2's 1024 positions and vocabulary)
// generated at start-up so the server runs with no download.
//
// The random checkpoint is written by WriteRandomGpt2 into a fresh
// directory under $TMPDIR (else /tmp), loaded with LoadGpt2 (which maps
// the file), and the files and the directory are removed at once: the mapping
// keeps the data alive, nothing is left on disk. Seed 0, so every start serves
// the same model.
//
// Threads: start-up only (blocking file I/O). Memory: the model (~13 MB for
// the tiny shape; a real gpt2 folder is mapped, ~500 MB).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "model/gpt2.h"

namespace tw::model {

// Loads `dir` if non-empty, else builds the random tiny model. *name is
// the folder's base name for a folder ("gpt2" if it has none), with every
// byte outside letters, digits and . _ - : replaced by '-' and at most 128
// bytes kept (an id must be one URL path segment), and "gpt2-random-tiny"
// for random weights.
Status LoadModelForServing(const std::string& dir, std::shared_ptr<const Gpt2Model>* out,
                           std::string* name);

}  // namespace tw::model
