// The `cuda` backend's runner: GPT-2 on an NVIDIA GPU behind the engine's
// model-runner seam (engine/runner.h), with the hand-written kernels of
// kernels/.
//
// MakeCudaRunner is defined twice: by cuda_runner_cuda.cc in a CUDA build
// (make CUDA=1), and by cuda_runner_nocuda.cc otherwise, where it refuses
// with a message naming the cause. In a CUDA build on a machine without a
// usable GPU or driver it also refuses, naming the runtime's reason.
//
// Threads: start-up only.
#pragma once

#include <memory>

#include "common/status.h"
#include "engine/runner.h"
#include "model/gpt2.h"

namespace tw::cuda {

// Builds the runner: uploads and repacks the weights into one device
// allocation, allocates the KV pool (limits.num_kv_blocks blocks, zeroed),
// the step buffers and the workspaces, and captures nothing yet (decode
// graphs are captured per batch-size bucket on first use).
Status MakeCudaRunner(std::shared_ptr<const model::Gpt2Model> model, const engine::RunnerLimits& limits,
                      std::unique_ptr<engine::ModelRunner>* out);

// True in a CUDA build.
bool BuiltWithCuda();

}  // namespace tw::cuda
