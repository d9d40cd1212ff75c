// `tokenwire generate`: one completion, streamed to stdout as it is produced,
// on the model `tokenwire serve` would load (--model DIR, random-tiny, else
// the built-in model: model/serving_model.h), and the program's usage texts.
//
// The flags live in one table in generate_cli.cc: the parser, `tokenwire
// generate --help` and `tokenwire --help` are all made from it, so they
// cannot disagree (tests/app/help_test.cc checks the texts against it).
//
// It runs the way the server does: the runner factory (MakeRunner), the
// engine, a stream; so the same prompt, --seed and sampling flags give the
// same tokens as a request to `tokenwire serve --backend cpu` with the same
// model and "seed" (tests/app/generate_test.cc checks it).
//
// Threads: the calling thread, the engine's thread and its CPU pool. Memory:
// the model, KV blocks for the one sequence (prompt + --max-new-tokens), and
// its events until read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "cpu/kernels.h"

namespace tw::app {

struct GenerateFlags {
  std::string model_dir;  // "" = the default model, as serve (model/serving_model.h)
  std::string prompt;
  bool has_prompt = false;
  int64_t max_new_tokens = 64;
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  int64_t threads = 0;
  int64_t block_size = 16;
  cpu::WeightFormat weights = cpu::WeightFormat::kF32;  // --weights f32|bf16|q8
  std::vector<std::string> stop;
};

// Parses argv[first..argc) (the flags and one prompt) into *f, which holds
// the defaults. Unknown flags and out-of-range values fail naming the flag.
Status ParseGenerateFlags(int argc, char** argv, int first, GenerateFlags* f);

// The flags ParseGenerateFlags accepts ("--model", ...), in usage order.
std::vector<std::string> GenerateFlagNames();

// "tokenwire generate [--model DIR] ... \"prompt\"\n", wrapped at 90 columns;
// continuation lines are indented to follow a first line that starts in
// column `indent`.
std::string GenerateSynopsis(size_t indent);

// The text of `tokenwire generate --help`.
std::string GenerateUsage();

// The text of `tokenwire --help`: both commands.
std::string ProgramUsage();

// What one generation produced.
struct GenerateOutcome {
  std::string model_name;
  int prompt_tokens = 0;
  std::vector<int32_t> tokens;  // every generated token id, the end-of-text token included
  std::string finish_reason;    // "length", "stop" or "eos"
};

// Runs one generation of `f` through the engine; `on_text` gets each piece
// of text as it is produced (the stop rules already applied).
Status Generate(const GenerateFlags& f, const std::function<void(std::string_view)>& on_text,
                GenerateOutcome* out);

// argv[first..] are the generate flags and the prompt. Returns the exit code.
int GenerateMain(int argc, char** argv, int first);

}  // namespace tw::app
