// `weights_tool train`: the whole run. Flags in, a checkpoint folder out:
// load and split the corpus (corpus.h), initialise GPT-2 (params.h), then
// a fixed number of steps, each: B random windows, forward and backward
// (trainer.h), the global norm clip, the scheduled learning rate and an
// AdamW update (optimizer.h); the validation loss over fixed windows every
// --val-every steps; a checkpoint (checkpoint.h) every --checkpoint-every
// steps and at the end; a progress line per step and, with --log, a CSV
// row (step, train_loss, val_loss, lr, grad_norm, tokens, elapsed_s).
//
// Reproducible: the steps are counted, not timed, and everything drawn is
// seeded (--seed: the initial weights and the windows), so the same
// corpus, flags and seed give a bit-identical model.safetensors whatever
// --threads is (trainer.h says on which machines).
//
// Threading: RunTraining runs on the calling thread and a ThreadPool of
// --threads (the caller included). Allocation: everything at start-up;
// nothing per step but the log's and the progress line's text.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/status.h"

namespace tw::train {

// The defaults are the recommended run: 4 layers, 4 heads, 128 wide, 500
// steps of 16 windows of 256 tokens (2M tokens) at a peak learning rate of
// 2e-3: about 9 minutes on two cores (docs/DECISIONS.md, Training).
struct TrainOptions {
  std::string corpus;    // --corpus FILE (required)
  std::string out_dir;   // --out DIR (required)
  std::string log_path;  // --log FILE ("": none)
  int layers = 4;        // --layers
  int heads = 4;         // --heads
  int embd = 128;        // --embd (a multiple of --heads)
  int positions = 1024;  // --positions (n_ctx)
  int seq = 256;         // --seq: T, tokens per window (<= positions)
  int batch = 16;        // --batch: B, windows per step
  int steps = 500;       // --steps
  double lr = 2e-3;      // --lr: the peak learning rate
  double min_lr = 2e-4;  // --min-lr: where the cosine ends (default: at most --lr)
  int warmup = 20;       // --warmup: steps of linear warmup (default: at most --steps)
  double weight_decay = 0.1;  // --weight-decay (matrices and embeddings only)
  double clip = 1.0;     // --clip: global gradient-norm bound (0: none)
  uint64_t seed = 0;     // --seed
  int threads = 0;       // --threads (0: every hardware thread)
  int val_every = 50;    // --val-every: steps between validation losses (0: none)
  int val_windows = 32;  // --val-windows
  int checkpoint_every = 0;  // --checkpoint-every: steps between checkpoints (0: at the end only)
  bool bf16 = false;     // --dtype bf16: checkpoints in BF16 (default f32)
};

// Parses weights_tool train's flags (argv after "train"). *help is set for
// --help / -h (then nothing else is checked). An error names the flag and
// what it wants: a usage error (exit 2).
Status ParseTrainFlags(int argc, char** argv, TrainOptions* out, bool* help);

// The flags' usage text (weights_tool's help).
const char* TrainUsage();

// Runs the training; progress lines go to `progress` (may be null). An
// error names the file, the flag or the step (exit 1).
Status RunTraining(const TrainOptions& options, std::FILE* progress);

}  // namespace tw::train
