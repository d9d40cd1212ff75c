// The backends behind --backend, in one table: mock (synthetic tokens), cpu
// (the engine on model::CpuRunner) and cuda (the engine on the CUDA runner, in
// a CUDA build on a machine with a GPU). The engine is the same for both
// runners; only the runner differs (engine/runner.h). Each row says what the
// backend is and which of the flags that depend on it apply, so the flag
// checks, the start-up summary and the factories ask the table, not the name.
//
// Threads: start-up only (loads the model, allocates the KV pool, starts the
// backend's threads).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "app/config.h"
#include "backend/backend.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status.h"
#include "engine/runner.h"
#include "model/gpt2.h"

namespace tw::tokenizer {
class Tokenizer;
}

namespace tw::app {

// How to build a runner, beyond its model and limits.
struct RunnerOptions {
  std::string weights = "f32";       // --weights: f32, bf16 or q8 (only f32 where the row says so)
  std::string cuda_matmul = "fp32";  // --cuda-matmul: fp32 or 3xtf32 (cuda)
};

using RunnerFactory = Status (*)(std::shared_ptr<const model::Gpt2Model> model, const engine::RunnerLimits& limits,
                                 const RunnerOptions& options, std::unique_ptr<engine::ModelRunner>* out);

// One --backend value.
struct BackendSpec {
  const char* name;             // "cpu"
  RunnerFactory make_runner;    // the engine's runner; null: not an engine backend (the mock)
  bool weight_formats;          // --weights bf16|q8 (else f32 only)
  bool cpu_kernels;             // runs on src/cpu's kernels (the summary names the ISA)
  bool lab_naive;               // --policy naive (the lab gate in its engine's step loop)
  // --max-num-batched-tokens 0 (the default): this, or 2 x --max-batch if
  // more (DECISIONS.md, "A step has a token budget": on the CPU, the
  // largest step whose decoders' longest gap stays within 3x their median
  // beside a long prompt; on a GPU, vLLM's default, not measured here).
  int default_step_tokens;
};

// The row for `name`, or null.
const BackendSpec* FindBackend(std::string_view name);
// The token budget of a step when --max-num-batched-tokens is 0.
int DefaultStepTokens(const BackendSpec& spec, int max_batch);
// "cpu, cuda or mock": every name, for messages and --help.
std::string BackendNames();

// A runner of `kind` (a row with make_runner) for `model` with `limits`.
Status MakeRunner(std::string_view kind, std::shared_ptr<const model::Gpt2Model> model,
                  const engine::RunnerLimits& limits, const RunnerOptions& options,
                  std::unique_ptr<engine::ModelRunner>* out);

// What the factory built, for the start-up summary.
struct BackendInfo {
  const BackendSpec* spec = nullptr;
  std::string model_name;
  std::string model_source;  // the folder, "the default model (built in: make model)" or "random weights (tiny shape, seed 0)"
  int n_layer = 0, n_head = 0, n_embd = 0, n_ctx = 0, vocab_size = 0;
  engine::RunnerLimits limits;  // engine backends
};

// The backend config.backend names, ready to accept requests.
// `log` (may be null) is where the engine reports errors it finds in itself.
Status MakeBackend(const Config& config, const tokenizer::Tokenizer* tokenizer, Metrics* metrics,
                   Logger* log, std::unique_ptr<backend::Backend>* out, BackendInfo* info);

}  // namespace tw::app
