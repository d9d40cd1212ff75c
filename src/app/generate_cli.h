// `tokenwire generate`: one completion, streamed to stdout as it is produced,
// on the model `tokenwire serve` would load (--model DIR, else random tiny
// GPT-2 weights), and the program's usage texts.
//
// The flags live in one table in generate_cli.cc: the parser, `tokenwire
// generate --help` and `tokenwire --help` are all made from it, so they
// cannot disagree (tests/app/help_test.cc checks the texts against it).
//
// Threads: the calling thread and the CPU pool it starts. Memory: the model,
// and KV blocks for the one sequence (prompt + --max-new-tokens).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "cpu/kernels.h"

namespace tw::app {

struct GenerateFlags {
  std::string model_dir;  // "" = random tiny weights, as serve
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

// argv[first..] are the generate flags and the prompt. Returns the exit code.
int GenerateMain(int argc, char** argv, int first);

}  // namespace tw::app
