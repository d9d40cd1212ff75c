// The `cuda` backend's runner: GPT-2 on an NVIDIA GPU behind the engine's
// model-runner seam (engine/runner.h), with the hand-written kernels of
// kernels/.
//
// MakeCudaRunner is defined twice: by cuda_runner_cuda.cc in a CUDA build
// (make CUDA=1), and by cuda_runner_nocuda.cc otherwise, where it refuses
// with a message naming the cause. In a CUDA build on a machine without a
// usable GPU or driver it also refuses, naming the runtime's reason.
//
// What the runner holds (all allocated once, in Create):
//   - the weights in one device allocation: per layer the layer norms and
//     biases as they are and the four matrices packed for the matmul kernel
//     (kernels/gemm_layout.h), then wte and wpe for the embedding, ln_f, and
//     the tied LM head packed from wte;
//   - the KV pool (the CPU's block layout and ids; num_kv_blocks blocks plus
//     the padding rows' scratch blocks), zeroed;
//   - activations for max(max_batch, max_step_tokens) rows, logits for
//     max_batch rows, the matmul and attention workspaces (zeroed once);
//   - the step buffer (src/cuda/step_plan.h) in pinned host memory and on
//     the device: a step's inputs are packed on the host and go over in one
//     copy; only token ids come back.
// Steps of decode rows only replay a CUDA graph per batch-size bucket (all
// captured when the runner is made); a step with prompt chunks is one pass
// launched directly (its row counts vary).
//
// Threads: Create on any thread; Step and LastLogits from one thread at a
// time (the engine's). Never: allocates or captures inside a
// step, or synchronizes other than for the final copy of the token ids
// (and, for a prompt longer than the step buffer, before each chunk is
// packed into the pinned step buffer the previous chunk's copy reads).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/runner.h"
#include "model/gpt2.h"

namespace tw::cuda {

struct CudaRunnerOptions {
  bool tf32x3 = false;     // the matmuls on tensor cores (3xTF32) instead of fp32 FMA
  bool use_graphs = true;  // decode steps as replayed CUDA graphs
};

// Builds the runner: uploads and repacks the weights into one device
// allocation, allocates the KV pool (limits.num_kv_blocks blocks, zeroed),
// the step buffers and the workspaces, and captures the decode graph of
// every batch-size bucket (options.use_graphs).
Status MakeCudaRunner(std::shared_ptr<const model::Gpt2Model> model, const engine::RunnerLimits& limits,
                      const CudaRunnerOptions& options, std::unique_ptr<engine::ModelRunner>* out);

// For the GPU tests: the logits (rows, vocab) of the rows the runner's last
// step sampled, copied to the host (a runner that is not the CUDA one, or a
// build without CUDA, answers an error).
Status CudaLastLogits(engine::ModelRunner* runner, int rows, std::vector<float>* out);
// The runner's decode graphs: how many it holds (one per batch-size
// bucket, all captured when it was made) and how many times a decode step
// replayed one.
struct CudaRunnerStats {
  int graphs = 0;
  long long replays = 0;
};
Status CudaStats(const engine::ModelRunner* runner, CudaRunnerStats* out);

}  // namespace tw::cuda
