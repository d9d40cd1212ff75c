// The one factory behind --backend: mock (synthetic tokens), cpu (the engine
// on model::CpuRunner) and cuda (the engine on the CUDA runner, in a CUDA
// build on a machine with a GPU). The engine is the same for both runners;
// only the runner differs (engine/runner.h).
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

// A runner of `kind` ("cpu" or "cuda") for `model` with `limits`;
// `cuda_matmul` ("fp32" or "3xtf32") picks the CUDA runner's matmul path,
// `weights` ("f32", "bf16" or "q8") the CPU runner's weight format (only f32
// for cuda).
Status MakeRunner(std::string_view kind, std::shared_ptr<const model::Gpt2Model> model,
                  const engine::RunnerLimits& limits, std::unique_ptr<engine::ModelRunner>* out,
                  std::string_view cuda_matmul = "fp32", std::string_view weights = "f32");

// What the factory built, for the start-up summary.
struct BackendInfo {
  std::string kind;          // "mock", "cpu", "cuda"
  std::string model_name;
  std::string model_source;  // the folder, or "random weights (tiny shape, seed 0)"
  int n_layer = 0, n_head = 0, n_embd = 0, n_ctx = 0, vocab_size = 0;
  engine::RunnerLimits limits;  // engine backends
};

// The backend config.backend names, ready to accept requests.
// `log` (may be null) is where the engine reports errors it finds in itself.
Status MakeBackend(const Config& config, const tokenizer::Tokenizer* tokenizer, Metrics* metrics,
                   Logger* log, std::unique_ptr<backend::Backend>* out, BackendInfo* info);

}  // namespace tw::app
